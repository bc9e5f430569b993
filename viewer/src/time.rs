//! The views over time: the timeline (one activity graph per thread, above every view) and the
//! stack chart (each thread's stacks in time order), and the texts they show (time ranges, axis
//! ticks, a box's span). The core computes the buckets and boxes; this module scales them to the
//! page's pixels and hands them over as typed arrays.

use crate::json_out::{JsonOut, ToJson};
use crate::profile::Profile;
use crate::view::module_name;
use prof_session::aggregate::{
    box_function, format_time_at, format_weight, stack_chart, time_extent, timeline_charged,
    track_order, Filter, StackBox, TransformedStacks,
};
use prof_session::session::{SampleType, Session, ThreadIdx, Unit};
use wasm_bindgen::prelude::*;

/// The function id of buckets with no samples, and of merged stack chart boxes.
pub const NONE: u32 = u32::MAX;

/// Times as the core formats them: `1.20 s`, `350 µs`.
pub(crate) fn time_text(ns: u64) -> String {
    format_weight(&SampleType::new("time", Unit::Nanoseconds), ns)
}

/// A time range as the range chip says it: `1.20 s – 2.45 s (1.25 s)`: the ends to a hundredth
/// of the length, so a short range far into a long session still reads apart.
pub fn range_text(from: u64, to: u64) -> String {
    let length = to.saturating_sub(from);
    let resolution = (length / 100).max(1);
    format!(
        "{} – {} ({})",
        format_time_at(from, resolution),
        format_time_at(to, resolution),
        time_text(length)
    )
}

/// A thread as the tracks name it: `main [1234]`, or `[1234]` when it has no name.
pub(crate) fn thread_label(session: &Session, thread: ThreadIdx) -> String {
    let thread = &session.threads[thread.index()];
    match session.str(thread.name) {
        "" => format!("[{}]", thread.tid),
        name => format!("{name} [{}]", thread.tid),
    }
}

/// One mark of a time axis: where (a fraction of the window) and its text.
#[derive(Debug, PartialEq)]
pub struct Tick {
    pub x: f64,
    pub text: String,
}

impl ToJson for Tick {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("x").f64(self.x);
        w.key("text").string(&self.text);
        w.end_object();
    }
}

/// Axis marks at round times (1, 2 or 5 times a power of ten nanoseconds) over `[from, to)`, at
/// most `max` of them.
pub fn ticks(from: u64, to: u64, max: u32) -> Vec<Tick> {
    let span = to.saturating_sub(from);
    if span == 0 || max == 0 {
        return Vec::new();
    }
    let rough = span.div_ceil(u64::from(max)).max(1);
    let mut step = 1u64;
    'outer: loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= rough {
                step = step.saturating_mul(m);
                break 'outer;
            }
        }
        step = step.saturating_mul(10);
    }
    let mut out = Vec::new();
    let mut t = from.div_ceil(step).saturating_mul(step);
    while t < to {
        out.push(Tick {
            x: (t - from) as f64 / span as f64,
            text: format_time_at(t, step),
        });
        t = match t.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    out
}

/// The window `[from, to)` the page asks for (negative or empty: the whole session), within the
/// session's extent.
pub(crate) fn window(session: &Session, from: f64, to: f64) -> (u64, u64) {
    let (start, end) = time_extent(session);
    if !(from >= 0.0 && to > from) {
        return (start, end);
    }
    let from = (from as u64).min(end - 1);
    (from, (to as u64).max(from + 1))
}

/// The highlight mask in force: the selected function or the search's matches.
fn highlight(profile: &Profile) -> Option<&[u8]> {
    profile.highlight.as_deref()
}

/// What the page's timeline draws: per thread (every thread of the session, whether shown or
/// not) and bucket, a bar height, the hottest function, and the highlighted share.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct TimelineData {
    from: u64,
    to: u64,
    buckets: usize,
    threads: Vec<u32>,
    height: Vec<f32>,
    matched: Vec<f32>,
    waiting: Vec<f32>,
    hottest: Vec<u32>,
    labels: Vec<String>,
    /// Each track's summed weight in the window, formatted (`350 ms`).
    totals: Vec<String>,
    ticks: Vec<Tick>,
    extent: (u64, u64),
    /// Where each process's tracks start, with its label, when there are several.
    groups: Vec<(u32, String)>,
}

impl TimelineData {
    /// Buckets the session's samples that `filter` keeps over `[from, to)`: one track for each
    /// thread it keeps. Heights are fractions of a track's
    /// height: for times with a known sampling `interval` (no bucket is then shorter), the
    /// weight over the bucket's duration, at most 1 (the CPU a thread used); otherwise the weight
    /// over the heaviest bucket's. `transformed` stacks apply as in every other view: the samples
    /// a transform drops are left out, and a bucket's hottest function is the one they charge.
    /// The tracks come in the order of `order` (thread indices, the core's [`track_order`], which
    /// the stack chart follows too; threads it leaves out follow in the session's order).
    #[allow(clippy::too_many_arguments)]
    pub fn compute(
        session: &Session,
        filter: &Filter,
        from: u64,
        to: u64,
        buckets: usize,
        interval: u64,
        highlight: Option<&[u8]>,
        transformed: Option<&TransformedStacks>,
        order: &[ThreadIdx],
    ) -> Self {
        let charged = transformed
            .filter(|t| t.is_transformed())
            .map(|t| t.charged_functions(session));
        let mut tracks = timeline_charged(
            session,
            filter,
            from,
            to,
            buckets,
            highlight,
            charged.as_deref(),
        );
        let mut rank = vec![usize::MAX; session.threads.len()];
        for (k, t) in order.iter().enumerate() {
            if let Some(slot) = rank.get_mut(t.index()) {
                *slot = k;
            }
        }
        prof_session::order::sort_by_key(&mut tracks, |t| {
            rank.get(t.thread.index()).copied().unwrap_or(usize::MAX)
        });
        // Each process's tracks together, in the order of its first (busiest) one.
        let sorted: Vec<ThreadIdx> = tracks.iter().map(|t| t.thread).collect();
        let groups = crate::view::process_groups(session, &sorted);
        let mut group_rank = vec![0usize; session.threads.len()];
        for (g, group) in groups.iter().enumerate() {
            for &t in &group.threads {
                group_rank[t as usize] = g;
            }
        }
        prof_session::order::sort_by_key(&mut tracks, |t| {
            group_rank.get(t.thread.index()).copied().unwrap_or(0)
        });
        let heaviest = tracks
            .iter()
            .flat_map(|t| t.weight.iter().copied())
            .max()
            .unwrap_or(0);
        let bucket_ns = (to - from) as f64 / buckets.max(1) as f64;
        let full = match session.meta.sample_type.unit {
            Unit::Nanoseconds if interval > 0 => bucket_ns,
            Unit::Nanoseconds => bucket_ns.max(heaviest as f64),
            _ => heaviest as f64,
        };
        let scale = if full > 0.0 { 1.0 / full } else { 0.0 };
        let mut data = TimelineData {
            from,
            to,
            buckets,
            ticks: ticks(from, to, 10),
            extent: time_extent(session),
            ..TimelineData::default()
        };
        let mut start = 0;
        for group in groups {
            data.groups.push((start, group.label));
            start += group.threads.len() as u32;
        }
        for track in &tracks {
            data.threads.push(track.thread.0);
            let total = track.weight.iter().fold(0u64, |a, &w| a.saturating_add(w));
            data.totals
                .push(format_weight(&session.meta.sample_type, total));
            data.labels.push(thread_label(session, track.thread));
            for b in 0..buckets {
                data.height
                    .push((track.weight[b] as f64 * scale).min(1.0) as f32);
                data.matched
                    .push((track.matched[b] as f64 * scale).min(1.0) as f32);
                data.waiting
                    .push((track.waiting[b] as f64 * scale).min(1.0) as f32);
                data.hottest.push(track.hottest[b].map_or(NONE, |f| f.0));
            }
        }
        data
    }
}

#[wasm_bindgen]
impl TimelineData {
    /// Start of the window, in nanoseconds since the session started.
    #[wasm_bindgen(getter)]
    pub fn from(&self) -> f64 {
        self.from as f64
    }

    /// End of the window (exclusive).
    #[wasm_bindgen(getter)]
    pub fn to(&self) -> f64 {
        self.to as f64
    }

    /// Buckets per track.
    #[wasm_bindgen(getter)]
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// Each track's thread index.
    pub fn threads(&self) -> Vec<u32> {
        self.threads.clone()
    }

    /// Bar heights (0 to 1), track after track, `buckets` each.
    pub fn height(&self) -> Vec<f32> {
        self.height.clone()
    }

    /// The highlighted part of each bar, on the same scale.
    pub fn matched(&self) -> Vec<f32> {
        self.matched.clone()
    }

    /// The part of each bar spent waiting (off CPU, wall mode), on the same scale; all 0 when
    /// the session records no thread states.
    pub fn waiting(&self) -> Vec<f32> {
        self.waiting.clone()
    }

    /// Each bucket's hottest function id (`NONE`, `u32::MAX`, when empty).
    pub fn hottest(&self) -> Vec<u32> {
        self.hottest.clone()
    }

    /// Each track's label and its weight in the window (after the transforms), the axis ticks,
    /// the window as text, the session's extent and where each process's tracks start (when
    /// there are several), as JSON `{labels, totals, ticks: [{x, text}], windowText, extent:
    /// [from, to], groups: [{track, label}]}`.
    #[wasm_bindgen(js_name = textsJson)]
    pub fn texts_json(&self) -> String {
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("labels")
            .strings(self.labels.iter().map(String::as_str));
        w.key("totals")
            .strings(self.totals.iter().map(String::as_str));
        w.key("ticks").array(&self.ticks);
        w.key("windowText").string(&range_text(self.from, self.to));
        w.key("extent").u64s([self.extent.0, self.extent.1]);
        w.key("groups").begin_array();
        for (track, label) in &self.groups {
            w.begin_object();
            w.key("track").u64(u64::from(*track));
            w.key("label").string(label);
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish()
    }
}

/// A stack chart laid out for the page: boxes as fractions of the window, in columns.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct StackChartLayout {
    from: u64,
    to: u64,
    boxes: Vec<StackBox>,
    x: Vec<f64>,
    width: Vec<f64>,
    track: Vec<u32>,
    depth: Vec<u32>,
    func: Vec<u32>,
    highlight: Vec<u8>,
    threads: Vec<u32>,
    max_depth: Vec<u32>,
    labels: Vec<String>,
    ticks: Vec<Tick>,
    extent: (u64, u64),
}

impl StackChartLayout {
    /// The stack chart of the threads `filter` keeps over `[from, to)` for a graph `pixels`
    /// wide, its stacks as `transformed` (see the core's `stack_chart`): boxes narrower than a
    /// pixel are merged by the core. The threads come in the order of `order` (the core's
    /// [`track_order`], the timeline's; threads it leaves out follow in the session's order).
    #[allow(clippy::too_many_arguments)]
    pub fn compute(
        session: &Session,
        filter: &Filter,
        transformed: Option<&TransformedStacks>,
        from: u64,
        to: u64,
        pixels: f64,
        highlight: Option<&[u8]>,
        order: &[ThreadIdx],
    ) -> Self {
        let span = to.saturating_sub(from).max(1);
        let min_width = (span as f64 / pixels.max(1.0)).ceil() as u64;
        let boxes = stack_chart(
            session,
            filter,
            transformed,
            from,
            to,
            min_width.max(1),
            highlight,
        );
        let mut layout = StackChartLayout {
            from,
            to,
            ticks: ticks(from, to, 10),
            extent: time_extent(session),
            ..StackChartLayout::default()
        };
        // The threads the filter keeps, once each: those of `order` in its order, then the
        // others in the session's.
        let threads = session.threads.len();
        let mut keep = vec![filter.threads.is_none(); threads];
        for t in filter.threads.iter().flatten() {
            if let Some(slot) = keep.get_mut(t.index()) {
                *slot = true;
            }
        }
        let all = (0..threads as u32).map(ThreadIdx);
        let mut shown: Vec<ThreadIdx> = Vec::new();
        for t in order.iter().copied().chain(all) {
            if let Some(slot) = keep.get_mut(t.index()).filter(|k| **k) {
                *slot = false;
                shown.push(t);
            }
        }
        let mut track_of = vec![NONE; session.threads.len()];
        for (i, t) in shown.iter().enumerate() {
            track_of[t.index()] = i as u32;
            layout.threads.push(t.0);
            layout.max_depth.push(0);
            layout.labels.push(thread_label(session, *t));
        }
        let scale = 1.0 / span as f64;
        for b in &boxes {
            let track = track_of[b.thread.index()];
            layout.x.push((b.start_ns - from) as f64 * scale);
            layout.width.push((b.end_ns - b.start_ns) as f64 * scale);
            layout.track.push(track);
            layout.depth.push(b.depth);
            layout.func.push(box_function(b).map_or(NONE, |f| f.0));
            layout.highlight.push(u8::from(b.matches));
            let deepest = &mut layout.max_depth[track as usize];
            *deepest = (*deepest).max(b.depth);
        }
        layout.boxes = boxes;
        layout
    }
}

#[wasm_bindgen]
impl StackChartLayout {
    /// The number of boxes.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> usize {
        self.x.len()
    }

    /// Start of the window, in nanoseconds since the session started.
    #[wasm_bindgen(getter)]
    pub fn from(&self) -> f64 {
        self.from as f64
    }

    /// End of the window (exclusive).
    #[wasm_bindgen(getter)]
    pub fn to(&self) -> f64 {
        self.to as f64
    }

    /// Left edges, as fractions of the window.
    pub fn x(&self) -> Vec<f64> {
        self.x.clone()
    }

    /// Widths, as fractions of the window.
    pub fn width(&self) -> Vec<f64> {
        self.width.clone()
    }

    /// Each box's track (an index into `threads`).
    pub fn track(&self) -> Vec<u32> {
        self.track.clone()
    }

    /// Each box's depth (0: the outermost frame).
    pub fn depth(&self) -> Vec<u32> {
        self.depth.clone()
    }

    /// Each box's function id (`u32::MAX` for merged boxes).
    pub fn func(&self) -> Vec<u32> {
        self.func.clone()
    }

    /// 1 for each box to highlight, else 0.
    pub fn highlight(&self) -> Vec<u8> {
        self.highlight.clone()
    }

    /// The tracks' thread indices.
    pub fn threads(&self) -> Vec<u32> {
        self.threads.clone()
    }

    /// Each track's deepest box.
    #[wasm_bindgen(js_name = maxDepth)]
    pub fn max_depth(&self) -> Vec<u32> {
        self.max_depth.clone()
    }

    /// Each track's label, the axis ticks and the session's extent, as JSON `{labels, ticks:
    /// [{x, text}], extent: [from, to]}`.
    #[wasm_bindgen(js_name = textsJson)]
    pub fn texts_json(&self) -> String {
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("labels")
            .strings(self.labels.iter().map(String::as_str));
        w.key("ticks").array(&self.ticks);
        w.key("extent").u64s([self.extent.0, self.extent.1]);
        w.end_object();
        w.finish()
    }

    /// What the tooltip says about box `i`, as JSON `{name, location, module, spanText,
    /// merged, from, to}` (times in nanoseconds; `module`: `view::module_name`).
    #[wasm_bindgen(js_name = boxJson)]
    pub fn box_json(&self, profile: &Profile, i: usize) -> Result<String, JsError> {
        let b = self
            .boxes
            .get(i)
            .ok_or_else(|| JsError::new(&format!("no box {i}")))?;
        let session = &profile.session;
        let frame = session.frame(b.frame);
        let location = frame.file.map(|file| match frame.line {
            Some(line) => format!("{}:{line}", session.str(file)),
            None => session.str(file).to_owned(),
        });
        let name = match box_function(b) {
            Some(f) => session.str(f).to_owned(),
            None => format!("{} frames, each narrower than a pixel", b.merged),
        };
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("name").string(&name);
        w.key("location")
            .opt_string(location.as_deref().filter(|_| b.merged <= 1));
        w.key("module")
            .opt_string(module_name(session, frame).filter(|_| b.merged <= 1));
        w.key("spanText").string(&range_text(b.start_ns, b.end_ns));
        w.key("merged").u64(u64::from(b.merged));
        w.key("from").u64(b.start_ns);
        w.key("to").u64(b.end_ns);
        w.end_object();
        Ok(w.finish())
    }

    /// The stack of box `i`, outermost first, as a JSON array of function names: the boxes of
    /// its thread above it whose spans hold its start (a frame's callers span its time), then
    /// its own function. A merged box's callers are those of its first box.
    #[wasm_bindgen(js_name = stackJson)]
    pub fn stack_json(&self, profile: &Profile, i: usize) -> Result<String, JsError> {
        let b = self
            .boxes
            .get(i)
            .ok_or_else(|| JsError::new(&format!("no box {i}")))?;
        // One caller at each depth above it: placed by depth, no sort needed.
        let mut stack = vec![None; b.depth as usize + 1];
        for c in &self.boxes {
            if c.thread == b.thread
                && c.depth < b.depth
                && c.start_ns <= b.start_ns
                && b.start_ns < c.end_ns
            {
                stack[c.depth as usize] = Some(c.func);
            }
        }
        stack[b.depth as usize] = Some(b.func);
        let session = &profile.session;
        let mut w = JsonOut::new();
        w.strings(stack.into_iter().flatten().map(|f| session.str(f)));
        Ok(w.finish())
    }
}

#[wasm_bindgen]
impl Profile {
    /// The timeline of every thread over the window `[from, to)` nanoseconds (`from` negative:
    /// the whole session) in at most `buckets` buckets, of the samples the view's state, scope
    /// and task keep (as in every view), highlighting what the search or selection marks.
    ///
    /// Buckets are never shorter than the sampling interval (when the session knows it), so
    /// a window narrower than `buckets` samples shows wide bars rather than isolated spikes.
    pub fn timeline(&self, from: f64, to: f64, buckets: usize) -> Result<TimelineData, JsError> {
        let (from, to) = window(&self.session, from, to);
        let filter = self
            .view
            .timeline_filter(&self.session)
            .map_err(|e| JsError::new(&e))?;
        let meta = &self.session.meta;
        let interval = match meta.achieved_interval_ns {
            0 => meta.requested_interval_ns,
            i => i,
        };
        let mut buckets = buckets.clamp(1, 1 << 16);
        if let Some(fit) = (to - from).checked_div(interval) {
            buckets = buckets.min(fit.max(1) as usize);
        }
        Ok(TimelineData::compute(
            &self.session,
            &filter,
            from,
            to,
            buckets,
            interval,
            highlight(self),
            Some(&self.transformed),
            // Busy threads first: of a perf profile's many threads, most are idle.
            &track_order(&self.session, &self.thread_totals),
        ))
    }

    /// The stack chart of the shown threads and range over the window `[from, to)` (`from`
    /// negative: the whole session) for a canvas `pixels` wide, with the view's transforms.
    #[wasm_bindgen(js_name = stackChart)]
    pub fn stack_chart(
        &self,
        from: f64,
        to: f64,
        pixels: f64,
    ) -> Result<StackChartLayout, JsError> {
        let (from, to) = window(&self.session, from, to);
        let filter = self
            .view
            .filter(&self.session)
            .map_err(|e| JsError::new(&e))?;
        Ok(StackChartLayout::compute(
            &self.session,
            &filter,
            Some(&self.transformed),
            from,
            to,
            pixels,
            highlight(self),
            &track_order(&self.session, &self.thread_totals),
        ))
    }

    /// A time range as the range chip says it: `1.20 s – 2.45 s (1.25 s)`.
    #[wasm_bindgen(js_name = rangeText)]
    pub fn range_text(&self, from: f64, to: f64) -> String {
        range_text(from.max(0.0) as u64, to.max(0.0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::{FrameSpec, Metadata, Mode, SessionBuilder};

    /// A box's stack is the boxes of its thread above it at its start, outermost first: in
    /// `main;a;b` then `main;c;b`, each `b` has its own caller.
    #[test]
    fn a_stack_chart_boxs_stack_is_its_callers_at_its_start() {
        let mut b = SessionBuilder::new(Metadata {
            duration_ns: 2_000_000,
            requested_interval_ns: 1_000_000,
            achieved_interval_ns: 1_000_000,
            ..Metadata::default()
        });
        let t = b.thread(1, "main");
        for (i, names) in [["main", "a", "b"], ["main", "c", "b"]].iter().enumerate() {
            b.push_named(names, t, i as u64 * 1_000_000, 1_000_000);
        }
        let p = Profile::of(b.finish());
        let chart = p.stack_chart(-1.0, -1.0, 1000.0).unwrap();
        let stacks: Vec<String> = (0..chart.boxes.len())
            .filter(|&i| p.session.str(chart.boxes[i].func) == "b")
            .map(|i| chart.stack_json(&p, i).unwrap())
            .collect();
        assert_eq!(stacks, [r#"["main","a","b"]"#, r#"["main","c","b"]"#]);
    }

    #[test]
    fn a_range_reads_as_its_ends_and_its_length() {
        assert_eq!(
            range_text(1_200_000_000, 2_450_000_000),
            "1.20 s – 2.45 s (1.25 s)"
        );
        assert_eq!(range_text(0, 1_500), "0 ns – 1.50 µs (1.50 µs)");
        assert_eq!(
            range_text(400_100_000_000, 400_600_000_000),
            "400.100 s – 400.600 s (500 ms)"
        );
    }

    #[test]
    fn ticks_fall_on_round_times_inside_the_window() {
        let t = ticks(0, 130_000_000, 10);
        let texts: Vec<&str> = t.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            texts,
            ["0 ms", "20 ms", "40 ms", "60 ms", "80 ms", "100 ms", "120 ms"]
        );
        assert!(t.iter().all(|t| (0.0..1.0).contains(&t.x)));
        let t = ticks(1_050, 1_070, 4);
        assert_eq!(t[0].text, "1.050 µs");
        assert!(t.len() <= 5);
        // Far into a long session, neighbouring ticks still read apart.
        let t = ticks(400_000_000_000, 401_000_000_000, 10);
        assert_eq!(t[1].text, "400.1 s");
        assert!(ticks(5, 5, 10).is_empty());
    }

    #[test]
    fn cpu_bars_are_the_share_of_the_bucket_a_thread_ran() {
        let mut b = SessionBuilder::new(Metadata {
            mode: Mode::Cpu,
            sample_type: Mode::Cpu.sample_type(),
            duration_ns: 100,
            ..Metadata::default()
        });
        let t = b.thread(1, "main");
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        // Bucket 0 (0..50 ns): 25 ns of CPU; bucket 1: none.
        b.push_sample(s, t, 10, 25);
        let session = b.finish();
        let data = TimelineData::compute(&session, &Filter::all(), 0, 100, 2, 10, None, None, &[]);
        assert_eq!(data.height, [0.5, 0.0]);
        // Buckets shorter than a sample: with a known interval, a bar is full at most; without
        // one, bars are shares of the heaviest.
        let data = TimelineData::compute(&session, &Filter::all(), 0, 100, 10, 10, None, None, &[]);
        assert_eq!(data.height[1], 1.0);
        let data = TimelineData::compute(&session, &Filter::all(), 0, 100, 20, 0, None, None, &[]);
        assert_eq!(data.height[2], 1.0);
        assert_eq!(data.height.iter().filter(|&&h| h > 0.0).count(), 1);
        assert_eq!(data.hottest[1], NONE);
        assert_eq!(data.labels, ["main [1]"]);
    }

    #[test]
    fn the_stack_chart_and_the_timeline_put_the_threads_in_one_order() {
        use prof_session::aggregate::thread_totals;
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        for (tid, weight) in [(1, 1), (2, 5), (3, 3)] {
            let t = b.thread(tid, &format!("t{tid}"));
            b.push_sample(s, t, tid, weight);
        }
        let session = b.finish();
        let order = track_order(&session, &thread_totals(&session));
        let timeline =
            TimelineData::compute(&session, &Filter::all(), 0, 10, 2, 0, None, None, &order);
        let chart =
            StackChartLayout::compute(&session, &Filter::all(), None, 0, 10, 100.0, None, &order);
        assert_eq!(timeline.threads, [1, 2, 0]);
        assert_eq!(chart.threads, timeline.threads);
        assert_eq!(chart.labels, timeline.labels);
        // Each box is on its thread's track.
        for (k, &track) in chart.track.iter().enumerate() {
            assert_eq!(chart.boxes[k].thread.0, chart.threads[track as usize]);
        }
    }
}
