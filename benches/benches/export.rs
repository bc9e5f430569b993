//! Export sizes and times at scale: the synthetic 1M-sample, 50k-stack profile of `prof_benches`
//! as a session file, speedscope JSON and gzipped pprof, side by side.
//!
//! `cargo bench -p prof-benches --bench export` prints each format's size (and per sample) and
//! the time to write it, plus the time to read the pprof back. Times are the best of a few runs.

use flate2::write::GzEncoder;
use flate2::Compression;
use prof::export::{pprof, speedscope};
use prof::session;
use prof_benches::{ms, print_shape, synthetic, time, Stacks};
use std::io::Write as _;
use std::path::Path;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(bytes).expect("compresses");
    gz.finish().expect("compresses")
}

fn main() {
    let session = synthetic(Stacks::Uniform);
    let n = session.sample_count() as f64;
    print_shape(&session);
    let (session_time, json) = time(3, || {
        let mut out = Vec::with_capacity(16 << 20);
        session::write(&session, &mut out).expect("writes");
        out
    });
    let json_gz = gzip(&json);
    let (speedscope_time, speedscope_json) = time(3, || {
        let mut out = Vec::with_capacity(64 << 20);
        speedscope::write_speedscope(&session, &mut out).expect("writes");
        out
    });
    let speedscope_gz = gzip(&speedscope_json);
    let (pprof_time, pprof_gz) = time(3, || {
        let mut out = Vec::new();
        pprof::write_pprof(&session, &mut out).expect("writes");
        out
    });
    let (pprof_read_time, back) = time(3, || {
        prof::import::read_pprof(&pprof_gz, Path::new("bench.pb.gz")).expect("reads")
    });
    assert_eq!(back.total_weight(), session.total_weight());

    let rows = [
        ("session .json", json.len(), Some(session_time)),
        ("session .json.gz", json_gz.len(), None),
        (
            "speedscope .json",
            speedscope_json.len(),
            Some(speedscope_time),
        ),
        ("speedscope .json, gzipped", speedscope_gz.len(), None),
        ("pprof .pb.gz", pprof_gz.len(), Some(pprof_time)),
    ];
    println!(
        "{:<28} {:>12} {:>12} {:>10} {:>12}",
        "format", "bytes", "bytes/sample", "vs .json.gz", "write"
    );
    for (name, bytes, took) in rows {
        println!(
            "{name:<28} {bytes:>12} {:>12.2} {:>10.2}x {:>12}",
            bytes as f64 / n,
            bytes as f64 / json_gz.len() as f64,
            took.map_or(String::new(), ms)
        );
    }
    println!("read the pprof back: {}", ms(pprof_read_time));
}
