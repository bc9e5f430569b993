//! The timeline: each thread's samples over a time window, summed in equal time buckets, with
//! the hottest function of each bucket and the share of it that a highlight (a search or a
//! selected function) matches. The viewer draws it as one activity graph per thread.

use super::filter::{Filter, KeptSamples};
use crate::session::{SampleState, Session, StrId, ThreadIdx};

/// One thread's samples over the window, bucket by bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineTrack {
    /// Which thread.
    pub thread: ThreadIdx,
    /// The summed weight of the thread's samples in each bucket.
    pub weight: Vec<u64>,
    /// The function with the most self weight in each bucket (ties: the lowest name id), `None`
    /// for an empty bucket.
    pub hottest: Vec<Option<StrId>>,
    /// The weight in each bucket of the samples whose stack holds a highlighted function (0
    /// everywhere without a highlight).
    pub matched: Vec<u64>,
    /// The weight in each bucket of the samples taken while the thread waited (off CPU: wall
    /// mode); 0 everywhere for sessions that record no state.
    pub waiting: Vec<u64>,
}

/// The time the session spans: `[0, end)`, where `end` covers the recorded duration and every
/// sample (an imported session may have no duration, or samples past it).
pub fn time_extent(session: &Session) -> (u64, u64) {
    let last = session
        .samples
        .time_ns
        .iter()
        .max()
        .map_or(0, |&t| t.saturating_add(1));
    (0, session.meta.duration_ns.max(last).max(1))
}

/// The bucket of `[from, to)` split into `buckets` equal parts that holds `time`, if any. Bucket
/// `i` holds the times `t` with `floor((t - from) * buckets / (to - from)) == i`, so every time
/// in the window, a bucket boundary included, falls into exactly one bucket.
pub fn bucket_of(time: u64, from: u64, to: u64, buckets: usize) -> Option<usize> {
    if time < from || time >= to || buckets == 0 {
        return None;
    }
    let (offset, span) = (time - from, to - from);
    // u64 arithmetic when the product fits (always, for real sessions): u128 division is slow,
    // in wasm32 above all.
    Some(match offset.checked_mul(buckets as u64) {
        Some(product) => (product / span) as usize,
        None => (u128::from(offset) * buckets as u128 / u128::from(span)) as usize,
    })
}

/// Per stack node, whether any of its frames (it or its callers) has a function `mask` marks
/// (one byte per name id, 1: marked).
pub(crate) fn stacks_matching(session: &Session, mask: &[u8]) -> Vec<bool> {
    let mut out: Vec<bool> = Vec::with_capacity(session.stacks.len());
    for node in &session.stacks {
        let own = super::is_marked(mask, session.frame(node.frame).name);
        // A parent always comes before its children.
        let inherited = node.parent.is_some_and(|p| out[p.index()]);
        out.push(own || inherited);
    }
    out
}

/// Per thread, whether `filter` keeps its samples.
pub(crate) fn thread_mask(session: &Session, filter: &Filter) -> Vec<bool> {
    match &filter.threads {
        None => vec![true; session.threads.len()],
        Some(keep) => {
            let mut mask = vec![false; session.threads.len()];
            for t in keep {
                if let Some(slot) = mask.get_mut(t.index()) {
                    *slot = true;
                }
            }
            mask
        }
    }
}

/// The samples `filter` keeps in `[from, to)` (by thread, time range, state, scope and task, as
/// every view keeps them), summed per thread in `buckets` equal buckets (see
/// [`bucket_of`]): one track per thread the filter keeps, in the session's thread order.
/// `highlight` marks functions (one byte per name id, 1: marked); a sample matches when any frame
/// of its stack is marked.
///
/// One pass over the samples, so the cost grows with the samples and the buckets, never with
/// their product. Samples in time order need memory for one bucket's samples at a time; others
/// a counting sort by bucket (8 bytes a sample).
pub fn timeline(
    session: &Session,
    filter: &Filter,
    from: u64,
    to: u64,
    buckets: usize,
    highlight: Option<&[u8]>,
) -> Vec<TimelineTrack> {
    timeline_charged(session, filter, from, to, buckets, highlight, None)
}

/// [`timeline`] after transforms: `charged` (from [`TransformedStacks::charged_functions`](super::TransformedStacks::charged_functions))
/// gives each stack the function its samples are charged to, or `None` when a transform drops
/// them; dropped samples count nowhere, and a bucket's hottest function is the charged one.
/// `None` for `charged`: untransformed.
pub fn timeline_charged(
    session: &Session,
    filter: &Filter,
    from: u64,
    to: u64,
    buckets: usize,
    highlight: Option<&[u8]>,
    charged: Option<&[Option<StrId>]>,
) -> Vec<TimelineTrack> {
    let keep = thread_mask(session, filter);
    let mut track_of = vec![u32::MAX; session.threads.len()];
    let mut tracks: Vec<TimelineTrack> = Vec::new();
    for (i, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
        track_of[i] = tracks.len() as u32;
        tracks.push(TimelineTrack {
            thread: ThreadIdx(i as u32),
            weight: vec![0; buckets],
            hottest: vec![None; buckets],
            matched: vec![0; buckets],
            waiting: vec![0; buckets],
        });
    }
    if buckets == 0 || to <= from || tracks.is_empty() {
        return tracks;
    }
    let kept = KeptSamples::new(session, filter);
    let matching = highlight.map(|mask| stacks_matching(session, mask));
    let leaf: Vec<StrId> = match charged {
        // A dropped stack's leaf is never read: its samples are skipped below.
        Some(charged) => charged.iter().map(|f| f.unwrap_or(StrId(0))).collect(),
        None => session
            .stacks
            .iter()
            .map(|node| session.frame(node.frame).name)
            .collect(),
    };

    // Pass 1: each kept sample's cell (track × bucket) and the cells' weights. Samples in time
    // order (as recorded) come bucket by bucket, so each bucket's run of samples is grouped by
    // track as it ends, in a buffer the size of one bucket's samples. Otherwise every kept
    // sample's cell is noted (4 bytes a sample) for a counting sort by cell in pass 2.
    let time_sorted = session.samples.time_ns.is_sorted();
    let cells = tracks.len() * buckets;
    let samples = &session.samples;
    let mut cell_of = if time_sorted {
        Vec::new()
    } else {
        vec![u32::MAX; samples.len()]
    };
    let mut size = if time_sorted {
        Vec::new()
    } else {
        vec![0u32; cells + 1]
    };
    let mut hottest = Hottest {
        scratch: vec![0u64; session.strings.len()],
        touched: Vec::new(),
        ends: vec![0; tracks.len()],
        present: Vec::new(),
        grouped: Vec::new(),
        leaf: &leaf,
        session,
    };
    // The current bucket's kept samples as (track, sample), in time order.
    let mut run: Vec<(u32, u32)> = Vec::new();
    let mut run_bucket = 0;
    for i in 0..samples.len() {
        let Some(&track) = track_of.get(samples.thread[i].index()) else {
            continue;
        };
        let time = samples.time_ns[i];
        if track == u32::MAX || !kept.keeps(i) {
            continue;
        }
        if charged.is_some_and(|c| c.get(samples.stack[i].index()).is_none_or(Option::is_none)) {
            continue;
        }
        let Some(bucket) = bucket_of(time, from, to, buckets) else {
            continue;
        };
        let t = &mut tracks[track as usize];
        let w = samples.weight[i];
        t.weight[bucket] = t.weight[bucket].saturating_add(w);
        if matching
            .as_ref()
            .is_some_and(|m| m[samples.stack[i].index()])
        {
            t.matched[bucket] = t.matched[bucket].saturating_add(w);
        }
        if samples.state(i) == Some(SampleState::Waiting) {
            t.waiting[bucket] = t.waiting[bucket].saturating_add(w);
        }
        if time_sorted {
            if bucket != run_bucket {
                hottest.of_run(&mut run, run_bucket, &mut tracks);
                run_bucket = bucket;
            }
            run.push((track, i as u32));
        } else {
            let cell = track as usize * buckets + bucket;
            cell_of[i] = cell as u32;
            size[cell + 1] += 1;
        }
    }
    if time_sorted {
        hottest.of_run(&mut run, run_bucket, &mut tracks);
        return tracks;
    }

    // Pass 2 (samples out of time order): the samples grouped by cell (a counting sort), then
    // each cell's hottest function.
    for c in 0..cells {
        size[c + 1] += size[c];
    }
    let mut next = size.clone();
    let mut order = vec![0u32; size[cells] as usize];
    for (i, &cell) in cell_of.iter().enumerate() {
        if cell != u32::MAX {
            let slot = &mut next[cell as usize];
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
    }
    drop(cell_of);
    for cell in 0..cells {
        let members = &order[size[cell] as usize..size[cell + 1] as usize];
        if !members.is_empty() {
            tracks[cell / buckets].hottest[cell % buckets] = hottest.of(members.iter().copied());
        }
    }
    tracks
}

/// Finds the hottest function of a cell's samples with a scratch sum per function, reset after
/// every cell.
struct Hottest<'a> {
    scratch: Vec<u64>,
    touched: Vec<StrId>,
    /// Per track, where its samples of the current run end in `grouped` ([`Hottest::of_run`]);
    /// all 0 between runs.
    ends: Vec<u32>,
    /// The tracks of the current run, in the order of their groups in `grouped`.
    present: Vec<u32>,
    /// The current run's samples, grouped by track.
    grouped: Vec<u32>,
    /// The function each stack's samples are charged to.
    leaf: &'a [StrId],
    session: &'a Session,
}

impl Hottest<'_> {
    /// The function with the most weight among samples `members` (ties: the lowest name id).
    fn of(&mut self, members: impl Iterator<Item = u32>) -> Option<StrId> {
        let samples = &self.session.samples;
        for i in members {
            let func = self.leaf[samples.stack[i as usize].index()];
            let slot = &mut self.scratch[func.index()];
            if *slot == 0 {
                self.touched.push(func);
            }
            // Zero-weight samples still name a function: count them as 1 in the comparison.
            *slot = slot.saturating_add(samples.weight[i as usize].max(1));
        }
        let mut best: Option<(u64, StrId)> = None;
        for &func in &self.touched {
            let w = self.scratch[func.index()];
            let better = match best {
                None => true,
                Some((bw, bf)) => w > bw || (w == bw && func.0 < bf.0),
            };
            if better {
                best = Some((w, func));
            }
            self.scratch[func.index()] = 0;
        }
        self.touched.clear();
        best.map(|(_, f)| f)
    }

    /// Sets the hottest function of bucket `bucket` in each track from `run`, the bucket's
    /// (track, sample) pairs, and empties `run`.
    ///
    /// The run is grouped with a counting sort over the tracks it holds, not a comparison sort:
    /// linear in the run, whatever the number of tracks, and in wasm no sort instance of its
    /// own. The order within a track does not matter to [`Hottest::of`].
    fn of_run(&mut self, run: &mut Vec<(u32, u32)>, bucket: usize, tracks: &mut [TimelineTrack]) {
        let mut ends = std::mem::take(&mut self.ends);
        let mut present = std::mem::take(&mut self.present);
        let mut grouped = std::mem::take(&mut self.grouped);
        // `ends[t]` counts track t's samples, then holds where its group starts, then (after
        // the scatter) where it ends, which is where the next group in `present` starts.
        present.clear();
        for &(track, _) in run.iter() {
            if ends[track as usize] == 0 {
                present.push(track);
            }
            ends[track as usize] += 1;
        }
        let mut start = 0;
        for &track in &present {
            let count = ends[track as usize];
            ends[track as usize] = start;
            start += count;
        }
        grouped.clear();
        grouped.resize(run.len(), 0);
        for &(track, i) in run.iter() {
            let at = &mut ends[track as usize];
            grouped[*at as usize] = i;
            *at += 1;
        }
        let mut start = 0;
        for &track in &present {
            let end = std::mem::take(&mut ends[track as usize]);
            let members = grouped[start as usize..end as usize].iter().copied();
            tracks[track as usize].hottest[bucket] = self.of(members);
            start = end;
        }
        run.clear();
        self.ends = ends;
        self.present = present;
        self.grouped = grouped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{FrameSpec, SessionBuilder};

    /// `main` runs `a` at 0..10 ms and `b` at 10..20 ms (1 ms samples); `worker` runs `b` at
    /// 5..8 ms.
    fn session() -> (Session, ThreadIdx, ThreadIdx) {
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let worker = b.thread(2, "worker");
        let root = b.intern_frame(&FrameSpec::named("root"));
        let fa = b.intern_frame(&FrameSpec::named("a"));
        let fb = b.intern_frame(&FrameSpec::named("b"));
        let sa = b.intern_stack_path(&[root, fa]).unwrap();
        let sb = b.intern_stack_path(&[root, fb]).unwrap();
        const MS: u64 = 1_000_000;
        for i in 0..20 {
            b.push_sample(if i < 10 { sa } else { sb }, main, i * MS, MS);
        }
        for i in 5..8 {
            b.push_sample(sb, worker, i * MS, MS);
        }
        b.meta_mut().duration_ns = 20 * MS;
        (b.finish(), main, worker)
    }

    fn name_mask(session: &Session, name: &str) -> Vec<u8> {
        session
            .strings
            .iter()
            .map(|s| u8::from(s == name))
            .collect()
    }

    /// Regression: the timeline of samples in time order is bucketed a bucket at a time
    /// (without the per-sample counting sort); it must equal the counting sort's answer for the
    /// same samples out of time order (each thread's samples pushed one thread after another).
    #[test]
    fn samples_in_time_order_give_the_same_timeline_as_out_of_order() {
        let mut rng = 7u64;
        let mut next = |below: u64| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) % below
        };
        let mut rows = Vec::new();
        for i in 0..3000u64 {
            rows.push((
                next(3) as usize,
                next(12),
                i * 1000 + next(1000),
                next(5) + 1,
            ));
        }
        let build = |order: &[(usize, u64, u64, u64)]| {
            let mut b = SessionBuilder::default();
            let threads: Vec<_> = (0..3).map(|t| b.thread(t, &format!("t{t}"))).collect();
            let root = b.intern_frame(&FrameSpec::named("root"));
            let stacks: Vec<_> = (0..12)
                .map(|f| {
                    let frame = b.intern_frame(&FrameSpec::named(&format!("f{}", f % 7)));
                    b.intern_stack_path(&[root, frame]).unwrap()
                })
                .collect();
            for &(t, s, time, w) in order {
                b.push_sample(stacks[s as usize], threads[t], time, w);
            }
            b.finish()
        };
        let sorted = build(&rows);
        let mut by_thread = rows.clone();
        by_thread.sort_by_key(|r| r.0);
        let unsorted = build(&by_thread);
        assert!(sorted.samples.time_ns.is_sorted());
        assert!(!unsorted.samples.time_ns.is_sorted());
        let mask = name_mask(&sorted, "f3");
        for buckets in [1, 7, 64, 5000] {
            for (from, to) in [(0, 3_000_000), (123_456, 2_000_001)] {
                let a = timeline(&sorted, &Filter::all(), from, to, buckets, Some(&mask));
                let b = timeline(&unsorted, &Filter::all(), from, to, buckets, Some(&mask));
                assert_eq!(a, b, "{buckets} buckets over {from}..{to}");
                assert!(a[0].hottest.iter().any(Option::is_some));
            }
        }
    }

    #[test]
    fn waiting_time_is_summed_apart_per_bucket() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_sample_full(s, t, 0, &[3], 1, Some(SampleState::Running));
        b.push_sample_full(s, t, 1, &[5], 1, Some(SampleState::Waiting));
        b.push_sample_full(s, t, 12, &[7], 1, Some(SampleState::Waiting));
        let session = b.finish();
        let tracks = timeline(&session, &Filter::all(), 0, 20, 2, None);
        assert_eq!(tracks[0].weight, [8, 7]);
        assert_eq!(tracks[0].waiting, [5, 7]);
        // A filter by state keeps only that state's samples, as every view does.
        let waiting = Filter::all().state(SampleState::Waiting);
        let tracks = timeline(&session, &waiting, 0, 20, 2, None);
        assert_eq!(tracks[0].weight, [5, 7]);
        let running = Filter::all().state(SampleState::Running);
        let tracks = timeline(&session, &running, 0, 20, 2, None);
        assert_eq!(tracks[0].weight, [3, 0]);
        assert_eq!(tracks[0].waiting, [0, 0]);
    }

    #[test]
    fn bucket_sums_equal_each_threads_total_in_the_window() {
        let (session, main, worker) = session();
        for buckets in [1, 3, 7, 20, 64, 1000] {
            for (from, to) in [(0, 20_000_000), (2_500_000, 13_000_001), (0, 1)] {
                let tracks = timeline(&session, &Filter::all(), from, to, buckets, None);
                assert_eq!(tracks.len(), 2);
                for track in &tracks {
                    let filter = Filter::all().threads([track.thread]).time_range(from, to);
                    let expected = super::super::StackWeights::compute(&session, &filter).total();
                    assert_eq!(
                        track.weight.iter().sum::<u64>(),
                        expected,
                        "{buckets} buckets over {from}..{to}"
                    );
                    assert_eq!(track.weight.len(), buckets);
                }
                assert_eq!(tracks[0].thread, main);
                assert_eq!(tracks[1].thread, worker);
            }
        }
    }

    #[test]
    fn a_sample_on_a_bucket_boundary_falls_into_exactly_one_bucket() {
        // 10 buckets of 3 ns over [0, 30): 3, 6, ... are boundaries.
        for t in 0..30u64 {
            let hits: Vec<usize> = (0..10)
                .filter(|&i| bucket_of(t, 0, 30, 10) == Some(i))
                .collect();
            assert_eq!(hits, [(t / 3) as usize], "time {t}");
        }
        // Uneven buckets: 7 over [100, 110).
        let mut counts = [0; 7];
        for t in 100..110 {
            counts[bucket_of(t, 100, 110, 7).unwrap()] += 1;
        }
        assert_eq!(counts.iter().sum::<i32>(), 10);
        assert_eq!(bucket_of(110, 100, 110, 7), None, "the window is half-open");
        assert_eq!(bucket_of(99, 100, 110, 7), None);
        assert_eq!(
            bucket_of(u64::MAX - 1, 0, u64::MAX, 3),
            Some(2),
            "no overflow"
        );
        // Through the timeline: one sample at a boundary counts once.
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        b.push_sample(s, t, 6, 5);
        let session = b.finish();
        let tracks = timeline(&session, &Filter::all(), 0, 30, 10, None);
        assert_eq!(tracks[0].weight[2], 5);
        assert_eq!(tracks[0].weight.iter().sum::<u64>(), 5);
    }

    #[test]
    fn each_bucket_names_its_hottest_function_and_its_matching_share() {
        let (session, _, _) = session();
        let mask = name_mask(&session, "b");
        let tracks = timeline(&session, &Filter::all(), 0, 20_000_000, 4, Some(&mask));
        let name = |f: Option<StrId>| f.map(|f| session.str(f).to_owned());
        let main: Vec<_> = tracks[0].hottest.iter().map(|&f| name(f)).collect();
        assert_eq!(
            main,
            [
                Some("a".into()),
                Some("a".into()),
                Some("b".into()),
                Some("b".into())
            ]
        );
        assert_eq!(tracks[0].matched, [0, 0, 5_000_000, 5_000_000]);
        // The worker's 3 samples at 5, 6, 7 ms fall into bucket 1 ([5, 10) ms).
        assert_eq!(tracks[1].weight, [0, 3_000_000, 0, 0]);
        assert_eq!(tracks[1].hottest[0], None);
        assert_eq!(name(tracks[1].hottest[1]).as_deref(), Some("b"));
        assert_eq!(tracks[1].matched, tracks[1].weight);
        // A function on the stack, not only the leaf, matches.
        let root = name_mask(&session, "root");
        let tracks = timeline(&session, &Filter::all(), 0, 20_000_000, 4, Some(&root));
        assert_eq!(tracks[0].matched, tracks[0].weight);
        // No highlight, no matches.
        let tracks = timeline(&session, &Filter::all(), 0, 20_000_000, 4, None);
        assert!(tracks.iter().all(|t| t.matched.iter().all(|&m| m == 0)));
    }

    #[test]
    fn the_filter_chooses_the_tracks_and_the_samples() {
        let (session, _, worker) = session();
        let filter = Filter::all().threads([worker]);
        let tracks = timeline(&session, &filter, 0, 20_000_000, 2, None);
        assert_eq!(tracks.len(), 1);
        assert_eq!(tracks[0].thread, worker);
        let filter = Filter::all().time_range(6_000_000, 20_000_000);
        let tracks = timeline(&session, &filter, 0, 20_000_000, 2, None);
        assert_eq!(tracks[1].weight, [2_000_000, 0]);
        assert!(timeline(&session, &Filter::all(), 5, 5, 2, None)
            .iter()
            .all(|t| t.weight == [0, 0]));
        assert_eq!(time_extent(&session), (0, 20_000_000));
    }

    /// The fixture's two-bucket timeline after one transform, and the id of a function name.
    fn transformed(
        transform: impl Fn(&dyn Fn(&str) -> StrId) -> crate::aggregate::Transform,
    ) -> (Vec<TimelineTrack>, Session) {
        let (session, _, _) = session();
        let name = |n: &str| StrId(session.strings.iter().position(|s| s == n).unwrap() as u32);
        let charged = crate::aggregate::TransformedStacks::new(&session, &[transform(&name)])
            .charged_functions(&session);
        let tracks = timeline_charged(
            &session,
            &Filter::all(),
            0,
            20_000_000,
            2,
            None,
            Some(&charged),
        );
        (tracks, session)
    }

    #[test]
    fn samples_a_transform_drops_are_not_bucketed() {
        let (tracks, _) = transformed(|name| crate::aggregate::Transform::DropFunction(name("b")));
        assert_eq!(tracks[0].weight, [10_000_000, 0]);
        assert_eq!(tracks[0].hottest[1], None);
        assert_eq!(tracks[1].weight, [0, 0]);
    }

    #[test]
    fn the_hottest_function_is_the_one_a_transform_charges() {
        let (tracks, session) = transformed(|name| crate::aggregate::Transform::Merge(name("b")));
        let name = |n: &str| StrId(session.strings.iter().position(|s| s == n).unwrap() as u32);
        // Every sample is kept; b's time is charged to its caller.
        assert_eq!(tracks[0].weight, [10_000_000, 10_000_000]);
        assert_eq!(tracks[0].hottest, [Some(name("a")), Some(name("root"))]);
    }
}
