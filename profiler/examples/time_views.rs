//! Times the core's passes behind the viewer's views over time on one million samples (8
//! threads, 50,000 distinct stacks 8 frames deep, one sample per millisecond per thread): the
//! timeline's buckets (1,200 per thread, with a highlighted function) and the stack chart's
//! boxes over the whole session at 1,200 pixels (every sample a different stack: its worst
//! case). `cargo run --release -p prof --example time_views` prints the best of three runs.

use prof::aggregate::{stack_chart, timeline, Filter};
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
    let frames: Vec<_> = (0..500)
        .map(|i| b.intern_frame(&FrameSpec::named(&format!("f{i}"))))
        .collect();
    let stacks: Vec<_> = (0..50_000usize)
        .map(|s| {
            let path: Vec<_> = (0..8)
                .map(|d| frames[(s * 7 + d * 131 + s / 97) % 500])
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
    let (box_time, boxes) = best(|| stack_chart(&session, &all, 0, end, end / PIXELS, None));
    println!(
        "{SAMPLES} samples: timeline {bucket_time:.1?} ({} tracks of {PIXELS} buckets), \
         stack chart {box_time:.1?} ({} boxes)",
        tracks.len(),
        boxes.len()
    );
}
