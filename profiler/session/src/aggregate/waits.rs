//! Where async tasks waited: in wall mode each poll that left its task waiting says
//! at which `.await` ([`Poll::waited_at`](crate::session::Poll::waited_at)), and the time until
//! the task's next poll is the wait. [`task_waits`] turns those waits into a session of their
//! own, one sample per wait weighted by its length, so that every view and export (the top
//! functions, the call tree, the flame graph, `--group-by task`, the task filter) charges the
//! waits to the functions on the await stacks as they charge samples.

use crate::session::{SampleState, SampleType, Samples, Session, StackId, Unit};

/// The sample type of [`task_waits`]' sessions: nanoseconds a task waited.
pub const TASK_WAIT_TYPE: &str = "task_wait";

/// The session whose samples are the waits of `session`'s tasks, or `None` when no poll says
/// where its task waited. One sample per such poll: its stack the poll's
/// [`waited_at`](crate::session::Poll::waited_at), its thread the poll's, its time the poll's
/// end, its state waiting, its task the poll's, and its weight the nanoseconds from the poll's
/// end to the start of the task's next poll (or to the session's end: the task still waited
/// when it stopped). The tables (frames, stacks, threads, tasks, scopes) are `session`'s; the
/// sample type is [`TASK_WAIT_TYPE`], in nanoseconds, and nothing else is weighed.
pub fn task_waits(session: &Session) -> Option<Session> {
    let polls = &session.tasks.polls;
    if polls.iter().all(|p| p.waited_at.is_none()) {
        return None;
    }
    // Each task's polls in order of their starts: a poll's next is the one after it.
    // (The core's one sort: each instance of the standard one costs the wasm viewer kilobytes.)
    let mut order: Vec<usize> = (0..polls.len()).collect();
    crate::order::sort_by_key(&mut order, |&i| (polls[i].task, polls[i].start_ns));
    let end = session_end(session);
    // (time, poll, weight)
    let mut waits: Vec<(u64, usize, u64)> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let p = &polls[i];
        if p.waited_at.is_none() {
            continue;
        }
        let next = order
            .get(k + 1)
            .map(|&j| &polls[j])
            .filter(|n| n.task == p.task)
            .map_or(end, |n| n.start_ns);
        let weight = next.saturating_sub(p.end_ns);
        if weight > 0 {
            waits.push((p.end_ns, i, weight));
        }
    }
    crate::order::sort_by_key(&mut waits, |w| w.0);
    let mut out = Session {
        samples: Samples::default(),
        ..session.clone()
    };
    out.meta.sample_type = SampleType::new(TASK_WAIT_TYPE, Unit::Nanoseconds);
    out.meta.extra_sample_types.clear();
    let samples = &mut out.samples;
    for &(time, i, weight) in &waits {
        let p = &polls[i];
        let Some(stack) = p.waited_at else { continue };
        samples.stack.push(stack);
        samples.thread.push(p.thread);
        samples.time_ns.push(time);
        samples.weight.push(weight);
        samples.state.push(SampleState::Waiting);
        samples.task.push(Some(p.task));
    }
    Some(out)
}

/// Where the task of poll `poll` (an index into `session.tasks.polls`) waited after it, and
/// for how long (as [`task_waits`] counts it): `None` when the poll says nothing of it.
pub fn wait_after(session: &Session, poll: usize) -> Option<(StackId, u64)> {
    let polls = &session.tasks.polls;
    let p = polls.get(poll)?;
    let at = p.waited_at?;
    // The task's next poll: the first to start after this one (ties broken by index).
    let next = polls
        .iter()
        .enumerate()
        .filter(|&(i, n)| n.task == p.task && (n.start_ns, i) > (p.start_ns, poll))
        .map(|(_, n)| n.start_ns)
        .min()
        .unwrap_or_else(|| session_end(session));
    Some((at, next.saturating_sub(p.end_ns)))
}

/// The end of `session` for a task still waiting at its stop: its duration, or its last poll's
/// end when that is later.
fn session_end(session: &Session) -> u64 {
    let polls = &session.tasks.polls;
    let last = polls.iter().map(|p| p.end_ns).max().unwrap_or(0);
    last.max(session.meta.duration_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{group_by_task, CallTree, Filter, SortBy};
    use crate::session::{FrameSpec, Metadata, Mode, Poll, SessionBuilder};

    /// Two tasks: `a` waits in `sleep` under `nap` twice (4 and 3 µs), `b` in `recv` once,
    /// until the session's end; `a`'s last poll, which says no stack, adds nothing.
    fn session() -> Session {
        let meta = Metadata {
            mode: Mode::Wall,
            duration_ns: 100_000,
            ..Metadata::default()
        };
        let mut b = SessionBuilder::new(meta);
        let main = b.thread(1, "main");
        let f = |b: &mut SessionBuilder, n: &str| b.intern_frame(&FrameSpec::named(n));
        let (task, nap, sleep, recv) = (
            f(&mut b, "task"),
            f(&mut b, "nap"),
            f(&mut b, "sleep"),
            f(&mut b, "recv"),
        );
        let at_sleep = b.intern_stack_path(&[task, nap, sleep]).unwrap();
        let at_recv = b.intern_stack_path(&[task, recv]).unwrap();
        let (ta, tb) = (b.intern_task(1, "a"), b.intern_task(2, "b"));
        let mut poll = |task, start_ns, end_ns, waited_at| {
            b.push_poll(Poll {
                task,
                thread: main,
                start_ns,
                end_ns,
                waited_at,
            })
        };
        poll(ta, 1_000, 2_000, Some(at_sleep));
        poll(tb, 2_500, 3_000, Some(at_recv));
        poll(ta, 6_000, 7_000, Some(at_sleep));
        poll(ta, 10_000, 11_000, None);
        b.push_sample(at_sleep, main, 1_500, 1_000);
        b.finish()
    }

    #[test]
    fn each_wait_lasts_until_its_tasks_next_poll_or_the_end() {
        let s = session();
        let w = task_waits(&s).unwrap();
        assert_eq!(w.meta.sample_type.name, TASK_WAIT_TYPE);
        assert_eq!(w.samples.time_ns, [2_000, 3_000, 7_000]);
        assert_eq!(w.samples.weight, [4_000, 97_000, 3_000]);
        // One poll's: the same rule.
        let one: Vec<_> = (0..5).map(|i| wait_after(&s, i).map(|(_, w)| w)).collect();
        assert_eq!(one, [Some(4_000), Some(97_000), Some(3_000), None, None]);
        assert!(w.samples.state.iter().all(|&s| s == SampleState::Waiting));
        let tree = CallTree::filtered(&w, &Filter::default(), &[]);
        let top = tree.top(&w, 10, SortBy::SelfWeight);
        let row = |name: &str| top.iter().find(|r| r.name == name).map(|r| r.self_weight);
        assert_eq!((row("recv"), row("sleep")), (Some(97_000), Some(7_000)));
        // Grouped by task: each task's waits under its name.
        let g = group_by_task(&w);
        let tree = CallTree::filtered(&g, &Filter::default(), &[]);
        let top = tree.top(&g, 10, SortBy::Total);
        let total = |name: &str| top.iter().find(|r| r.name == name).map(|r| r.total_weight);
        assert_eq!(
            (total("task:a"), total("task:b")),
            (Some(7_000), Some(97_000))
        );
        // The session's own tables are kept; a session without stacks in its polls has none.
        assert_eq!(w.tasks, s.tasks);
        let mut none = s.clone();
        none.tasks.polls.iter_mut().for_each(|p| p.waited_at = None);
        assert!(task_waits(&none).is_none());
    }
}
