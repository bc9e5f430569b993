//! Allocation sampling: what [`Sampling`](crate::alloc::Sampling) calls on every allocation and
//! free, and the allocation session that [`Profiler::start`](crate::Profiler::start) runs in
//! [`Mode::Alloc`](crate::Mode::Alloc).
//!
//! Each thread counts down the bytes until its next sample in a thread-local counter. Every
//! allocation subtracts its size; only when the counter goes below zero does anything else
//! happen. Without a session the counter is then reset to [`CHECK_BYTES`], so an idle wrapper
//! costs a subtraction and a branch per allocation. In a session the distances are drawn from an
//! exponential distribution with the session's mean (a Poisson process over the bytes
//! allocated, as Go's and tcmalloc's heap profilers sample), so an allocation of `s` bytes is
//! sampled with probability `1 - exp(-s/m)`, and the report scales each sample by the inverse.
//!
//! A sampled allocation is listed in the in-use table (`in_use.rs`), unwinds its own stack from
//! the registers of the sampling function with the signal handler's unwinder into a ring
//! record, and publishes it for the collector (`collector.rs`). Nothing on that path allocates:
//! a thread-local flag makes any allocation made meanwhile (and the collector's own) bypass
//! sampling. Frees check a small filter first and the table only when their bucket holds a
//! listed block.

mod collector;
mod in_use;

use super::finish::Threads;
use super::ring::{Claim, RawSample, Ring};
use crate::options::Options;
use in_use::{Filter, InUse};
use prof_capture::assemble::{estimate, intern_stacks, is_allocator_frame, splitmix, Cut};
use prof_capture::sys::{self, Rcu, Regs, StackAccess, StackReader, TryCell};
use prof_capture::unwind::{self, Reuse};
use prof_session::session::{Metadata, Session, SessionBuilder};
use prof_session::{Error, Result};
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes a thread allocates between two looks at whether a session started, while none runs.
/// Allocations made after a session starts and before a thread's next look are not sampled (at
/// most this many bytes per thread).
pub const CHECK_BYTES: i64 = 64 << 10;
/// Ring words (1 MiB; records take their actual depth): at the default interval a thread
/// allocating 1 GB/s makes 2,000 samples a second, and the collector drains every millisecond
/// when they come that fast.
const RING_WORDS: usize = 128 << 10;
/// The longest an allocating thread waits for room in a full ring before dropping its sample.
const FULL_WAIT_NS: u64 = 50_000_000;
/// Deepest stack recorded per sample.
const MAX_DEPTH: usize = 256;
/// Words before the frames in an alloc record: sample id, thread name (16 bytes).
const PREFIX: usize = 3;
/// The in-use table's size: 32,768 slots, 384 KiB, up to about 30,000 sampled blocks live at
/// once (16 GB of live heap at the default interval).
const LOG2_SLOTS: u32 = in_use::MAX_LOG2_SLOTS;
/// Unwinding states (about 40 KiB each) shared by the threads that sample at once.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const UNWIND_STATES: usize = 8;

/// The session id while an alloc session runs, 0 otherwise.
static SESSION_ID: AtomicU64 = AtomicU64::new(0);
/// Ids given to sessions so far.
static SESSIONS: AtomicU64 = AtomicU64::new(0);
/// The running session's mean sampling interval in bytes.
static MEAN: AtomicU64 = AtomicU64::new(1);
/// True while frees should look for their block in the in-use table.
static TRACKING: AtomicBool = AtomicBool::new(false);
/// Counts the sampled blocks still listed per address bucket (see `in_use.rs`).
static FILTER: Filter = Filter::new();
/// The running session's shared state, read by allocating threads under a read guard.
static SHARED: Rcu<Arc<Shared>> = Rcu::empty();

std::thread_local! {
    /// Bytes until this thread's next sample (or next look for a session).
    static LEFT: Cell<i64> = const { Cell::new(0) };
    /// The session whose distribution [`LEFT`] was drawn from (0: none).
    static EPOCH: Cell<u64> = const { Cell::new(0) };
    /// The thread's random state (0: not seeded yet).
    static RNG: Cell<u64> = const { Cell::new(0) };
    /// The thread's stack bounds, once read (hi 0: not yet).
    static STACK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The allocation sampler as [`Sampling`](crate::alloc::Sampling)'s hooks: told of every
/// block the program's global allocator hands out or takes back.
#[derive(Debug)]
pub struct Hooks;

impl sys::AllocHooks for Hooks {
    #[inline(always)]
    fn allocated(addr: usize, size: usize) {
        allocated(addr, size);
    }

    #[inline(always)]
    fn freed(addr: usize) {
        freed(addr);
    }
}

/// Called after every successful allocation of `size` bytes at `addr`.
#[inline(always)]
pub fn allocated(addr: usize, size: usize) {
    LEFT.with(|left| {
        let now = left.get().wrapping_sub(size as i64);
        left.set(now);
        if now < 0 {
            slow_alloc(addr as u64, size as u64);
        }
    });
}

/// Called before every free of the block at `addr`.
#[inline(always)]
pub fn freed(addr: usize) {
    if TRACKING.load(Ordering::Relaxed) && FILTER.may_hold(addr as u64) {
        slow_free(addr as u64);
    }
}

/// The counter ran out: look for a session, sample, draw the next distance.
#[cold]
#[inline(never)]
fn slow_alloc(addr: u64, size: u64) {
    if sys::bypassing() {
        return;
    }
    let session = SESSION_ID.load(Ordering::Acquire);
    if session == 0 {
        EPOCH.with(|e| e.set(0));
        LEFT.with(|l| l.set(CHECK_BYTES));
        return;
    }
    sys::set_bypass(true);
    let mean = MEAN.load(Ordering::Relaxed);
    let sampled = if EPOCH.with(Cell::get) == session {
        true
    } else {
        // The counter was not drawn in this session: start the process here. This allocation
        // is sampled when the first sampling point falls within its bytes.
        EPOCH.with(|e| e.set(session));
        let first = draw(mean);
        if first < size as i64 {
            true
        } else {
            LEFT.with(|l| l.set(first - size as i64));
            false
        }
    };
    if sampled {
        record(addr, size, session);
        // The process is memoryless: the next point is a fresh distance from this block's end.
        LEFT.with(|l| l.set(draw(mean)));
    }
    sys::set_bypass(false);
}

/// A free whose bucket holds a listed block: unlist it if it is one.
#[cold]
#[inline(never)]
fn slow_free(addr: u64) {
    let guard = sys::read_begin();
    if let Some(shared) = SHARED.get(&guard) {
        if shared.table.remove(addr) {
            FILTER.sub(addr);
        }
    }
}

/// An exponentially distributed distance with mean `mean` bytes, from the thread's generator.
fn draw(mean: u64) -> i64 {
    let u = RNG.with(|rng| {
        let mut x = rng.get();
        if x == 0 {
            // Seeded from the clock and this thread's own storage address (distinct per thread).
            x = splitmix(sys::monotonic_ns() ^ (rng as *const Cell<u64> as u64)) | 1;
        }
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    });
    // A uniform number in (0, 1]: the top 53 bits, plus one so that ln never sees 0.
    let uniform = ((u >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let distance = -uniform.ln() * mean as f64;
    distance.min((1u64 << 62) as f64) as i64
}

/// Records a sampled allocation: lists it, unwinds the calling stack into a ring record and
/// publishes it. Not inlined: its own frame is where unwinding starts (and is trimmed from the
/// report with the rest of the allocator's frames).
#[inline(never)]
fn record(addr: u64, size: u64, session: u64) {
    let regs = sys::current_regs();
    let guard = sys::read_begin();
    let Some(shared) = SHARED.get(&guard) else {
        return;
    };
    if shared.session != session {
        return;
    }
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    FILTER.add(addr);
    if !shared.table.insert(addr, id) {
        FILTER.sub(addr);
        shared.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let Some(mut claim) = shared.claim() else {
        shared.table.remove(addr);
        FILTER.sub(addr);
        shared.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let tid = sys::cached_tid();
    claim.push(u64::from(id));
    let name = sys::current_thread_name();
    claim.push(u64::from_le_bytes(name[..8].try_into().unwrap_or_default()));
    claim.push(u64::from_le_bytes(name[8..].try_into().unwrap_or_default()));
    shared.unwind(&regs, tid, &guard, &mut claim);
    let time_ns = sys::monotonic_ns().saturating_sub(shared.start_ns);
    shared.ring.publish(
        claim,
        &RawSample {
            tid,
            time_ns,
            weight: size,
        },
    );
}

/// The calling thread's stack bounds, read once per thread.
fn thread_stack() -> Option<(u64, u64)> {
    let (lo, hi) = STACK.with(Cell::get);
    if hi != 0 {
        return Some((lo, hi));
    }
    let bounds = sys::current_thread_stack()?;
    STACK.with(|s| s.set(bounds));
    Some(bounds)
}

/// What allocating threads share with the collector during a session.
struct Shared {
    session: u64,
    ring: Ring,
    /// The collector thread, woken when the ring is full.
    collector: std::sync::OnceLock<std::thread::Thread>,
    table: InUse,
    next_id: AtomicU32,
    dropped: AtomicU64,
    start_ns: u64,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    dwarf: Rcu<prof_capture::unwind::dwarf::DwarfSet>,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    unwind_states: Box<[TryCell<prof_capture::unwind::frame_reuse::State>]>,
    unwind: unwind::UnwindMode,
}

impl Shared {
    /// A ring record. When the ring is full, wakes the collector and waits for it up to
    /// [`FULL_WAIT_NS`], yielding: unlike a signal handler, an allocating thread may wait, and
    /// it holds nothing the collector needs (the wrapped allocator has returned). `None` when
    /// the ring stays full that long.
    fn claim(&self) -> Option<Claim<'_>> {
        if let Some(claim) = self.ring.claim() {
            return Some(claim);
        }
        let since = sys::monotonic_ns();
        loop {
            if let Some(collector) = self.collector.get() {
                collector.unpark();
            }
            std::thread::yield_now();
            if let Some(claim) = self.ring.claim() {
                return Some(claim);
            }
            if sys::monotonic_ns().saturating_sub(since) > FULL_WAIT_NS {
                return None;
            }
        }
    }

    /// Unwinds the calling thread from `regs` (taken in [`record`]) into `claim`: DWARF when the
    /// stack has room for it and a state is free, frame pointers otherwise.
    fn unwind(&self, regs: &Regs, tid: u32, guard: &sys::ReadGuard, claim: &mut Claim<'_>) {
        let room = thread_stack().map_or(0, |(lo, _)| regs.sp.saturating_sub(lo));
        // A read that faults is caught, and needs room for its signal frame (as in the handler).
        let access = sys::stack_access_here();
        let fault_room = access.map_or(0, StackAccess::fault_room);
        let stack = access
            .filter(|_| room >= super::handler::FP_ROOM + fault_room)
            .zip(thread_stack())
            .and_then(|(access, (lo, hi))| {
                StackReader::for_current_thread(access, regs.sp, lo, hi)
            });
        let mut done = false;
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if self.unwind == unwind::UnwindMode::Dwarf
            && room >= super::handler::DWARF_ROOM + fault_room
        {
            if let (Some(stack), Some(dwarf)) = (&stack, self.dwarf.get(guard)) {
                let n = self.unwind_states.len();
                for i in 0..n {
                    let state = &self.unwind_states[(tid as usize + i) % n];
                    let unwound = state.try_with(|state| {
                        unwind::dwarf(regs, stack, dwarf, state, tid, Reuse::Join, claim)
                    });
                    if let Some(unwound) = unwound {
                        done = unwound.started;
                        break;
                    }
                }
            }
        }
        let _ = (guard, room);
        if !done {
            // The loaded objects' code as of the last refresh: a pc outside it ends the stack.
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            let dwarf = self.dwarf.get(guard);
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            let dwarf: Option<&unwind::NoDwarf> = None;
            let known = |pc| dwarf.is_none_or(|d| d.knows(pc));
            unwind::frame_pointers(regs, stack.as_ref(), &known, claim);
        }
    }
}

/// A running allocation session.
pub struct Running {
    shared: Arc<Shared>,
    collector: std::thread::JoinHandle<collector::Collected>,
    stop: Arc<AtomicBool>,
    options: Options,
    meta: prof_session::session::Metadata,
    start_ns: u64,
}

/// Why an allocation session cannot start with `options`, if it cannot: checked before the
/// session is claimed, so a refused start never makes another one see "already running".
pub fn check(options: &Options) -> Result<()> {
    options.check()?;
    if !wrapper_installed() {
        return Err(Error::InvalidOption(
            "alloc mode needs `prof::alloc::Sampling` as the program's #[global_allocator]".into(),
        ));
    }
    Ok(())
}

/// Starts an allocation session (the caller holds the one-session-per-process flag).
pub fn start(options: Options) -> Result<Running> {
    check(&options)?;
    let unwind = options.unwind.mode()?;
    let mean = options.alloc_interval_bytes;
    // Stack reads that fault are caught before any allocation's stack is read.
    sys::catch_read_faults()?;
    let session = SESSIONS.fetch_add(1, Ordering::Relaxed) + 1;
    let start_ns = sys::monotonic_ns();
    let shared = Arc::new(Shared {
        session,
        ring: Ring::new(RING_WORDS, PREFIX + options.max_depth.min(MAX_DEPTH)),
        collector: std::sync::OnceLock::new(),
        table: InUse::new(LOG2_SLOTS),
        next_id: AtomicU32::new(0),
        dropped: AtomicU64::new(0),
        start_ns,
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        dwarf: Rcu::empty(),
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        unwind_states: (0..UNWIND_STATES)
            .map(|_| TryCell::new(prof_capture::unwind::frame_reuse::State::new()))
            .collect(),
        unwind,
    });
    let meta = prof_capture::assemble::at_start(prof_session::Mode::Alloc, 0, "global_allocator");
    let mut collector = collector::Collector::new(Arc::clone(&shared), options.max_samples);
    collector.refresh_modules();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("prof-alloc".into())
            .spawn(move || {
                // The collector's own allocations are never sampled.
                sys::set_bypass(true);
                collector.run(&stop)
            })
            .map_err(|source| Error::Os {
                call: "spawn collector thread",
                source,
            })?
    };
    let _ = shared.collector.set(handle.thread().clone());
    // Nothing is listed now (the previous session's readers are gone): the filter starts empty.
    FILTER.clear();
    sys::no_session_in_forked_children(crate::sampler::forked_child);
    SHARED.replace(Some(Box::new(Arc::clone(&shared))));
    MEAN.store(mean, Ordering::Relaxed);
    TRACKING.store(true, Ordering::SeqCst);
    SESSION_ID.store(session, Ordering::Release);
    Ok(Running {
        shared,
        collector: handle,
        stop,
        options,
        meta,
        start_ns,
    })
}

/// In a child forked during a session (from the atfork handler, see
/// [`sys::no_session_in_forked_children`]): no session here, the wrapper samples nothing and
/// frees look up nothing. Only atomic stores: async-signal-safe.
pub fn forked_child() {
    SESSION_ID.store(0, Ordering::Release);
    TRACKING.store(false, Ordering::SeqCst);
}

/// Whether this program's global allocator is [`Sampling`](prof_capture::sys::Sampling): an allocation
/// made here moves the thread's countdown only if it is.
fn wrapper_installed() -> bool {
    let before = LEFT.with(Cell::get);
    let probe = std::hint::black_box(Box::new([0u8; 64]));
    let after = LEFT.with(Cell::get);
    drop(probe);
    before != after || sys::bypassing()
}

impl Running {
    /// The monotonic clock at the session's start.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Ends the session: no new samples, waits for the allocations being sampled and the frees
    /// being matched, drains the ring and builds the report (in-use = listed at this point).
    pub fn stop(self) -> Result<Session> {
        self.finish().map(|build| build())
    }

    /// Stops tracking as [`Running::stop`] does and takes what was collected; the closure
    /// returned builds the session (symbolizing), which needs nothing of this one's, so
    /// another session may start first.
    pub fn finish(self) -> Result<impl FnOnce() -> Session> {
        SESSION_ID.store(0, Ordering::Release);
        TRACKING.store(false, Ordering::SeqCst);
        if std::process::id() != self.meta.pid {
            // A child forked during the session: the collector thread lives in the parent only,
            // and an allocation being sampled in another parent thread at fork time never
            // finishes here, so nothing is joined or waited for.
            std::mem::forget(self.collector);
            SHARED.replace(None);
            return Err(Error::ForkedChild);
        }
        // Every allocation or free that saw the session has finished once this returns.
        SHARED.clear_and_wait();
        let end_ns = sys::monotonic_ns();
        crate::scope::disable();
        self.stop.store(true, Ordering::Release);
        self.collector.thread().unpark();
        let collected = self.collector.join().map_err(|_| Error::Os {
            call: "collector thread",
            source: std::io::Error::other("the allocation collector panicked"),
        })?;
        let mut scopes = crate::scope::stop();
        if let Some(scopes) = &mut scopes {
            scopes.finish(end_ns.saturating_sub(self.start_ns));
        }
        let live = self.shared.table.live_ids();
        let mut meta = self.meta;
        meta.duration_ns = end_ns.saturating_sub(self.start_ns);
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        let options = self.options;
        Ok(move || {
            build(
                collected,
                &live,
                meta,
                dropped,
                options.alloc_interval_bytes,
                &options,
                scopes,
            )
        })
    }
}

/// Bytes the in-use table of a session holds (it is allocated once per session, whatever the
/// workload): a key and an id per slot.
pub fn in_use_table_bytes() -> usize {
    (1usize << LOG2_SLOTS) * (8 + 4)
}

/// True for the frames of the allocation path, which every sample would otherwise end in: the
/// capture core's list ([`is_allocator_frame`]) and this sampler's own code.
fn is_sampling_frame(name: &str, file: Option<&str>) -> bool {
    // This sampler's files, which know its inlined frames when only line tables name them.
    let ours = [file!(), in_use::SOURCE];
    is_allocator_frame(name, file)
        || file.is_some_and(|f| ours.iter().any(|s| f.ends_with(s)))
        || name
            .trim_start_matches('<')
            .starts_with("prof::sampler::alloc::")
}

/// Builds the allocation session at stop (symbolizing the stacks without the allocator's own
/// frames, scaling each sample to an unbiased estimate, marking the blocks still live): per
/// sample, `alloc_bytes`, `alloc_objects`, and `inuse_bytes`,
/// `inuse_objects` (the same estimate when its block was still listed at stop, else 0).
pub fn build(
    collected: collector::Collected,
    live: &[u32],
    mut meta: Metadata,
    dropped: u64,
    mean: u64,
    options: &Options,
    scopes: Option<crate::scope::recording::Recording>,
) -> Session {
    meta.dropped_samples = dropped + collected.dropped;
    let mut builder = SessionBuilder::new(meta);
    prof_capture::assemble::add_mappings(&mut builder, &collected.objects);
    let stack_ids = intern_stacks(
        &mut builder,
        &collected.stacks,
        &collected.objects,
        prof_capture::symbolize::AddressSpace::Own,
        Cut {
            leaf: &is_sampling_frame,
            ..Cut::depth(options.max_depth)
        },
    );
    let live: HashSet<u32> = live.iter().copied().collect();
    let mut threads = Threads::new(
        &mut builder,
        &collected.names,
        scopes.as_ref(),
        &collected.objects,
        options.max_depth,
    );
    for s in &collected.samples {
        let Some(stack) = stack_ids[s.stack as usize] else {
            continue;
        };
        let thread = threads.idx(&mut builder, s.tid);
        let (bytes, objects) = estimate(s.size, mean, splitmix(u64::from(s.id)));
        let (inuse_bytes, inuse_objects) = if live.contains(&s.id) {
            (bytes, objects)
        } else {
            (0, 0)
        };
        builder.push_sample_full(
            stack,
            thread,
            s.time_ns,
            &[bytes, objects, inuse_bytes, inuse_objects],
            1,
            None,
        );
        threads.set_context(&mut builder, s.tid, s.time_ns);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_samplers_own_frames_are_cut_with_the_allocation_path() {
        for name in [
            "prof::sampler::alloc::record",
            "<prof::sampler::alloc::Hooks as prof_capture::sys::global_alloc::AllocHooks>::allocated",
            "__rustc::__rust_alloc",
        ] {
            assert!(is_sampling_frame(name, None), "{name}");
        }
        assert!(!is_sampling_frame("prof::sampler::assemble::build", None));
        assert!(!is_sampling_frame("my_program::parse", Some("src/main.rs")));
    }
}
