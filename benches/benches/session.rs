//! Session files and aggregation at scale: 1M samples over 50k distinct stacks, 8 threads.
//!
//! `cargo bench -p prof-benches --bench session` prints the size per sample (packed, gzipped, and
//! the same columns as plain JSON number arrays for comparison) and the time to write, read,
//! aggregate, rank and lay out. Times are the best of a few runs.

use flate2::write::GzEncoder;
use flate2::Compression;
use prof::aggregate::{CallTree, Filter, SortBy, StackWeights};
use prof::session::{self, Session};
use prof_benches::{ms, print_shape, synthetic, time, Stacks};
use std::io::Write as _;

/// The sample columns as plain JSON arrays of per-thread deltas: the encoding not chosen.
fn plain_json_size(s: &Session) -> usize {
    let mut prev = vec![(0i64, 0i64, 0i64); s.threads.len()];
    let (mut stack, mut time, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..s.samples.len() {
        let p = &mut prev[s.samples.thread[i].index()];
        let now = (
            i64::from(s.samples.stack[i].0),
            s.samples.time_ns[i] as i64,
            s.samples.weight[i] as i64,
        );
        stack.push(now.0 - p.0);
        time.push(now.1 - p.1);
        weight.push(now.2 - p.2);
        *p = now;
    }
    let thread: Vec<u32> = s.samples.thread.iter().map(|t| t.0).collect();
    serde_json::to_vec(&(stack, thread, time, weight))
        .expect("serializes")
        .len()
}

fn main() {
    let skewed = synthetic(Stacks::Skewed);
    let mut skewed_json = Vec::new();
    session::write(&skewed, &mut skewed_json).expect("writes");
    let session = synthetic(Stacks::Uniform);
    let n = session.sample_count() as f64;
    print_shape(&session);

    let (write_time, json) = time(3, || {
        let mut out = Vec::with_capacity(16 << 20);
        session::write(&session, &mut out).expect("writes");
        out
    });
    let gzip = |level| {
        let mut gz = GzEncoder::new(Vec::new(), level);
        gz.write_all(&json).expect("compresses");
        gz.finish().expect("compresses")
    };
    let (gz_time, gz) = time(1, || gzip(Compression::default()));
    let (gz_fast_time, gz_fast) = time(1, || gzip(Compression::fast()));
    let plain = plain_json_size(&session);
    let (read_time, back) = time(3, || session::read(&json[..]).expect("reads"));
    assert!(back == session, "the session round-trips");
    let (read_gz_time, _) = time(3, || session::read(&gz[..]).expect("reads"));

    let (weights_time, weights) = time(5, || StackWeights::compute(&session, &Filter::all()));
    let (tree_time, tree) = time(5, || CallTree::build(&session, &weights, &[]));
    let (top_time, top) = time(5, || tree.top(&session, 10, SortBy::SelfWeight));
    let total = tree.total_weight(tree.root());
    let (flame_time, rects) = time(5, || tree.flame(tree.root(), total / 2000));
    let (flame_all_time, all_rects) = time(5, || tree.flame(tree.root(), 0));
    assert_eq!(top.len(), 10);

    println!(
        "file size (uncompressed): {} bytes, {:.2} bytes/sample",
        json.len(),
        json.len() as f64 / n
    );
    println!(
        "file size (gzip level 6): {} bytes, {:.2} bytes/sample",
        gz.len(),
        gz.len() as f64 / n
    );
    println!(
        "file size (gzip level 1): {} bytes, {:.2} bytes/sample",
        gz_fast.len(),
        gz_fast.len() as f64 / n
    );
    println!(
        "file size with skewed stacks (uncompressed): {} bytes, {:.2} bytes/sample",
        skewed_json.len(),
        skewed_json.len() as f64 / n
    );
    println!(
        "sample columns as plain JSON arrays instead: {} bytes, {:.2} bytes/sample",
        plain,
        plain as f64 / n
    );
    println!("write (to memory): {}", ms(write_time));
    println!("gzip the written file, level 6: {}", ms(gz_time));
    println!("gzip the written file, level 1: {}", ms(gz_fast_time));
    println!("read + check (.json): {}", ms(read_time));
    println!("read + check (.json.gz): {}", ms(read_gz_time));
    println!("sum samples per stack (1M samples): {}", ms(weights_time));
    println!("build call tree ({} nodes): {}", tree.len(), ms(tree_time));
    println!("top-10 by self: {}", ms(top_time));
    println!(
        "flame layout, min width 1/2000: {} ({} rects)",
        ms(flame_time),
        rects.len()
    );
    println!(
        "flame layout, everything: {} ({} rects)",
        ms(flame_all_time),
        all_rects.len()
    );
}
