//! Regression: the timeline of 1M samples made the viewer's wasm memory peak at 49 MB for a
//! 10.8 MB file (4.5x, the goal being 4x): bucketing it held two 4-byte arrays per sample (each
//! sample's cell and the samples sorted by cell). Samples in time order, as every recorded
//! session has them, are now bucketed one bucket at a time. This counts the bytes allocated at
//! the peak of one timeline call.

use prof::aggregate::{timeline, Filter};
use prof::session::{FrameSpec, SessionBuilder};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live now and at their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on unchanged to `System`, which upholds `GlobalAlloc`'s contract;
// the counters are plain atomics and allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on as it came.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout (above).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn timeline_of_samples_in_time_order_holds_no_per_sample_arrays() {
    const SAMPLES: u64 = 400_000;
    const BUCKETS: usize = 1000;
    let mut b = SessionBuilder::default();
    let threads: Vec<_> = (0..4)
        .map(|t| b.thread(t, &format!("worker-{t}")))
        .collect();
    let root = b.intern_frame(&FrameSpec::named("root"));
    let stacks: Vec<_> = (0..100)
        .map(|f| {
            let frame = b.intern_frame(&FrameSpec::named(&format!("f{f}")));
            b.intern_stack_path(&[root, frame]).unwrap()
        })
        .collect();
    for i in 0..SAMPLES {
        let stack = stacks[(i * 7919 % 100) as usize];
        b.push_sample(stack, threads[(i % 4) as usize], i * 1000, 1000);
    }
    let session = b.finish();

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let tracks = timeline(&session, &Filter::all(), 0, SAMPLES * 1000, BUCKETS, None);
    let peak = PEAK.load(Ordering::Relaxed) - before;

    assert_eq!(tracks.len(), 4);
    assert!(tracks.iter().all(|t| t.hottest.iter().all(Option::is_some)));
    // The tracks themselves: 4 x 1000 buckets x 32 bytes (weight, matched, waiting, hottest).
    let tracks_bytes = 4 * BUCKETS * 32;
    assert!(
        peak < tracks_bytes + SAMPLES as usize / 4,
        "the timeline of {SAMPLES} samples peaked at {peak} bytes, {:.1} per sample",
        peak as f64 / SAMPLES as f64
    );
}
