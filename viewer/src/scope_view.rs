//! The scopes and tasks the page shows: the scope table, the spread of one scope's
//! call durations, and the task table, over the threads and time range the view selects. The
//! rows come from `prof`'s core (`scope_table`, `task_table`) with every number formatted there.

use crate::json_out::{JsonOut, ToJson};
use crate::profile::Profile;
use prof_session::aggregate::{
    duration_histogram, format_ms, format_percent, format_time_at, longest_spans, scope_durations,
    scope_table, task_table, thousands, Filter, ScopeRow,
};
use wasm_bindgen::prelude::*;

/// One row of the scope table as the page shows it: raw numbers for sorting and drawing, texts
/// for reading.
struct ScopeEntry {
    name: String,
    calls: u64,
    total_ns: u64,
    self_ns: u64,
    calls_text: String,
    total_text: String,
    self_text: String,
    self_per_call_text: String,
    total_per_call_text: String,
    min_text: String,
    max_text: String,
    p50_text: String,
    p99_text: String,
}

impl ScopeEntry {
    fn of(row: &ScopeRow) -> Self {
        ScopeEntry {
            name: row.name.clone(),
            calls: row.calls,
            total_ns: row.total_ns,
            self_ns: row.self_ns,
            calls_text: thousands(row.calls),
            total_text: format_ms(row.total_ns),
            self_text: format_ms(row.self_ns),
            self_per_call_text: format_ms(row.self_per_call_ns()),
            total_per_call_text: format_ms(row.total_per_call_ns()),
            min_text: format_ms(row.min_ns),
            max_text: format_ms(row.max_ns),
            p50_text: format_ms(row.p50_ns),
            p99_text: format_ms(row.p99_ns),
        }
    }
}

/// One bar of a scope's duration histogram as the page draws it.
struct Bar {
    /// The bar's height relative to the tallest bar (0 to 1).
    height: f64,
    /// Its calls and edges, for its tooltip.
    text: String,
}

/// A scope's duration histogram: its bars and the texts of its axis.
struct Histogram {
    bars: Vec<Bar>,
    low_text: String,
    high_text: String,
    scale_text: String,
}

/// One call of a scope: its time, to select, and what the page says of it.
struct Call {
    from: u64,
    to: u64,
    /// `4.000 ms at 12.5 ms on tokio-worker-0 [4242] (id=7)`: the thread as the timeline's
    /// tracks name it, with its id, since a pool's threads share their name.
    text: String,
}

/// One row of the task table as the page shows it.
struct TaskEntry {
    name: String,
    weight: u64,
    weight_text: String,
    share_text: String,
    tasks_text: String,
    polls_text: String,
    poll_text: String,
}

impl ToJson for ScopeEntry {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("name").string(&self.name);
        w.key("calls").u64(self.calls);
        w.key("totalNs").u64(self.total_ns);
        w.key("selfNs").u64(self.self_ns);
        w.key("callsText").string(&self.calls_text);
        w.key("totalText").string(&self.total_text);
        w.key("selfText").string(&self.self_text);
        w.key("selfPerCallText").string(&self.self_per_call_text);
        w.key("totalPerCallText").string(&self.total_per_call_text);
        w.key("minText").string(&self.min_text);
        w.key("maxText").string(&self.max_text);
        w.key("p50Text").string(&self.p50_text);
        w.key("p99Text").string(&self.p99_text);
        w.end_object();
    }
}

impl ToJson for Bar {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("height").f64(self.height);
        w.key("text").string(&self.text);
        w.end_object();
    }
}

impl ToJson for Histogram {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("bars").array(&self.bars);
        w.key("lowText").string(&self.low_text);
        w.key("highText").string(&self.high_text);
        w.key("scaleText").string(&self.scale_text);
        w.end_object();
    }
}

impl ToJson for Call {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("from").u64(self.from);
        w.key("to").u64(self.to);
        w.key("text").string(&self.text);
        w.end_object();
    }
}

impl ToJson for TaskEntry {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("name").string(&self.name);
        w.key("weight").u64(self.weight);
        w.key("weightText").string(&self.weight_text);
        w.key("shareText").string(&self.share_text);
        w.key("tasksText").string(&self.tasks_text);
        w.key("pollsText").string(&self.polls_text);
        w.key("pollText").string(&self.poll_text);
        w.end_object();
    }
}

/// The time range that selects an interval from `start` to `end`: a range is `[from, to)`, so
/// one past the end keeps a sample taken at the end.
pub(crate) fn selection(start: u64, end: u64) -> (u64, u64) {
    (start, end.max(start).saturating_add(1))
}

/// The columns the scope table sorts by.
fn sort_rows(rows: &mut [ScopeRow], column: &str, descending: bool) {
    prof_session::order::sort_by(rows, |a, b| {
        let order = match column {
            "name" => a.name.cmp(&b.name),
            "calls" => a.calls.cmp(&b.calls),
            "self" => a.self_ns.cmp(&b.self_ns),
            "selfPerCall" => a.self_per_call_ns().cmp(&b.self_per_call_ns()),
            "totalPerCall" => a.total_per_call_ns().cmp(&b.total_per_call_ns()),
            "max" => a.max_ns.cmp(&b.max_ns),
            "p99" => a.p99_ns.cmp(&b.p99_ns),
            _ => a.total_ns.cmp(&b.total_ns),
        };
        let order = if descending { order.reverse() } else { order };
        order.then_with(|| a.name.cmp(&b.name))
    });
}

impl Profile {
    /// The view's whole filter: `prof`'s core decides what of it the scope and task tables
    /// honour. The view was checked when it was set, so it cannot fail here.
    fn view_filter(&self) -> Filter {
        self.view.filter(&self.session).unwrap_or_default()
    }
}

#[wasm_bindgen]
impl Profile {
    /// Whether the session has scopes or tasks, so the page offers their views: `{scopes,
    /// tasks}` as JSON.
    #[wasm_bindgen(js_name = contextsJson)]
    pub fn contexts_json(&self) -> String {
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("scopes").bool(!self.session.scopes.spans.is_empty());
        w.key("tasks").bool(!self.session.tasks.tasks.is_empty());
        w.end_object();
        w.finish()
    }

    /// The scope table over the view's threads and time range (spans starting in it), sorted
    /// by `column` (`name`, `calls`, `total`, `self`, `selfPerCall`, `totalPerCall`, `max`,
    /// `p99`), as JSON `{rows, summary}`.
    #[wasm_bindgen(js_name = scopesJson)]
    pub fn scopes_json(&self, column: &str, descending: bool) -> String {
        let mut rows = scope_table(&self.session, &self.view_filter());
        sort_rows(&mut rows, column, descending);
        let calls: u64 = rows.iter().map(|r| r.calls).sum();
        let dropped = self.session.scopes.dropped_events;
        let mut summary = format!(
            "{} scopes, {} calls",
            thousands(rows.len() as u64),
            thousands(calls)
        );
        if dropped > 0 {
            summary += &format!(
                " ({} events dropped: counts are lower bounds)",
                thousands(dropped)
            );
        }
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("rows").begin_array();
        for row in &rows {
            ScopeEntry::of(row).write_json(&mut w);
        }
        w.end_array();
        w.key("summary").string(&summary);
        w.end_object();
        w.finish()
    }

    /// The spread of the call durations of scope `name` in at most `buckets` bars, as JSON
    /// `{bars: [{height, text}], lowText, highText, scaleText}`.
    #[wasm_bindgen(js_name = scopeDistributionJson)]
    pub fn scope_distribution_json(&self, name: &str, buckets: u32) -> String {
        let durations = scope_durations(&self.session, &self.view_filter(), name);
        let histogram = duration_histogram(&durations, buckets as usize);
        Histogram {
            bars: histogram
                .bars
                .into_iter()
                .map(|b| Bar {
                    height: b.height,
                    text: b.text,
                })
                .collect(),
            low_text: histogram.low_text,
            high_text: histogram.high_text,
            scale_text: histogram.scale_text,
        }
        .to_json()
    }

    /// The `n` longest calls of scope `name` over the view's threads and range, longest first,
    /// as JSON `[{from, to, text}]`: the page selects a call's time with them.
    #[wasm_bindgen(js_name = scopeCallsJson)]
    pub fn scope_calls_json(&self, name: &str, n: u32) -> String {
        let session = &self.session;
        let calls: Vec<Call> = longest_spans(session, &self.view_filter(), name, n as usize)
            .into_iter()
            .map(|s| {
                let span = session.scopes.span(s);
                let fields: Vec<String> = span
                    .fields
                    .iter()
                    .map(|f| format!("{}={}", session.str(f.key), session.str(f.value)))
                    .collect();
                let mut text = format!(
                    "{} ms at {} on {}",
                    format_ms(span.duration_ns()),
                    format_time_at(span.start_ns, 1_000),
                    crate::time::thread_label(session, span.thread)
                );
                if !fields.is_empty() {
                    text += &format!(" ({})", fields.join(", "));
                }
                let (from, to) = selection(span.start_ns, span.end_ns);
                Call { from, to, text }
            })
            .collect();
        calls.to_json()
    }

    /// The task table over the view's filter but its task, the heaviest first, as JSON.
    #[wasm_bindgen(js_name = tasksJson)]
    pub fn tasks_json(&self) -> String {
        let tasks = task_table(&self.session, &self.view_filter());
        let total = tasks.total_weight;
        let unit = &self.session.meta.sample_type;
        let entries: Vec<TaskEntry> = tasks
            .rows
            .iter()
            .map(|r| TaskEntry {
                name: r.name.clone(),
                weight: r.weight,
                weight_text: prof_session::aggregate::format_weight(unit, r.weight),
                share_text: format_percent(r.weight, total),
                tasks_text: thousands(r.tasks),
                polls_text: thousands(r.polls),
                poll_text: format_ms(r.poll_ns),
            })
            .collect();
        entries.to_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_ending_at_the_last_nanosecond_selects_without_overflow() {
        // The reader accepts span ends up to u64::MAX; one past the end overflowed.
        use prof_session::session::{FrameSpec, SessionBuilder, SiteKind, Span};
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let site = b.intern_site("late", None, None, SiteKind::Scope);
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        b.push_span(Span {
            site,
            thread: main,
            start_ns: 10,
            end_ns: u64::MAX,
            parent: None,
            fields: Vec::new(),
        });
        b.push_sample(stack, main, 20, 1);
        let profile = Profile::of(b.finish());
        let calls: serde_json::Value =
            serde_json::from_str(&profile.scope_calls_json("late", 1)).unwrap();
        assert_eq!(calls[0]["to"].as_u64(), Some(u64::MAX), "{calls}");
    }

    #[test]
    fn scope_rows_sort_by_any_column_then_by_name() {
        let row = |name: &str, calls, total_ns| ScopeRow {
            name: name.into(),
            calls,
            total_ns,
            ..ScopeRow::default()
        };
        let mut rows = vec![row("b", 1, 50), row("a", 3, 50), row("c", 2, 10)];
        sort_rows(&mut rows, "calls", true);
        assert_eq!(
            rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["a", "c", "b"]
        );
        sort_rows(&mut rows, "total", true);
        assert_eq!(
            rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        sort_rows(&mut rows, "name", false);
        assert_eq!(
            rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }
}
