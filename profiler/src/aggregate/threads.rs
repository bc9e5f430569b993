//! How the samples spread over the threads: each thread's sample count and weight, for thread
//! pickers and summaries.

use crate::session::{Process, ProcessIdx, Session, ThreadIdx};
use serde::{Deserialize, Serialize};

/// The samples of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTotal {
    /// Which thread.
    pub thread: ThreadIdx,
    /// How many samples were taken on it.
    pub samples: u64,
    /// Their summed weight, in the unit of the session's mode.
    pub weight: u64,
}

/// Each thread of `session` with its samples, in the order of `session.threads` (threads without
/// samples included, with zeros). A sample naming a thread the session does not list is not
/// counted.
pub fn thread_totals(session: &Session) -> Vec<ThreadTotal> {
    let mut totals: Vec<ThreadTotal> = (0..session.threads.len())
        .map(|i| ThreadTotal {
            thread: ThreadIdx(i as u32),
            samples: 0,
            weight: 0,
        })
        .collect();
    let samples = &session.samples;
    for (i, (thread, &weight)) in samples.thread.iter().zip(&samples.weight).enumerate() {
        if let Some(total) = totals.get_mut(thread.index()) {
            total.samples = total.samples.saturating_add(samples.multiplicity(i));
            total.weight = total.weight.saturating_add(weight);
        }
    }
    totals
}

/// The threads of `totals` (as [`thread_totals`] gives them) heaviest first, threads of equal
/// weight in their order: a timeline of many threads, most of them idle, shows the busy ones
/// first.
pub fn busiest_first(totals: &[ThreadTotal]) -> Vec<ThreadIdx> {
    let mut order: Vec<&ThreadTotal> = totals.iter().collect();
    super::order::sort_by_key(&mut order, |t| std::cmp::Reverse(t.weight));
    order.into_iter().map(|t| t.thread).collect()
}

/// One process's threads, as the thread selector and the timeline group them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
    /// The process, an index into [`Session::process_table`].
    pub process: ProcessIdx,
    /// Its threads, in the order they were given.
    pub threads: Vec<ThreadIdx>,
}

/// `order`'s threads grouped by process: the processes in the order their first thread comes
/// in `order` (so with [`busiest_first`], the busiest process first), each one's threads in
/// `order`'s order.
pub fn group_by_process(session: &Session, order: &[ThreadIdx]) -> Vec<ProcessGroup> {
    let mut groups: Vec<ProcessGroup> = Vec::new();
    for &t in order {
        let Some(thread) = session.threads.get(t.index()) else {
            continue;
        };
        match groups.iter_mut().find(|g| g.process == thread.process) {
            Some(group) => group.threads.push(t),
            None => groups.push(ProcessGroup {
                process: thread.process,
                threads: vec![t],
            }),
        }
    }
    groups
}

/// The label of a process in the thread selector and the timeline: `spin [4242]`, or the
/// command line's first word when the process has no name.
pub fn process_label(process: &Process) -> String {
    let name = if process.name.is_empty() {
        process
            .command_line
            .first()
            .map(|c| c.rsplit('/').next().unwrap_or_default())
            .unwrap_or_default()
    } else {
        &process.name
    };
    if name.is_empty() {
        format!("[{}]", process.pid)
    } else {
        format!("{name} [{}]", process.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_group_under_their_process_busiest_first() {
        use crate::session::{FrameSpec, SessionBuilder};
        let mut b = SessionBuilder::default();
        let sh = b.push_process(Process {
            pid: 10,
            name: "sh".into(),
            ..Process::default()
        });
        let spin = b.push_process(Process {
            pid: 11,
            command_line: vec!["/opt/spin".into()],
            ..Process::default()
        });
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        for (process, tid, weight) in [(sh, 10, 1), (spin, 11, 5), (spin, 12, 9), (sh, 13, 3)] {
            let t = b.thread_in(process, tid, "t");
            b.push_sample(stack, t, 1, weight);
        }
        let session = b.finish();
        let order = busiest_first(&thread_totals(&session));
        let groups = group_by_process(&session, &order);
        let table = session.process_table();
        let got: Vec<(String, Vec<u32>)> = groups
            .iter()
            .map(|g| {
                let label = process_label(&table[g.process.index()]);
                (label, g.threads.iter().map(|t| t.0).collect())
            })
            .collect();
        assert_eq!(
            got,
            [
                ("spin [11]".to_owned(), vec![2, 1]),
                ("sh [10]".to_owned(), vec![3, 0])
            ]
        );
    }

    #[test]
    fn busiest_first_puts_idle_threads_last_and_keeps_the_order_of_equals() {
        let total = |i, weight| ThreadTotal {
            thread: ThreadIdx(i),
            samples: 1,
            weight,
        };
        let totals = [
            total(0, 1),
            total(1, 0),
            total(2, 9),
            total(3, 1),
            total(4, 5),
        ];
        assert_eq!(
            busiest_first(&totals),
            [2, 4, 0, 3, 1].map(ThreadIdx).to_vec()
        );
    }
    use crate::session::{FrameSpec, SessionBuilder};

    #[test]
    fn counts_and_weighs_each_threads_samples() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let main = b.thread(1, "main");
        let idle = b.thread(2, "idle");
        let worker = b.thread(3, "worker");
        b.push_sample(s, main, 0, 5);
        b.push_sample(s, worker, 1, 7);
        b.push_sample(s, main, 2, 5);
        let totals = thread_totals(&b.finish());
        let got: Vec<_> = totals
            .iter()
            .map(|t| (t.thread, t.samples, t.weight))
            .collect();
        assert_eq!(got, [(main, 2, 10), (idle, 0, 0), (worker, 1, 7)]);
    }
}
