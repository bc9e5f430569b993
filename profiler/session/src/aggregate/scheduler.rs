//! Where a switched-out thread's time shows in a wall session with kernel frames. `prof record
//! --mode wall` charges each interval a thread spends switched out to the stack it left the CPU
//! with, whose leaf frames are the kernel's scheduler (`schedule`, `preempt_schedule_irq`...):
//! by self weight that is most of a session (80-93% `schedule` on a server), and says nothing
//! of where the program waits. [`Transform::FoldScheduler`](super::Transform::FoldScheduler)
//! charges those samples to the user frame that entered the kernel (the system call's wrapper:
//! `read`, `epoll_wait`, `clock_nanosleep`, a futex wait; for a preemption, the code that was
//! running), so the self column is the time per blocking call, as the page's waiting view and
//! `--user-only` show it. It is what `TransformSpec`'s `default_transforms` gives a wall session
//! with scheduler frames, for `prof report` and the viewer alike.

use super::shape::Shape;
use crate::session::{Session, StrId};

/// The kernel functions a thread leaves its CPU through: a sample whose kernel frames include
/// one was taken while its thread was switched out (or switching).
pub const SCHEDULER_FUNCTIONS: &[&str] = &[
    "schedule",
    "__schedule",
    "preempt_schedule",
    "preempt_schedule_common",
    "preempt_schedule_irq",
    "preempt_schedule_notrace",
    "__cond_resched",
    "_cond_resched",
];

/// Whether `module` names the kernel: `[kernel]` (`prof record`) or `[kernel.kallsyms]` (`perf
/// script`).
pub fn is_kernel_module(module: &str) -> bool {
    module.starts_with("[kernel")
}

/// [`Transform::FoldScheduler`](super::Transform::FoldScheduler): each node of a run of kernel
/// frames from a scheduler function down (to the leaf) maps to the node of the nearest user
/// frame above the run; the kernel frames above the scheduler keep the other samples (time on
/// CPU in the kernel). A stack with no user frame stays as it is.
pub(crate) fn fold(shape: &Shape, session: &Session) -> (Shape, Vec<Option<u32>>) {
    let n = shape.len();
    let mut kernel_module: Vec<Option<bool>> = vec![None; session.strings.len()];
    let mut scheduler_name: Vec<Option<bool>> = vec![None; session.strings.len()];
    let mut in_kernel = |node: usize| {
        let module = session
            .frames
            .get(shape.frame[node].index())
            .and_then(|f| f.module);
        module.is_some_and(|m: StrId| {
            *kernel_module[m.index()].get_or_insert_with(|| is_kernel_module(session.str(m)))
        })
    };
    let mut out = Shape::new();
    let mut map = vec![Some(0); n];
    // The nearest user frame at or above each node (`None` above the first one).
    let mut user: Vec<Option<u32>> = vec![None; n];
    // Whether each node is in the scheduler: a kernel frame at or below a scheduler function.
    let mut scheduler = vec![false; n];
    for i in 1..n {
        let parent = shape.parent[i] as usize;
        let func = shape.func[i];
        if !in_kernel(i) {
            user[i] = Some(i as u32);
            map[i] = map[parent].map(|p| out.child(p, func, shape.frame[i]));
            continue;
        }
        user[i] = user[parent];
        let named = *scheduler_name[func.index()]
            .get_or_insert_with(|| SCHEDULER_FUNCTIONS.contains(&session.str(func)));
        scheduler[i] = (named || scheduler[parent]) && user[i].is_some();
        map[i] = match user[i] {
            Some(u) if scheduler[i] => map[u as usize],
            _ => map[parent].map(|p| out.child(p, func, shape.frame[i])),
        };
    }
    (out, map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{default_transforms, CallTree, Filter, SortBy, TransformSpec};
    use crate::session::{FrameSpec, Metadata, Mode, SampleState, SessionBuilder};

    /// A wall session: `main;wait_peer;read` blocked in the kernel's `pipe_read;schedule`
    /// (600), preempted in `compute` through `irqentry_exit;schedule;finish_task_switch`
    /// (100), on CPU in the kernel's `pipe_read` (50) and in `compute` (250); and a kernel
    /// thread's `kthread;schedule` (40), which has no user frame.
    fn session(mode: Mode) -> Session {
        let mut b = SessionBuilder::new(Metadata {
            mode,
            ..Metadata::default()
        });
        let t = b.thread(1, "main");
        let user = |b: &mut SessionBuilder, name: &str| b.intern_frame(&FrameSpec::named(name));
        let kernel = |b: &mut SessionBuilder, name: &str| {
            b.intern_frame(&FrameSpec {
                module: Some("[kernel]"),
                ..FrameSpec::named(name)
            })
        };
        let (main, wait, read, compute) = (
            user(&mut b, "main"),
            user(&mut b, "wait_peer"),
            user(&mut b, "read"),
            user(&mut b, "compute"),
        );
        let (entry, pipe_read, schedule, irq, finish, kthread) = (
            kernel(&mut b, "entry_SYSCALL_64"),
            kernel(&mut b, "pipe_read"),
            kernel(&mut b, "schedule"),
            kernel(&mut b, "irqentry_exit"),
            kernel(&mut b, "finish_task_switch.isra.0"),
            kernel(&mut b, "kthread"),
        );
        let push = |b: &mut SessionBuilder, path: &[_], w, state| {
            let stack = b.intern_stack_path(path).unwrap();
            b.push_sample_full(stack, t, 0, &[w], 1, Some(state));
        };
        let blocked = [main, wait, read, entry, pipe_read, schedule];
        push(&mut b, &blocked, 600, SampleState::Waiting);
        let preempted = [main, compute, irq, schedule, finish];
        push(&mut b, &preempted, 100, SampleState::Running);
        push(
            &mut b,
            &[main, wait, read, entry, pipe_read],
            50,
            SampleState::Running,
        );
        push(&mut b, &[main, compute], 250, SampleState::Running);
        push(&mut b, &[kthread, schedule], 40, SampleState::Waiting);
        b.finish()
    }

    fn top(session: &Session, specs: &[TransformSpec], sort: SortBy) -> Vec<(String, u64)> {
        let transforms = TransformSpec::resolve_all(specs, session).unwrap();
        let tree = CallTree::filtered(session, &Filter::all(), &transforms);
        tree.top(session, 20, sort)
            .into_iter()
            .map(|r| {
                let w = match sort {
                    SortBy::SelfWeight => r.self_weight,
                    SortBy::Total => r.total_weight,
                };
                (r.name, w)
            })
            .filter(|(_, w)| *w > 0)
            .collect()
    }

    #[test]
    fn switched_out_time_is_charged_to_the_user_frame_that_entered_the_kernel() {
        let s = session(Mode::Wall);
        let defaults = default_transforms(&s);
        assert_eq!(defaults, [TransformSpec::FoldScheduler]);
        // As recorded: the scheduler holds most of the self weight.
        let raw = top(&s, &[], SortBy::SelfWeight);
        assert_eq!(raw[0], ("schedule".to_owned(), 640));
        // Folded: the blocking call and the preempted code; the kernel's CPU time stays.
        let folded = top(&s, &defaults, SortBy::SelfWeight);
        assert_eq!(
            folded,
            [
                ("read".to_owned(), 600),
                ("compute".to_owned(), 350),
                ("pipe_read".to_owned(), 50),
                ("schedule".to_owned(), 40),
            ]
        );
        // Totals: nothing is lost, the kernel's frames above the scheduler keep only their
        // time on CPU.
        let totals = top(&s, &defaults, SortBy::Total);
        let total = |name: &str| totals.iter().find(|(n, _)| n == name).map(|r| r.1);
        assert_eq!(total("main"), Some(1_000));
        assert_eq!(total("wait_peer"), Some(650));
        assert_eq!(total("pipe_read"), Some(50));
        assert_eq!(total("entry_SYSCALL_64"), Some(50));
        assert_eq!(total("irqentry_exit"), None);
        assert_eq!(total("kthread"), Some(40), "no user frame: as recorded");
        // Filters apply as before: the waiting time, per blocking call.
        let waiting = Filter::all().state(SampleState::Waiting);
        let transforms = TransformSpec::resolve_all(&defaults, &s).unwrap();
        let tree = CallTree::filtered(&s, &waiting, &transforms);
        let rows = tree.top(&s, 3, SortBy::SelfWeight);
        assert_eq!((rows[0].name.as_str(), rows[0].self_weight), ("read", 600));
    }

    #[test]
    fn only_a_wall_session_with_scheduler_frames_is_folded_by_default() {
        assert!(default_transforms(&session(Mode::Cpu)).is_empty());
        let mut b = SessionBuilder::new(Metadata {
            mode: Mode::Wall,
            ..Metadata::default()
        });
        let t = b.thread(1, "main");
        // A user function that happens to be called `schedule` is not the kernel's.
        b.push_named(&["main", "schedule"], t, 0, 10);
        assert!(default_transforms(&b.finish()).is_empty());
    }
}
