//! The stack chart (speedscope's "time order", the Firefox Profiler's stack chart): each
//! thread's stacks in time order. Consecutive samples that share a frame at a depth (the same
//! stack node, so the same path from the root) are one box; boxes narrower than a minimum width
//! are merged with their narrow neighbours, like the flame graph's slivers. With transforms, the
//! stacks drawn are the transformed ones (the call tree's paths), and samples a transform drops
//! leave a gap. In wall mode a sample lasts the wall time it weighs, so a thread that waited 9 s
//! in one call (one sample off CPU, as `prof record --mode wall` takes it) is one 9 s box.

use super::filter::{Filter, KeptSamples};
use super::tree::TransformedStacks;
use crate::session::{FrameId, Mode, Session, StrId, ThreadIdx};

/// One box of a stack chart: a frame at a depth, over a span of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackBox {
    /// Which thread.
    pub thread: ThreadIdx,
    /// Frames below it (the outermost frame is depth 0).
    pub depth: u32,
    /// Start of the span, nanoseconds since the session started.
    pub start_ns: u64,
    /// End of the span (exclusive).
    pub end_ns: u64,
    /// The function drawn; for a merged box, the first one's.
    pub func: StrId,
    /// A frame standing for it (its file and line); for a merged box, the first one's.
    pub frame: FrameId,
    /// How many boxes this one stands for: 1, or more when neighbours narrower than the minimum
    /// width were merged into it.
    pub merged: u32,
    /// Whether the frame's function (for a merged box, any of its boxes' functions) or one of
    /// its callers is highlighted.
    pub matches: bool,
}

/// How long one sample lasts: until the thread's next sample, but at most the sampling interval
/// or the wall time the sample weighs (`wall`, 0 outside wall mode), whichever is longer (so a
/// thread that slept between samples does not seem to run through the gap, while a sample that
/// stands for a long wait lasts the wait); the last sample of a thread lasts that long. Without
/// either, the gap to the next sample (the last: the gap before it, or 1 ns).
fn sample_end(
    time: u64,
    next: Option<u64>,
    previous_gap: Option<u64>,
    interval: u64,
    wall: u64,
) -> u64 {
    let longest = interval.max(wall);
    let span = match (next, longest) {
        (Some(n), 0) => n - time,
        (Some(n), l) => (n - time).min(l),
        (None, 0) => previous_gap.unwrap_or(1),
        (None, l) => l,
    };
    time.saturating_add(span.max(1))
}

/// Each sample's wall time when the session weighs its samples in wall time (wall mode), whatever
/// sample type is shown: the wall type's weights, primary or extra.
fn wall_weights(session: &Session) -> Option<&[u64]> {
    let wall = Mode::Wall.sample_type();
    if session.meta.sample_type == wall {
        return Some(&session.samples.weight);
    }
    let k = session
        .meta
        .extra_sample_types
        .iter()
        .position(|t| *t == wall)?;
    session.samples.extra_weights.get(k)?.as_deref()
}

/// Adds a box narrower than the minimum width to its siblings, merging it into the last one
/// when they touch.
fn push_narrow(siblings: &mut Vec<StackBox>, b: StackBox) {
    if let Some(last) = siblings.last_mut() {
        if last.end_ns == b.start_ns {
            last.end_ns = b.end_ns;
            last.merged += 1;
            last.matches |= b.matches;
            return;
        }
    }
    siblings.push(b);
}

/// An open run: the node at one depth, and since when. Every open run lasts until the end of
/// the last sample, so that end is kept once, not per run.
struct Run {
    node: u32,
    start: u64,
}

/// The tree whose paths the chart draws: the session's stack nodes, or the nodes of the call
/// tree's shape after transforms. A parent always comes before its children.
struct Nodes {
    /// Each node's parent, [`NO_PARENT`] at depth 0.
    parent: Vec<u32>,
    depth: Vec<u32>,
    func: Vec<StrId>,
    frame: Vec<FrameId>,
    /// Whether the node's function or a caller's is highlighted.
    matches: Vec<bool>,
    /// Each session stack's node; `None` for a stack a transform drops.
    of_stack: Vec<Option<u32>>,
}

const NO_PARENT: u32 = u32::MAX;

impl Nodes {
    fn new(
        session: &Session,
        transformed: Option<&TransformedStacks>,
        highlight: Option<&[u8]>,
    ) -> Nodes {
        let mut nodes = Nodes {
            parent: Vec::new(),
            depth: Vec::new(),
            func: Vec::new(),
            frame: Vec::new(),
            matches: Vec::new(),
            of_stack: Vec::new(),
        };
        let transformed = transformed.filter(|t| t.is_transformed());
        if let Some(TransformedStacks { shape, map, .. }) = transformed {
            // Shape node 0 is the root ("all samples"), not drawn: node n is n - 1 here.
            for n in 1..shape.len() {
                let parent = match shape.parent[n] {
                    0 => NO_PARENT,
                    p => p - 1,
                };
                nodes.push(parent, shape.func[n], shape.frame[n], highlight);
            }
            nodes.of_stack = map
                .iter()
                .map(|n| n.and_then(|n| n.checked_sub(1)))
                .collect();
        } else {
            for (i, node) in session.stacks.iter().enumerate() {
                let parent = node.parent.map_or(NO_PARENT, |p| p.0);
                nodes.push(
                    parent,
                    session.frame(node.frame).name,
                    node.frame,
                    highlight,
                );
                nodes.of_stack.push(Some(i as u32));
            }
        }
        nodes
    }

    fn push(&mut self, parent: u32, func: StrId, frame: FrameId, highlight: Option<&[u8]>) {
        let up = (parent != NO_PARENT).then_some(parent as usize);
        self.depth.push(up.map_or(0, |p| self.depth[p] + 1));
        let own = highlight.is_some_and(|mask| super::is_marked(mask, func));
        self.matches
            .push(own || up.is_some_and(|p| self.matches[p]));
        self.parent.push(parent);
        self.func.push(func);
        self.frame.push(frame);
    }
}

/// The stack chart of the samples `filter` keeps (by thread, time range, state, scope and task),
/// over the window `[from, to)`: boxes clipped to
/// the window, thread by thread (in the session's thread order), each thread's samples in time
/// order. A sample lasts until the thread's next one, at most the sampling interval or, in wall
/// mode, the wall time it weighs, whichever is longer. Boxes narrower than `min_width`
/// nanoseconds are merged with the narrow siblings they touch, and what they call is not drawn,
/// so the count of boxes stays near the window's pixels times the depth however many samples
/// there are. `highlight` marks functions (one byte per
/// name id, 1: marked). With `transformed` stacks (made from `session`) that some transform
/// rewrote, each sample's stack is drawn as rewritten, as the call tree charges it, and a
/// sample they drop is not drawn; without, the stacks are drawn frame by frame as recorded.
pub fn stack_chart(
    session: &Session,
    filter: &Filter,
    transformed: Option<&TransformedStacks>,
    from: u64,
    to: u64,
    min_width: u64,
    highlight: Option<&[u8]>,
) -> Vec<StackBox> {
    let mut out = Vec::new();
    if to <= from {
        return out;
    }
    let kept = KeptSamples::new(session, filter);
    let nodes = Nodes::new(session, transformed, highlight);
    let interval = match session.meta.achieved_interval_ns {
        0 => session.meta.requested_interval_ns,
        i => i,
    };
    let samples = &session.samples;
    let wall = wall_weights(session);
    // The kept samples of each thread, in time order (stable, so equal times keep file order).
    let mut by_thread: Vec<Vec<u32>> = vec![Vec::new(); session.threads.len()];
    for i in 0..samples.len() {
        if kept.keeps(i) {
            by_thread[samples.thread[i].index()].push(i as u32);
        }
    }
    let mut path: Vec<u32> = Vec::new();
    let mut open: Vec<Run> = Vec::new();
    let mut open_end = 0u64;
    // Per depth, the boxes narrower than the minimum width (merged where they touch) under the
    // open run one level up, drawn only if that run turns out wide enough. One buffer per
    // depth serves every run, since one run at a time is open at each depth.
    let mut narrow: Vec<Vec<StackBox>> = Vec::new();
    for (thread, indices) in by_thread.iter_mut().enumerate() {
        // Recorded sessions are in time order per thread already: sort only when not.
        if !indices.is_sorted_by_key(|&i| samples.time_ns[i as usize]) {
            crate::order::sort_by_key(indices, |&i| samples.time_ns[i as usize]);
        }
        let thread = ThreadIdx(thread as u32);
        // Closes the runs deeper than `keep`. A wide run is drawn with its narrow children; a
        // narrow one joins its parent's narrow children, and its own children are not drawn
        // (each is narrower still), as the flame graph leaves out the callees of slivers.
        let close = |open: &mut Vec<Run>,
                     keep: usize,
                     end: u64,
                     narrow: &mut Vec<Vec<_>>,
                     out: &mut Vec<_>| {
            while open.len() > keep {
                let run = open.pop().expect("longer than keep");
                let depth = open.len();
                if narrow.len() < depth + 2 {
                    narrow.resize_with(depth + 2, Vec::new);
                }
                let n = run.node as usize;
                let b = StackBox {
                    thread,
                    depth: depth as u32,
                    start_ns: run.start,
                    end_ns: end,
                    func: nodes.func[n],
                    frame: nodes.frame[n],
                    merged: 1,
                    matches: nodes.matches[n],
                };
                if end - run.start >= min_width {
                    out.push(b);
                    out.append(&mut narrow[depth + 1]);
                } else {
                    narrow[depth + 1].clear();
                    push_narrow(&mut narrow[depth], b);
                }
            }
        };
        for (k, &i) in indices.iter().enumerate() {
            let time = samples.time_ns[i as usize];
            let next = indices.get(k + 1).map(|&j| samples.time_ns[j as usize]);
            let previous_gap = k
                .checked_sub(1)
                .map(|p| time - samples.time_ns[indices[p] as usize]);
            let start = time.max(from);
            let weight = wall.map_or(0, |w| w[i as usize]);
            let end = sample_end(time, next, previous_gap, interval, weight).min(to);
            // A sample a transform drops leaves a gap (its time is not anybody's).
            let Some(leaf) = nodes.of_stack[samples.stack[i as usize].index()] else {
                continue;
            };
            if start >= end {
                continue;
            }
            // The runs this sample continues (with no gap): from its leaf up to the first node
            // an open run holds, whose callers are then the same too. The nodes below it start
            // runs. A sample with the same stack as the last costs no walk at all.
            let contiguous = !open.is_empty() && open_end == start;
            let mut same = 0;
            path.clear();
            let mut node = leaf;
            while node != NO_PARENT {
                let d = nodes.depth[node as usize] as usize;
                if contiguous && open.get(d).is_some_and(|run| run.node == node) {
                    same = d + 1;
                    break;
                }
                path.push(node);
                node = nodes.parent[node as usize];
            }
            close(&mut open, same, open_end, &mut narrow, &mut out);
            open_end = end;
            for &node in path.iter().rev() {
                open.push(Run { node, start });
            }
        }
        close(&mut open, 0, open_end, &mut narrow, &mut out);
        if let Some(top) = narrow.first_mut() {
            out.append(top);
        }
    }
    out
}

/// The function a box shows: its frame's name, `None` for a merged box (which stands for
/// several).
pub fn box_function(b: &StackBox) -> Option<StrId> {
    (b.merged <= 1).then_some(b.func)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::Transform;
    use crate::session::{FrameSpec, SessionBuilder};

    /// One thread sampled every 10 ns: `main;a` ×3, `main;b` ×2, `main;a` ×1, then a gap, then
    /// `main;a` ×1 at 100 ns.
    fn session() -> Session {
        let mut b = SessionBuilder::default();
        b.meta_mut().achieved_interval_ns = 10;
        let t = b.thread(1, "main");
        let main = b.intern_frame(&FrameSpec::named("main"));
        let fa = b.intern_frame(&FrameSpec::named("a"));
        let fb = b.intern_frame(&FrameSpec::named("b"));
        let sa = b.intern_stack_path(&[main, fa]).unwrap();
        let sb = b.intern_stack_path(&[main, fb]).unwrap();
        for (k, s) in [sa, sa, sa, sb, sb, sa].into_iter().enumerate() {
            b.push_sample(s, t, k as u64 * 10, 10);
        }
        b.push_sample(sa, t, 100, 10);
        b.finish()
    }

    fn boxes(session: &Session, from: u64, to: u64, min: u64) -> Vec<(u32, u64, u64, String)> {
        let mut got: Vec<_> = stack_chart(session, &Filter::all(), None, from, to, min, None)
            .iter()
            .map(|b| {
                let name = box_function(b)
                    .map_or_else(|| format!("merged×{}", b.merged), |f| session.str(f).into());
                (b.depth, b.start_ns, b.end_ns, name)
            })
            .collect();
        got.sort();
        got
    }

    #[test]
    fn consecutive_samples_sharing_a_frame_are_one_box_and_gaps_split_them() {
        let session = session();
        let got = boxes(&session, 0, 200, 1);
        let want = [
            (0, 0, 60, "main"),
            (0, 100, 110, "main"),
            (1, 0, 30, "a"),
            (1, 30, 50, "b"),
            (1, 50, 60, "a"),
            (1, 100, 110, "a"),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|&(d, s, e, n)| (d, s, e, n.to_owned()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn transforms_rewrite_the_stacks_drawn_and_dropped_samples_leave_gaps() {
        let session = session();
        let named = |name: &str| {
            (0..session.strings.len())
                .map(|i| StrId(i as u32))
                .find(|&id| session.str(id) == name)
                .unwrap()
        };
        let chart = |transforms: &[Transform]| {
            let transformed = TransformedStacks::new(&session, transforms);
            let mut got: Vec<_> = stack_chart(
                &session,
                &Filter::all(),
                Some(&transformed),
                0,
                200,
                1,
                None,
            )
            .iter()
            .map(|b| {
                (
                    b.depth,
                    b.start_ns,
                    b.end_ns,
                    session.str(b.func).to_owned(),
                )
            })
            .collect();
            got.sort();
            got
        };
        let box_of = |d: u32, s: u64, e: u64, f: &str| (d, s, e, f.to_owned());
        // Merging `b` into its caller: the samples in `b` are `main`'s own, so `main` is one
        // box until the gap, and `a` two boxes around them.
        assert_eq!(
            chart(&[Transform::Merge(named("b"))]),
            [
                box_of(0, 0, 60, "main"),
                box_of(0, 100, 110, "main"),
                box_of(1, 0, 30, "a"),
                box_of(1, 50, 60, "a"),
                box_of(1, 100, 110, "a"),
            ]
        );
        // Dropping the samples through `b`: their 20 ns are a gap that splits `main`.
        assert_eq!(
            chart(&[Transform::DropFunction(named("b"))]),
            [
                box_of(0, 0, 30, "main"),
                box_of(0, 50, 60, "main"),
                box_of(0, 100, 110, "main"),
                box_of(1, 0, 30, "a"),
                box_of(1, 50, 60, "a"),
                box_of(1, 100, 110, "a"),
            ]
        );
    }

    #[test]
    fn a_stack_that_returns_and_calls_again_keeps_its_callers_boxes() {
        // main;a;x, main;a, main;a;y, main;a;y at 0, 10, 20, 30 ns.
        let mut b = SessionBuilder::default();
        b.meta_mut().achieved_interval_ns = 10;
        let t = b.thread(1, "main");
        let f: Vec<_> = ["main", "a", "x", "y"]
            .iter()
            .map(|n| b.intern_frame(&FrameSpec::named(n)))
            .collect();
        let ax = b.intern_stack_path(&[f[0], f[1], f[2]]).unwrap();
        let a = b.intern_stack_path(&[f[0], f[1]]).unwrap();
        let ay = b.intern_stack_path(&[f[0], f[1], f[3]]).unwrap();
        for (k, s) in [ax, a, ay, ay].into_iter().enumerate() {
            b.push_sample(s, t, k as u64 * 10, 10);
        }
        let session = b.finish();
        let got = boxes(&session, 0, 100, 1);
        let want: Vec<_> = [
            (0, 0, 40, "main"),
            (1, 0, 40, "a"),
            (2, 0, 10, "x"),
            (2, 20, 40, "y"),
        ]
        .iter()
        .map(|&(d, s, e, n)| (d, s, e, n.to_owned()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn boxes_are_clipped_to_the_window() {
        let session = session();
        let got = boxes(&session, 25, 45, 1);
        assert_eq!(
            got,
            [
                (0, 25, 45, "main".to_owned()),
                (1, 25, 30, "a".to_owned()),
                (1, 30, 45, "b".to_owned())
            ]
        );
        // A window inside one sample still shows it.
        assert_eq!(boxes(&session, 33, 34, 1).len(), 2);
    }

    #[test]
    fn narrow_neighbours_merge_under_the_same_parent_and_keep_their_time() {
        let session = session();
        let got = boxes(&session, 0, 200, 25);
        // Depth 1 under the first `main`: a (30, wide), then b (20) and a (10) merged.
        assert!(got.contains(&(1, 0, 30, "a".to_owned())), "{got:?}");
        assert!(got.contains(&(1, 30, 60, "merged×2".to_owned())), "{got:?}");
        // After the gap, `main` is narrow but alone (not merged across the gap), and what it
        // calls is not drawn.
        assert!(got.contains(&(0, 100, 110, "main".to_owned())), "{got:?}");
        assert_eq!(got.len(), 4, "{got:?}");
        let covered: u64 = got.iter().filter(|b| b.0 == 1).map(|b| b.2 - b.1).sum();
        assert_eq!(covered, 60);
    }

    #[test]
    fn a_highlight_marks_the_function_and_its_callees() {
        let session = session();
        let mask: Vec<u8> = session.strings.iter().map(|s| u8::from(s == "b")).collect();
        let chart = stack_chart(&session, &Filter::all(), None, 0, 200, 1, Some(&mask));
        for b in &chart {
            let name = session.str(box_function(b).unwrap());
            assert_eq!(b.matches, name == "b", "{name}");
        }
        let merged = stack_chart(&session, &Filter::all(), None, 0, 200, 25, Some(&mask));
        assert!(merged.iter().any(|b| b.merged == 2 && b.matches));
    }

    #[test]
    fn many_distinct_samples_make_few_boxes() {
        // Every sample has its own two-frame stack: no run is wider than one sample.
        let mut b = SessionBuilder::default();
        b.meta_mut().achieved_interval_ns = 1;
        let t = b.thread(1, "main");
        let frames: Vec<_> = (0..1000)
            .map(|i| b.intern_frame(&FrameSpec::named(&format!("f{i}"))))
            .collect();
        for i in 0..200_000u64 {
            let path = [
                frames[(i % 1000) as usize],
                frames[((i / 7) % 1000) as usize],
            ];
            let s = b.intern_stack_path(&path).unwrap();
            b.push_sample(s, t, i, 1);
        }
        let session = b.finish();
        let chart = stack_chart(&session, &Filter::all(), None, 0, 200_000, 1_000, None);
        assert_eq!(
            chart.len(),
            1,
            "one merged box at the top: {:?}",
            &chart[..]
        );
        assert_eq!((chart[0].start_ns, chart[0].end_ns), (0, 200_000));
        assert_eq!(chart[0].merged, 200_000);
    }

    #[test]
    fn a_filter_by_state_draws_only_that_states_samples() {
        use crate::session::SampleState;
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let run = b.intern_frame(&FrameSpec::named("run"));
        let wait = b.intern_frame(&FrameSpec::named("wait"));
        let running = b.intern_stack_path(&[run]).unwrap();
        let waiting = b.intern_stack_path(&[wait]).unwrap();
        b.push_sample_full(running, t, 0, &[10], 1, Some(SampleState::Running));
        b.push_sample_full(waiting, t, 10, &[10], 1, Some(SampleState::Waiting));
        let session = b.finish();
        let names = |filter: &Filter| -> Vec<String> {
            stack_chart(&session, filter, None, 0, 20, 1, None)
                .iter()
                .map(|b| session.str(b.func).to_owned())
                .collect()
        };
        assert_eq!(names(&Filter::all()), ["run", "wait"]);
        assert_eq!(names(&Filter::all().state(SampleState::Waiting)), ["wait"]);
        assert_eq!(names(&Filter::all().state(SampleState::Running)), ["run"]);
    }

    #[test]
    fn without_an_interval_a_sample_lasts_until_the_next() {
        assert_eq!(sample_end(10, Some(30), None, 0, 0), 30);
        assert_eq!(sample_end(10, Some(30), None, 5, 0), 15);
        assert_eq!(sample_end(30, None, Some(20), 0, 0), 50);
        assert_eq!(sample_end(30, None, None, 0, 0), 31);
        assert_eq!(sample_end(30, Some(30), None, 0, 0), 31, "never empty");
        // A wall sample lasts the time it weighs, up to the next sample.
        assert_eq!(sample_end(10, Some(100), None, 5, 60), 70);
        assert_eq!(sample_end(10, Some(40), None, 5, 60), 40);
        assert_eq!(sample_end(10, None, None, 5, 60), 70);
    }

    #[test]
    fn a_long_wait_in_wall_mode_is_one_box_of_its_length() {
        use crate::session::{Metadata, SampleState};
        const MS: u64 = 1_000_000;
        let mut b = SessionBuilder::new(Metadata {
            mode: Mode::Wall,
            sample_type: Mode::Wall.sample_type(),
            extra_sample_types: Mode::Wall.extra_sample_types(),
            requested_interval_ns: MS,
            achieved_interval_ns: MS,
            ..Metadata::default()
        });
        let t = b.thread(1, "main");
        let main = b.intern_frame(&FrameSpec::named("main"));
        let wait = b.intern_frame(&FrameSpec::named("wait"));
        let work = b.intern_frame(&FrameSpec::named("work"));
        let waiting = b.intern_stack_path(&[main, wait]).unwrap();
        let working = b.intern_stack_path(&[main, work]).unwrap();
        // 1 ms of work, then 9 s off CPU in `wait` (one sample weighing 9 s), then work again.
        b.push_sample_full(working, t, 0, &[MS], 1, Some(SampleState::Running));
        b.push_sample_full(waiting, t, MS, &[9_000 * MS], 1, Some(SampleState::Waiting));
        b.push_sample_full(working, t, 9_001 * MS, &[MS], 1, Some(SampleState::Running));
        let mut session = b.finish();
        let wait_boxes = |session: &Session| -> Vec<(u64, u64)> {
            stack_chart(session, &Filter::all(), None, 0, 10_000 * MS, MS, None)
                .iter()
                .filter(|b| session.str(b.func) == "wait")
                .map(|b| (b.start_ns, b.end_ns))
                .collect()
        };
        assert_eq!(wait_boxes(&session), [(MS, 9_001 * MS)]);
        let main_boxes = stack_chart(&session, &Filter::all(), None, 0, 10_000 * MS, MS, None)
            .iter()
            .filter(|b| b.depth == 0)
            .count();
        assert_eq!(main_boxes, 1, "no gap: main runs through the wait");
        // Showing the sample counts instead does not change how long each sample lasted.
        session.select_sample_type("samples").unwrap();
        assert_eq!(wait_boxes(&session), [(MS, 9_001 * MS)]);
    }
}
