//! An exact byte counter to put under `prof::alloc::Sampling` in the allocation tests: it counts
//! the bytes each thread allocates while it carries a tag, so a test knows the true totals that
//! prof's estimates are checked against.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tags a thread may carry (0: not counted).
pub const TAGS: usize = 8;

/// Bytes allocated under each tag (a reallocation counts its new size, as prof does).
pub static COUNTED: [AtomicU64; TAGS] = [const { AtomicU64::new(0) }; TAGS];

thread_local! {
    static TAG: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, counting.
pub struct Counting;

fn count(size: usize) {
    let tag = TAG.with(Cell::get);
    if tag != 0 {
        COUNTED[tag].fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller upholds `alloc`'s contract, which is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: the caller upholds `realloc`'s contract, which is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` with the calling thread's allocations counted under `tag`; returns what it
/// returned and the bytes counted.
pub fn counted<R>(tag: usize, f: impl FnOnce() -> R) -> (R, u64) {
    let before = COUNTED[tag].load(Ordering::Relaxed);
    TAG.with(|t| t.set(tag));
    let r = f();
    TAG.with(|t| t.set(0));
    (r, COUNTED[tag].load(Ordering::Relaxed) - before)
}

/// The estimated weight of sample type `ty` over the samples whose stack passes through a
/// function whose name contains `needle`.
pub fn weight_as(report: &prof::Report, ty: &str, needle: &str) -> u64 {
    let mut session = report.session().clone();
    session
        .select_sample_type(ty)
        .expect("alloc sessions carry the type");
    let s = &session;
    (0..s.samples.len())
        .filter(|&i| {
            s.stack_frames(s.samples.stack[i])
                .any(|f| s.frame_name(f).contains(needle))
        })
        .map(|i| s.samples.weight[i])
        .sum()
}

/// Asserts that `estimate` is within `pct` percent of `truth`.
pub fn assert_within(what: &str, estimate: u64, truth: u64, pct: f64) {
    let err = (estimate as f64 - truth as f64).abs() / truth as f64 * 100.0;
    assert!(
        err <= pct,
        "{what}: estimated {estimate}, true {truth} ({err:.2}% off, limit {pct}%)"
    );
}
