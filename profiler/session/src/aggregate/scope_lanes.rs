//! Scope bars: each thread's spans as nested bars and its marks as ticks, and one lane per task
//! name with its polls, over a time window, for the timeline and the stack chart.
//!
//! The spans are indexed once per session ([`ScopeIndex`]: per thread and nesting depth, by
//! start time), so a window reads only the spans that reach into it; spans narrower than a
//! pixel merge with the neighbours less than a pixel away into one bar, so a lane never holds
//! more than about two bars per pixel, however many spans it has ([`ScopeLayout::compute`]).

use crate::session::{Session, StrId};

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
        crate::order::sort_by_key(&mut self.items, |i| (i.start, i.id));
    }
}

/// The polls of every task of one name.
#[derive(Debug)]
pub struct TaskLane {
    /// The task name.
    pub name: StrId,
    lane: Lane,
    /// How many tasks have the name.
    pub tasks: u64,
    /// Their time in polls, in all.
    pub polled_ns: u64,
}

impl TaskLane {
    /// How many polls the lane holds.
    pub fn polls(&self) -> usize {
        self.lane.items.len()
    }
}

/// The session's spans, marks and polls indexed for drawing, built once per session.
#[derive(Debug, Default)]
pub struct ScopeIndex {
    /// Per thread, its spans per nesting depth (0: outermost).
    spans: Vec<Vec<Lane>>,
    /// Per thread, its marks (as instants) in time order.
    marks: Vec<Lane>,
    /// One lane per task name, the longest polled first (then by name).
    tasks: Vec<TaskLane>,
}

impl ScopeIndex {
    /// Indexes `session`'s spans (per thread and nesting depth), marks (per thread) and polls
    /// (one lane per task name, the longest polled first).
    pub fn of(session: &Session) -> Self {
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
        crate::order::sort_by(&mut index.tasks, |a, b| {
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

    /// The task lanes, the longest polled first.
    pub fn task_lanes(&self) -> &[TaskLane] {
        &self.tasks
    }
}

/// A bar to draw: the part of one interval (`id`, `label`), or of `count` intervals each
/// narrower than a pixel (`id` and `label` are then [`MERGED`]), within the window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    /// Where it starts, in nanoseconds since the session started.
    pub start: u64,
    /// Where it ends.
    pub end: u64,
    /// The span, poll or mark (its index in the session's table), or [`MERGED`].
    pub id: u32,
    /// The call site (spans, marks), or [`MERGED`].
    pub label: u32,
    /// How many intervals it stands for.
    pub count: u32,
}

/// The id and label of a bar that stands for several intervals, each narrower than a pixel.
pub const MERGED: u32 = u32::MAX;

/// The bars of `lane` over `[from, to)`, each interval clipped to it, for pixels `min_ns`
/// nanoseconds wide: an interval at least a pixel wide is a bar of its own; narrower ones merge
/// with the next narrow ones that start less than a pixel after the merged bar's end and
/// within its first pixel, so a merged bar stays about a pixel wide and tells what is there
/// (its tooltip counts them, a click selects their time). A zero-length interval (an instant)
/// counts as one nanosecond long.
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
                r.id = MERGED;
                r.label = MERGED;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BarKind {
    /// Spans of a scope.
    Span = 0,
    /// Polls of a task.
    Poll = 1,
    /// Marks.
    Mark = 2,
}

/// A bar and where it is drawn: its thread (or task lane) and its depth.
#[derive(Clone, Copy, Debug)]
pub struct DrawnBar {
    /// What it stands for.
    pub kind: BarKind,
    /// The thread index (spans, marks) or the task lane (polls).
    pub row: u32,
    /// The nesting depth (spans; 0 otherwise).
    pub depth: u32,
    /// The bar.
    pub bar: Bar,
}

/// The scope bars, marks and task lanes of a window, laid out.
#[derive(Debug, Default)]
pub struct ScopeLayout {
    /// The window's start, in nanoseconds since the session started.
    pub from: u64,
    /// The window's end (exclusive).
    pub to: u64,
    /// The bars, thread by thread (depth by depth, then marks), then the task lanes.
    pub drawn: Vec<DrawnBar>,
    /// Lanes per thread index.
    pub lanes: Vec<u32>,
    /// Per thread index, the depths of nested spans beyond the lanes laid out (not drawn, and
    /// said so on the page).
    pub deeper: Vec<u32>,
    /// The task lanes laid out.
    pub task_lanes: u32,
    /// How many more task names there are.
    pub more_tasks: u32,
}

impl ScopeLayout {
    /// The bars of `threads` (thread indices) over `[from, to)` for `pixels` pixels, at most
    /// `max_depth` lanes per thread, and of the first `task_lanes` task names.
    pub fn compute(
        index: &ScopeIndex,
        threads: &[usize],
        (from, to): (u64, u64),
        pixels: f64,
        max_depth: u32,
        task_lanes: u32,
    ) -> Self {
        let span = to.saturating_sub(from).max(1);
        let min_ns = ((span as f64 / pixels.max(1.0)).ceil() as u64).max(1);
        let mut out = ScopeLayout {
            from,
            to,
            lanes: vec![0; index.spans.len()],
            deeper: vec![0; index.spans.len()],
            ..ScopeLayout::default()
        };
        let mut bars = Vec::new();
        let mut add = |kind, row: usize, depth: usize, lane: &Lane, drawn: &mut Vec<DrawnBar>| {
            bars.clear();
            lay_out(lane, from, to, min_ns, &mut bars);
            for &bar in &bars {
                drawn.push(DrawnBar {
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
                add(BarKind::Span, t, depth, lane, &mut out.drawn);
            }
            if lanes > 0 {
                add(BarKind::Mark, t, 0, &index.marks[t], &mut out.drawn);
            }
        }
        let shown = index.tasks.len().min(task_lanes as usize);
        for (row, lane) in index.tasks[..shown].iter().enumerate() {
            add(BarKind::Poll, row, 0, &lane.lane, &mut out.drawn);
        }
        out.task_lanes = shown as u32;
        out.more_tasks = (index.tasks.len() - shown) as u32;
        out
    }

    /// The time a click on bar `d` selects: its interval, one past the end (a range is
    /// `[from, to)`), or the time a merged bar covers; `None` for a mark.
    pub fn selection(&self, d: &DrawnBar, session: &Session) -> Option<(u64, u64)> {
        let (start, end) = match (d.kind, d.bar.id) {
            (BarKind::Mark, _) => return None,
            (_, MERGED) => return Some((d.bar.start, d.bar.end)),
            (BarKind::Span, id) => {
                let s = &session.scopes.spans[id as usize];
                (s.start_ns, s.end_ns)
            }
            (BarKind::Poll, id) => {
                let p = &session.tasks.polls[id as usize];
                (p.start_ns, p.end_ns)
            }
        };
        Some((start, end.max(start).saturating_add(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixture::scopes_session as session;

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
                (0, 8, MERGED, 2),
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
        assert_eq!(out[0], (0, 1_999, MERGED, 1_000));
        assert_eq!(out[999], (1_998_000, 1_999_999, MERGED, 1_000));
        // Zoomed in to 2,000 ns, each span is a pixel wide: the 1,000 spans in the window only.
        let out = bars(&many, 1_000_000, 1_002_000, 1);
        assert_eq!(out.len(), 1_000);
        assert_eq!(out[0], (1_000_000, 1_000_001, 500_000, 1));
    }

    /// (kind, row, depth, start, end, id, count) of each bar.
    fn drawn(bars: &ScopeLayout) -> Vec<(u8, u32, u32, u64, u64, u32, u32)> {
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
        let bars = ScopeLayout::compute(&index, &[0, 1, 2], (0, 401), 401.0, 8, 8);
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
        let bars = ScopeLayout::compute(&index, &[0], (0, 401), 401.0, 2, 1);
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
}
