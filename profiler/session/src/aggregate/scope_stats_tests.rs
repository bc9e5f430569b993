//! Scope tables, task tables, scope and task filters, and group by task, on sessions built with
//! the session builder.

use super::*;
use crate::session::{
    FrameSpec, Poll, Session, SessionBuilder, SiteKind, Span, SpanIdx, ThreadIdx,
};

/// A thread running `request` three times (10, 20 and 70 µs), each with a `parse` child of
/// 4 µs; a second thread with one `parse` of 2 µs; two tasks named `fetch` and one `store`;
/// samples in and out of each, weight 1 000 each.
fn scoped() -> Session {
    let mut b = SessionBuilder::default();
    let main = b.thread(1, "main");
    let worker = b.thread(2, "worker");
    let request = b.intern_site("request", Some("src/lib.rs"), Some(3), SiteKind::Scope);
    let parse = b.intern_site("parse", None, None, SiteKind::Scope);
    let f = b.intern_frame(&FrameSpec::named("main"));
    let g = b.intern_frame(&FrameSpec::named("work"));
    let main_stack = b.intern_stack_path(&[f]).unwrap();
    let work_stack = b.intern_stack_path(&[f, g]).unwrap();
    let fetch_a = b.intern_task(1, "fetch");
    let fetch_b = b.intern_task(2, "fetch");
    let store = b.intern_task(3, "store");
    let mut at = 0;
    for (k, len) in [10_000u64, 20_000, 70_000].into_iter().enumerate() {
        let outer = b.push_span(Span {
            site: request,
            thread: main,
            start_ns: at,
            end_ns: at + len,
            parent: None,
            fields: Vec::new(),
        });
        let inner = b.push_span(Span {
            site: parse,
            thread: main,
            start_ns: at + 1_000,
            end_ns: at + 5_000,
            parent: Some(outer),
            fields: Vec::new(),
        });
        let task = [fetch_a, fetch_b, store][k];
        b.push_poll(Poll {
            task,
            thread: main,
            start_ns: at,
            end_ns: at + len,
            waited_at: None,
        });
        // One sample in `parse`, one in `request` only.
        b.push_sample(work_stack, main, at + 2_000, 1_000);
        b.set_last_sample_context(Some(inner), Some(task));
        b.push_sample(main_stack, main, at + 6_000, 1_000);
        b.set_last_sample_context(Some(outer), Some(task));
        at += len;
    }
    b.push_span(Span {
        site: parse,
        thread: worker,
        start_ns: 500,
        end_ns: 2_500,
        parent: None,
        fields: Vec::new(),
    });
    b.push_sample(main_stack, worker, 1_000, 1_000);
    b.set_last_sample_context(Some(SpanIdx(6)), None);
    // Outside every scope and task.
    b.push_sample(main_stack, main, at + 1, 1_000);
    b.finish()
}

#[test]
fn scope_rows_count_every_call_and_subtract_child_spans_for_self() {
    let session = scoped();
    let rows = scope_table(&session, &Filter::all());
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["request", "parse"]);
    let request = &rows[0];
    assert_eq!(request.calls, 3);
    assert_eq!(request.total_ns, 100_000);
    assert_eq!(request.self_ns, 100_000 - 3 * 4_000);
    assert_eq!((request.min_ns, request.max_ns), (10_000, 70_000));
    assert_eq!((request.p50_ns, request.p99_ns), (20_000, 70_000));
    assert_eq!(request.total_per_call_ns(), 33_333);
    assert_eq!(request.self_per_call_ns(), 29_333);
    let parse = &rows[1];
    assert_eq!(
        (parse.calls, parse.total_ns, parse.self_ns),
        (4, 14_000, 14_000)
    );
    assert_eq!(
        (parse.min_ns, parse.max_ns, parse.p50_ns),
        (2_000, 4_000, 4_000)
    );
}

#[test]
fn scope_rows_keep_the_threads_and_the_time_range_of_the_filter() {
    let session = scoped();
    let worker = scope_table(&session, &Filter::all().threads([ThreadIdx(1)]));
    assert_eq!(worker.len(), 1);
    assert_eq!((worker[0].name.as_str(), worker[0].calls), ("parse", 1));
    // Spans starting in [10 µs, 30 µs): the second request and its parse.
    let range = scope_table(&session, &Filter::all().time_range(10_000, 30_000));
    assert_eq!(range.iter().map(|r| r.calls).collect::<Vec<_>>(), [1, 1]);
    assert_eq!(range[0].total_ns, 20_000);
    assert_eq!(
        scope_durations(&session, &Filter::all(), "parse"),
        [2_000, 4_000, 4_000, 4_000]
    );
}

#[test]
fn percentiles_are_nearest_rank() {
    let values: Vec<u64> = (1..=100).collect();
    assert_eq!(percentile(&values, 50.0), 50);
    assert_eq!(percentile(&values, 99.0), 99);
    assert_eq!(percentile(&values, 100.0), 100);
    assert_eq!(percentile(&values, 0.0), 1);
    assert_eq!(percentile(&[7], 90.0), 7);
    assert_eq!(percentile(&[], 50.0), 0);
}

#[test]
fn the_scope_filter_keeps_samples_in_the_scope_or_a_scope_inside_it() {
    let session = scoped();
    let request = StackWeights::compute(&session, &Filter::all().scope("request"));
    assert_eq!(
        (request.total(), request.count.iter().sum::<u64>()),
        (6_000, 6)
    );
    // `parse` on the worker is not inside `request`, but is a `parse`.
    let parse = StackWeights::compute(&session, &Filter::all().scope("parse"));
    assert_eq!(parse.total(), 4_000);
    let none = StackWeights::compute(&session, &Filter::all().scope("nothing"));
    assert_eq!(none.total(), 0);
}

#[test]
fn the_task_filter_keeps_samples_of_tasks_of_that_name() {
    let session = scoped();
    let fetch = StackWeights::compute(&session, &Filter::all().task("fetch"));
    assert_eq!(fetch.total(), 4_000);
    let store = StackWeights::compute(&session, &Filter::all().task("store").scope("parse"));
    assert_eq!(store.total(), 1_000);
}

#[test]
fn task_rows_sum_poll_time_and_sample_weight_per_name() {
    let session = scoped();
    let rows = task_table(&session, &Filter::all()).rows;
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0],
        TaskRow {
            name: "fetch".into(),
            tasks: 2,
            polls: 2,
            poll_ns: 30_000,
            weight: 4_000,
        }
    );
    assert_eq!(
        (rows[1].name.as_str(), rows[1].poll_ns, rows[1].weight),
        ("store", 70_000, 2_000)
    );
    let early = task_table(&session, &Filter::all().time_range(0, 10_000)).rows;
    assert_eq!((early[0].polls, early[0].weight), (1, 2_000));
    assert_eq!((early[1].polls, early[1].weight), (0, 0));
}

#[test]
fn the_task_table_total_ignores_the_task_filter_it_lists() {
    // `prof report --tasks --task fetch` showed fetch at 100%: its total was a second pass
    // that kept the task filter the rows had dropped.
    let session = scoped();
    let all = task_table(&session, &Filter::all());
    let fetch = task_table(&session, &Filter::all().task("fetch"));
    assert_eq!(fetch, all);
    assert_eq!(
        fetch.total_weight,
        StackWeights::compute(&session, &Filter::all()).total()
    );
    assert!(fetch.rows[0].weight < fetch.total_weight);
    // The other filters keep their effect on the samples and their total.
    let parse = task_table(&session, &Filter::all().scope("parse").task("fetch"));
    let parse_total = StackWeights::compute(&session, &Filter::all().scope("parse")).total();
    assert_eq!(parse.total_weight, parse_total);
}

#[test]
fn grouping_a_session_without_tasks_changes_nothing() {
    // The page kept `group=task` across a switch to a file without tasks (its checkbox hidden),
    // and every stack went under one `task:(none)` root.
    let mut b = SessionBuilder::default();
    let main = b.thread(1, "main");
    let f = b.intern_frame(&FrameSpec::named("main"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    b.push_sample(stack, main, 0, 1_000);
    let session = b.finish();
    assert_eq!(group_by_task(&session), session);
}

#[test]
fn grouping_by_task_puts_each_task_name_above_its_stacks() {
    let session = scoped();
    let grouped = group_by_task(&session);
    let weights = StackWeights::compute(&grouped, &Filter::all());
    let tree = CallTree::build(&grouped, &weights, &[]);
    let rows = tree.top(&grouped, 10, SortBy::Total);
    let total = |name: &str| {
        rows.iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
            .total_weight
    };
    assert_eq!(total("task:fetch"), 4_000);
    assert_eq!(total("task:store"), 2_000);
    assert_eq!(total(NO_TASK_FRAME), 2_000);
    assert_eq!(total("main"), 8_000);
    assert_eq!(grouped.total_weight(), session.total_weight());
    // Every sample keeps its frames, under one more.
    for i in 0..session.samples.len() {
        let before: Vec<_> = session.stack_frames(session.samples.stack[i]).collect();
        let after: Vec<_> = grouped.stack_frames(grouped.samples.stack[i]).collect();
        assert_eq!(after[..before.len()], before[..]);
        assert_eq!(after.len(), before.len() + 1);
    }
}

#[test]
fn the_longest_calls_come_first_and_keep_the_filter() {
    let session = scoped();
    let longest = longest_spans(&session, &Filter::all(), "request", 2);
    let lengths: Vec<u64> = longest
        .iter()
        .map(|&s| session.scopes.span(s).duration_ns())
        .collect();
    assert_eq!(lengths, [70_000, 20_000]);
    // Equal lengths: the earliest first; the worker's parse is the only one there.
    let parse = longest_spans(&session, &Filter::all(), "parse", 10);
    assert_eq!(parse.len(), 4);
    assert_eq!(session.scopes.span(parse[0]).start_ns, 1_000);
    let worker = longest_spans(
        &session,
        &Filter::all().threads([ThreadIdx(1)]),
        "parse",
        10,
    );
    assert_eq!(worker, [SpanIdx(6)]);
}

#[test]
fn histogram_bars_cover_every_call_shortest_to_longest() {
    let durations: Vec<u64> = vec![1_000, 1_000, 2_000, 5_000, 9_000];
    let bars = duration_histogram(&durations, 4).bars;
    assert_eq!(bars.len(), 4);
    assert_eq!(bars.iter().map(|b| b.calls).sum::<u64>(), 5);
    assert_eq!(bars[0].calls, 3);
    assert_eq!(bars[3].calls, 1);
    assert_eq!(bars[0].height, 1.0);
    assert_eq!(bars[0].text, "3 calls from 0.001 to 0.003 ms");
    assert!(duration_histogram(&[], 4).bars.is_empty());
    assert_eq!(duration_histogram(&[7, 7], 10).bars[0].calls, 2);
}

#[test]
fn the_last_histogram_bar_is_as_wide_as_the_others() {
    // The viewer's bars were (high - low) / bars wide, rounded down, and everything past the
    // last one was clamped into it: 0..=399 ns in 200 bars put 201 calls in bar 199.
    let durations: Vec<u64> = (0..400).collect();
    let histogram = duration_histogram(&durations, 200);
    assert_eq!(histogram.bars.len(), 200);
    for bar in &histogram.bars {
        assert_eq!((bar.calls, bar.to_ns - bar.from_ns), (2, 2), "{bar:?}");
    }
    assert_eq!(histogram.scale_text, "linear scale");
    // Fewer distinct nanoseconds than bars: one bar per nanosecond.
    assert_eq!(duration_histogram(&[5, 6, 7], 24).bars.len(), 3);
}

#[test]
fn a_long_tailed_spread_gets_logarithmic_bars_and_axis_texts() {
    // A `prof demo` session's `collatz batch`: 0.365 to 12.573 ms, median 0.665 ms. Equal
    // widths put every call but the longest in the first bar.
    let mut durations = vec![365_000u64; 40];
    durations.extend([500_000; 30]);
    durations.extend([665_000; 30]);
    durations.extend([1_200_000, 3_000_000, 12_573_000]);
    let histogram = duration_histogram(&durations, 24);
    let bars = &histogram.bars;
    assert_eq!(bars.iter().map(|b| b.calls).sum::<u64>(), 103);
    assert!(bars[0].calls < 50, "{bars:?}");
    assert!(bars.iter().filter(|b| b.calls > 0).count() >= 5, "{bars:?}");
    assert_eq!((bars[0].from_ns, bars[23].to_ns), (365_000, 12_573_001));
    for pair in bars.windows(2) {
        assert_eq!(pair[0].to_ns, pair[1].from_ns);
        // Equal ratios: each bar about 16% wider than the one before.
        let (a, b) = (
            pair[0].to_ns - pair[0].from_ns,
            pair[1].to_ns - pair[1].from_ns,
        );
        assert!((1.1..1.25).contains(&(b as f64 / a as f64)), "{pair:?}");
    }
    assert_eq!(
        (histogram.low_text.as_str(), histogram.high_text.as_str()),
        ("0.365 ms", "12.573 ms")
    );
    assert_eq!(histogram.scale_text, "log scale");
    assert!(
        bars[0].text.starts_with("40 calls from 0.365 to 0."),
        "{}",
        bars[0].text
    );
}
