//! Times the core's passes behind the viewer's views over time and its Source view, on one
//! million samples (8 threads, one sample per millisecond per thread, 50,000 distinct stacks 8
//! frames deep over 500 functions, each function at 4 lines of its file):
//! - the timeline's buckets (1,200 per thread, with a highlighted function) and the stack
//!   chart's boxes over the whole session at 1,200 pixels (every sample a different stack: its
//!   worst case);
//! - one function's lines (`function_lines`, with and without a transform) beside the call tree
//!   the other views build from the same per-stack weights, and every file's lines
//!   (`line_weights`, what `prof convert --to source` prints);
//! - the stacks rewritten by a merge (`TransformedStacks`, which the viewer keeps until the
//!   transforms change) and a call tree built from them.
//!
//! `cargo run --release -p prof --example time_views` prints the best of three runs.

use prof::aggregate::{
    function_lines, line_weights, stack_chart, timeline, CallTree, Filter, StackWeights, Transform,
    TransformedStacks,
};
use prof::session::{FrameSpec, Session, SessionBuilder};
use std::time::{Duration, Instant};

const SAMPLES: usize = 1_000_000;
const THREADS: u64 = 8;
const PIXELS: u64 = 1_200;
const MS: u64 = 1_000_000;

fn session() -> Session {
    let mut b = SessionBuilder::default();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| b.thread(t, &format!("thread-{t}")))
        .collect();
    let names: Vec<String> = (0..500).map(|i| format!("f{i}")).collect();
    let files: Vec<String> = (0..50).map(|i| format!("src/m{i}.rs")).collect();
    let frames: Vec<_> = (0..2_000usize)
        .map(|i| {
            let f = i / 4;
            b.intern_frame(&FrameSpec {
                file: Some(&files[f % 50]),
                line: Some((f * 10 + i % 4) as u32),
                ..FrameSpec::named(&names[f])
            })
        })
        .collect();
    let stacks: Vec<_> = (0..50_000usize)
        .map(|s| {
            let path: Vec<_> = (0..8)
                .map(|d| frames[(s * 7 + d * 131 + s / 97) % 2_000])
                .collect();
            b.intern_stack_path(&path).expect("not empty")
        })
        .collect();
    for i in 0..SAMPLES {
        let thread = threads[i % threads.len()];
        let time = (i as u64 / THREADS) * MS;
        b.push_sample(stacks[(i * 7919) % stacks.len()], thread, time, MS);
    }
    b.finish()
}

/// The shortest of three runs of `f`, and its last result.
fn best<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut fastest = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let value = f();
        fastest = fastest.min(start.elapsed());
        out = Some(value);
    }
    (fastest, out.expect("ran"))
}

fn main() {
    let session = session();
    let end = (SAMPLES as u64 / THREADS) * MS;
    let mask: Vec<u8> = session
        .strings
        .iter()
        .map(|s| u8::from(s == "f7"))
        .collect();
    let all = Filter::all();
    let (bucket_time, tracks) =
        best(|| timeline(&session, &all, 0, end, PIXELS as usize, Some(&mask)));
    let (box_time, boxes) = best(|| stack_chart(&session, &all, None, 0, end, end / PIXELS, None));
    println!(
        "{SAMPLES} samples: timeline {bucket_time:.1?} ({} tracks of {PIXELS} buckets), \
         stack chart {box_time:.1?} ({} boxes)",
        tracks.len(),
        boxes.len()
    );
    let weights = StackWeights::compute(&session, &Filter::all());
    let func = session
        .frames
        .iter()
        .map(|f| f.name)
        .find(|&id| session.str(id) == "f7")
        .expect("f7 is a function");
    let (tree_time, tree) = best(|| CallTree::build(&session, &weights, &[]));
    let merged = [Transform::Merge(
        session.frame(session.stacks[0].frame).name,
    )];
    let (stacks_time, stacks) = best(|| TransformedStacks::new(&session, &merged));
    let (cached_time, _) = best(|| CallTree::build_transformed(&session, &weights, &stacks));
    let (lines_time, lines) = best(|| function_lines(&session, &weights, &[], func));
    let merge = [Transform::CollapseRecursion];
    let (transformed_time, _) = best(|| function_lines(&session, &weights, &merge, func));
    let (all_time, all) = best(|| line_weights(&session, &weights));
    println!(
        "{SAMPLES} samples, {} stack nodes: call tree {tree_time:.1?} ({} nodes), one function's \
         lines {lines_time:.1?} ({} lines in {} files), with collapse-recursion \
         {transformed_time:.1?}, every file's lines {all_time:.1?} ({} files); stacks with a \
         merge {stacks_time:.1?}, then the call tree from them {cached_time:.1?}",
        session.stacks.len(),
        tree.len(),
        lines.iter().map(|f| f.lines.len()).sum::<usize>(),
        lines.len(),
        all.len()
    );
}
