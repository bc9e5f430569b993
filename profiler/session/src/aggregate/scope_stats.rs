//! Instrumented scopes and async tasks: exact call counts and per-call durations per
//! scope name, and time per task (grouping by task or scope is in `grouping`).
//!
//! Scopes count calls exactly (every span was recorded), unlike samples; durations are the spans'
//! own start and end times. Self time is a span's duration minus its child spans' durations.

use super::{format_ms, thousands, Filter};
use crate::session::{Session, SpanIdx, StrId, ThreadIdx};
use std::collections::HashMap;

/// One row of the scope table: every span of the sites named [`ScopeRow::name`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeRow {
    /// The scope's name (sites at different places with one name share a row).
    pub name: String,
    /// Exact number of calls (spans).
    pub calls: u64,
    /// Sum of the calls' durations, in nanoseconds (a recursive scope counts its inner calls
    /// again, as a call tree's total does).
    pub total_ns: u64,
    /// Sum of the calls' self durations: each call's duration minus its child spans'.
    pub self_ns: u64,
    /// The shortest call's duration.
    pub min_ns: u64,
    /// The longest call's duration.
    pub max_ns: u64,
    /// The median call duration (nearest rank, see [`percentile`]).
    pub p50_ns: u64,
    /// The 99th percentile call duration.
    pub p99_ns: u64,
}

impl ScopeRow {
    /// Mean total duration per call, in nanoseconds (0 without calls).
    pub fn total_per_call_ns(&self) -> u64 {
        self.total_ns.checked_div(self.calls).unwrap_or(0)
    }

    /// Mean self duration per call, in nanoseconds (0 without calls).
    pub fn self_per_call_ns(&self) -> u64 {
        self.self_ns.checked_div(self.calls).unwrap_or(0)
    }
}

/// The nearest-rank percentile `p` (0 to 100) of `sorted` (ascending): the smallest value with
/// at least `p`% of the values at or below it; 0 for no values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// Which filters the scope and task tables honour, the one rule the CLI and the viewer share
// (both pass their whole filter): spans and polls are kept by thread and start time
// ([`span_kept`]: a span has no state, and the tables list the scopes and tasks); the samples a
// task row weighs, and the total its share is of, by every filter but the task one
// ([`task_samples_filter`]: the table lists the tasks, so a task filter would leave one row at
// 100%).

/// True for a span `filter` keeps: its thread is kept, and it starts in the time range.
pub(super) fn span_kept(
    filter: &Filter,
    thread: ThreadIdx,
    start_ns: u64,
    threads: Option<&[bool]>,
) -> bool {
    threads.is_none_or(|keep| keep.get(thread.index()).copied().unwrap_or(false))
        && filter
            .time_ns
            .is_none_or(|(from, to)| from <= start_ns && start_ns < to)
}

pub(super) fn thread_mask(session: &Session, filter: &Filter) -> Option<Vec<bool>> {
    filter.threads.as_ref().map(|keep| {
        let mut mask = vec![false; session.threads.len()];
        for t in keep {
            if let Some(slot) = mask.get_mut(t.index()) {
                *slot = true;
            }
        }
        mask
    })
}

/// Each span's self duration: its duration minus its child spans' durations.
fn self_durations(session: &Session) -> Vec<u64> {
    let spans = &session.scopes.spans;
    let mut own: Vec<u64> = spans.iter().map(|s| s.duration_ns()).collect();
    for span in spans {
        if let Some(parent) = span.parent {
            own[parent.index()] = own[parent.index()].saturating_sub(span.duration_ns());
        }
    }
    own
}

/// The scope table: one row per scope name over the spans `filter` keeps (by thread, and by
/// start time when it has a range), the most total time first (then by name).
pub fn scope_table(session: &Session, filter: &Filter) -> Vec<ScopeRow> {
    let threads = thread_mask(session, filter);
    let own = self_durations(session);
    let mut by_name: HashMap<&str, (ScopeRow, Vec<u64>)> = HashMap::new();
    for (i, span) in session.scopes.spans.iter().enumerate() {
        if !span_kept(filter, span.thread, span.start_ns, threads.as_deref()) {
            continue;
        }
        let name = session.str(session.scopes.site(span.site).name);
        let (row, durations) = by_name.entry(name).or_default();
        let d = span.duration_ns();
        row.calls += 1;
        row.total_ns = row.total_ns.saturating_add(d);
        row.self_ns = row.self_ns.saturating_add(own[i]);
        durations.push(d);
    }
    let mut rows: Vec<ScopeRow> = by_name
        .into_iter()
        .map(|(name, (mut row, mut durations))| {
            crate::order::sort_by_key(&mut durations, |&d| d);
            row.name = name.to_owned();
            row.min_ns = durations[0];
            row.max_ns = durations[durations.len() - 1];
            row.p50_ns = percentile(&durations, 50.0);
            row.p99_ns = percentile(&durations, 99.0);
            row
        })
        .collect();
    crate::order::sort_by(&mut rows, |a, b| {
        b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name))
    });
    rows
}

/// The durations of every call of the scope `name` that `filter` keeps, shortest first: the
/// distribution the scope table's percentiles come from.
pub fn scope_durations(session: &Session, filter: &Filter, name: &str) -> Vec<u64> {
    let threads = thread_mask(session, filter);
    let mut out: Vec<u64> = session
        .scopes
        .spans
        .iter()
        .filter(|s| span_kept(filter, s.thread, s.start_ns, threads.as_deref()))
        .filter(|s| session.str(session.scopes.site(s.site).name) == name)
        .map(|s| s.duration_ns())
        .collect();
    crate::order::sort_by_key(&mut out, |&d| d);
    out
}

/// One bar of a [`DurationHistogram`]: the calls whose duration lies in `[from_ns, to_ns)`.
#[derive(Clone, Debug, PartialEq)]
pub struct DurationBar {
    /// The shortest duration the bar holds.
    pub from_ns: u64,
    /// One past the longest duration the bar holds.
    pub to_ns: u64,
    /// How many calls it holds.
    pub calls: u64,
    /// Its height relative to the tallest bar (0 to 1).
    pub height: f64,
    /// `3 calls from 0.001 to 0.003 ms`: its calls and edges, for a tooltip.
    pub text: String,
}

/// The spread of a scope's call durations as bars, with the texts of its axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DurationHistogram {
    /// The bars, shortest durations first; together they hold every call.
    pub bars: Vec<DurationBar>,
    /// The shortest duration (`0.365 ms`), under the first bar.
    pub low_text: String,
    /// The longest duration, under the last bar.
    pub high_text: String,
    /// How the bars are spaced (`log scale` or `linear scale`), under the middle.
    pub scale_text: String,
}

/// Bars are spaced logarithmically when the longest call is more than this many times the
/// shortest: equal widths would put nearly every call of a long-tailed spread into the first bar.
const LOG_SPREAD: u64 = 20;

/// The calls of `sorted` (durations, shortest first, as [`scope_durations`] gives them) in at most
/// `bars` bars (1 to 200) from the shortest duration to the longest: of equal width, or of
/// equal ratio when the longest is more than 20 times the shortest. No calls, no bars.
pub fn duration_histogram(sorted: &[u64], bars: usize) -> DurationHistogram {
    let (Some(&low), Some(&high)) = (sorted.first(), sorted.last()) else {
        return DurationHistogram::default();
    };
    // The bars cover [low, end); no bar narrower than one nanosecond.
    let end = high.saturating_add(1).max(low + 1);
    let n = (bars.clamp(1, 200) as u64).min(end - low) as usize;
    let log = low > 0 && high / low > LOG_SPREAD;
    let mut calls = vec![0u64; n];
    let edges: Vec<u64> = if log {
        let ratio = (end as f64 / low as f64).ln();
        let mut edges: Vec<u64> = (0..=n)
            .map(|i| (low as f64 * (ratio * i as f64 / n as f64).exp()).round() as u64)
            .collect();
        (edges[0], edges[n]) = (low, end);
        for i in 1..=n {
            edges[i] = edges[i].clamp(edges[i - 1], end);
        }
        for &d in sorted {
            let bar = edges.partition_point(|&e| e <= d).clamp(1, n) - 1;
            calls[bar] += 1;
        }
        edges
    } else {
        for &d in sorted {
            if let Some(bar) = super::bucket_of(d, low, end, n) {
                calls[bar] += 1;
            }
        }
        // Bar i holds the durations d with floor((d - low) * n / (end - low)) == i.
        let span = u128::from(end - low);
        (0..=n as u128)
            .map(|i| low + (i * span).div_ceil(n as u128) as u64)
            .collect()
    };
    let tallest = calls.iter().copied().max().unwrap_or(1).max(1);
    let bars = calls
        .iter()
        .enumerate()
        .map(|(i, &count)| DurationBar {
            from_ns: edges[i],
            to_ns: edges[i + 1],
            calls: count,
            height: count as f64 / tallest as f64,
            text: format!(
                "{} calls from {} to {} ms",
                thousands(count),
                format_ms(edges[i]),
                format_ms(edges[i + 1])
            ),
        })
        .collect();
    DurationHistogram {
        bars,
        low_text: format!("{} ms", format_ms(low)),
        high_text: format!("{} ms", format_ms(high)),
        scale_text: if log { "log scale" } else { "linear scale" }.to_owned(),
    }
}

/// The `n` longest calls of the scope `name` that `filter` keeps, longest first (then earliest):
/// the instances a user may want to look at, and select the time of.
pub fn longest_spans(session: &Session, filter: &Filter, name: &str, n: usize) -> Vec<SpanIdx> {
    let threads = thread_mask(session, filter);
    let scopes = &session.scopes;
    let mut found: Vec<SpanIdx> = scopes
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| span_kept(filter, s.thread, s.start_ns, threads.as_deref()))
        .filter(|(_, s)| session.str(scopes.site(s.site).name) == name)
        .map(|(i, _)| SpanIdx(i as u32))
        .collect();
    crate::order::sort_by_key(&mut found, |&s| {
        let span = scopes.span(s);
        (std::cmp::Reverse(span.duration_ns()), span.start_ns, s)
    });
    found.truncate(n);
    found
}

/// For each span, whether it or a span enclosing it belongs to a site named `name`: the spans a
/// sample may be in to pass [`Filter::scope`].
pub(crate) fn spans_inside(session: &Session, name: &str) -> Vec<bool> {
    let scopes = &session.scopes;
    let named: Vec<bool> = scopes
        .sites
        .iter()
        .map(|s| session.str(s.name) == name)
        .collect();
    let mut inside = Vec::with_capacity(scopes.spans.len());
    for span in &scopes.spans {
        // A parent comes before its child (the reader checks it), so its answer is known.
        let of_parent = span.parent.is_some_and(|p: SpanIdx| inside[p.index()]);
        inside.push(named[span.site.index()] || of_parent);
    }
    inside
}

/// For each task, whether it is named `name`: the tasks a sample may be in to pass
/// [`Filter::task`].
pub(crate) fn tasks_named(session: &Session, name: &str) -> Vec<bool> {
    session
        .tasks
        .tasks
        .iter()
        .map(|t| session.str(t.name) == name)
        .collect()
}

/// One row of the task table: every task of one name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskRow {
    /// The tasks' name.
    pub name: String,
    /// How many tasks have it.
    pub tasks: u64,
    /// How many times they were polled.
    pub polls: u64,
    /// Wall time spent in their polls, in nanoseconds.
    pub poll_ns: u64,
    /// The weight of the samples taken while one of them was polled, in the unit of the
    /// session's sample type (CPU nanoseconds for a CPU session).
    pub weight: u64,
}

/// The task table and the weight its rows' shares are of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tasks {
    /// One row per task name, the most weight first (then the most poll time, then by name).
    pub rows: Vec<TaskRow>,
    /// The weight of every sample kept, in a task or not.
    pub total_weight: u64,
}

/// The filter the samples of the task table pass: `filter` without its task.
fn task_samples_filter(filter: &Filter) -> Filter {
    Filter {
        task: None,
        ..filter.clone()
    }
}

/// The task table: one row per task name, over the polls `filter` keeps (by thread and start
/// time) and the samples it keeps but for its task filter (the table lists the tasks), with
/// the total weight of those samples, in one pass.
pub fn task_table(session: &Session, filter: &Filter) -> Tasks {
    let tasks = &session.tasks;
    let mut row_of: HashMap<StrId, usize> = HashMap::new();
    let mut rows: Vec<TaskRow> = Vec::new();
    let task_row: Vec<usize> = tasks
        .tasks
        .iter()
        .map(|t| {
            let row = *row_of.entry(t.name).or_insert_with(|| {
                rows.push(TaskRow {
                    name: session.str(t.name).to_owned(),
                    ..TaskRow::default()
                });
                rows.len() - 1
            });
            rows[row].tasks += 1;
            row
        })
        .collect();
    let threads = thread_mask(session, filter);
    for poll in &tasks.polls {
        if span_kept(filter, poll.thread, poll.start_ns, threads.as_deref()) {
            let row = &mut rows[task_row[poll.task.index()]];
            row.polls += 1;
            row.poll_ns = row
                .poll_ns
                .saturating_add(poll.end_ns.saturating_sub(poll.start_ns));
        }
    }
    // The samples: the per-stack pass would lose the task, so one pass of its own with the
    // same filter, one task at a time being too slow for many tasks.
    let samples = &session.samples;
    let mut total_weight = 0u64;
    for i in sample_rows(session, &task_samples_filter(filter)) {
        total_weight = total_weight.saturating_add(samples.weight[i]);
        if let Some(task) = samples.task(i) {
            let row = &mut rows[task_row[task.index()]];
            row.weight = row.weight.saturating_add(samples.weight[i]);
        }
    }
    crate::order::sort_by(&mut rows, |a, b| {
        b.weight
            .cmp(&a.weight)
            .then(b.poll_ns.cmp(&a.poll_ns))
            .then(a.name.cmp(&b.name))
    });
    Tasks { rows, total_weight }
}

/// The sample rows `filter` keeps, in order.
fn sample_rows(session: &Session, filter: &Filter) -> Vec<usize> {
    let threads = thread_mask(session, filter);
    let inside = filter.scope.as_deref().map(|n| spans_inside(session, n));
    let named = filter.task.as_deref().map(|n| tasks_named(session, n));
    let samples = &session.samples;
    (0..samples.len())
        .filter(|&i| {
            threads
                .as_ref()
                .is_none_or(|m| m.get(samples.thread[i].index()).copied().unwrap_or(false))
                && filter
                    .time_ns
                    .is_none_or(|(from, to)| from <= samples.time_ns[i] && samples.time_ns[i] < to)
                && filter
                    .state
                    .is_none_or(|s| samples.state(i).unwrap_or_default() == s)
                && inside
                    .as_ref()
                    .is_none_or(|m| samples.scope(i).is_some_and(|s| m[s.index()]))
                && named
                    .as_ref()
                    .is_none_or(|m| samples.task(i).is_some_and(|t| m[t.index()]))
        })
        .collect()
}
