//! The collector thread: drains the ring into interned raw stacks, discovers threads through
//! `/proc/self/task` and arms the new ones, refreshes stack bounds and unwind tables, and at stop
//! disarms everything and hands back the raw profile.

use super::handler::Shared;
use super::mechanism::{self, Armed, Mechanism};
use super::ring::RawSample;
use super::samples::StoredSample;
use super::stackmap;
use super::threads;
use super::wall::{Found, Wall};
use prof_capture::assemble::StackIndex;
use prof_capture::symbolize::LoadedObject;
use prof_capture::sys;
use prof_session::session::SamplingEnded;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often new threads are looked for to arm them (and the longest the collector sleeps)
/// when the kernel does not arm them itself.
const SWEEP_EVERY: Duration = Duration::from_millis(20);
/// The longest sleep when no sweep is needed to arm new threads (their perf events are
/// inherited, or the timer is the process's) is the time in which every CPU sampling at the
/// session's rate fills half the ring (60 frames a sample), so a burst that starts just after
/// the collector went to sleep still finds room, with a margin of two; at least this and at
/// most [`LONGEST_SLEEP`]. The ring holds at least 0.1 s of such samples
/// (`ring::words_for_rate`): 64 ms at 1 kHz on 2 CPUs, the most at 100 Hz (its smallest ring
/// holds 0.64 s). Threads are then looked for at each wake-up, for their names. A wake-up that
/// finds nothing sleeps without a timeout until the handler wakes it (see `Shared::wakeup`).
const SHORTEST_LONGEST_SLEEP: Duration = Duration::from_millis(50);
/// See [`SHORTEST_LONGEST_SLEEP`]: 4 wake-ups a second at low rates.
const LONGEST_SLEEP: Duration = Duration::from_millis(250);

/// The longest a collector with a signal timer sleeps without looking whether the program
/// replaced prof's handler (see `Collector::end_sampling`).
const HANDLER_CHECK_EVERY: Duration = Duration::from_secs(1);
/// The shortest sleep, when samples arrive fast enough to fill the ring sooner.
const MIN_SLEEP: Duration = Duration::from_millis(1);
/// How often the mappings are re-read without a reason. New threads trigger a re-read at once;
/// samples whose stack pointer fell outside every known mapping trigger one at most every
/// [`MAPS_MISS_EVERY`].
const MAPS_EVERY: Duration = Duration::from_secs(1);
/// See [`MAPS_EVERY`].
const MAPS_MISS_EVERY: Duration = Duration::from_millis(100);
/// The most often a sample's stack in no known mapping (a new thread's) makes the collector
/// sweep for new threads.
const MISS_SWEEP_EVERY: Duration = Duration::from_millis(2);

/// The longest stop waits for signals raised before the timers were disarmed to be delivered.
const IN_FLIGHT_WAIT: Duration = Duration::from_millis(20);

/// Waits while a `signal` raised before the timers were disarmed is still to be delivered to a
/// thread (one not running gets it when it is next scheduled), at most [`IN_FLIGHT_WAIT`];
/// where pending signals cannot be read (or would cost more to read, see
/// [`threads::signal_pending`]), a fixed 5 ms, within which a scheduling quantum ends.
fn wait_for_signals_in_flight(signal: i32) {
    let start = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match threads::signal_pending(signal) {
            Some(false) => return,
            None => return std::thread::sleep(Duration::from_millis(5)),
            Some(true) if start.elapsed() >= IN_FLIGHT_WAIT => return,
            Some(true) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(1));
            }
        }
    }
}

/// How long to sleep before the next drain: long enough that the collector's wake-ups cost
/// little (each costs the process CPU), short enough that at the rate samples just arrived the
/// ring is at most a quarter full by then (`drained` and `capacity` in the ring's words).
/// At most `longest`.
/// The collectors also give it a thread's scope buffer (`scope::drain`'s fullest and
/// `scope::BUFFER_WORDS`), and sleep the shorter of the two.
pub(super) fn next_sleep(
    drained: usize,
    over: Duration,
    capacity: usize,
    longest: Duration,
) -> Duration {
    let per_second = drained as f64 / over.as_secs_f64().max(1e-3);
    let until_quarter = (capacity / 4) as f64 / per_second.max(1.0);
    Duration::from_secs_f64(until_quarter).clamp(MIN_SLEEP, longest)
}

/// What the collector hands back at stop.
#[derive(Default)]
pub struct RawProfile {
    /// Distinct stacks, addresses leaf first (the first is the interrupted instruction, the
    /// others return addresses).
    pub stacks: Vec<Box<[u64]>>,
    /// Samples in arrival order (in time order in wall mode), about 7 bytes each.
    pub samples: super::samples::SampleLog,
    /// Thread names by id, as last seen.
    pub names: HashMap<u32, String>,
    /// Samples dropped by the collector (over `max_samples`).
    pub dropped: u64,
    /// Threads that could not be armed.
    pub arm_failures: u64,
    /// Every object loaded at some point of the session (as seen at start and at each sweep),
    /// in the order first seen, for symbolization and module names.
    pub objects: Vec<LoadedObject>,
    /// Wall mode: what the collector's ticks did.
    pub wall: Option<super::wall::WallStats>,
    /// When and why sampling ended before stop (see [`Collector::end_sampling`]); the samples
    /// it could not take after that are estimated in `dropped`.
    pub sampling_ended: Option<SamplingEnded>,
}

/// The CPU time of the process's threads other than the calling one (the collector): what the
/// program spent.
fn program_cpu_ns() -> u64 {
    sys::process_cpu_ns().saturating_sub(sys::thread_cpu_ns())
}

/// The collector's state; runs on its own thread after [`Collector::sweep`] armed the threads
/// that existed at start.
pub struct Collector {
    shared: Arc<Shared>,
    mechanism: Mechanism,
    interval_ns: u64,
    max_samples: usize,
    own_tid: u32,
    armed: HashMap<u32, Option<Armed>>,
    /// Inherited perf events of threads that exited: closing one would end the copies in the
    /// threads it created, so they stay open until stop.
    retired: Vec<Armed>,
    /// The threads listed by the last sweep.
    live: Vec<u32>,
    /// Finds a stack's index in `out.stacks`.
    index: StackIndex,
    out: RawProfile,
    scratch: Vec<u64>,
    /// The most words a thread's scope buffer held at the last drain (see `scope::drain`).
    scope_fullest: usize,
    objects: prof_capture::objects::ObjectWatch,
    /// Wall mode's per-thread state; `None` in CPU mode.
    wall: Option<Wall>,
    max_depth: usize,
    /// Sampling ended before stop because the program replaced prof's handler.
    ended: bool,
    /// The monotonic clock at the last wake-up that found prof's handler in place (signal
    /// timers only): the replacement happened after it.
    ours_at_ns: u64,
    /// The program's CPU time when the collector started ([`program_cpu_ns`]).
    start_program_cpu_ns: u64,
    /// `perf_ring`'s rings (see `own_ring.rs`); `None` for the signal timers.
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    rings: Option<super::own_ring::OwnRings>,
}

/// Where `perf_ring`'s samples go: the collector's profile.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
struct ProfileSink<'a> {
    index: &'a mut StackIndex,
    out: &'a mut RawProfile,
    max_samples: usize,
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
impl super::own_ring::Sink for ProfileSink<'_> {
    fn intern(&mut self, stack: &[u64]) -> u32 {
        self.index.intern(&mut self.out.stacks, stack)
    }

    fn push(&mut self, sample: StoredSample) {
        if self.out.samples.len() >= self.max_samples {
            self.out.dropped += 1;
            return;
        }
        self.out
            .names
            .entry(sample.raw.tid)
            .or_insert_with(|| threads::thread_name(sample.raw.tid));
        self.out.samples.push(sample);
    }
}

impl Collector {
    /// A collector for a session.
    pub fn new(
        shared: Arc<Shared>,
        mechanism: Mechanism,
        interval_ns: u64,
        max_samples: usize,
    ) -> Collector {
        Collector {
            shared,
            mechanism,
            interval_ns,
            max_samples,
            own_tid: 0,
            armed: HashMap::new(),
            retired: Vec::new(),
            live: Vec::new(),
            index: StackIndex::default(),
            out: RawProfile::default(),
            scratch: Vec::new(),
            scope_fullest: 0,
            objects: prof_capture::objects::ObjectWatch::new(),
            wall: None,
            max_depth: usize::MAX,
            ended: false,
            ours_at_ns: 0,
            start_program_cpu_ns: 0,
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            rings: (mechanism == Mechanism::PerfRing)
                .then(|| super::own_ring::OwnRings::new(interval_ns, false, usize::MAX)),
        }
    }

    /// Turns on wall mode: each [`Collector::run`] tick samples every thread (see `wall.rs`).
    pub fn set_wall(&mut self, wall: Wall, max_depth: usize) {
        self.wall = Some(wall);
        self.max_depth = max_depth;
    }

    /// Sets the deepest stack `perf_ring` keeps (in wall mode too, where its rings also take
    /// the context switches).
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    pub fn set_ring_depth(&mut self, max_depth: usize, wall: bool) {
        self.max_depth = max_depth;
        if self.rings.is_some() {
            self.rings = Some(super::own_ring::OwnRings::new(
                self.interval_ns,
                wall,
                max_depth,
            ));
        }
    }

    /// Opens `perf_ring`'s events on thread `tid`.
    fn arm_ring(&mut self, tid: u32) -> prof_session::Result<Option<Armed>> {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(rings) = &mut self.rings {
            return rings.arm(tid).map(|fds| Some(Armed::Ring(fds)));
        }
        let _ = tid;
        Ok(None)
    }

    /// `perf_ring` in wall mode: a thread blocked when it is armed at start is charged from
    /// the start to its next switch-in, at the stack the collector reads (see `wall.rs`).
    fn note_blocked_at_start(&mut self, tid: u32) {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let (Some(rings), Some(wall)) = (&mut self.rings, &mut self.wall) {
            if let Some(addrs) =
                wall.blocked_stack(tid, &self.shared, &self.out.objects, self.max_depth)
            {
                let stack = self.index.intern(&mut self.out.stacks, &addrs);
                rings.blocked_at_start(tid, stack, self.shared.start_ns);
            }
        }
        let _ = tid;
    }

    /// Reads the loaded objects and installs a new unwinder when they changed.
    pub fn refresh_modules(&mut self) {
        self.objects.refresh(
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            &self.shared.dwarf,
            &mut self.out.objects,
        );
    }

    /// Publishes a fresh snapshot of the readable mappings.
    pub fn refresh_maps(&self) {
        self.shared.maps.publish(&stackmap::read_maps());
    }

    /// The collector thread's own id: it is never armed.
    pub fn set_own_tid(&mut self, tid: u32) {
        self.own_tid = tid;
    }

    /// Arms every thread there is, for per-thread timers. With inherited perf events, threads
    /// created from then on by an armed thread are armed by the kernel, so sweeps no longer arm
    /// anything; threads created while this runs by a thread not yet armed are caught by
    /// sweeping again until a sweep finds no new thread (bounded). Such a thread may also have
    /// inherited an event, and then gets two: twice the samples at half the weight each.
    pub fn arm_at_start(&mut self) {
        self.sweep_arming(true, true);
        for _ in 0..16 {
            let before = self.armed.len();
            self.sweep_arming(true, true);
            if self.armed.len() == before {
                break;
            }
        }
    }

    /// Registers and arms threads that appeared, forgets those that exited. Threads present at
    /// start (`at_start`) are registered with their current CPU clock; later ones with zero, as
    /// all their CPU time was spent after start, so their first sample carries it.
    pub fn sweep(&mut self, at_start: bool) -> bool {
        self.sweep_arming(at_start, !self.shared.inherit)
    }

    fn sweep_arming(&mut self, at_start: bool, arm: bool) -> bool {
        // Once sampling ended early no thread is armed again.
        let arm = arm && !self.ended;
        // Threads the handler registered by itself (inherited events) are known only from the
        // table: read it before listing, so that a thread missing from the list exited.
        let registered = if self.shared.inherit {
            self.shared.threads.tids()
        } else {
            Vec::new()
        };
        let tids = threads::list_tids();
        let mut new = Vec::new();
        for &tid in &tids {
            if tid != self.own_tid && !self.armed.contains_key(&tid) {
                new.push(tid);
            }
        }
        if !new.is_empty() {
            // New threads have new stacks: publish their bounds before their first sample.
            self.refresh_maps();
        }
        for tid in new {
            self.out.names.insert(tid, threads::thread_name(tid));
            let armed = if self.mechanism.per_thread() && !arm {
                None
            } else if self.mechanism.per_thread() {
                // Register with the thread's clock now, then arm, so the first sample's weight
                // is exactly the CPU time since arming.
                let Some(cpu) = sys::thread_cpu_ns_of(tid) else {
                    continue;
                };
                // Wall mode counts from the start for threads there then, else from now.
                let clock = match (self.wall.is_some(), at_start) {
                    (true, true) => self.shared.start_ns,
                    (true, false) => sys::monotonic_ns(),
                    (false, true) => cpu,
                    (false, false) => 0,
                };
                let Some(slot) = self.shared.threads.find_or_insert(tid, clock) else {
                    self.out.arm_failures += 1;
                    continue;
                };
                let armed = if self.mechanism == Mechanism::PerfRing {
                    self.arm_ring(tid)
                } else {
                    mechanism::arm(self.mechanism, tid, self.interval_ns, self.shared.inherit)
                };
                if at_start && self.mechanism == Mechanism::PerfRing && armed.is_ok() {
                    self.note_blocked_at_start(tid);
                }
                match armed {
                    Ok(armed) => {
                        self.note_fd(armed.as_ref(), tid);
                        if let Some((monotonic, cpu)) =
                            armed.as_ref().and_then(mechanism::timer_ids)
                        {
                            self.shared.threads.set_timers(slot, monotonic, cpu);
                        }
                        armed
                    }
                    Err(_) => {
                        self.out.arm_failures += 1;
                        None
                    }
                }
            } else {
                None
            };
            self.armed.insert(tid, armed);
        }
        let gone: Vec<u32> = self
            .armed
            .keys()
            .copied()
            .filter(|t| !tids.contains(t))
            .collect();
        for tid in &gone {
            if let Some(Some(armed)) = self.armed.remove(tid) {
                if self.shared.inherit {
                    self.retired.push(armed);
                } else {
                    self.note_fd(Some(&armed), 0);
                    mechanism::disarm(armed);
                }
            }
            self.shared.threads.remove(*tid);
        }
        if !registered.is_empty() {
            let alive: std::collections::HashSet<u32> = tids.iter().copied().collect();
            for tid in registered {
                if !alive.contains(&tid) {
                    self.shared.threads.remove(tid);
                }
            }
        }
        self.live = tids;
        !gone.is_empty()
    }

    /// Tells the handler which thread a perf event descriptor belongs to (0: none).
    fn note_fd(&self, armed: Option<&Armed>, tid: u32) {
        if let Some(Armed::Perf(fd)) = armed {
            use std::os::fd::AsRawFd;
            if let Some(slot) = usize::try_from(fd.as_raw_fd())
                .ok()
                .and_then(|fd| self.shared.fd_tids.get(fd))
            {
                slot.store(tid, Ordering::Release);
            }
        }
    }

    /// For process-wide timers: registers the threads that exist now with their current CPU
    /// clocks, so their first sample weighs only the time since start.
    pub fn register_existing(&mut self) {
        for tid in threads::list_tids() {
            if let Some(cpu) = sys::thread_cpu_ns_of(tid) {
                self.shared.threads.find_or_insert(tid, cpu);
            }
        }
    }

    /// Moves the samples waiting in the ring into the profile; returns how many words of the
    /// ring they took.
    fn drain(&mut self) -> usize {
        // The scope buffers first: they fill faster than the ring at a high scope rate.
        self.scope_fullest = crate::scope::drain();
        let shared = Arc::clone(&self.shared);
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut drained = 0;
        loop {
            let words = shared.ring.pop(|raw, addrs| {
                if self.out.samples.len() >= self.max_samples {
                    self.out.dropped += 1;
                    return;
                }
                // A thread registered by its own handler, maybe gone already: the name it recorded
                // then, else the one it has now.
                self.out.names.entry(raw.tid).or_insert_with(|| {
                    shared
                        .threads
                        .name_of(raw.tid)
                        .unwrap_or_else(|| threads::thread_name(raw.tid))
                });
                scratch.clear();
                scratch.extend(addrs);
                let stack = self.index.intern(&mut self.out.stacks, &scratch);
                self.out.samples.push(StoredSample {
                    stack,
                    raw,
                    waiting: false,
                });
            });
            if words == 0 {
                break;
            }
            drained += words;
        }
        self.scratch = scratch;
        drained + self.drain_rings(false)
    }

    /// Drains `perf_ring`'s rings (all their records when `last`); returns the most bytes one
    /// held, in words (see [`Collector::drain`]).
    fn drain_rings(&mut self, last: bool) -> usize {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(rings) = &mut self.rings {
            let mut sink = ProfileSink {
                index: &mut self.index,
                out: &mut self.out,
                max_samples: self.max_samples,
            };
            return rings.drain(&self.shared, &mut sink, last) / 8;
        }
        let _ = last;
        0
    }

    /// How long the collector may sleep before `perf_ring`'s rings need draining, when a
    /// drain found at most `fullest` words in one: a ring an eighth full is read again at once.
    fn ring_sleep(&self, fullest: usize) -> Option<Duration> {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(rings) = &self.rings {
            let smallest = rings.smallest();
            let full = prof_capture::perf::RING_PAGES * 4096;
            if fullest * 8 >= smallest / 8 {
                return Some(Duration::ZERO);
            }
            let every = prof_capture::perf::DRAIN_EVERY * smallest.min(full) as u32 / full as u32;
            return Some(every.max(Duration::from_micros(500)));
        }
        let _ = fullest;
        None
    }

    /// Wall mode's tick: one sample of every thread (see `wall.rs`), the running ones through
    /// their handler.
    fn wall_tick(&mut self) {
        let Some(mut wall) = self.wall.take() else {
            return;
        };
        wall.stats.ticks += 1;
        let shared = Arc::clone(&self.shared);
        for i in 0..self.live.len() {
            let tid = self.live[i];
            if tid == self.own_tid {
                continue;
            }
            let Some(slot) = shared.threads.find(tid) else {
                continue;
            };
            let (stack, captured) =
                match wall.look(tid, slot, &shared, &self.out.objects, self.max_depth) {
                    Found::Unchanged(stack) => (stack, None),
                    Found::Blocked(addrs, cpu) => {
                        (self.index.intern(&mut self.out.stacks, &addrs), Some(cpu))
                    }
                    Found::Signalled | Found::Nothing => continue,
                };
            if let Some(cpu) = captured {
                wall.captured(tid, stack, cpu);
            }
            let now = sys::monotonic_ns();
            let weight = shared.threads.take_delta(slot, now);
            if weight == 0 {
                continue;
            }
            if self.out.samples.len() >= self.max_samples {
                self.out.dropped += 1;
                continue;
            }
            self.out.samples.push(StoredSample {
                stack,
                raw: RawSample {
                    tid,
                    time_ns: now.saturating_sub(shared.start_ns),
                    weight,
                },
                waiting: true,
            });
        }
        self.wall = Some(wall);
    }

    /// The collector loop, until `stop` is set; then disarms, drains and returns the profile.
    pub fn run(mut self, stop: Arc<AtomicBool>) -> RawProfile {
        self.ours_at_ns = sys::monotonic_ns();
        self.start_program_cpu_ns = program_cpu_ns();
        let waker = self.shared.wakeup.waker();
        // The pipe lives in `Shared`, which this thread holds until after `wake_on_fill(None)`.
        crate::scope::wake_on_fill(Some(Box::new(move || sys::wake(waker))));
        let mut last_sweep = Instant::now();
        let mut last_maps = Instant::now();
        let mut last_drain = Instant::now();
        let mut misses = self.shared.stack_misses.load(Ordering::Relaxed);
        let mut sweeps = 0u64;
        let interval = Duration::from_nanos(self.interval_ns);
        let mut next_tick = Instant::now();
        // Per-thread timers that the kernel does not copy into new threads need a sweep to
        // arm each new thread, so the collector wakes at every sweep; the others only as the
        // ring needs.
        let arms_by_sweeping = self.mechanism.per_thread() && !self.shared.inherit;
        let longest = if arms_by_sweeping {
            SWEEP_EVERY
        } else {
            let cpus = std::thread::available_parallelism().map_or(1, usize::from);
            let fill = super::ring::fill_time(self.shared.ring.capacity(), self.interval_ns, cpus);
            (fill / 2).clamp(SHORTEST_LONGEST_SLEEP, LONGEST_SLEEP)
        };
        // New threads are armed by a sweep only when the kernel does not arm them itself; else
        // a sweep only names them, as often as the collector wakes.
        let sweep_every = SWEEP_EVERY.max(longest);
        while !stop.load(Ordering::Acquire) {
            super::counters::COLLECTOR_WAKEUPS.fetch_add(1, Ordering::Relaxed);
            if !self.ended && self.mechanism.signals() {
                if self.handler_replaced() {
                    self.end_sampling();
                } else {
                    self.ours_at_ns = sys::monotonic_ns();
                }
            }
            if !self.ended
                && self.wall.is_some()
                && self.mechanism == Mechanism::WallTicker
                && Instant::now() >= next_tick
            {
                self.wall_tick();
                // Ticks missed (the collector was not scheduled) are not made up: the next
                // samples' weights are the elapsed time, gap included.
                next_tick = (next_tick + interval).max(Instant::now());
            }
            let drained = self.drain();
            let since_drain = last_drain.elapsed();
            last_drain = Instant::now();
            // A stack in no known mapping is most often a thread's started since the last
            // sweep, whose stack's bounds a sweep publishes: sweep at once (at most every
            // MISS_SWEEP_EVERY), not at the next sweep, which left up to 250 ms of each thread
            // started during a session sampled without its callers.
            let missed = self.shared.miss_pending.swap(false, Ordering::SeqCst);
            // A sleep rounds up to whole timer ticks: sweep when the next one would be late.
            if last_sweep.elapsed() + MIN_SLEEP >= sweep_every
                || (missed && last_sweep.elapsed() >= MISS_SWEEP_EVERY)
            {
                last_sweep = Instant::now();
                sweeps += 1;
                self.sweep(false);
                self.wall_retain();
                self.refresh_modules();
                if sweeps % 20 == 0 {
                    self.refresh_names();
                }
            }
            let now_misses = self.shared.stack_misses.load(Ordering::Relaxed);
            let since_maps = last_maps.elapsed();
            if (now_misses != misses && since_maps >= MAPS_MISS_EVERY) || since_maps >= MAPS_EVERY {
                misses = now_misses;
                last_maps = Instant::now();
                self.refresh_maps();
            }
            // Waiting on the pipe rather than asleep, so that stop, the handler and the scope
            // buffers can wake it at once.
            let wakeup = &self.shared.wakeup;
            let sleep = next_sleep(drained, since_drain, self.shared.ring.capacity(), longest);
            // A busy scope buffer shortens the sleep as a busy ring does.
            let scope_sleep = next_sleep(
                self.scope_fullest,
                since_drain,
                crate::scope::BUFFER_WORDS,
                longest,
            );
            let sleep = sleep.min(scope_sleep);
            if let Some(ring_sleep) = self.ring_sleep(drained) {
                if !ring_sleep.is_zero() {
                    wakeup.wait(Some(ring_sleep.min(sleep)));
                }
                continue;
            }
            wakeup.wait(if self.wall.is_some() {
                Some(
                    next_tick
                        .saturating_duration_since(Instant::now())
                        .min(scope_sleep),
                )
            } else if drained == 0
                && self.scope_fullest == 0
                && !arms_by_sweeping
                && self.shared.stack_misses.load(Ordering::Relaxed) == misses
            {
                // Nothing came since the last wake-up, no miss waits for the mappings and no
                // sweep needs to arm new threads: sleep until the handler (a quarter of the
                // ring, a stack in no known mapping), a scope buffer or stop wakes the
                // collector. The handler wakes it once per such sleep; a sample that came
                // just before is drained by the next wake-up, or by stop. With a signal timer
                // it wakes once a second all the same, to see whether the program replaced
                // prof's handler (no sample would wake it then, and prof's signals would go on
                // reaching the program's handler).
                self.shared.wake_pending.store(false, Ordering::SeqCst);
                self.mechanism.signals().then_some(HANDLER_CHECK_EVERY)
            } else {
                Some(sleep)
            });
        }
        crate::scope::wake_on_fill(None);
        self.finish()
    }

    /// True when the program replaced prof's handler of the signal the timers deliver: from
    /// then on prof's signals would reach the program's handler (a timer at prof's rate that
    /// the program never asked for) and take no sample.
    fn handler_replaced(&self) -> bool {
        self.mechanism.signals()
            && sys::current_handler(self.mechanism.signal()) != sys::our_handler()
    }

    /// Ends sampling before stop, because the program replaced prof's handler: every timer is
    /// disarmed (the program's handler gets no more of prof's signals; a process-wide
    /// `ITIMER_PROF` only while it still runs at prof's period, else the program armed its
    /// own), wall mode's ticks stop and no thread is armed again. When it ended and what it
    /// lost are settled at stop, once every sample is in (see `finish`).
    fn end_sampling(&mut self) {
        self.ended = true;
        let signal = if self.mechanism.signal() == sys::TRAP {
            "SIGTRAP"
        } else {
            "SIGPROF"
        };
        self.out.sampling_ended = Some(SamplingEnded {
            at_ns: 0,
            reason: format!("the program replaced prof's {signal} handler"),
        });
        if self.mechanism == Mechanism::Setitimer
            && sys::itimer_prof_period_ns() / 1_000 == self.interval_ns / 1_000
        {
            let _ = sys::setitimer_prof(0);
        }
        let armed: Vec<Armed> = self.armed.values_mut().filter_map(Option::take).collect();
        let retired = std::mem::take(&mut self.retired);
        for armed in armed.into_iter().chain(retired) {
            self.note_fd(Some(&armed), 0);
            mechanism::disarm(armed);
        }
    }

    /// The samples sampling would have taken after its early end at `ended_ns`, to `end_ns`
    /// (monotonic), once every sample is in: in CPU mode the program's CPU time in the session
    /// that no sample's weight accounts for, over the interval (less the samples already
    /// counted as dropped), which holds however late the end was seen; in wall mode every
    /// live thread's time from the end on.
    fn lost_after_end(&self, ended_ns: u64, end_ns: u64) -> u64 {
        let interval = self.interval_ns.max(1);
        if self.wall.is_some() {
            let threads = self.live.iter().filter(|&&t| t != self.own_tid).count() as u64;
            return end_ns.saturating_sub(ended_ns) * threads / interval;
        }
        let start_cpu = self.start_program_cpu_ns;
        let sampled: u64 = self.out.samples.iter().map(|s| s.raw.weight).sum();
        let unsampled = program_cpu_ns()
            .saturating_sub(start_cpu)
            .saturating_sub(sampled);
        let dropped = self.out.dropped + self.shared.dropped.load(Ordering::Relaxed);
        (unsampled / interval).saturating_sub(dropped)
    }

    fn finish(mut self) -> RawProfile {
        let end_ns = match self.shared.stop_ns.load(Ordering::Acquire) {
            0 => sys::monotonic_ns(),
            asked => asked,
        };
        // A replacement the collector slept through (no sample woke it) is seen here: it
        // happened after the last wake-up that found prof's handler, and after the last sample
        // (known once every sample is drained, below).
        if !self.ended && self.handler_replaced() {
            self.end_sampling();
        }
        if self.mechanism == Mechanism::Setitimer && !self.ended {
            let _ = sys::setitimer_prof(0);
        }
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(rings) = &mut self.rings {
            rings.end_at(end_ns);
        }
        #[cfg(not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )))]
        let _ = end_ns;
        let retired = std::mem::take(&mut self.retired);
        let armed = std::mem::take(&mut self.armed).into_values().flatten();
        for armed in armed.chain(retired) {
            self.note_fd(Some(&armed), 0);
            mechanism::disarm(armed);
        }
        if self.mechanism.signals() {
            wait_for_signals_in_flight(self.mechanism.signal());
        }
        // No handler reaches the ring from here on, so the last drain takes all it will hold.
        super::handler::SHARED.clear_and_wait();
        self.drain();
        self.drain_rings(true);
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(rings) = &mut self.rings {
            let mut sink = ProfileSink {
                index: &mut self.index,
                out: &mut self.out,
                max_samples: self.max_samples,
            };
            if self.wall.is_some() {
                rings.finish(self.shared.start_ns, &mut sink);
            }
            self.out.dropped += rings.lost;
        }

        self.live = threads::list_tids();
        self.refresh_names();
        // Sampling ended with the last sample taken (when the collector saw the replacement
        // at a wake-up, some of prof's signals may have come between: they took no sample).
        if self.ended {
            let start = self.shared.start_ns;
            let last = self.out.samples.iter().map(|s| s.raw.time_ns).max();
            let ended_ns = last.map_or(0, |t| t + start).max(self.ours_at_ns);
            if let Some(said) = &mut self.out.sampling_ended {
                said.at_ns = ended_ns.saturating_sub(start);
            }
            self.out.dropped += self.lost_after_end(ended_ns, end_ns);
        }
        if let Some(wall) = &self.wall {
            // The collector's samples went straight in, the handlers' through the ring: put
            // them back in time order (per thread, time must not go backwards).
            self.out.samples.sort_by_time();
            self.out.wall = Some(wall.stats);
        } else if self.mechanism == Mechanism::PerfRing {
            // Each drain stores its records in time order, but one a CPU wrote late can come
            // after a newer one of the previous drain.
            self.out.samples.sort_by_time();
        }
        self.out
    }

    /// Forgets wall-mode state of exited threads.
    fn wall_retain(&mut self) {
        if let Some(wall) = &mut self.wall {
            wall.retain(&self.live);
        }
    }

    /// Re-reads the names of the threads alive at the last sweep (a thread may rename itself).
    fn refresh_names(&mut self) {
        for tid in &self.live {
            if let Some(name) = self.out.names.get_mut(tid) {
                let now = threads::thread_name(*tid);
                if !now.is_empty() {
                    *name = now;
                }
            }
        }
    }
}
