//! How the samples spread over the threads: each thread's sample count and weight, for thread
//! pickers and summaries.

use super::filter::{rows_in_range, Filter, KeptSamples};
use super::tree::TransformedStacks;
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
    totals_of(session, 0..session.samples.len())
}

/// [`thread_totals`] of what every view shows: the samples `filter` keeps (a filter of no
/// threads counts every thread) whose stacks `transformed` keeps (a drop or a focus leaves some
/// out), in the order of `session.threads`. With a time range over samples in time order
/// (`time_sorted`), only the range's rows are read.
pub fn thread_totals_shown(
    session: &Session,
    filter: &Filter,
    transformed: &TransformedStacks,
    time_sorted: bool,
) -> Vec<ThreadTotal> {
    let kept = KeptSamples::new(session, filter);
    let stacks = &session.samples.stack;
    let dropped = |i: usize| {
        transformed.is_transformed()
            && transformed
                .map
                .get(stacks[i].index())
                .is_none_or(Option::is_none)
    };
    let rows = rows_in_range(session, filter, time_sorted);
    totals_of(session, rows.filter(|&i| kept.keeps(i) && !dropped(i)))
}

/// Each thread's samples and weight among the sample rows `rows`.
fn totals_of(session: &Session, rows: impl Iterator<Item = usize>) -> Vec<ThreadTotal> {
    let mut totals: Vec<ThreadTotal> = (0..session.threads.len())
        .map(|i| ThreadTotal {
            thread: ThreadIdx(i as u32),
            samples: 0,
            weight: 0,
        })
        .collect();
    let samples = &session.samples;
    for i in rows {
        if let Some(total) = totals.get_mut(samples.thread[i].index()) {
            total.samples = total.samples.saturating_add(samples.multiplicity(i));
            total.weight = total.weight.saturating_add(samples.weight[i]);
        }
    }
    totals
}

/// The threads of `totals` (as [`thread_totals`] gives them) heaviest first, threads of equal
/// weight in their order: a timeline of many threads, most of them idle, shows the busy ones
/// first.
pub fn busiest_first(totals: &[ThreadTotal]) -> Vec<ThreadIdx> {
    let mut order: Vec<&ThreadTotal> = totals.iter().collect();
    crate::order::sort_by_key(&mut order, |t| std::cmp::Reverse(t.weight));
    order.into_iter().map(|t| t.thread).collect()
}

/// The order of the tracks of every view over time (the timeline and the stack chart draw their
/// threads in it, so a thread sits in the same place in both): the threads of `totals` (as
/// [`thread_totals`] gives them) [`busiest_first`], then each process's threads together
/// ([`group_by_process`]), the processes in the order of their busiest thread.
pub fn track_order(session: &Session, totals: &[ThreadTotal]) -> Vec<ThreadIdx> {
    group_by_process(session, &busiest_first(totals))
        .into_iter()
        .flat_map(|group| group.threads)
        .collect()
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

/// What a view of `threads` (`None`: every thread) shows, for a header: the session's program
/// when that is everything (`sh and 2 other processes` for a recording of several); else each
/// process whose threads are all kept (`xz [4242]`), and the threads kept of each other one
/// (`node [4243], node [4244] of node [4240]`; `of` the program in a session of one process),
/// three of each at most and how many more.
pub fn shown_label(session: &Session, threads: Option<&[ThreadIdx]>) -> String {
    let kept: Vec<ThreadIdx> = match threads {
        Some(threads) => (0..session.threads.len() as u32)
            .map(ThreadIdx)
            .filter(|t| threads.contains(t))
            .collect(),
        None => Vec::new(),
    };
    let program = match session.meta.program.as_str() {
        "" => "(unknown program)",
        program => program,
    };
    if threads.is_none() || kept.len() == session.threads.len() {
        return match session.processes.len() {
            0 | 1 => program.to_owned(),
            2 => format!("{program} and 1 other process"),
            n => format!("{program} and {} other processes", n - 1),
        };
    }
    if kept.is_empty() {
        return "no thread".to_owned();
    }
    let table = session.process_table();
    let several = session.processes.len() > 1;
    let mut whole = true;
    let parts: Vec<String> = group_by_process(session, &kept)
        .into_iter()
        .map(|group| {
            let process = table.get(group.process.index());
            let of_process = session
                .threads
                .iter()
                .filter(|t| t.process == group.process)
                .count();
            match process {
                Some(p) if several && of_process == group.threads.len() => process_label(p),
                _ => {
                    whole = false;
                    let names = group.threads.iter().map(|&t| {
                        let thread = &session.threads[t.index()];
                        match session.str(thread.name) {
                            "" => format!("[{}]", thread.tid),
                            name => format!("{name} [{}]", thread.tid),
                        }
                    });
                    let names = at_most_three(names.collect(), ", ", " threads");
                    match process {
                        Some(p) if several => format!("{names} of {}", process_label(p)),
                        _ => format!("{names} of {program}"),
                    }
                }
            }
        })
        .collect();
    // A group of threads names its process last: groups apart by `;` then.
    match whole {
        true => at_most_three(parts, ", ", " processes"),
        false => at_most_three(parts, "; ", ""),
    }
}

/// `parts` joined with `separator`, three at most and `and N more` (then `what`).
fn at_most_three(mut parts: Vec<String>, separator: &str, what: &str) -> String {
    if parts.len() > 3 {
        let more = parts.len() - 3;
        parts.truncate(3);
        return format!("{} and {more} more{what}", parts.join(separator));
    }
    parts.join(separator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_totals_count_what_the_filter_and_the_transforms_keep() {
        use crate::aggregate::{Transform, TransformSpec};
        use crate::session::{FrameSpec, SampleState, SessionBuilder};
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let worker = b.thread(2, "worker");
        let run = b.intern_frame(&FrameSpec::named("run"));
        let io = b.intern_frame(&FrameSpec::named("io"));
        let running = b.intern_stack_path(&[run]).unwrap();
        let waiting = b.intern_stack_path(&[run, io]).unwrap();
        b.push_sample_full(running, main, 0, &[3], 1, Some(SampleState::Running));
        b.push_sample_full(waiting, main, 1, &[5], 1, Some(SampleState::Waiting));
        b.push_sample_full(running, worker, 2, &[7], 2, Some(SampleState::Running));
        let session = b.finish();
        let untransformed = TransformedStacks::new(&session, &[]);
        let counts = |filter: &Filter, transformed: &TransformedStacks| -> Vec<(u64, u64)> {
            thread_totals_shown(&session, filter, transformed, true)
                .iter()
                .map(|t| (t.samples, t.weight))
                .collect()
        };
        let all: Vec<(u64, u64)> = thread_totals(&session)
            .iter()
            .map(|t| (t.samples, t.weight))
            .collect();
        assert_eq!(counts(&Filter::all(), &untransformed), all);
        assert_eq!(
            counts(&Filter::all().state(SampleState::Waiting), &untransformed),
            [(1, 5), (0, 0)]
        );
        let drop_io: Vec<Transform> = [TransformSpec::Drop {
            function: "io".into(),
        }]
        .iter()
        .map(|spec| spec.resolve(&session).unwrap())
        .collect();
        let dropped = TransformedStacks::new(&session, &drop_io);
        assert_eq!(counts(&Filter::all(), &dropped), [(1, 3), (2, 7)]);
        // A time range: only its rows are read, as every row would give.
        assert_eq!(
            counts(&Filter::all().time_range(1, 3), &untransformed),
            [(1, 5), (2, 7)]
        );
    }

    #[test]
    fn the_shown_label_names_the_processes_and_threads_kept() {
        use crate::session::{FrameSpec, Metadata, SessionBuilder};
        let mut b = SessionBuilder::new(Metadata {
            program: "sh".into(),
            ..Metadata::default()
        });
        let process = |pid, name: &str| Process {
            pid,
            name: name.into(),
            ..Process::default()
        };
        let sh = b.push_process(process(10, "sh"));
        let xz = b.push_process(process(11, "xz"));
        let node = b.push_process(process(12, "node"));
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        for (process, tid, name) in [
            (sh, 10, "sh"),
            (xz, 11, "xz"),
            (node, 12, "node"),
            (node, 13, "node"),
            (node, 14, ""),
            (node, 15, "node"),
            (node, 16, "node"),
        ] {
            let t = b.thread_in(process, tid, name);
            b.push_sample(stack, t, 1, 1);
        }
        let session = b.finish();
        let label = |threads: &[u32]| {
            let threads: Vec<ThreadIdx> = threads.iter().map(|&t| ThreadIdx(t)).collect();
            shown_label(&session, Some(&threads))
        };
        assert_eq!(shown_label(&session, None), "sh and 2 other processes");
        assert_eq!(label(&[0, 1, 2, 3, 4, 5, 6]), "sh and 2 other processes");
        assert_eq!(label(&[1]), "xz [11]");
        assert_eq!(label(&[0, 1]), "sh [10], xz [11]");
        assert_eq!(label(&[3]), "node [13] of node [12]");
        assert_eq!(label(&[1, 4, 3]), "xz [11]; node [13], [14] of node [12]");
        assert_eq!(
            label(&[2, 3, 4, 5]),
            "node [12], node [13], [14] and 1 more threads of node [12]"
        );
        assert_eq!(label(&[]), "no thread");
        // One process: its threads, of the program.
        let mut one = SessionBuilder::new(Metadata {
            program: "/usr/bin/demo".into(),
            ..Metadata::default()
        });
        let f = one.intern_frame(&FrameSpec::named("f"));
        let stack = one.intern_stack_path(&[f]).unwrap();
        for tid in [1, 2] {
            let t = one.thread(tid, "worker");
            one.push_sample(stack, t, 1, 1);
        }
        let one = one.finish();
        assert_eq!(shown_label(&one, None), "/usr/bin/demo");
        assert_eq!(
            shown_label(&one, Some(&[ThreadIdx(1)])),
            "worker [2] of /usr/bin/demo"
        );
    }

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
        // The tracks of the timeline and the stack chart: the groups one after another.
        let tracks = track_order(&session, &thread_totals(&session));
        assert_eq!(tracks, [2, 1, 3, 0].map(ThreadIdx));
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
