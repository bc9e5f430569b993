//! Wall mode's off-CPU time: each thread's time switched out, charged to the stack it was
//! switched out with.
//!
//! The context-switch event (`sys::perf_switch_event`) samples each switch-out with the
//! thread's user registers and stack (and the kernel's call chain), and its `PERF_RECORD_SWITCH`
//! records say when each thread went out and came back in. An interval from a switch-out to the
//! thread's next switch-in becomes one sample of that stack weighing the interval's wall
//! nanoseconds: `waiting` when the thread blocked (slept, waited on a lock, a read...),
//! `running` when it was preempted while still runnable (its time waiting for a CPU, which the
//! in-process wall mode counts as running too). The task clock's samples carry the time on CPU.

use prof_session::session::SampleState;
use std::collections::HashMap;

/// A thread switched out and not yet back.
struct Out {
    time: u64,
    /// Its stack at the switch-out (process and stack index), when its sample was seen.
    stack: Option<(usize, u32)>,
    preempted: bool,
}

/// Time off CPU, to be charged to a stack.
#[derive(Debug, PartialEq, Eq)]
pub struct OffCpu {
    /// The index of the thread's process in the recorder's table.
    pub process: usize,
    /// The stack it was switched out with, an index in the process's stacks.
    pub stack: u32,
    /// When it went out.
    pub time: u64,
    /// Wall nanoseconds until it came back in.
    pub weight: u64,
    /// Whether it was preempted (`Running`) or blocked (`Waiting`).
    pub state: SampleState,
}

/// The threads switched out, by thread id.
#[derive(Default)]
pub struct Switches {
    out: HashMap<u32, Out>,
    /// Intervals without their switch-out's sample (a lost record): not charged to any stack.
    pub unattributed_ns: u64,
    /// Bytes of stack each switch-out asks the kernel to copy.
    pub copy_bytes: usize,
    /// Switch-out stacks completed beyond their copy from another stack of their thread.
    pub stitched: u64,
}

impl Switches {
    /// No thread switched out yet; each switch-out copies `copy_bytes` of stack.
    pub fn new(copy_bytes: u32) -> Switches {
        Switches {
            copy_bytes: copy_bytes as usize,
            ..Switches::default()
        }
    }

    /// A context-switch sample: thread `tid` goes out at `time` with this stack.
    pub fn sampled(&mut self, tid: u32, time: u64, process: usize, stack: u32) {
        self.out.insert(
            tid,
            Out {
                time,
                stack: Some((process, stack)),
                preempted: false,
            },
        );
    }

    /// Gives thread `tid`'s switch-out at `time`, when it is still out, stack `stack` of
    /// process `process` (completed since); says whether it was.
    pub fn restack(&mut self, tid: u32, time: u64, process: usize, stack: u32) -> bool {
        match self.out.get_mut(&tid) {
            Some(out) if out.time == time && out.stack.is_some_and(|(p, _)| p == process) => {
                out.stack = Some((process, stack));
                true
            }
            _ => false,
        }
    }

    /// The threads still switched out at `end` (the recording stops while they wait), each
    /// one's interval to `end` charged to its stack, in the order they went out; those whose
    /// switch-out lost its sample add to [`Switches::unattributed_ns`].
    pub fn still_out(&mut self, end: u64) -> Vec<(u32, OffCpu)> {
        let mut out: Vec<(u32, Out)> = self.out.drain().collect();
        out.sort_by_key(|(tid, o)| (o.time, *tid));
        let mut charged = Vec::new();
        for (tid, was) in out {
            let weight = end.saturating_sub(was.time);
            match was.stack {
                Some((process, stack)) => charged.push((
                    tid,
                    OffCpu {
                        process,
                        stack,
                        time: was.time,
                        weight,
                        state: state(was.preempted),
                    },
                )),
                None => self.unattributed_ns += weight,
            }
        }
        charged
    }

    /// A `PERF_RECORD_SWITCH` of `tid`: out (after its sample) or back in, which ends its
    /// interval off CPU.
    pub fn switched(&mut self, tid: u32, time: u64, out: bool, preempted: bool) -> Option<OffCpu> {
        if out {
            let entry = self.out.entry(tid).or_insert(Out {
                time,
                stack: None,
                preempted,
            });
            entry.preempted = preempted;
            return None;
        }
        let was = self.out.remove(&tid)?;
        let weight = time.saturating_sub(was.time);
        let Some((process, stack)) = was.stack else {
            self.unattributed_ns += weight;
            return None;
        };
        Some(OffCpu {
            process,
            stack,
            time: was.time,
            weight,
            state: state(was.preempted),
        })
    }
}

/// The state of an interval off CPU: running (waiting for a CPU) when the thread was
/// preempted, else waiting.
fn state(preempted: bool) -> SampleState {
    if preempted {
        SampleState::Running
    } else {
        SampleState::Waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_interval_off_cpu_goes_to_the_stack_that_went_out() {
        let mut s = Switches::default();
        s.sampled(7, 100, 0, 3);
        assert_eq!(s.switched(7, 101, true, false), None);
        // Another thread's switch-in ends nothing of this one's.
        assert_eq!(s.switched(8, 150, false, false), None);
        assert_eq!(
            s.switched(7, 1_100, false, false),
            Some(OffCpu {
                process: 0,
                stack: 3,
                time: 100,
                weight: 1_000,
                state: SampleState::Waiting
            })
        );
        // Preempted: still runnable, so running.
        s.sampled(7, 2_000, 0, 4);
        s.switched(7, 2_000, true, true);
        let off = s.switched(7, 2_500, false, false).unwrap();
        assert_eq!((off.stack, off.weight), (4, 500));
        assert_eq!(off.state, SampleState::Running);
        // A switch-out whose sample was lost: counted, not charged.
        s.switched(7, 3_000, true, false);
        assert_eq!(s.switched(7, 3_400, false, false), None);
        assert_eq!(s.unattributed_ns, 400);
        // A switch-in with no switch-out before it (the first one after exec): nothing.
        assert_eq!(s.switched(9, 10, false, false), None);
    }

    #[test]
    fn the_threads_still_out_at_the_end_are_charged_up_to_it() {
        let mut s = Switches::default();
        s.sampled(7, 100, 0, 3);
        s.switched(7, 100, true, false);
        s.sampled(8, 50, 1, 4);
        s.switched(8, 50, true, true);
        // Out without its sample: not charged to a stack.
        s.switched(9, 20, true, false);
        let out = s.still_out(1_000);
        assert_eq!(
            out,
            [
                (
                    8,
                    OffCpu {
                        process: 1,
                        stack: 4,
                        time: 50,
                        weight: 950,
                        state: SampleState::Running
                    }
                ),
                (
                    7,
                    OffCpu {
                        process: 0,
                        stack: 3,
                        time: 100,
                        weight: 900,
                        state: SampleState::Waiting
                    }
                )
            ]
        );
        assert_eq!(s.unattributed_ns, 980);
        assert!(s.still_out(2_000).is_empty(), "charged once");
    }
}
