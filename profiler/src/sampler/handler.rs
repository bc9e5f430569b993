//! What the signal handler does, in safe Rust: find the thread, measure the CPU time since its
//! last sample, unwind into a claimed ring record, publish. No allocation, no locks (only
//! atomics and try-once cells), no libgcc unwinding, no loader calls.

use super::ring::{RawSample, Ring};
use super::stackmap::{Range, StackMap};
use super::threads::{Parking, ThreadTable};
use crate::options::Measure;
use prof_capture::sys::{self, Rcu, Regs, Source, StackAccess, StackReader, TryCell};
use prof_capture::unwind::{self, UnwindMode};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Everything the handler reads, shared with the collector.
pub struct Shared {
    /// Raw samples on their way to the collector.
    pub ring: Ring,
    /// Each thread's clock at its last sample: CPU time, or the monotonic clock in wall mode.
    pub threads: ThreadTable,
    /// Readable mappings, for stack bounds.
    pub maps: StackMap,
    /// The DWARF unwinder over the loaded objects, replaced when objects change.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub dwarf: Rcu<prof_capture::unwind::dwarf::DwarfSet>,
    /// Unwinding scratch space (rule cache, last stack), a thread's chosen by its slot.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub unwind_states: Box<[TryCell<prof_capture::unwind::frame_reuse::State>]>,
    /// Whether to reuse the outer frames of a thread's previous stack (the diagnostics'
    /// `Settings::reuse` turns it off, for comparison).
    pub reuse: unwind::Reuse,
    /// Unwind every stack that reused frames a second time without reuse and count the
    /// differences (the diagnostics' `Settings::verify_reuse`, for tests).
    pub verify_reuse: bool,
    /// The thread each perf event descriptor belongs to, indexed by descriptor (0: none).
    pub fd_tids: Box<[AtomicU32]>,
    /// Samples dropped (ring full, thread table full).
    pub dropped: AtomicU64,
    /// Samples whose stack pointer was in no known mapping (a stack that grew, or a thread
    /// newer than the last snapshot): the collector re-reads the mappings when this changes.
    pub stack_misses: AtomicU64,
    /// The collector's pipe. An idle collector sleeps on it without a timeout; the handler
    /// then wakes it when the ring passes a quarter full or a sample's stack lies in no known
    /// mapping (once per such sleep, see `wake_pending`).
    pub wakeup: sys::Wakeup,
    /// False while the collector sleeps without a timeout and the handler has not woken it;
    /// the handler does not wake it otherwise (the collector wakes by itself then).
    pub wake_pending: AtomicBool,
    /// Whether a sample's stack lay in no known mapping since the collector last looked: most
    /// often a thread started since its last sweep, whose stack's bounds the next sweep
    /// publishes. The first such sample wakes the collector, whatever its sleep.
    pub miss_pending: AtomicBool,
    /// The monotonic clock at start.
    pub start_ns: u64,
    /// The monotonic clock when stop was asked for (0 until then): where `perf_ring`'s wall
    /// mode ends the time of threads still off their CPU.
    pub stop_ns: AtomicU64,
    /// Whether the handler registers threads it has not seen (process-wide timers, inherited
    /// perf events), or only samples threads the collector armed.
    pub register_unknown: bool,
    /// Whether perf events are inherited by new threads: their SIGTRAP then carries the id of
    /// the thread whose event was copied, so the handler asks for its own thread's id instead
    /// (cached in a thread local: no system call after a thread's first sample).
    pub inherit: bool,
    /// The unwinder to use.
    pub unwind: UnwindMode,
    /// Whether each signal of the thread's timer marks the end of one interval of its CPU time
    /// (the perf-event timers, at intervals of at least [`PERIOD_WEIGHT_MIN_NS`]): a sample
    /// that comes one interval after the thread's last then weighs the interval without a
    /// clock read (see [`ThreadTable::take_period`]). False for the other timers, whose
    /// samples always read the clock.
    pub periodic: bool,
    /// Samples with less CPU time than this since the thread's last one are not taken; the
    /// time goes to its next sample. Half the interval for `timer_create`, whose wall-clock
    /// timers also wake blocked threads (each wake-up costs the thread a few microseconds of
    /// CPU, and would otherwise be a sample); 0 for the CPU-time timers.
    pub min_weight_ns: u64,
    /// `timer_create` only (0 otherwise): after this many signals in a row that found a thread
    /// idle, the handler parks it: disarms its monotonic timer and arms a timer of the
    /// thread's own CPU clock, so a blocked thread is no longer woken; that timer's first
    /// signal (the thread ran for an interval) unparks it. See [`ThreadTable::note_timer_signal`].
    pub park_after: u32,
    /// The sampling interval: the weight of a periodic sample, and the period of re-armed timers.
    pub interval_ns: u64,
    /// What to measure, from the diagnostics' `Settings::measure`.
    pub measure: Measure,
    /// Wall mode: weights are monotonic-clock nanoseconds since the thread's previous sample
    /// (taken by its handler or by the collector), not CPU time.
    pub wall: bool,
}

/// The session the handler feeds, if any. Empty outside a session: a late signal does nothing.
pub static SHARED: Rcu<Arc<Shared>> = Rcu::empty();

/// Signals handled during sessions, since the process started.
pub static HANDLED: AtomicU64 = AtomicU64::new(0);
/// Samples whose outer frames were copied from their thread's previous stack.
pub static REUSED: AtomicU64 = AtomicU64::new(0);
/// Frames unwound by samples counted in [`REUSED`], up to the frame they joined at.
pub static FRAMES_BEFORE_REUSE: AtomicU64 = AtomicU64::new(0);
/// With `Settings::verify_reuse`: samples whose stack with reuse differed from a full unwind.
pub static REUSE_MISMATCHES: AtomicU64 = AtomicU64::new(0);

/// `timer_create` threads parked (see [`Shared::park_after`]) since the process started.
pub static PARKED: AtomicU64 = AtomicU64::new(0);
/// `timer_create` threads unparked since the process started.
pub static UNPARKED: AtomicU64 = AtomicU64::new(0);

/// Samples unwound with frame pointers only because the stack the handler ran on had too little
/// room left for DWARF unwinding (see [`DWARF_ROOM`]).
pub static SHORT_STACK_FP: AtomicU64 = AtomicU64::new(0);
/// Samples skipped (and counted as dropped) because the stack the handler ran on had too little
/// room left even for the frame-pointer walk (see [`FP_ROOM`]).
pub static SHORT_STACK_SKIPPED: AtomicU64 = AtomicU64::new(0);

/// Stack the DWARF unwinder may need below the handler's frame, with a margin. Measured from the
/// deepest byte touched on a painted alternate stack (`tests/sampler_altstack.rs`): framehop and
/// gimli keep unwind-table rows of several KiB on the stack, 8.3 KiB in a release build and
/// about 39 KiB in a debug build.
pub const DWARF_ROOM: u64 = if cfg!(debug_assertions) {
    64 << 10
} else {
    16 << 10
};
/// Stack the rest of a sample (ring claim, frame-pointer walk, clock read) may need below the
/// handler's frame, with a margin: about 0.2 KiB in a release build, 0.9 KiB in a debug build.
pub const FP_ROOM: u64 = if cfg!(debug_assertions) {
    3 << 10
} else {
    1 << 10
};

/// The shortest interval whose samples may weigh one period without a clock read: a sample
/// needs at least half a period of wall time since the thread's last to be one period later,
/// and the CPU time from the timer's expiry to the handler (a few microseconds) must stay
/// well below that.
pub const PERIOD_WEIGHT_MIN_NS: u64 = 100_000;

/// Samples of a periodic timer (see [`Shared::periodic`]) whose weight was read from the
/// thread's CPU clock (a system call), since the process started; the others weighed one
/// period. Samples of the other timers always read it and are not counted.
pub static CLOCK_READS: AtomicU64 = AtomicU64::new(0);

/// Nanoseconds spent inside the handler with [`Measure::Time`], since the process started.
pub static HANDLER_NS: AtomicU64 = AtomicU64::new(0);

/// What the raw handler in `sys` calls: this module's [`on_sample`] and [`skip_for_room`].
pub static SINK: sys::Sink = sys::Sink {
    fp_room: FP_ROOM,
    skip_for_room,
    on_sample,
};

/// Called by the raw handler in `sys` with the interrupted registers.
/// `alt` is the alternate signal stack when the interrupted code (and so this handler) runs on it;
/// `access`, when the interrupted stack may be read (a faulting read is caught there).
pub fn on_sample(
    regs: Regs,
    alt: Option<(u64, u64)>,
    here: u64,
    source: Source,
    access: Option<StackAccess>,
) {
    let guard = sys::read_begin();
    if let Some(shared) = SHARED.get(&guard) {
        if shared.measure == Measure::Empty {
            HANDLED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Never touch memory below the stack this handler runs on: with too little room for
        // the frame-pointer walk, skip the sample (its CPU time goes to the thread's next one).
        let mapping = shared.maps.find(regs.sp);
        let room = room_below(here, alt.or(mapping.map(|r| (r.lo, r.hi))));
        if room.is_some_and(|r| r < FP_ROOM) {
            skip_for_room();
            return;
        }
        let entered = (shared.measure == Measure::Time).then(sys::monotonic_ns);
        let clock = shared.clock(source);
        shared.sample(&regs, mapping, room, access, source, &guard, clock);
        if let Some(entered) = entered {
            // The monotonic clock (read in the vDSO, without a system call) from entry to exit,
            // the weight's clock read included. A run that took longer than MEASURE_CAP_NS was
            // preempted (or interrupted): count the cap, not the time spent off the CPU.
            let took = sys::monotonic_ns().saturating_sub(entered);
            HANDLER_NS.fetch_add(took.min(MEASURE_CAP_NS), Ordering::Relaxed);
            HANDLED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Counts a sample skipped for lack of stack room (its CPU time goes to the thread's next
/// sample); the session adds these to its dropped samples at stop.
pub fn skip_for_room() {
    SHORT_STACK_SKIPPED.fetch_add(1, Ordering::Relaxed);
}

/// How many bytes of the stack this handler runs on are left below `here`, its own frame. That
/// stack is the alternate one when the kernel says the interrupted code was on one, else the
/// mapping that holds the interrupted stack pointer (the handler runs just below it): `stack`.
/// `None` when `stack` is unknown or does not hold `here`.
fn room_below(here: u64, stack: Option<(u64, u64)>) -> Option<u64> {
    let (lo, hi) = stack?;
    (lo <= here && here < hi).then(|| here - lo)
}

/// A sample's clock as the handler read it at entry (see [`Shared::clock`]).
#[derive(Clone, Copy)]
enum Clock {
    /// The clock the weight is the difference of (thread CPU time, or monotonic in wall mode).
    Read(u64),
    /// A periodic timer's signal: the monotonic clock (see [`ThreadTable::take_period`]).
    Periodic(u64),
}

/// The most one handler run counts for in [`HANDLER_NS`]: a run this long was preempted.
const MEASURE_CAP_NS: u64 = 50_000;

/// A session's unwind states go to the next session (see `frame_reuse::states`): the last
/// reference goes once no handler or collector can reach the session.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl Drop for Shared {
    fn drop(&mut self) {
        prof_capture::unwind::frame_reuse::keep_states(std::mem::take(&mut self.unwind_states));
    }
}

impl Shared {
    /// The calling thread's clock for the sample's weight, read at the handler's entry: the
    /// monotonic clock in wall mode; for a signal of a periodic timer (see
    /// [`Shared::periodic`]) the monotonic clock too, the CPU clock being read later only if
    /// the sample does not come one period after the thread's last; else the CPU clock (a
    /// system call). A call of its own, so that the handler's frame (on a possibly small
    /// alternate stack) does not grow.
    fn clock(&self, source: Source) -> Clock {
        if self.wall {
            Clock::Read(sys::monotonic_ns())
        } else if self.periodic && matches!(source, Source::Perf(_) | Source::Fd(_)) {
            Clock::Periodic(sys::monotonic_ns())
        } else {
            Clock::Read(sys::thread_cpu_ns())
        }
    }

    /// The weight of the sample of the thread in `slot` (see [`Shared::clock`]).
    fn weight(&self, slot: usize, clock: Clock) -> u64 {
        match clock {
            Clock::Read(now) => {
                // A wall-mode signal counts from when the collector sent it: the thread was
                // where it is now all along unless it ran meanwhile, and a thread that waited
                // for a CPU (a busy machine) did not; the delay is not its next state's time.
                let sent = if self.wall {
                    self.threads.take_sent(slot)
                } else {
                    0
                };
                let now = if sent != 0 { sent.min(now) } else { now };
                self.threads
                    .take_delta_of_at_least(slot, now, self.min_weight_ns)
            }
            Clock::Periodic(wall) => self.threads.take_period(slot, wall, self.interval_ns, || {
                CLOCK_READS.fetch_add(1, Ordering::Relaxed);
                sys::thread_cpu_ns()
            }),
        }
    }

    /// The interrupted thread: from the signal when it says (saving a system call), else asked.
    fn thread_of(&self, source: Source) -> u32 {
        let known = match source {
            Source::Perf(_) if self.inherit => sys::cached_tid(),
            Source::Timer(tid) | Source::CpuTimer(tid) | Source::Perf(tid) | Source::Wall(tid) => {
                tid
            }
            Source::Fd(fd) => usize::try_from(fd)
                .ok()
                .and_then(|fd| self.fd_tids.get(fd))
                .map_or(0, |t| t.load(Ordering::Acquire)),
            Source::Other | Source::Sent | Source::Foreign => 0,
        };
        if known != 0 {
            known
        } else {
            sys::gettid()
        }
    }

    /// Parks or unparks the thread in `slot` after a timer signal (see [`Shared::park_after`]).
    fn park_or_unpark(&self, slot: usize, cpu_ns: u64, source: Source) {
        let cpu_timer = match source {
            Source::CpuTimer(_) => true,
            Source::Timer(_) => false,
            _ => return,
        };
        let Some((monotonic, cpu)) = self.threads.timers(slot) else {
            return;
        };
        // Arm the new timer before disarming the old, so that a failure leaves one armed.
        // A timer deleted meanwhile (the session stopping) fails and changes nothing. A
        // signal that found less CPU time than a sample needs found the thread idle.
        match self.threads.note_timer_signal(
            slot,
            cpu_ns,
            cpu_timer,
            self.min_weight_ns,
            self.park_after,
        ) {
            Parking::Stay => {}
            Parking::Park => {
                if sys::timer_set(cpu, self.interval_ns) {
                    sys::timer_set(monotonic, 0);
                    PARKED.fetch_add(1, Ordering::Relaxed);
                }
            }
            Parking::Unpark => {
                if sys::timer_set(monotonic, self.interval_ns) {
                    sys::timer_set(cpu, 0);
                    UNPARKED.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Samples the interrupted thread, whose stack pointer is in `mapping`. With `room` (see
    /// [`room_below`]) too small for DWARF, or unknown, walks frame pointers, which then read no
    /// stack at all when `mapping` is unknown. A read that faults (the stack's mapping changed
    /// since the snapshot) ends the walk there; the kernel needs room for that fault's frame
    /// below the deepest frame that reads, so the stack is read only when `room` is known and
    /// holds it too, and none at all without `access`.
    #[allow(clippy::too_many_arguments)]
    fn sample(
        &self,
        regs: &Regs,
        mapping: Option<Range>,
        room: Option<u64>,
        access: Option<StackAccess>,
        source: Source,
        guard: &sys::ReadGuard,
        clock: Clock,
    ) {
        let fault_room = access.map_or(0, StackAccess::fault_room);
        let access = access.filter(|_| room.is_some_and(|r| r >= FP_ROOM + fault_room));
        let dwarf_fits = room.is_some_and(|r| r >= DWARF_ROOM + fault_room);
        let tid = self.thread_of(source);
        let slot = if self.register_unknown {
            // A thread first seen here started after the session did (threads present at start
            // were registered with their clock then), so all its CPU time is the session's.
            self.threads.find_or_insert_new(tid, 0).map(|(slot, new)| {
                if new {
                    // Once per thread: its name, for threads gone before the collector looks.
                    self.threads.set_name(slot, sys::current_thread_name());
                }
                slot
            })
        } else {
            // Only armed threads get signals; anything else is a straggler from a disarmed one.
            match self.threads.find(tid) {
                Some(slot) => Some(slot),
                None => return,
            }
        };
        let Some(slot) = slot else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let weight = self.weight(slot, clock);
        if let (true, Clock::Read(cpu_ns)) = (self.park_after > 0, clock) {
            self.park_or_unpark(slot, cpu_ns, source);
        }
        if weight == 0 {
            return;
        }
        let Some(mut claim) = self.ring.claim() else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let in_mapping = mapping.filter(|r| r.lo <= regs.sp && regs.sp < r.hi);
        if in_mapping.is_none() {
            self.stack_misses.fetch_add(1, Ordering::Relaxed);
            if !self.miss_pending.swap(true, Ordering::SeqCst) {
                sys::wake(self.wakeup.waker());
            }
        }
        let stack = in_mapping
            .zip(access)
            .and_then(|(r, access)| StackReader::for_current_thread(access, regs.sp, r.lo, r.hi));
        let mut done = false;
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if self.unwind == UnwindMode::Dwarf && !dwarf_fits && stack.is_some() {
            SHORT_STACK_FP.fetch_add(1, Ordering::Relaxed);
        }
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if self.unwind == UnwindMode::Dwarf && dwarf_fits {
            if let (Some(stack), Some(dwarf)) = (&stack, self.dwarf.get(guard)) {
                // Each thread has a home state (its last stack is kept there); if another
                // handler holds it, any free one will do.
                let n = self.unwind_states.len();
                for i in 0..n {
                    let state = &self.unwind_states[(slot + i) % n];
                    let unwound = state.try_with(|state| {
                        if self.verify_reuse {
                            verify::unwind(regs, stack, dwarf, state, tid, &mut claim)
                        } else {
                            unwind::dwarf(regs, stack, dwarf, state, tid, self.reuse, &mut claim)
                        }
                    });
                    if let Some(unwound) = unwound {
                        if unwound.reused {
                            REUSED.fetch_add(1, Ordering::Relaxed);
                            FRAMES_BEFORE_REUSE
                                .fetch_add(u64::from(unwound.fresh), Ordering::Relaxed);
                        }
                        done = unwound.started;
                        break;
                    }
                }
            }
        }
        let _ = guard;
        if !done {
            // The loaded objects' code as of the last refresh: a pc outside it ends the stack.
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            let dwarf = self.dwarf.get(guard);
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            let dwarf: Option<&unwind::NoDwarf> = None;
            let known = |pc| dwarf.is_none_or(|d| d.knows(pc));
            unwind::frame_pointers(regs, stack.as_ref(), &known, &mut claim);
        }
        let time_ns = sys::monotonic_ns().saturating_sub(self.start_ns);
        self.ring.publish(
            claim,
            &RawSample {
                tid,
                time_ns,
                weight,
            },
        );
        if self.ring.past_quarter() {
            self.wake_collector();
        }
    }

    /// Wakes the collector if it sleeps without a timeout and the handler has not woken it.
    /// Async-signal-safe.
    fn wake_collector(&self) {
        if !self.wake_pending.swap(true, Ordering::SeqCst) {
            sys::wake(self.wakeup.waker());
        }
    }
}

/// Checking reuse against a full unwind, for tests.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod verify {
    use super::{unwind, Ordering, REUSE_MISMATCHES};
    use crate::sampler::ring::Claim;
    use prof_capture::sys::{Regs, StackReader};
    use prof_capture::unwind::frame_reuse::{State, MAX_FRAMES};
    use prof_capture::unwind::Reuse;

    /// Unwinds with reuse into `claim`, then, if frames were reused, again without and counts a
    /// mismatch when the two differ.
    #[inline(never)]
    pub fn unwind(
        regs: &Regs,
        stack: &StackReader,
        dwarf: &prof_capture::unwind::dwarf::DwarfSet,
        state: &mut State,
        tid: u32,
        claim: &mut Claim<'_>,
    ) -> unwind::Unwound {
        let mut first = [0u64; MAX_FRAMES];
        let mut n = 0;
        let unwound = unwind::dwarf(regs, stack, dwarf, state, tid, Reuse::Join, &mut |a| {
            if n < first.len() {
                first[n] = a;
                n += 1;
            }
            claim.push(a)
        });
        if unwound.reused {
            let mut again = [0u64; MAX_FRAMES];
            let mut m = 0;
            // Check: the kept stack stays the one just unwound with reuse, so that the next
            // sample's join is the one being checked.
            unwind::dwarf(regs, stack, dwarf, state, tid, Reuse::Check, &mut |a| {
                if m < n {
                    again[m] = a;
                    m += 1;
                }
                m < n
            });
            if first[..n] != again[..m] {
                REUSE_MISMATCHES.fetch_add(1, Ordering::Relaxed);
            }
        }
        unwound
    }
}

/// The handler's stack reads against memory that goes away under them.
#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod fault_tests {
    use prof_capture::sys::testing::{
        frame_marker, in_child, map, poke, run_child, spin_on, unmap,
    };
    use prof_capture::sys::READ_FAULTS;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    const PAGE: usize = 4096;

    /// A thread runs on a stack whose mapping the kernel merged with the anonymous
    /// mapping above it, its frame pointer pointing into that upper part; the part is unmapped
    /// while the session samples, the snapshot of the mappings still listing it. Without reads
    /// that catch faults the handler's frame-pointer (or DWARF) walk takes SIGSEGV there.
    #[test]
    fn sampling_a_frame_chain_into_a_region_unmapped_after_the_snapshot_does_not_crash() {
        const NAME: &str =
            "sampling_a_frame_chain_into_a_region_unmapped_after_the_snapshot_does_not_crash";
        if !in_child(NAME) {
            let (status, out) = run_child(module_path!(), NAME);
            assert!(status.success(), "{status:?}: {out}");
            return;
        }
        const STACK: usize = 256 * PAGE;
        const UPPER: usize = 16 * PAGE;
        // One mapping: the stack, and right above it the part to unmap.
        let base = map(STACK + UPPER);
        let upper = base + STACK as u64;
        let record = upper + 64;
        poke(record, 0);
        poke(record + 8, frame_marker as *const () as u64 + 1);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let spinner = {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                tid_tx.send(crate::sampler::current_tid()).unwrap();
                spin_on(upper - PAGE as u64, record, &stop)
            })
        };
        let tid = tid_rx.recv().unwrap();
        let options = crate::options::Options::default().interval(Duration::from_millis(1));
        let sampler = crate::sampler::Sampler::start(options).unwrap();
        let cpu = |tid| {
            prof_capture::sys::thread_cpu_ns_of(tid as u32)
                .map(Duration::from_nanos)
                .unwrap_or_default()
        };
        let wait_for_cpu = |ms| {
            let (start, since) = (cpu(tid), Instant::now());
            while cpu(tid) < start + Duration::from_millis(ms) && since.elapsed().as_secs() < 5 {
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        wait_for_cpu(20);
        let faults = READ_FAULTS.load(Ordering::Relaxed);
        unmap(upper, UPPER);
        wait_for_cpu(100);
        // Stopped while the thread still spins: a sample of its way out (dropping its channel,
        // ending) would have none of the frames this test is about.
        let session = sampler.stop().unwrap();
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        let faults = READ_FAULTS.load(Ordering::Relaxed) - faults;
        let s = &session;
        let stacks: Vec<Vec<String>> = (0..s.samples.len())
            .filter(|&i| s.threads[s.samples.thread[i].index()].tid == tid)
            .map(|i| {
                s.stack_frames(s.samples.stack[i])
                    .map(|f| s.frame_name(f).to_owned())
                    .collect()
            })
            .collect();
        let leaf_only = stacks.iter().filter(|st| st.len() == 1).count();
        let counts = format!(
            "{} samples, {leaf_only} leaf only, {faults} faults",
            stacks.len()
        );
        assert!(faults > 0, "no read reached the unmapped part: {counts}");
        assert!(leaf_only > 0, "{counts}: {stacks:?}");
        for stack in &stacks {
            assert!(stack[0].contains("spin_on"), "{stack:?}");
            assert!(
                stack[1..].iter().all(|f| f.contains("frame_marker")),
                "{stack:?}"
            );
            assert!(stack.len() <= 2, "{stack:?}");
        }
    }
}
