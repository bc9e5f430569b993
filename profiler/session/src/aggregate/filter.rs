//! Choosing samples (by thread and time range) and summing them per stack: the one pass over the
//! samples that every view starts from.

use crate::session::{Process, SampleState, Session, StackId, ThreadIdx};
use serde::{Deserialize, Serialize};

/// Which samples count. The default keeps every sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Only samples of these threads; `None` for all threads.
    pub threads: Option<Vec<ThreadIdx>>,
    /// Only samples with `start_ns <= time_ns < end_ns`; `None` for the whole session.
    pub time_ns: Option<(u64, u64)>,
    /// Only samples whose thread was in this state (wall mode: on or off CPU); `None` for
    /// both. A session that records no state has only running samples.
    #[serde(default)]
    pub state: Option<SampleState>,
    /// Only samples taken inside a scope of this name: the innermost span open on the sample's
    /// thread, or one enclosing it, belongs to a site of this name (`--scope NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Only samples taken while a task of this name was being polled on their thread
    /// (`--task NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

impl Filter {
    /// A filter that keeps every sample.
    pub fn all() -> Self {
        Filter::default()
    }

    /// Keeps only samples of `threads`.
    pub fn threads(mut self, threads: impl IntoIterator<Item = ThreadIdx>) -> Self {
        self.threads = Some(threads.into_iter().collect());
        self
    }

    /// Keeps only samples taken in `[start_ns, end_ns)`.
    pub fn time_range(mut self, start_ns: u64, end_ns: u64) -> Self {
        self.time_ns = Some((start_ns, end_ns));
        self
    }

    /// Keeps only samples whose thread was in `state`: [`SampleState::Waiting`] for the time
    /// spent off CPU.
    pub fn state(mut self, state: SampleState) -> Self {
        self.state = Some(state);
        self
    }

    /// Keeps only samples taken inside a scope named `name` (see [`Filter::scope`]).
    pub fn scope(mut self, name: impl Into<String>) -> Self {
        self.scope = Some(name.into());
        self
    }

    /// Keeps only samples taken while a task named `name` was polled (see [`Filter::task`]).
    pub fn task(mut self, name: impl Into<String>) -> Self {
        self.task = Some(name.into());
        self
    }

    /// Keeps only the threads whose name is `name` (none if no thread has that name).
    pub fn thread_named(self, session: &Session, name: &str) -> Self {
        let matching = session
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| session.str(t.name) == name)
            .map(|(i, _)| ThreadIdx(i as u32));
        self.threads(matching)
    }

    /// Keeps only the threads of the processes `keep` accepts (of those already kept, when
    /// threads were chosen before): `--pid`, `--process`, the viewer's process groups. A
    /// session without a process table has one process ([`Session::process_table`]).
    pub fn processes(mut self, session: &Session, keep: impl Fn(&Process) -> bool) -> Self {
        let table = session.process_table();
        let kept: Vec<bool> = table.iter().map(keep).collect();
        let chosen = self.threads.take();
        let matching = session
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| kept.get(t.process.index()).copied().unwrap_or(false))
            .map(|(i, _)| ThreadIdx(i as u32))
            .filter(|t| chosen.as_ref().is_none_or(|c| c.contains(t)));
        self.threads(matching)
    }

    /// Keeps only the threads whose operating system id is one of `tids` (of those already
    /// kept, when threads were chosen before): `prof report --tid`. A viewer's choice of
    /// threads (by index) is this filter with their ids, which [`Filter::report_options`]
    /// gives.
    pub fn tids(mut self, session: &Session, tids: &[u64]) -> Self {
        let chosen = self.threads.take();
        let matching = session
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| tids.contains(&t.tid))
            .map(|(i, _)| ThreadIdx(i as u32))
            .filter(|t| chosen.as_ref().is_none_or(|c| c.contains(t)));
        self.threads(matching)
    }

    /// The options of `prof report` that keep the samples this filter keeps: `--tid` (the
    /// chosen threads' ids, as one comma-separated list), `--from` and `--to` (seconds),
    /// `--state`, `--scope` and `--task`, in that order; none for a filter that keeps every
    /// sample. Threads that share an id (imported profiles may have them) are told apart by
    /// neither.
    pub fn report_options(&self, session: &Session) -> Vec<String> {
        let mut options = Vec::new();
        let mut add = |option: &str, value: String| {
            options.push(option.to_owned());
            options.push(value);
        };
        if let Some(threads) = &self.threads {
            // In the threads' order, each id once.
            let mut tids: Vec<u64> = Vec::new();
            let mut list = String::new();
            for thread in threads
                .iter()
                .filter_map(|t| session.threads.get(t.index()))
            {
                if tids.contains(&thread.tid) {
                    continue;
                }
                tids.push(thread.tid);
                if !list.is_empty() {
                    list.push(',');
                }
                list += &thread.tid.to_string();
            }
            add("--tid", list);
        }
        if let Some((from, to)) = self.time_ns {
            add("--from", seconds_text(from));
            if to != u64::MAX {
                add("--to", seconds_text(to));
            }
        }
        if let Some(state) = self.state {
            add("--state", state.name().to_owned());
        }
        if let Some(scope) = &self.scope {
            add("--scope", scope.clone());
        }
        if let Some(task) = &self.task {
            add("--task", task.clone());
        }
        options
    }

    /// Keeps only samples taken between `from_s` and `to_s` seconds after the session started
    /// (either end open when `None`); an end that is not a number of seconds at or after 0, or a
    /// range that ends before it starts, is an error (its message names the values, not where
    /// they came from: the caller adds that).
    pub fn seconds(self, from_s: Option<f64>, to_s: Option<f64>) -> Result<Self, String> {
        if from_s.is_none() && to_s.is_none() {
            return Ok(self);
        }
        let ns = |s: Option<f64>, open: u64, end: &str| match s {
            None => Ok(open),
            Some(s) if s.is_finite() && s >= 0.0 => {
                Ok((s * 1e9).round().min(u64::MAX as f64) as u64)
            }
            Some(s) => Err(format!(
                "the range's {end} {s} is not a number of seconds at or after 0"
            )),
        };
        let (from, to) = (ns(from_s, 0, "start")?, ns(to_s, u64::MAX, "end")?);
        if from >= to {
            return Err(format!(
                "the range from {} s to {} s ends before it starts",
                from_s.unwrap_or(0.0),
                to_s.unwrap_or(f64::INFINITY)
            ));
        }
        Ok(self.time_range(from, to))
    }
}

/// `ns` nanoseconds as seconds, exactly and without trailing zeros (`0.5`, `1.000000001`,
/// `3`): [`Filter::seconds`] reads it back to the same nanosecond.
fn seconds_text(ns: u64) -> String {
    let (whole, mut part) = (ns / 1_000_000_000, ns % 1_000_000_000);
    let mut text = whole.to_string();
    if part > 0 {
        text.push('.');
        let mut scale = 100_000_000;
        while part > 0 {
            text.push(char::from(b'0' + (part / scale) as u8));
            part %= scale;
            scale /= 10;
        }
    }
    text
}

/// The sample rows that may hold what `filter` keeps: with a time range over samples in time
/// order (`time_sorted`), the one run of rows in it, found by binary search; else every row.
pub(crate) fn rows_in_range(
    session: &Session,
    filter: &Filter,
    time_sorted: bool,
) -> std::ops::Range<usize> {
    let times = &session.samples.time_ns;
    match filter.time_ns {
        Some((from, to)) if time_sorted => {
            times.partition_point(|&t| t < from)..times.partition_point(|&t| t < to)
        }
        _ => 0..times.len(),
    }
}

/// A [`Filter`] made ready for passes over one session's samples: its threads, scopes and tasks
/// as masks, so that telling whether a sample is kept costs a lookup of each. Every view that
/// passes over the samples (the call tree's sums, the timeline, the stack chart) asks it, so
/// that each keeps the samples `prof report` keeps with the same options.
pub(crate) struct KeptSamples<'a> {
    session: &'a Session,
    filter: &'a Filter,
    /// Per thread, whether it is kept; `None`: all are.
    threads: Option<Vec<bool>>,
    /// Per span, whether it is inside a scope of the filter's name; `None`: no scope chosen.
    in_scope: Option<Vec<bool>>,
    /// Per task, whether it has the filter's name; `None`: no task chosen.
    of_task: Option<Vec<bool>>,
}

impl<'a> KeptSamples<'a> {
    /// Prepares `filter` for the samples of `session`.
    pub(crate) fn new(session: &'a Session, filter: &'a Filter) -> Self {
        let threads = filter.threads.as_ref().map(|keep| {
            let mut mask = vec![false; session.threads.len()];
            for t in keep {
                if let Some(slot) = mask.get_mut(t.index()) {
                    *slot = true;
                }
            }
            mask
        });
        KeptSamples {
            session,
            filter,
            threads,
            in_scope: filter
                .scope
                .as_deref()
                .map(|name| super::scope_stats::spans_inside(session, name)),
            of_task: filter
                .task
                .as_deref()
                .map(|name| super::scope_stats::tasks_named(session, name)),
        }
    }

    /// Whether the filter keeps sample `i`: of a kept thread, in the time range, in the state,
    /// inside the scope and in the task it names.
    pub(crate) fn keeps(&self, i: usize) -> bool {
        let samples = &self.session.samples;
        if let Some(inside) = &self.in_scope {
            if !samples.scope(i).is_some_and(|s| inside[s.index()]) {
                return false;
            }
        }
        if let Some(named) = &self.of_task {
            if !samples.task(i).is_some_and(|t| named[t.index()]) {
                return false;
            }
        }
        if let Some(mask) = &self.threads {
            if !mask
                .get(samples.thread[i].index())
                .copied()
                .unwrap_or(false)
            {
                return false;
            }
        }
        if let Some((start, end)) = self.filter.time_ns {
            let t = samples.time_ns[i];
            if t < start || t >= end {
                return false;
            }
        }
        self.filter
            .state
            .is_none_or(|state| samples.state(i).unwrap_or_default() == state)
    }
}

/// Sample weight and count per stack node, for the samples a [`Filter`] keeps. Indexed by
/// [`StackId`]; only the leaf stack of each sample is credited ("self").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackWeights {
    /// Summed weight of the samples whose leaf is each stack.
    pub weight: Vec<u64>,
    /// Number of samples whose leaf is each stack.
    pub count: Vec<u64>,
}

impl StackWeights {
    /// Sums the samples of `session` that `filter` keeps.
    pub fn compute(session: &Session, filter: &Filter) -> Self {
        Self::compute_rows(session, filter, 0..session.samples.len())
    }

    /// Sums the samples of `session` that `filter` keeps, by the cheapest way that gives what
    /// [`StackWeights::compute`] gives: the sum of the kept threads' `per_thread` weights (see
    /// [`StackWeights::per_thread`]) when the filter chooses by thread only, the rows of its time
    /// range found by binary search when `time_sorted` (the samples are in time order), else
    /// one pass. Per-thread sums know nothing of time, state, scope or task, so any of those
    /// needs the samples.
    pub fn select(
        session: &Session,
        filter: &Filter,
        per_thread: Option<&[StackWeights]>,
        time_sorted: bool,
    ) -> Self {
        let by_thread_only = filter.time_ns.is_none()
            && filter.state.is_none()
            && filter.scope.is_none()
            && filter.task.is_none();
        match (per_thread, filter.time_ns) {
            (Some(parts), _) if by_thread_only => {
                let stacks = session.stacks.len();
                match &filter.threads {
                    Some(threads) => {
                        Self::sum(stacks, threads.iter().filter_map(|t| parts.get(t.index())))
                    }
                    None => Self::sum(stacks, parts),
                }
            }
            (_, Some(_)) if time_sorted => {
                Self::compute_rows(session, filter, rows_in_range(session, filter, time_sorted))
            }
            _ => Self::compute(session, filter),
        }
    }

    /// Sums the samples of `session` that `filter` keeps among the sample rows `rows` (clamped
    /// to the samples): when the samples are in time order, a time range's rows are one run that
    /// a binary search finds, and the rest need no pass.
    pub fn compute_rows(session: &Session, filter: &Filter, rows: std::ops::Range<usize>) -> Self {
        let mut out = StackWeights {
            weight: vec![0; session.stacks.len()],
            count: vec![0; session.stacks.len()],
        };
        let kept = KeptSamples::new(session, filter);
        let samples = &session.samples;
        let end = rows.end.min(samples.len());
        for i in rows.start.min(end)..end {
            if !kept.keeps(i) {
                continue;
            }
            let s = samples.stack[i].index();
            out.weight[s] = out.weight[s].saturating_add(samples.weight[i]);
            out.count[s] = out.count[s].saturating_add(samples.multiplicity(i));
        }
        out
    }

    /// The weight of samples whose leaf is `stack`.
    pub fn weight_of(&self, stack: StackId) -> u64 {
        self.weight[stack.index()]
    }

    /// The total weight kept.
    pub fn total(&self) -> u64 {
        self.weight.iter().fold(0, |a, &w| a.saturating_add(w))
    }

    /// The weights of each thread's samples (indexed by [`ThreadIdx`]), in one pass: any set of
    /// threads over the whole session is then their [`StackWeights::sum`], with no pass over the
    /// samples. Takes threads x stacks entries: for sessions with few threads.
    pub fn per_thread(session: &Session) -> Vec<StackWeights> {
        let empty = StackWeights {
            weight: vec![0; session.stacks.len()],
            count: vec![0; session.stacks.len()],
        };
        let mut out = vec![empty; session.threads.len()];
        let samples = &session.samples;
        for i in 0..samples.len() {
            let Some(part) = out.get_mut(samples.thread[i].index()) else {
                continue;
            };
            let s = samples.stack[i].index();
            part.weight[s] = part.weight[s].saturating_add(samples.weight[i]);
            part.count[s] = part.count[s].saturating_add(samples.multiplicity(i));
        }
        out
    }

    /// The per-stack sum of `parts` over `stacks` stacks: with [`StackWeights::per_thread`], what
    /// [`StackWeights::compute`] gives for those threads (saturating sums do not depend on order).
    pub fn sum<'a>(stacks: usize, parts: impl IntoIterator<Item = &'a StackWeights>) -> Self {
        let mut out = StackWeights {
            weight: vec![0; stacks],
            count: vec![0; stacks],
        };
        for part in parts {
            for (sum, w) in out.weight.iter_mut().zip(&part.weight) {
                *sum = sum.saturating_add(*w);
            }
            for (sum, c) in out.count.iter_mut().zip(&part.count) {
                *sum = sum.saturating_add(*c);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{FrameSpec, SessionBuilder};

    #[test]
    fn filters_by_process_pid_and_name_within_chosen_threads() {
        use crate::session::Process;
        let mut b = SessionBuilder::default();
        let process = |pid, name: &str| Process {
            pid,
            name: name.into(),
            ..Process::default()
        };
        let sh = b.push_process(process(10, "sh"));
        let spin_a = b.push_process(process(11, "spin"));
        let spin_b = b.push_process(process(12, "spin"));
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        for (process, tid, name, weight) in [
            (sh, 10, "sh", 1),
            (spin_a, 11, "spin", 2),
            (spin_a, 13, "helper", 4),
            (spin_b, 12, "spin", 8),
        ] {
            let t = b.thread_in(process, tid, name);
            b.push_sample(stack, t, 1, weight);
        }
        let session = b.finish();
        let total = |filter: Filter| StackWeights::compute(&session, &filter).total();
        assert_eq!(total(Filter::all().processes(&session, |p| p.pid == 11)), 6);
        assert_eq!(
            total(Filter::all().processes(&session, |p| p.is_named("spin"))),
            14
        );
        let spin_threads = Filter::all().thread_named(&session, "spin");
        assert_eq!(total(spin_threads.processes(&session, |p| p.pid == 11)), 2);
        assert_eq!(total(Filter::all().processes(&session, |p| p.pid == 99)), 0);
    }

    /// Three threads named `node` of one process, and `sh`'s.
    fn same_named_threads() -> Session {
        use crate::session::Process;
        let mut b = SessionBuilder::default();
        let sh = b.push_process(Process {
            pid: 10,
            name: "sh".into(),
            ..Process::default()
        });
        let node = b.push_process(Process {
            pid: 40,
            name: "node".into(),
            ..Process::default()
        });
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        for (process, tid, name, weight) in [
            (sh, 10, "sh", 1),
            (node, 41, "node", 2),
            (node, 42, "node", 4),
            (node, 43, "node", 8),
        ] {
            let t = b.thread_in(process, tid, name);
            b.push_sample(stack, t, 1, weight);
        }
        b.finish()
    }

    #[test]
    fn the_viewers_choice_of_a_thread_is_the_filter_report_tid_builds_from_its_options() {
        let session = same_named_threads();
        for (i, thread) in session.threads.iter().enumerate() {
            // What the viewer builds from the page's choice of thread `i`.
            let viewer = Filter::all().threads([ThreadIdx(i as u32)]);
            let options = viewer.report_options(&session);
            assert_eq!(options, ["--tid".to_owned(), thread.tid.to_string()]);
            // What `prof report --tid` builds from them.
            let tid: u64 = options[1].parse().unwrap();
            let report = Filter::all().tids(&session, &[tid]);
            assert_eq!(report, viewer);
            assert_eq!(
                StackWeights::compute(&session, &report).total(),
                1 << i,
                "one thread of the same name, not all of them"
            );
        }
        // Several threads: one list, each id once; within threads already chosen.
        let two = Filter::all().threads([ThreadIdx(3), ThreadIdx(1), ThreadIdx(3)]);
        assert_eq!(two.report_options(&session), ["--tid", "43,41"]);
        let named = Filter::all().thread_named(&session, "node");
        assert_eq!(
            named.tids(&session, &[41, 10]),
            Filter::all().threads([ThreadIdx(1)])
        );
        assert_eq!(Filter::all().report_options(&session), Vec::<String>::new());
    }

    #[test]
    fn report_options_read_back_to_the_same_range_state_scope_and_task() {
        let session = same_named_threads();
        let viewer = Filter::all()
            .time_range(1_500_000_001, 2_000_000_000)
            .state(SampleState::Waiting)
            .scope("parse it")
            .task("io");
        let options = viewer.report_options(&session);
        assert_eq!(
            options,
            [
                "--from",
                "1.500000001",
                "--to",
                "2",
                "--state",
                "waiting",
                "--scope",
                "parse it",
                "--task",
                "io"
            ]
        );
        // As `prof report` reads them.
        let seconds = |i: usize| Some(options[i].parse::<f64>().unwrap());
        let report = Filter::all()
            .seconds(seconds(1), seconds(3))
            .unwrap()
            .state(SampleState::Waiting)
            .scope("parse it")
            .task("io");
        assert_eq!(report, viewer);
        // A range open at its end has no `--to`.
        let open = Filter::all().seconds(Some(0.25), None).unwrap();
        assert_eq!(open.report_options(&session), ["--from", "0.25"]);
    }

    #[test]
    fn filters_by_thread_and_half_open_time_range() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let main = b.thread(1, "main");
        let worker = b.thread(2, "worker");
        b.push_sample(s, main, 0, 1);
        b.push_sample(s, main, 10, 2);
        b.push_sample(s, worker, 10, 4);
        b.push_sample(s, worker, 20, 8);
        let session = b.finish();
        let total = |filter: Filter| StackWeights::compute(&session, &filter).total();
        assert_eq!(total(Filter::all()), 15);
        assert_eq!(total(Filter::all().threads([worker])), 12);
        assert_eq!(total(Filter::all().thread_named(&session, "main")), 3);
        assert_eq!(total(Filter::all().thread_named(&session, "nobody")), 0);
        // A session without a process table is one process: the one its metadata names.
        assert_eq!(total(Filter::all().processes(&session, |_| true)), 15);
        assert_eq!(total(Filter::all().processes(&session, |_| false)), 0);
        assert_eq!(total(Filter::all().time_range(10, 20)), 6);
        assert_eq!(total(Filter::all().threads([main]).time_range(10, 20)), 2);
        let w = StackWeights::compute(&session, &Filter::all());
        assert_eq!(w.count[s.index()], 4);
        // No state recorded: every sample counts as running.
        assert_eq!(total(Filter::all().state(SampleState::Running)), 15);
        assert_eq!(total(Filter::all().state(SampleState::Waiting)), 0);
    }

    #[test]
    fn select_with_per_thread_sums_honours_the_state_filter() {
        // The viewer summed its per-thread weights whenever no time range was set, so a wall
        // session's waiting-state filter showed every sample.
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let g = b.intern_frame(&FrameSpec::named("g"));
        let sf = b.intern_stack_path(&[f]).unwrap();
        let sg = b.intern_stack_path(&[g]).unwrap();
        let main = b.thread(1, "main");
        let worker = b.thread(2, "worker");
        b.push_sample_full(sf, main, 0, &[1], 1, Some(SampleState::Running));
        b.push_sample_full(sg, main, 10, &[2], 1, Some(SampleState::Waiting));
        b.push_sample_full(sf, worker, 20, &[4], 1, Some(SampleState::Waiting));
        b.push_sample_full(sg, worker, 30, &[8], 1, Some(SampleState::Running));
        let session = b.finish();
        let parts = StackWeights::per_thread(&session);
        for filter in [
            Filter::all(),
            Filter::all().threads([worker]),
            Filter::all().state(SampleState::Waiting),
            Filter::all().threads([main]).state(SampleState::Waiting),
            Filter::all().state(SampleState::Running).time_range(0, 25),
        ] {
            let want = StackWeights::compute(&session, &filter);
            for time_sorted in [false, true] {
                let got = StackWeights::select(&session, &filter, Some(&parts), time_sorted);
                assert_eq!(got, want, "{filter:?}");
            }
        }
        let waiting = Filter::all().state(SampleState::Waiting);
        assert_eq!(
            StackWeights::select(&session, &waiting, Some(&parts), true).total(),
            6
        );
    }

    #[test]
    fn a_run_of_rows_sums_only_those_rows_and_is_clamped_to_the_samples() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let main = b.thread(1, "main");
        for (i, w) in [1, 2, 4, 8].into_iter().enumerate() {
            b.push_sample(s, main, i as u64 * 10, w);
        }
        let session = b.finish();
        let range = Filter::all().time_range(10, 30);
        let rows = |r: std::ops::Range<usize>| StackWeights::compute_rows(&session, &range, r);
        // The rows of the range, or any run holding them, sum what the whole pass sums.
        assert_eq!(rows(1..3), StackWeights::compute(&session, &range));
        assert_eq!(rows(0..100).total(), 6);
        assert_eq!(rows(2..3).total(), 4);
        assert_eq!(rows(5..9).total(), 0);
    }

    #[test]
    fn filters_by_thread_state() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_sample_full(s, t, 0, &[1], 1, Some(SampleState::Running));
        b.push_sample_full(s, t, 1, &[2], 1, Some(SampleState::Waiting));
        b.push_sample_full(s, t, 2, &[4], 1, Some(SampleState::Waiting));
        let session = b.finish();
        let total = |filter: Filter| StackWeights::compute(&session, &filter).total();
        assert_eq!(total(Filter::all().state(SampleState::Running)), 1);
        assert_eq!(total(Filter::all().state(SampleState::Waiting)), 6);
        assert_eq!(
            total(Filter::all().time_range(1, 2).state(SampleState::Waiting)),
            2
        );
    }

    #[test]
    fn seconds_choose_a_half_open_range_and_refuse_nonsense() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        for i in 0..4 {
            b.push_sample(s, t, i * 500_000_000, 1 << i);
        }
        let session = b.finish();
        let total = |from, to| {
            let filter = Filter::all().seconds(from, to).unwrap();
            StackWeights::compute(&session, &filter).total()
        };
        assert_eq!(total(None, None), 15);
        assert_eq!(total(Some(0.5), Some(1.5)), 2 + 4);
        assert_eq!(total(Some(1.0), None), 4 + 8);
        assert_eq!(total(None, Some(0.5)), 1);
        assert!(Filter::all().seconds(Some(2.0), Some(1.0)).is_err());
        assert!(Filter::all().seconds(Some(-1.0), None).is_err());
        assert!(Filter::all().seconds(None, Some(f64::NAN)).is_err());
    }

    #[test]
    fn rows_standing_for_several_samples_count_as_that_many() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_samples(s, t, 0, 200, 200);
        b.push_sample(s, t, 0, 1);
        let w = StackWeights::compute(&b.finish(), &Filter::all());
        assert_eq!((w.count[s.index()], w.weight[s.index()]), (201, 201));
    }

    #[test]
    fn per_thread_sums_equal_the_filtered_pass() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let g = b.intern_frame(&FrameSpec::named("g"));
        let s1 = b.intern_stack_path(&[f]).unwrap();
        let s2 = b.intern_stack_path(&[f, g]).unwrap();
        let threads: Vec<_> = (0..3).map(|i| b.thread(i, &format!("t{i}"))).collect();
        for i in 0..30u64 {
            let stack = if i % 3 == 0 { s1 } else { s2 };
            b.push_samples(stack, threads[(i % 3) as usize], i, i + 1, 1 + i % 2);
        }
        // A weight that saturates: the sums must saturate alike.
        b.push_sample(s1, threads[1], 40, u64::MAX - 5);
        let session = b.finish();
        let parts = StackWeights::per_thread(&session);
        let stacks = session.stacks.len();
        for chosen in [vec![], vec![0], vec![1, 2], vec![0, 1, 2]] {
            let filter = Filter::all().threads(chosen.iter().map(|&t| ThreadIdx(t)));
            let summed = StackWeights::sum(stacks, chosen.iter().map(|&t| &parts[t as usize]));
            assert_eq!(
                summed,
                StackWeights::compute(&session, &filter),
                "{chosen:?}"
            );
        }
        assert_eq!(
            StackWeights::sum(stacks, &parts),
            StackWeights::compute(&session, &Filter::all())
        );
    }
}
