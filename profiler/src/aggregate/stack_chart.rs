//! The stack chart (speedscope's "time order", the Firefox Profiler's stack chart): each
//! thread's stacks in time order. Consecutive samples that share a frame at a depth (the same
//! stack node, so the same path from the root) are one box; boxes narrower than a minimum width
//! are merged with their narrow neighbours, like the flame graph's slivers.

use super::filter::Filter;
use super::timeline::{in_time_range, stacks_matching, thread_mask};
use crate::session::{Session, StackId, StrId, ThreadIdx};

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
    /// The stack node drawn (its frame, and the path to it); for a merged box, the first one.
    pub stack: StackId,
    /// How many boxes this one stands for: 1, or more when neighbours narrower than the minimum
    /// width were merged into it.
    pub merged: u32,
    /// Whether the frame's function (for a merged box, any of its boxes' functions) or one of
    /// its callers is highlighted.
    pub matches: bool,
}

/// How long one sample lasts: until the thread's next sample, but at most the sampling interval
/// (so a thread that slept does not seem to run through the gap); the last sample of a thread
/// lasts one interval. Without a known interval, the gap to the next sample (the last: the gap
/// before it, or 1 ns).
fn sample_end(time: u64, next: Option<u64>, previous_gap: Option<u64>, interval: u64) -> u64 {
    let span = match (next, interval) {
        (Some(n), 0) => n - time,
        (Some(n), i) => (n - time).min(i),
        (None, 0) => previous_gap.unwrap_or(1),
        (None, i) => i,
    };
    time.saturating_add(span.max(1))
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

/// An open run: the stack node at one depth, and since when. Every open run lasts until the
/// end of the last sample, so that end is kept once, not per run.
struct Run {
    stack: StackId,
    start: u64,
    matches: bool,
}

/// The stack chart of the samples `filter` keeps, over the window `[from, to)`: boxes clipped to
/// the window, thread by thread (in the session's thread order), each thread's samples in time
/// order. Boxes narrower than `min_width` nanoseconds are merged with the narrow siblings they
/// touch, and what they call is not drawn, so the count of boxes stays near the window's pixels
/// times the depth however many samples there are. `highlight` marks functions (one byte per
/// name id, 1: marked).
pub fn stack_chart(
    session: &Session,
    filter: &Filter,
    from: u64,
    to: u64,
    min_width: u64,
    highlight: Option<&[u8]>,
) -> Vec<StackBox> {
    let mut out = Vec::new();
    if to <= from {
        return out;
    }
    let keep = thread_mask(session, filter);
    let matching = highlight.map(|mask| stacks_matching(session, mask));
    let interval = match session.meta.achieved_interval_ns {
        0 => session.meta.requested_interval_ns,
        i => i,
    };
    let samples = &session.samples;
    // The kept samples of each thread, in time order (stable, so equal times keep file order).
    let mut by_thread: Vec<Vec<u32>> = vec![Vec::new(); session.threads.len()];
    for i in 0..samples.len() {
        let thread = samples.thread[i].index();
        if keep.get(thread) == Some(&true) && in_time_range(filter, samples.time_ns[i]) {
            by_thread[thread].push(i as u32);
        }
    }
    // Each stack node's depth (a parent always comes before its children).
    let mut depth_of: Vec<u32> = Vec::with_capacity(session.stacks.len());
    for node in &session.stacks {
        let depth = node.parent.map_or(0, |p| depth_of[p.index()] + 1);
        depth_of.push(depth);
    }
    let mut path: Vec<StackId> = Vec::new();
    let mut open: Vec<Run> = Vec::new();
    let mut open_end = 0u64;
    // Per depth, the boxes narrower than the minimum width (merged where they touch) under the
    // open run one level up, drawn only if that run turns out wide enough. One buffer per
    // depth serves every run, since one run at a time is open at each depth.
    let mut narrow: Vec<Vec<StackBox>> = Vec::new();
    for (thread, indices) in by_thread.iter_mut().enumerate() {
        // Recorded sessions are in time order per thread already: sort only when not.
        if !indices.is_sorted_by_key(|&i| samples.time_ns[i as usize]) {
            indices.sort_by_key(|&i| samples.time_ns[i as usize]);
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
                let b = StackBox {
                    thread,
                    depth: depth as u32,
                    start_ns: run.start,
                    end_ns: end,
                    stack: run.stack,
                    merged: 1,
                    matches: run.matches,
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
            let end = sample_end(time, next, previous_gap, interval).min(to);
            if start >= end {
                continue;
            }
            // The runs this sample continues (with no gap): from its leaf up to the first node
            // an open run holds, whose callers are then the same too. The nodes below it start
            // runs. A sample with the same stack as the last costs no walk at all.
            let contiguous = !open.is_empty() && open_end == start;
            let mut same = 0;
            path.clear();
            let mut node = Some(samples.stack[i as usize]);
            while let Some(s) = node {
                let d = depth_of[s.index()] as usize;
                if contiguous && open.get(d).is_some_and(|run| run.stack == s) {
                    same = d + 1;
                    break;
                }
                path.push(s);
                node = session.stack(s).parent;
            }
            close(&mut open, same, open_end, &mut narrow, &mut out);
            open_end = end;
            for &stack in path.iter().rev() {
                open.push(Run {
                    stack,
                    start,
                    matches: matching.as_ref().is_some_and(|m| m[stack.index()]),
                });
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
pub fn box_function(session: &Session, b: &StackBox) -> Option<StrId> {
    (b.merged <= 1).then(|| session.frame(session.stack(b.stack).frame).name)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let mut got: Vec<_> = stack_chart(session, &Filter::all(), from, to, min, None)
            .iter()
            .map(|b| {
                let name = box_function(session, b)
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
        let chart = stack_chart(&session, &Filter::all(), 0, 200, 1, Some(&mask));
        for b in &chart {
            let name = session.str(box_function(&session, b).unwrap());
            assert_eq!(b.matches, name == "b", "{name}");
        }
        let merged = stack_chart(&session, &Filter::all(), 0, 200, 25, Some(&mask));
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
        let chart = stack_chart(&session, &Filter::all(), 0, 200_000, 1_000, None);
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
    fn without_an_interval_a_sample_lasts_until_the_next() {
        assert_eq!(sample_end(10, Some(30), None, 0), 30);
        assert_eq!(sample_end(10, Some(30), None, 5), 15);
        assert_eq!(sample_end(30, None, Some(20), 0), 50);
        assert_eq!(sample_end(30, None, None, 0), 31);
        assert_eq!(sample_end(30, Some(30), None, 0), 31, "never empty");
    }
}
