//! Scope bars (issue 22): each thread's spans as nested bars and its marks as ticks, and one lane
//! per task name with its polls, over a time window, for the timeline and the stack chart.
//!
//! The spans are indexed once per session (per thread and nesting depth, by start time), so a
//! window reads only the spans that reach into it; spans narrower than a pixel merge with the
//! neighbours less than a pixel away into one bar, so a lane never holds more than about two
//! bars per pixel, however many spans it has. The page draws the bars as they come and asks
//! about one (its tooltip, the time a click selects) by its position.

use crate::json_out::JsonOut;
use crate::profile::Profile;
use crate::time::{range_text, thread_label, time_text, window, NONE};
use prof_session::aggregate::{format_time_at, thousands, wait_after};
use prof_session::session::{Session, StackId, StrId};
use wasm_bindgen::prelude::*;

/// One interval of a lane: a span or a poll, by index.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Item {
    start: u64,
    end: u64,
    id: u32,
    /// Its call site's index (spans, marks), or its task lane's (polls).
    label: u32,
}

/// Intervals in order of start, and the length of the longest: one starting more than that
/// before a window cannot reach into it (intervals of one lane may overlap: guards dropped out
/// of order, polls of one task name on several threads).
#[derive(Debug, Default)]
struct Lane {
    items: Vec<Item>,
    longest: u64,
}

impl Lane {
    fn push(&mut self, start: u64, end: u64, id: u32, label: u32) {
        let end = end.max(start);
        self.longest = self.longest.max(end - start);
        self.items.push(Item {
            start,
            end,
            id,
            label,
        });
    }

    fn sort(&mut self) {
        prof_session::order::sort_by_key(&mut self.items, |i| (i.start, i.id));
    }
}

/// The polls of every task of one name.
#[derive(Debug)]
struct TaskLane {
    name: StrId,
    lane: Lane,
    tasks: u64,
    polled_ns: u64,
}

/// The session's spans, marks and polls indexed for drawing, built once per session.
#[derive(Debug, Default)]
pub(crate) struct ScopeIndex {
    /// Per thread, its spans per nesting depth (0: outermost).
    spans: Vec<Vec<Lane>>,
    /// Per thread, its marks (as instants) in time order.
    marks: Vec<Lane>,
    /// One lane per task name, the longest polled first (then by name).
    tasks: Vec<TaskLane>,
}

impl ScopeIndex {
    pub(crate) fn of(session: &Session) -> Self {
        let threads = session.threads.len();
        let mut index = ScopeIndex {
            spans: (0..threads).map(|_| Vec::new()).collect(),
            marks: (0..threads).map(|_| Lane::default()).collect(),
            tasks: Vec::new(),
        };
        // A parent comes before its children, so one pass gives every span its depth.
        let spans = &session.scopes.spans;
        let mut depth = vec![0u32; spans.len()];
        for (i, span) in spans.iter().enumerate() {
            let d = match span.parent {
                Some(p) if p.index() < i => depth[p.index()] + 1,
                _ => 0,
            };
            depth[i] = d;
            let Some(lanes) = index.spans.get_mut(span.thread.index()) else {
                continue;
            };
            if lanes.len() <= d as usize {
                lanes.resize_with(d as usize + 1, Lane::default);
            }
            lanes[d as usize].push(span.start_ns, span.end_ns, i as u32, span.site.0);
        }
        for (i, mark) in session.scopes.marks.iter().enumerate() {
            if let Some(lane) = index.marks.get_mut(mark.thread.index()) {
                lane.push(mark.time_ns, mark.time_ns, i as u32, mark.site.0);
            }
        }
        for lane in index.spans.iter_mut().flatten().chain(&mut index.marks) {
            lane.sort();
        }
        // One lane per task name.
        let tasks = &session.tasks;
        let mut lane_of_name = std::collections::HashMap::new();
        let mut lane_of_task = Vec::with_capacity(tasks.tasks.len());
        for task in &tasks.tasks {
            let next = index.tasks.len();
            let lane = *lane_of_name.entry(task.name).or_insert(next);
            if lane == next {
                index.tasks.push(TaskLane {
                    name: task.name,
                    lane: Lane::default(),
                    tasks: 0,
                    polled_ns: 0,
                });
            }
            index.tasks[lane].tasks += 1;
            lane_of_task.push(lane);
        }
        for (i, poll) in tasks.polls.iter().enumerate() {
            if let Some(&lane) = lane_of_task.get(poll.task.index()) {
                let lane = &mut index.tasks[lane];
                lane.lane.push(poll.start_ns, poll.end_ns, i as u32, 0);
                lane.polled_ns = lane
                    .polled_ns
                    .saturating_add(poll.end_ns.saturating_sub(poll.start_ns));
            }
        }
        for lane in &mut index.tasks {
            lane.lane.sort();
        }
        prof_session::order::sort_by(&mut index.tasks, |a, b| {
            b.polled_ns
                .cmp(&a.polled_ns)
                .then_with(|| session.str(a.name).cmp(session.str(b.name)))
        });
        index
    }

    /// How many lanes thread `thread` takes, at most `max_depth`: one per nesting depth of its
    /// spans, and one for its marks when it has marks but no spans.
    fn lanes(&self, thread: usize, max_depth: u32) -> u32 {
        let spans = self.spans.get(thread).map_or(0, Vec::len) as u32;
        let marks = self.marks.get(thread).is_some_and(|m| !m.items.is_empty());
        spans.max(u32::from(marks)).min(max_depth)
    }
}

/// A bar to draw: the part of one interval (`id`, `label`), or of `count` intervals each
/// narrower than a pixel (`id` and `label` are then [`NONE`]), within the window.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bar {
    start: u64,
    end: u64,
    id: u32,
    label: u32,
    count: u32,
}

/// The bars of `lane` over `[from, to)`, each interval clipped to it, for pixels `min_ns`
/// nanoseconds wide: an interval at least a pixel wide is a bar of its own; narrower ones merge
/// with the next narrow ones that start less than a pixel after the merged bar's end and
/// within its first pixel, so a merged bar stays about a pixel wide and tells what is there
/// (its tooltip counts them, a click selects their time). A zero-length interval (an instant)
/// counts as one nanosecond long.
/// The most frames of an await stack a poll's tooltip names.
const AWAIT_FRAMES: usize = 4;

/// How long a task waited and where: `12.0 ms at serve → nap → sleep`, the await stack's
/// outermost frames first (the task's own future), `→ …` when it has more than
/// [`AWAIT_FRAMES`].
fn await_text(session: &Session, at: StackId, wait_ns: u64) -> String {
    let mut frames: Vec<&str> = session
        .stack_frames(at)
        .map(|f| session.frame_name(f))
        .collect();
    frames.reverse();
    let more = frames.len() > AWAIT_FRAMES;
    frames.truncate(AWAIT_FRAMES);
    let tail = if more { " → …" } else { "" };
    format!("{} at {}{tail}", time_text(wait_ns), frames.join(" → "))
}

fn lay_out(lane: &Lane, from: u64, to: u64, min_ns: u64, out: &mut Vec<Bar>) {
    let first = lane
        .items
        .partition_point(|i| i.start < from.saturating_sub(lane.longest));
    let mut run: Option<Bar> = None;
    for item in &lane.items[first..] {
        if item.start >= to {
            break;
        }
        let end = item.end.max(item.start.saturating_add(1));
        if end <= from {
            continue;
        }
        let (start, end) = (item.start.max(from), end.min(to));
        if end - start >= min_ns {
            out.extend(run.take());
            out.push(Bar {
                start,
                end,
                id: item.id,
                label: item.label,
                count: 1,
            });
            continue;
        }
        match &mut run {
            Some(r)
                if start < r.end.saturating_add(min_ns)
                    && start < r.start.saturating_add(min_ns) =>
            {
                r.end = r.end.max(end);
                r.id = NONE;
                r.label = NONE;
                r.count += 1;
            }
            _ => {
                out.extend(run.take());
                run = Some(Bar {
                    start,
                    end,
                    id: item.id,
                    label: item.label,
                    count: 1,
                });
            }
        }
    }
    out.extend(run);
}

/// What a bar stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
enum Kind {
    Span = 0,
    Poll = 1,
    Mark = 2,
}

/// A bar and where it is drawn: its thread (or task lane) and its depth.
#[derive(Clone, Copy, Debug)]
struct Drawn {
    kind: Kind,
    row: u32,
    depth: u32,
    bar: Bar,
}

/// The scope bars, marks and task lanes of a window, laid out for the page.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct ScopeBars {
    from: u64,
    to: u64,
    drawn: Vec<Drawn>,
    /// Lanes per thread index.
    lanes: Vec<u32>,
    /// Per thread index, the depths of nested spans beyond the lanes laid out (not drawn, and
    /// said so on the page).
    deeper: Vec<u32>,
    /// The task lanes laid out, and how many more task names there are.
    task_lanes: u32,
    more_tasks: u32,
}

/// The values per bar in [`ScopeBars::columns`].
const STRIDE: usize = 7;

impl ScopeBars {
    /// The bars of `threads` (thread indices) over `[from, to)` for `pixels` pixels, at most
    /// `max_depth` lanes per thread, and of the first `task_lanes` task names.
    fn compute(
        index: &ScopeIndex,
        threads: &[usize],
        (from, to): (u64, u64),
        pixels: f64,
        max_depth: u32,
        task_lanes: u32,
    ) -> Self {
        let span = to.saturating_sub(from).max(1);
        let min_ns = ((span as f64 / pixels.max(1.0)).ceil() as u64).max(1);
        let mut out = ScopeBars {
            from,
            to,
            lanes: vec![0; index.spans.len()],
            deeper: vec![0; index.spans.len()],
            ..ScopeBars::default()
        };
        let mut bars = Vec::new();
        let mut add = |kind, row: usize, depth: usize, lane: &Lane, drawn: &mut Vec<Drawn>| {
            bars.clear();
            lay_out(lane, from, to, min_ns, &mut bars);
            for &bar in &bars {
                drawn.push(Drawn {
                    kind,
                    row: row as u32,
                    depth: depth as u32,
                    bar,
                });
            }
        };
        for &t in threads {
            let lanes = index.lanes(t, max_depth);
            let Some(slot) = out.lanes.get_mut(t) else {
                continue;
            };
            *slot = lanes;
            out.deeper[t] = (index.spans[t].len() as u32).saturating_sub(lanes);
            for (depth, lane) in index.spans[t].iter().take(lanes as usize).enumerate() {
                add(Kind::Span, t, depth, lane, &mut out.drawn);
            }
            if lanes > 0 {
                add(Kind::Mark, t, 0, &index.marks[t], &mut out.drawn);
            }
        }
        let shown = index.tasks.len().min(task_lanes as usize);
        for (row, lane) in index.tasks[..shown].iter().enumerate() {
            add(Kind::Poll, row, 0, &lane.lane, &mut out.drawn);
        }
        out.task_lanes = shown as u32;
        out.more_tasks = (index.tasks.len() - shown) as u32;
        out
    }

    /// The time a click on bar `d` selects: its interval, one past the end (a range is
    /// `[from, to)`), or the time a merged bar covers; `None` for a mark.
    fn selection(&self, d: &Drawn, session: &Session) -> Option<(u64, u64)> {
        let (start, end) = match (d.kind, d.bar.id) {
            (Kind::Mark, _) => return None,
            (_, NONE) => return Some((d.bar.start, d.bar.end)),
            (Kind::Span, id) => {
                let s = &session.scopes.spans[id as usize];
                (s.start_ns, s.end_ns)
            }
            (Kind::Poll, id) => {
                let p = &session.tasks.polls[id as usize];
                (p.start_ns, p.end_ns)
            }
        };
        Some(crate::scopes::selection(start, end))
    }
}

#[wasm_bindgen]
impl ScopeBars {
    /// The bars, `STRIDE` (7) numbers each: kind (0 span, 1 poll, 2 mark), row (the thread
    /// index, or the task lane), depth, left edge and width (fractions of the window; 0 wide
    /// for a mark), label (the site index for spans and marks, the task lane for polls;
    /// `u32::MAX` for merged bars) and how many intervals the bar stands for.
    pub fn columns(&self) -> Vec<f64> {
        let span = self.to.saturating_sub(self.from).max(1) as f64;
        let mut out = Vec::with_capacity(self.drawn.len() * STRIDE);
        for d in &self.drawn {
            let b = &d.bar;
            let label = match d.kind {
                Kind::Poll if b.id != NONE => d.row,
                _ => b.label,
            };
            let width = if d.kind == Kind::Mark {
                0.0
            } else {
                (b.end - b.start) as f64 / span
            };
            out.extend_from_slice(&[
                d.kind as u8 as f64,
                d.row as f64,
                d.depth as f64,
                (b.start - self.from) as f64 / span,
                width,
                label as f64,
                b.count as f64,
            ]);
        }
        out
    }

    /// The lanes each thread takes (by thread index; 0: none), the depths of spans deeper than
    /// its lanes (by thread index), and the texts: each call site's name (by site index), each
    /// task lane's name and what it holds, and how many task names are not shown, as JSON
    /// `{lanes, deeper, sites, tasks: [{name, text}], moreText}`.
    #[wasm_bindgen(js_name = textsJson)]
    pub fn texts_json(&self, profile: &Profile) -> String {
        let session = &profile.session;
        let index = profile.scope_index();
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("lanes")
            .u64s(self.lanes.iter().map(|&n| u64::from(n)));
        w.key("deeper")
            .u64s(self.deeper.iter().map(|&n| u64::from(n)));
        w.key("sites").strings(
            session
                .scopes
                .sites
                .iter()
                .map(|site| session.str(site.name)),
        );
        w.key("tasks").begin_array();
        for t in &index.tasks[..self.task_lanes as usize] {
            let text = format!(
                "{} tasks, {} polls, {} polled",
                thousands(t.tasks),
                thousands(t.lane.items.len() as u64),
                time_text(t.polled_ns)
            );
            w.begin_object();
            w.key("name").string(session.str(t.name));
            w.key("text").string(&text);
            w.end_object();
        }
        w.end_array();
        let more = match self.more_tasks {
            0 => None,
            n => Some(format!("+{} more task names", thousands(u64::from(n)))),
        };
        w.key("moreText").opt_string(more.as_deref());
        w.end_object();
        w.finish()
    }

    /// What bar `i` is, for its tooltip, and the time a click on it selects, as JSON `{name,
    /// lines: [label, text, label, text, ...], from, to}` (`from` and `to` null for a mark).
    #[wasm_bindgen(js_name = barJson)]
    pub fn bar_json(&self, profile: &Profile, i: usize) -> Result<String, JsError> {
        let d = self
            .drawn
            .get(i)
            .ok_or_else(|| JsError::new(&format!("no bar {i}")))?;
        let session = &profile.session;
        let b = &d.bar;
        let mut lines: Vec<String> = Vec::new();
        let mut line = |label: &str, text: String| {
            lines.push(label.to_owned());
            lines.push(text);
        };
        let name = if b.id == NONE {
            let what = match d.kind {
                Kind::Span => "spans",
                Kind::Poll => "polls",
                Kind::Mark => "marks",
            };
            line("Time", range_text(b.start, b.end));
            format!(
                "{} {what}, each narrower than a pixel",
                thousands(u64::from(b.count))
            )
        } else {
            let (name, fields, thread) = match d.kind {
                Kind::Span => {
                    let s = &session.scopes.spans[b.id as usize];
                    line("Duration", time_text(s.duration_ns()));
                    line("Time", range_text(s.start_ns, s.end_ns));
                    (session.scopes.site(s.site).name, &s.fields[..], s.thread)
                }
                Kind::Mark => {
                    let m = &session.scopes.marks[b.id as usize];
                    line("At", format_time_at(m.time_ns, 1_000));
                    (session.scopes.site(m.site).name, &m.fields[..], m.thread)
                }
                Kind::Poll => {
                    let p = &session.tasks.polls[b.id as usize];
                    let task = session.tasks.task(p.task);
                    line("Task", format!("id {}", task.id));
                    line("Poll", time_text(p.end_ns.saturating_sub(p.start_ns)));
                    line("Time", range_text(p.start_ns, p.end_ns));
                    if let Some((at, wait_ns)) = wait_after(session, b.id as usize) {
                        line("Then waited", await_text(session, at, wait_ns));
                    }
                    (task.name, &[][..], p.thread)
                }
            };
            line("Thread", thread_label(session, thread));
            for f in fields {
                line(session.str(f.key), session.str(f.value).to_owned());
            }
            session.str(name).to_owned()
        };
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("name").string(&name);
        w.key("lines").strings(lines.iter().map(String::as_str));
        match self.selection(d, session) {
            Some((from, to)) => {
                w.key("from").u64(from);
                w.key("to").u64(to);
            }
            None => {
                w.key("from").null();
                w.key("to").null();
            }
        }
        w.end_object();
        Ok(w.finish())
    }
}

impl Profile {
    /// The session's spans, marks and polls indexed for drawing (built on first use).
    fn scope_index(&self) -> &ScopeIndex {
        self.scope_index
            .get_or_init(|| ScopeIndex::of(&self.session))
    }
}

#[wasm_bindgen]
impl Profile {
    /// The scope bars over the window `[from, to)` (`from` negative: the whole session) for
    /// `pixels` pixels: of every thread, or of the shown threads (`shown`, in thread order, as
    /// the stack chart has them), at most `max_depth` lanes per thread, and the polls of the
    /// first `task_lanes` task names (the longest polled first).
    #[wasm_bindgen(js_name = scopeBars)]
    pub fn scope_bars(
        &self,
        from: f64,
        to: f64,
        pixels: f64,
        shown: bool,
        max_depth: u32,
        task_lanes: u32,
    ) -> ScopeBars {
        let session = &self.session;
        let mut threads: Vec<usize> = match (&self.view.threads, shown) {
            (Some(t), true) => t.iter().map(|&t| t as usize).collect(),
            _ => (0..session.threads.len()).collect(),
        };
        // A thread named twice has its bars once.
        prof_session::order::sort_by_key(&mut threads, |&t| t);
        threads.dedup();
        ScopeBars::compute(
            self.scope_index(),
            &threads,
            window(session, from, to),
            pixels,
            max_depth,
            task_lanes,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::{FrameSpec, Mark, Poll, SessionBuilder, SiteKind, Span};

    fn lane(items: &[(u64, u64)]) -> Lane {
        let mut lane = Lane::default();
        for (i, &(start, end)) in items.iter().enumerate() {
            lane.push(start, end, i as u32, 0);
        }
        lane.sort();
        lane
    }

    fn bars(lane: &Lane, from: u64, to: u64, min_ns: u64) -> Vec<(u64, u64, u32, u32)> {
        let mut out = Vec::new();
        lay_out(lane, from, to, min_ns, &mut out);
        out.iter()
            .map(|b| (b.start, b.end, b.id, b.count))
            .collect()
    }

    #[test]
    fn bars_are_clipped_to_the_window_and_those_outside_it_are_left_out() {
        let l = lane(&[(0, 10), (20, 50), (60, 70), (100, 200)]);
        assert_eq!(
            bars(&l, 30, 65, 1),
            [(30, 50, 1, 1), (60, 65, 2, 1)],
            "the first ends before the window, the last starts after it"
        );
        // An interval ending where the window starts is outside it; one starting where it
        // ends too.
        assert_eq!(bars(&l, 10, 20, 1), []);
        // A long interval that started long before the window still reaches into it.
        let l = lane(&[(0, 1_000), (1, 2), (3, 4)]);
        assert_eq!(bars(&l, 500, 600, 1), [(500, 600, 0, 1)]);
        // An instant is a nanosecond long.
        let l = lane(&[(5, 5)]);
        assert_eq!(bars(&l, 0, 10, 1), [(5, 6, 0, 1)]);
        assert_eq!(bars(&l, 6, 10, 1), []);
    }

    #[test]
    fn spans_narrower_than_a_pixel_merge_with_close_neighbours_only() {
        // Pixels 10 ns wide: two 2 ns spans 4 ns apart merge into one bar; the next starts past
        // that bar's first pixel and starts another; a wide span stands alone and ends the run;
        // a narrow span more than a pixel after the last starts another.
        let l = lane(&[(0, 2), (6, 8), (12, 14), (20, 40), (41, 43), (80, 82)]);
        assert_eq!(
            bars(&l, 0, 100, 10),
            [
                (0, 8, NONE, 2),
                (12, 14, 2, 1),
                (20, 40, 3, 1),
                (41, 43, 4, 1),
                (80, 82, 5, 1)
            ]
        );
        // A million spans 1 ns long, 1 ns apart, over 1,000 pixels: one merged bar per pixel,
        // never a million.
        let mut many = Lane::default();
        for i in 0..1_000_000u64 {
            many.push(2 * i, 2 * i + 1, i as u32, 0);
        }
        let out = bars(&many, 0, 2_000_000, 2_000);
        assert_eq!(out.len(), 1_000);
        assert_eq!(out[0], (0, 1_999, NONE, 1_000));
        assert_eq!(out[999], (1_998_000, 1_999_999, NONE, 1_000));
        // Zoomed in to 2,000 ns, each span is a pixel wide: the 1,000 spans in the window only.
        let out = bars(&many, 1_000_000, 1_002_000, 1);
        assert_eq!(out.len(), 1_000);
        assert_eq!(out[0], (1_000_000, 1_000_001, 500_000, 1));
    }

    /// Two threads: `main` with `request` (0..100) holding `parse` (10..40) holding `lex`
    /// (12..13), then `request` (200..300), and a mark at 50; `idle` with a mark only; tasks
    /// `fetch` (two tasks) and `store`, `fetch` polled longer.
    fn session() -> Session {
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let idle = b.thread(2, "idle");
        let quiet = b.thread(3, "quiet");
        let request = b.intern_site("request", None, None, SiteKind::Scope);
        let parse = b.intern_site("parse", None, None, SiteKind::Scope);
        let lex = b.intern_site("lex", None, None, SiteKind::Scope);
        let gc = b.intern_site("gc", None, None, SiteKind::Mark);
        let span = |b: &mut SessionBuilder, site, start, end, parent| {
            let id = b.field("id", "7");
            b.push_span(Span {
                site,
                thread: main,
                start_ns: start,
                end_ns: end,
                parent,
                fields: vec![id],
            })
        };
        let outer = span(&mut b, request, 0, 100, None);
        let inner = span(&mut b, parse, 10, 40, Some(outer));
        span(&mut b, lex, 12, 13, Some(inner));
        span(&mut b, request, 200, 300, None);
        for (thread, time_ns) in [(main, 50), (idle, 60)] {
            b.push_mark(Mark {
                site: gc,
                thread,
                time_ns,
                fields: Vec::new(),
            });
        }
        let tasks = [
            b.intern_task(1, "store"),
            b.intern_task(2, "fetch"),
            b.intern_task(3, "fetch"),
        ];
        for (task, thread, start_ns, end_ns) in [
            (tasks[0], idle, 0, 10),
            (tasks[1], main, 0, 30),
            (tasks[2], idle, 20, 60),
        ] {
            b.push_poll(Poll {
                task,
                thread,
                start_ns,
                end_ns,
                waited_at: None,
            });
        }
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        b.push_sample(stack, quiet, 400, 1);
        b.finish()
    }

    /// (kind, row, depth, start, end, id, count) of each bar.
    fn drawn(bars: &ScopeBars) -> Vec<(u8, u32, u32, u64, u64, u32, u32)> {
        bars.drawn
            .iter()
            .map(|d| {
                let b = d.bar;
                (d.kind as u8, d.row, d.depth, b.start, b.end, b.id, b.count)
            })
            .collect()
    }

    #[test]
    fn spans_are_drawn_at_their_nesting_depth_and_marks_and_polls_in_their_lanes() {
        let session = session();
        let index = ScopeIndex::of(&session);
        let bars = ScopeBars::compute(&index, &[0, 1, 2], (0, 401), 401.0, 8, 8);
        assert_eq!(bars.lanes, [3, 1, 0], "three depths; a mark's lane; none");
        assert_eq!(bars.deeper, [0, 0, 0]);
        assert_eq!(
            drawn(&bars),
            [
                (0, 0, 0, 0, 100, 0, 1),
                (0, 0, 0, 200, 300, 3, 1),
                (0, 0, 1, 10, 40, 1, 1),
                (0, 0, 2, 12, 13, 2, 1),
                (2, 0, 0, 50, 51, 0, 1),
                (2, 1, 0, 60, 61, 1, 1),
                // fetch (70 ns polled) before store (10 ns), its polls in time order.
                (1, 0, 0, 0, 30, 1, 1),
                (1, 0, 0, 20, 60, 2, 1),
                (1, 1, 0, 0, 10, 0, 1),
            ]
        );
        // Two lanes at most, one task lane: `lex` and the `store` lane are left out.
        let bars = ScopeBars::compute(&index, &[0], (0, 401), 401.0, 2, 1);
        assert_eq!(bars.lanes, [2, 0, 0]);
        assert_eq!(
            bars.deeper,
            [1, 0, 0],
            "the third depth is not drawn, and said so"
        );
        assert!(drawn(&bars)
            .iter()
            .all(|d| d.2 < 2 && (d.0 != 1 || d.1 == 0)));
        assert_eq!((bars.task_lanes, bars.more_tasks), (1, 1));
    }

    #[test]
    fn r22_a_polls_tooltip_says_how_long_its_task_then_waited_and_where() {
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let f = |b: &mut SessionBuilder, n: &str| b.intern_frame(&FrameSpec::named(n));
        let path: Vec<_> = ["serve", "handle", "nap", "sleep", "poll"]
            .iter()
            .map(|n| f(&mut b, n))
            .collect();
        let deep = b.intern_stack_path(&path).unwrap();
        let short = b.intern_stack_path(&path[..2]).unwrap();
        let task = b.intern_task(1, "fetch");
        for (start_ns, end_ns, waited_at) in [(0, 10, Some(deep)), (50, 60, Some(short))] {
            b.push_poll(Poll {
                task,
                thread: main,
                start_ns,
                end_ns,
                waited_at,
            });
        }
        b.meta_mut().duration_ns = 100;
        b.push_sample(short, main, 5, 1);
        let profile = Profile::of(b.finish());
        let bars = profile.scope_bars(-1.0, -1.0, 101.0, false, 8, 8);
        let lines: Vec<serde_json::Value> = (0..2)
            .map(|i| {
                let bar: serde_json::Value =
                    serde_json::from_str(&bars.bar_json(&profile, i).unwrap()).unwrap();
                bar["lines"].clone()
            })
            .collect();
        let waited = |l: &serde_json::Value| {
            let l = l.as_array().unwrap();
            let i = l.iter().position(|x| x == "Then waited").unwrap();
            l[i + 1].as_str().unwrap().to_owned()
        };
        assert_eq!(
            waited(&lines[0]),
            "40 ns at serve → handle → nap → sleep → …"
        );
        // The last poll: until the session's end.
        assert_eq!(waited(&lines[1]), "40 ns at serve → handle");
    }

    #[test]
    fn a_bar_tells_what_it_is_and_selects_its_time() {
        let profile = Profile::of(session());
        let bars = profile.scope_bars(-1.0, -1.0, 401.0, false, 8, 8);
        let json = |i| -> serde_json::Value {
            serde_json::from_str(&bars.bar_json(&profile, i).unwrap()).unwrap()
        };
        let parse = json(2);
        assert_eq!(parse["name"], "parse");
        assert_eq!(
            parse["lines"],
            serde_json::json!([
                "Duration",
                "30 ns",
                "Time",
                range_text(10, 40),
                "Thread",
                "main [1]",
                "id",
                "7"
            ])
        );
        assert_eq!(
            (parse["from"].as_u64(), parse["to"].as_u64()),
            (Some(10), Some(41))
        );
        let mark = json(4);
        assert_eq!(
            (mark["name"].as_str(), mark["from"].is_null()),
            (Some("gc"), true)
        );
        let poll = json(6);
        assert_eq!(poll["name"], "fetch");
        assert_eq!(
            (poll["lines"][0].as_str(), poll["lines"][1].as_str()),
            (Some("Task"), Some("id 2"))
        );
        assert_eq!(
            (poll["from"].as_u64(), poll["to"].as_u64()),
            (Some(0), Some(31))
        );
        let texts: serde_json::Value = serde_json::from_str(&bars.texts_json(&profile)).unwrap();
        assert_eq!(texts["lanes"], serde_json::json!([3, 1, 0]));
        assert_eq!(
            texts["sites"],
            serde_json::json!(["request", "parse", "lex", "gc"])
        );
        assert_eq!(texts["tasks"][0]["name"], "fetch");
        assert_eq!(texts["tasks"][0]["text"], "2 tasks, 2 polls, 70 ns polled");
        assert!(texts["moreText"].is_null());
        // Merged: the time the bar covers.
        let narrow = profile.scope_bars(-1.0, -1.0, 4.0, false, 8, 8);
        let merged = narrow
            .drawn
            .iter()
            .position(|d| d.bar.id == NONE)
            .expect("a merged bar at 4 pixels");
        let m: serde_json::Value =
            serde_json::from_str(&narrow.bar_json(&profile, merged).unwrap()).unwrap();
        assert!(
            m["name"]
                .as_str()
                .unwrap()
                .contains("each narrower than a pixel"),
            "{m}"
        );
        let d = narrow.drawn[merged].bar;
        assert_eq!(
            (m["from"].as_u64(), m["to"].as_u64()),
            (Some(d.start), Some(d.end))
        );
    }

    #[test]
    fn the_stack_chart_gets_the_bars_of_the_shown_threads_only() {
        let mut profile = Profile::of(session());
        profile.view.threads = Some(vec![1, 1]);
        let bars = profile.scope_bars(-1.0, -1.0, 401.0, true, 8, 0);
        assert_eq!(bars.lanes, [0, 1, 0]);
        assert_eq!(
            drawn(&bars),
            [(2, 1, 0, 60, 61, 1, 1)],
            "once, though named twice"
        );
    }
}
