//! `Timer::PerfRing`: the process's own threads sampled without any signal. Each thread has,
//! on each CPU, a task-clock perf event (inherited by the threads it creates, not by child
//! processes) whose samples carry the user registers and a copy of the top of the user stack;
//! every event of one CPU writes into one mmap'd ring (`perf_event_set_output`). The collector
//! drains the rings, unwinds each copy with the session's DWARF unwinder (frame pointers where
//! it knows nothing, as `prof record` does: `unwind::copied`) and stores the samples with their
//! period as weight: CPU nanoseconds. Nothing runs in the sampled thread but the kernel's copy.
//!
//! Wall mode adds, per thread and CPU, a context-switch event that samples the stack at every
//! switch-out and writes `PERF_RECORD_SWITCH` records: the time a thread spends off its CPU,
//! from its switch-out to its next switch-in, is charged to the stack it left at (waiting, or
//! running when it was preempted while runnable), and its time on the CPU comes from the task
//! clock. No thread is ever interrupted, so no system call ends with EINTR.
//!
//! A task-clock sample weighs the CPU time its thread spent on that CPU since its previous
//! sample there: the difference of the event's counts (`PERF_SAMPLE_READ`, per thread since
//! Linux 6.12), and at most the time since that sample (or since the start): see
//! [`weight_since`]. The period alone came 3% short of the thread's CPU clock on a loaded
//! machine (the kernel's timer fires late and a thread's progress towards a period is kept per
//! CPU); older kernels, which refuse the count with inherited events, get the period.
//!
//! The two events' samples are told apart by their period: a context-switch sample's is 1, a
//! task-clock sample's the interval (at least `MIN_INTERVAL`, 10 µs).

use super::handler::Shared;
use super::ring::RawSample;
use super::samples::StoredSample;
use prof_capture::perf::records::{self, Record, SampleRecord};
use prof_capture::sys::{self, OwnRingKind, PerfRing, RingEvent};
use prof_capture::unwind::frame_reuse::State;
use prof_capture::unwind::{self, CopiedStack};
use std::collections::HashMap;
use std::os::fd::OwnedFd;

/// Bytes of user stack the kernel copies with each sample: `prof record`'s default (see
/// `prof_capture::perf::DEFAULT_STACK_BYTES`).
pub const STACK_BYTES: u32 = prof_capture::perf::DEFAULT_STACK_BYTES;

/// The weight of a task-clock sample that read `count` at monotonic `time`, after its thread's
/// previous sample on the same CPU read `last` (the count and time; no count and the session's
/// start before the first): the count since, and at most the time since, as a thread runs on
/// one CPU no longer than the time that passed. The bound holds however the counts came: a
/// thread armed at start as it inherited an event has two events on each CPU, whose counts
/// interleave under one key (each smaller one read as a new thread's whole count); it is
/// charged the time that passed, not both counts.
fn weight_since(last: (u64, u64), (count, time): (u64, u64)) -> u64 {
    records::count_since(last.0, count).min(time.saturating_sub(last.1))
}

/// How long after its time a record may still be being written to another CPU's ring:
/// records newer than a drain's start less this wait for the next drain.
const WRITE_MARGIN_NS: u64 = 1_000_000;

/// Records unwound between two copies of the rings to their buffers (see [`OwnRings::drain`]).
const FETCH_EVERY: usize = 32;

/// Unwinding states kept (about 40 KiB each): a thread's outer frames are reused from its
/// previous stack when no other thread's took its state since.
const UNWIND_STATES: usize = 16;

/// Where the collector's samples go.
pub trait Sink {
    /// The index of `stack` (addresses, leaf first) in the session's stack list.
    fn intern(&mut self, stack: &[u64]) -> u32;
    /// Stores one sample.
    fn push(&mut self, sample: StoredSample);
}

/// One CPU's ring: the event it was mapped from (the others are sent to it) and its mapping.
struct CpuRing {
    owner: OwnedFd,
    ring: PerfRing,
    buffer: Vec<u8>,
}

/// Where a thread is, in wall mode, as its last switch record said.
#[derive(Clone, Copy)]
enum Place {
    /// Off its CPU since `since` (monotonic nanoseconds) at `stack` (if it was captured).
    Out {
        since: u64,
        stack: Option<u32>,
        preempted: bool,
    },
    /// On its CPU (or not seen yet).
    In,
}

/// The rings of a session and what draining them needs.
pub struct OwnRings {
    event: RingEvent,
    wall: bool,
    pid: u32,
    cpus: Vec<u32>,
    rings: Vec<Option<CpuRing>>,
    /// Records read and not yet handled, with the index of their ring.
    pending: Vec<(usize, Record)>,
    /// Unwinding states (rule cache, last stack), a thread's chosen by its id.
    states: Vec<State>,
    addresses: Vec<u64>,
    places: HashMap<u32, Place>,
    /// The count and time at each thread's last task-clock sample, by thread and ring.
    counts: HashMap<(u32, usize), (u64, u64)>,
    max_depth: usize,
    /// Records the kernel dropped (rings full), or samples without registers.
    pub lost: u64,
    /// The monotonic time stop was asked at (`u64::MAX` before): later records are not the
    /// session's.
    end_ns: u64,
}

/// An event opened only to see whether the kernel allows it: a period of an hour, the smallest
/// stack copy.
const PROBE: RingEvent = RingEvent {
    period_ns: 3_600_000_000_000,
    regs_mask: prof_capture::perf::REGS_MASK,
    stack_bytes: 8,
    watermark: 1,
    kernel: false,
    kernel_time: false,
    attach: false,
    read: false,
};

impl OwnRings {
    /// No ring yet: they are mapped as the first thread is armed on each CPU.
    pub fn new(interval_ns: u64, wall: bool, max_depth: usize) -> OwnRings {
        let cpus = sys::online_cpus();
        OwnRings {
            event: RingEvent {
                period_ns: interval_ns,
                regs_mask: prof_capture::perf::REGS_MASK,
                stack_bytes: STACK_BYTES,
                watermark: (prof_capture::perf::RING_PAGES * 4096 / 4) as u32,
                kernel: false,
                kernel_time: false,
                attach: false,
                // Whether samples carry their event's count (see the module's documentation).
                read: Self::counts_per_thread(),
            },
            wall,
            pid: std::process::id(),
            rings: cpus.iter().map(|_| None).collect(),
            cpus,
            pending: Vec::new(),
            states: (0..UNWIND_STATES).map(|_| State::new()).collect(),
            addresses: Vec::new(),
            places: HashMap::new(),
            counts: HashMap::new(),
            max_depth,
            lost: 0,
            end_ns: u64::MAX,
        }
    }

    /// Whether this kernel gives inherited events' samples their thread's count (Linux 6.12+).
    fn counts_per_thread() -> bool {
        let event = RingEvent {
            read: true,
            ..PROBE
        };
        let cpu = sys::online_cpus().first().copied().unwrap_or(0);
        sys::perf_event_own_ring(sys::gettid(), cpu, &event, OwnRingKind::TaskClock).is_ok()
    }

    /// Checks that this system lets the calling thread be sampled into a ring (and, for wall
    /// mode, its context switches), and says why not otherwise.
    pub fn probe(wall: bool) -> Result<(), String> {
        if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            return Err("it needs x86_64 or aarch64".into());
        }
        let event = PROBE;
        let cpu = sys::online_cpus().first().copied().unwrap_or(0);
        let os = |e: prof_session::Error| match e {
            prof_session::Error::Os { call, source } => format!("{call}: {source}"),
            other => other.to_string(),
        };
        let mut kinds = vec![OwnRingKind::TaskClock];
        if wall {
            kinds.push(OwnRingKind::Switches);
        }
        for kind in kinds {
            let fd = sys::perf_event_own_ring(sys::gettid(), cpu, &event, kind).map_err(|e| {
                // The sysctl matters only where the kernel refused: a kernel (or an emulator,
                // such as qemu-user) without perf_event_open says ENOSYS, whatever it holds.
                let refused = matches!(
                    &e,
                    prof_session::Error::Os { source, .. }
                        if matches!(source.raw_os_error(), Some(libc::EACCES | libc::EPERM))
                );
                if !refused {
                    return os(e);
                }
                let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_else(|_| "unknown".into());
                let needs = if kind == OwnRingKind::Switches {
                    " (context-switch samples need /proc/sys/kernel/perf_event_paranoid at 1 \
                     or below"
                } else {
                    " (/proc/sys/kernel/perf_event_paranoid"
                };
                format!("{}{needs}; it is {paranoid})", os(e))
            })?;
            PerfRing::new(fd, 1).map_err(os)?;
        }
        Ok(())
    }

    /// Opens thread `tid`'s events on every CPU, sends them to that CPU's ring (mapped now
    /// for the first thread) and enables them. Threads it creates from then on inherit them.
    pub fn arm(&mut self, tid: u32) -> prof_session::Result<Vec<OwnedFd>> {
        let mut kinds = vec![OwnRingKind::TaskClock];
        if self.wall {
            kinds.push(OwnRingKind::Switches);
        }
        let mut fds = Vec::with_capacity(self.cpus.len() * kinds.len());
        for (i, &cpu) in self.cpus.iter().enumerate() {
            for &kind in &kinds {
                let fd = sys::perf_event_own_ring(tid, cpu, &self.event, kind)?;
                match &self.rings[i] {
                    Some(ring) => sys::perf_event_set_output(&fd, &ring.owner)?,
                    None => {
                        let owner = fd.try_clone().map_err(|source| prof_session::Error::Os {
                            call: "dup(perf event)",
                            source,
                        })?;
                        let ring =
                            prof_capture::perf::map_ring(owner.try_clone().map_err(|source| {
                                prof_session::Error::Os {
                                    call: "dup(perf event)",
                                    source,
                                }
                            })?)?;
                        self.rings[i] = Some(CpuRing {
                            owner,
                            ring,
                            buffer: Vec::new(),
                        });
                    }
                }
                fds.push(fd);
            }
        }
        for fd in &fds {
            sys::perf_event_enable(fd)?;
        }
        Ok(fds)
    }

    /// The smallest ring's data size in bytes (0 before any is mapped).
    pub fn smallest(&self) -> usize {
        self.rings
            .iter()
            .flatten()
            .map(|r| r.ring.data_bytes())
            .min()
            .unwrap_or(0)
    }

    /// Wall mode: thread `tid` is blocked now, at `stack`, since the session's start (the
    /// monotonic `start_ns`); until it is next switched in, that time is charged there.
    pub fn blocked_at_start(&mut self, tid: u32, stack: u32, start_ns: u64) {
        self.places.insert(
            tid,
            Place::Out {
                since: start_ns,
                stack: Some(stack),
                preempted: false,
            },
        );
    }

    /// Reads every ring and stores, in time order, the samples of the records older than the
    /// start of this drain (all of them when `last`): a record read from one CPU's ring can be
    /// newer than one of the same thread not yet written to another's. Returns the most bytes
    /// one ring held.
    pub fn drain(&mut self, shared: &Shared, sink: &mut dyn Sink, last: bool) -> usize {
        let began = sys::monotonic_ns();
        let regs = prof_capture::perf::REGS_MASK.count_ones() as usize;
        let fullest = self.fetch();
        for (i, ring) in self.rings.iter_mut().enumerate() {
            let Some(ring) = ring else { continue };
            records::parse_all_read(&ring.buffer, regs, self.event.read, |r| {
                self.pending.push((i, r))
            });
            ring.buffer.clear();
        }
        self.pending.sort_by_key(|(_, r)| r.time());
        let upto = if last {
            u64::MAX
        } else {
            began.saturating_sub(WRITE_MARGIN_NS)
        };
        let ready = self.pending.partition_point(|(_, r)| r.time() < upto);
        let ready: Vec<(usize, Record)> = self.pending.drain(..ready).collect();
        let guard = sys::read_begin();
        // `Unwind::FramePointers` walks the copy's frame records only.
        let dwarf = shared
            .dwarf
            .get(&guard)
            .filter(|_| shared.unwind == prof_capture::unwind::UnwindMode::Dwarf);
        for (n, (ring, record)) in ready.into_iter().enumerate() {
            self.handle(ring, record, dwarf, shared.start_ns, sink);
            if n % FETCH_EVERY == FETCH_EVERY - 1 {
                // Unwinding takes longer than copying: keep the rings from filling meanwhile.
                self.fetch();
            }
        }
        fullest
    }

    /// Copies what the rings hold to their buffers (parsed at the next drain) and hands the
    /// space back to the kernel; returns the most bytes one ring held.
    fn fetch(&mut self) -> usize {
        let mut fullest = 0;
        for ring in self.rings.iter_mut().flatten() {
            let before = ring.buffer.len();
            ring.ring.drain(&mut ring.buffer);
            fullest = fullest.max(ring.buffer.len() - before);
        }
        fullest
    }

    fn handle(
        &mut self,
        ring: usize,
        record: Record,
        dwarf: Option<&prof_capture::unwind::dwarf::DwarfSet>,
        start_ns: u64,
        sink: &mut dyn Sink,
    ) {
        if record.time() > self.end_ns {
            return;
        }
        match record {
            Record::Sample(SampleRecord {
                pid,
                tid,
                time,
                period,
                regs,
                stack,
                read,
                ..
            }) if pid == self.pid => {
                let Some(regs) = prof_capture::perf::regs_of(&regs) else {
                    self.lost += 1;
                    return;
                };
                let copy = CopiedStack {
                    sp: regs.sp,
                    bytes: &stack,
                };
                match dwarf {
                    Some(set) => unwind::copied(
                        regs,
                        &copy,
                        set,
                        &mut self.states[tid as usize % UNWIND_STATES],
                        tid,
                        unwind::Reuse::Join,
                        self.max_depth,
                        &mut self.addresses,
                    ),
                    None => {
                        self.addresses.clear();
                        self.addresses.push(regs.pc);
                        let (addresses, max) = (&mut self.addresses, self.max_depth);
                        unwind::frame_chain(&copy, regs.fp, &|_| true, &mut |a| {
                            addresses.push(a);
                            addresses.len() < max
                        });
                    }
                }
                let stack = sink.intern(&self.addresses);
                if period == 1 {
                    // A switch-out: off the CPU from here (see the module's documentation).
                    self.places.insert(
                        tid,
                        Place::Out {
                            since: time,
                            stack: Some(stack),
                            preempted: false,
                        },
                    );
                    return;
                }
                let weight = match read {
                    Some(count) => {
                        let last = self.counts.insert((tid, ring), (count, time));
                        weight_since(last.unwrap_or((0, start_ns)), (count, time))
                    }
                    None => period,
                };
                if weight == 0 {
                    return;
                }
                sink.push(StoredSample {
                    stack,
                    raw: RawSample {
                        tid,
                        time_ns: time.saturating_sub(start_ns),
                        weight,
                    },
                    waiting: false,
                });
            }
            Record::Switch {
                pid,
                tid,
                time,
                out,
                preempt: preempted,
            } if pid == self.pid && self.wall => {
                let place = self.places.get(&tid).copied().unwrap_or(Place::In);
                match (out, place) {
                    (true, Place::Out { since, stack, .. }) => {
                        self.places.insert(
                            tid,
                            Place::Out {
                                since,
                                stack,
                                preempted,
                            },
                        );
                    }
                    (true, Place::In) => {
                        // Its stack sample was lost: the time off the CPU is not charged.
                        self.places.insert(
                            tid,
                            Place::Out {
                                since: time,
                                stack: None,
                                preempted,
                            },
                        );
                    }
                    (false, place) => {
                        self.places.insert(tid, Place::In);
                        charge(tid, place, time, self.event.period_ns, start_ns, sink);
                    }
                }
            }
            Record::Lost { lost } => self.lost += lost,
            _ => {}
        }
    }

    /// Ends the session at `end_ns` (monotonic): records after it are dropped.
    pub fn end_at(&mut self, end_ns: u64) {
        self.end_ns = end_ns;
    }

    /// Wall mode, at stop: the threads still off their CPU are charged up to the end (see
    /// [`OwnRings::end_at`]).
    pub fn finish(&mut self, start_ns: u64, sink: &mut dyn Sink) {
        for (tid, place) in std::mem::take(&mut self.places) {
            charge(
                tid,
                place,
                self.end_ns,
                self.event.period_ns,
                start_ns,
                sink,
            );
        }
    }
}

/// Charges a thread's time off its CPU, from `place` until `until`, to the stack it left at:
/// one sample per `interval` of it (the last one shorter), at the end of each, as the signal
/// wall mode's ticks would have taken them, so that the timeline shows the wait where it was.
fn charge(tid: u32, place: Place, until: u64, interval: u64, start_ns: u64, sink: &mut dyn Sink) {
    let Place::Out {
        since,
        stack: Some(stack),
        preempted,
    } = place
    else {
        return;
    };
    let mut at = since;
    while at < until {
        let end = at.saturating_add(interval.max(1)).min(until);
        sink.push(StoredSample {
            stack,
            raw: RawSample {
                tid,
                time_ns: end.saturating_sub(start_ns),
                weight: end - at,
            },
            waiting: !preempted,
        });
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::weight_since;

    #[test]
    fn a_sample_weighs_the_count_since_the_last_and_no_more_than_the_time_since() {
        // 1 ms of CPU in 1.5 ms.
        assert_eq!(
            weight_since((4_000_000, 10_000_000), (5_000_000, 11_500_000)),
            1_000_000
        );
        // The first sample of a thread armed at the start: its count since then.
        assert_eq!(
            weight_since((0, 10_000_000), (700_000, 11_000_000)),
            700_000
        );
    }

    #[test]
    fn two_events_of_one_thread_on_one_cpu_are_charged_the_time_that_passed_not_twice() {
        // Event A counted since the thread started (2 s before), event B since it was armed:
        // their samples alternate, 0.5 ms apart, the thread running all the time.
        let mut last = (0, 0);
        let mut charged = 0;
        let (mut a, mut b) = (2_000_000_000u64, 0u64);
        for i in 1..=1_000u64 {
            let time = i * 500_000;
            let count = if i % 2 == 1 {
                a += 1_000_000;
                a
            } else {
                b += 1_000_000;
                b
            };
            charged += weight_since(last, (count, time));
            last = (count, time);
        }
        // 0.5 s passed: without the bound, each of B's samples would read as a new thread's
        // whole count and A's as A's count since B's, some 2,000 s in all.
        assert!(charged <= 500_000_000, "{charged}");
        assert!(charged >= 499_000_000, "{charged}");
    }
}
