//! The debug info cache of symbolization (`prof::symbolize::cache`): only objects that a sample
//! touched are opened, a later session of the process reuses what an earlier one parsed and
//! names frames alike, and the memory the cache keeps does not grow with sessions and is given
//! back by `clear_cache`. A counting allocator measures the heap.

mod common;

use common::{serial, spin};
use prof::clear_caches as clear_cache;
use prof::symbolize::cache_stats;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Bytes allocated and not yet freed, by every thread.
static LIVE: AtomicI64 = AtomicI64::new(0);

/// The system allocator, counting live bytes.
struct Live;

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Live {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract, which is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from System with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller upholds `realloc`'s contract, which is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Live = Live;

const MIB: i64 = 1 << 20;

#[inline(never)]
fn busy_in_cache_test() -> u64 {
    spin(Duration::from_millis(150))
}

/// Reads the monotonic clock in a loop, so that samples land in the vDSO.
#[inline(never)]
fn reading_clocks() -> u64 {
    let end = prof::sampler::thread_cpu_time() + Duration::from_millis(100);
    let mut n = 0u64;
    while prof::sampler::thread_cpu_time() < end {
        n = n.wrapping_add(u64::from(
            std::time::Instant::now().elapsed().subsec_nanos(),
        ));
    }
    n
}

fn session() -> prof::Report {
    let options = prof::Options::default().interval(Duration::from_millis(1));
    prof::profile(options, || busy_in_cache_test() ^ reading_clocks())
        .unwrap()
        .report
}

/// Each frame of the report's samples: name, file and line, sorted.
fn frames(report: &prof::Report) -> Vec<(String, Option<String>, Option<u32>)> {
    let s = report.session();
    let mut all: Vec<_> = (0..s.samples.len())
        .flat_map(|i| s.stack_frames(s.samples.stack[i]).collect::<Vec<_>>())
        .map(|f| {
            let frame = s.frame(f);
            (
                s.frame_name(f).to_owned(),
                frame.file.map(|id| s.str(id).to_owned()),
                frame.line,
            )
        })
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn a_library_that_no_sample_touched_is_never_opened() {
    let _serial = serial();
    let name = c"libz.so.1";
    // SAFETY: loads the system's zlib, whose initializers are trivial; the name is valid. It
    // stays loaded (and unused) for the rest of this process.
    let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!lib.is_null(), "libz.so.1 is needed for this test");
    let report = session();
    let s = report.session();
    let sampled: std::collections::HashSet<&str> = (0..s.samples.len())
        .flat_map(|i| s.stack_frames(s.samples.stack[i]).collect::<Vec<_>>())
        .filter_map(|f| s.frame(f).module.map(|m| s.str(m)))
        .collect();
    let held = cache_stats().objects;
    assert!(
        held.iter().all(|p| !p.contains("libz")),
        "libz had no sample but its debug info was loaded: {held:?}"
    );
    for path in &held {
        let file = if path == "[vdso]" {
            "linux-vdso.so.1"
        } else {
            path.rsplit('/').next().unwrap()
        };
        assert!(
            sampled.contains(file),
            "{path} is held but no sample was in it; sampled: {sampled:?}"
        );
    }
    let exe = std::env::current_exe().unwrap().display().to_string();
    assert!(held.contains(&exe), "{exe} not in {held:?}");
}

#[test]
fn a_second_session_reuses_the_parsed_debug_info_and_names_alike() {
    let _serial = serial();
    clear_cache();
    let first = session();
    let after_first = cache_stats();
    let second = session();
    let after_second = cache_stats();
    assert_eq!(
        after_second.loads, after_first.loads,
        "the second session parsed again: {after_first:?} then {after_second:?}"
    );
    assert!(after_second.reuses > after_first.reuses);
    // The same code, named the same way: with its path, file and line.
    let (a, b) = (frames(&first), frames(&second));
    let ours = |frames: &[(String, Option<String>, Option<u32>)]| {
        frames
            .iter()
            .find(|(n, _, _)| n == "symbolize_cache::busy_in_cache_test")
            .cloned()
    };
    let mine = ours(&a).expect("the busy function is named in the first session");
    assert!(mine
        .1
        .as_deref()
        .unwrap_or("")
        .ends_with("symbolize_cache.rs"));
    assert!(mine.2.is_some());
    assert_eq!(ours(&b), Some(mine));
    // The vDSO's code is named from its symbol table, not left as an address.
    for frames in [&a, &b] {
        assert!(
            frames.iter().any(|(n, _, _)| n.contains("clock_gettime")),
            "no clock_gettime frame: {frames:?}"
        );
    }
    let named_in_second: std::collections::HashSet<&String> = b.iter().map(|f| &f.0).collect();
    for (name, _, _) in &a {
        if name.contains("busy_in_cache_test") || name.contains("spin") {
            assert!(
                named_in_second.contains(name),
                "{name} missing in the second session"
            );
        }
    }
}

#[test]
fn the_cache_keeps_its_memory_across_sessions_without_growing() {
    let _serial = serial();
    clear_cache();
    drop(session());
    clear_cache();
    let empty = LIVE.load(Ordering::Relaxed);
    drop(session());
    let one = LIVE.load(Ordering::Relaxed);
    let held = one - empty;
    for _ in 0..3 {
        drop(session());
    }
    let four = LIVE.load(Ordering::Relaxed);
    eprintln!(
        "cache heap after one session: {:.1} MiB; after four: {:.1} MiB",
        held as f64 / MIB as f64,
        (four - empty) as f64 / MIB as f64
    );
    // What is kept is parsed from this test binary's DWARF, mapped from the file, and grows
    // with it (its units, its symbols): measured 16.2 MiB for 38 MiB of DWARF in 589 units,
    // 36 MiB for 61 MiB in 1,519 when the library became several crates. Never a copy of the
    // DWARF: less than the DWARF itself. The same after four sessions: later sessions parse only
    // the few units their new addresses fall in.
    let dwarf = dwarf_bytes() as i64;
    assert!(
        held < dwarf,
        "{held} bytes kept for one object of {dwarf} bytes of DWARF"
    );
    assert!(
        four - one < 2 * MIB,
        "the cache grew by {} bytes over three sessions of the same code",
        four - one
    );
    clear_cache();
    let cleared = LIVE.load(Ordering::Relaxed);
    assert!(
        cleared - empty < MIB / 4,
        "clear_cache left {} bytes",
        cleared - empty
    );
}

/// The bytes of DWARF (`.debug_*` sections) of this test binary, the object the cache parses.
fn dwarf_bytes() -> u64 {
    use object::{Object, ObjectSection};
    let data = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.sections()
        .filter(|s| s.name().is_ok_and(|n| n.starts_with(".debug_")))
        .map(|s| s.size())
        .sum()
}
