//! The JSON shapes the page reads: metadata, threads, top-N rows, a node's details, zoom path.

use crate::json_out::{JsonOut, ToJson};
use prof_session::aggregate::{
    format_location, format_losses, format_percent, format_weight, thousands, CallTree, NodeId,
    ThreadTotal, TopRow, TASK_WAIT_TYPE,
};
use prof_session::session::{rfc3339_utc, Frame, SampleType, Session, StrId, Unit};

/// The header's facts, as numbers and as the texts the page shows (formatted by `prof`'s
/// core, like every string the page shows).
pub struct Meta<'a> {
    pub program: &'a str,
    pub start_time: String,
    pub duration_ns: u64,
    pub samples: u64,
    pub dropped: u64,
    pub timer: &'a str,
    pub mode: &'a str,
    pub unit: &'a str,
    pub total_weight: u64,
    /// `2026-11-22 10:00:00`, or `unknown`.
    pub date_text: String,
    /// `1.30 s`, or `unknown` when the file records none (a Go heap profile, folded stacks).
    pub duration_text: String,
    /// False when the samples carry no times (pprof, folded stacks): the page then draws no
    /// timeline, and shows `untimed_text` in its place.
    pub timed: bool,
    /// What the page shows instead of a timeline and a stack chart for a session without
    /// sample times.
    pub untimed_text: &'static str,
    /// `1,234`.
    pub samples_text: String,
    /// What `samples_text` counts, as the header names it: `Samples`, or `Waits` when the
    /// session shows its tasks' waits (a wait is one of its samples).
    pub count_label: &'static str,
    /// `0`.
    pub dropped_text: String,
    /// `1000 Hz`, or `unknown`.
    pub rate_text: String,
    /// What the weights measure: `cpu (nanoseconds)`.
    pub type_text: String,
}

/// What the page says instead of a timeline (and a stack chart) when the samples carry no
/// times.
pub const UNTIMED_TEXT: &str =
    "No timeline and no stack chart: this profile does not record when each sample was taken.";

impl<'a> Meta<'a> {
    pub fn of(session: &'a Session) -> Self {
        let meta = &session.meta;
        let time = SampleType::new("time", Unit::Nanoseconds);
        let start_time = meta.start_time_ns.map(rfc3339_utc).unwrap_or_default();
        let date_text = match start_time.split_once('T') {
            Some((day, clock)) => {
                let clock = clock.trim_end_matches('Z');
                let clock = clock.split_once('.').map_or(clock, |(whole, _)| whole);
                format!("{day} {clock}")
            }
            None => "unknown".to_owned(),
        };
        Meta {
            program: &meta.program,
            start_time,
            duration_ns: meta.duration_ns,
            samples: session.sample_count(),
            dropped: meta.dropped_samples,
            timer: &meta.timer,
            mode: meta.mode.name(),
            unit: meta.sample_type.unit.name(),
            total_weight: session.total_weight(),
            date_text,
            duration_text: match meta.duration_ns {
                0 => "unknown".to_owned(),
                ns => format_weight(&time, ns),
            },
            timed: session.has_sample_times(),
            untimed_text: UNTIMED_TEXT,
            samples_text: thousands(session.sample_count()),
            count_label: if shows_waits(session) {
                "Waits"
            } else {
                "Samples"
            },
            dropped_text: format_losses(meta, session.sample_count())
                .unwrap_or_else(|| "0".to_owned()),
            rate_text: match meta.achieved_interval_ns {
                0 => "unknown".to_owned(),
                ns => format!("{} Hz", thousands((1e9 / ns as f64).round() as u64)),
            },
            type_text: format!(
                "{} ({})",
                meta.sample_type.name,
                meta.sample_type.unit.name()
            ),
        }
    }
}

/// `1 sample`, `1,234 samples`.
/// `1 sample`, `1,234 samples`; `1,234 waits` when `session` shows its tasks' waits.
fn samples_text(session: &Session, n: u64) -> String {
    let noun = if shows_waits(session) {
        "wait"
    } else {
        "sample"
    };
    format!("{} {noun}{}", thousands(n), if n == 1 { "" } else { "s" })
}

/// Whether `session`'s samples are its tasks' waits (`prof_session::aggregate::task_waits`).
fn shows_waits(session: &Session) -> bool {
    session.meta.sample_type.name == TASK_WAIT_TYPE
}

/// The thread selector's first entry: `All threads (4): 1,234 samples`.
pub fn all_threads_label(session: &Session) -> String {
    threads_label(session, &[], None, None)
}

/// What the thread selector says is shown: every thread (`None`), or `2 of 4 threads: 1,234
/// samples`; `totals` are the session's [`thread_totals`]. When a time range or a thread state
/// narrows the samples further, `narrowed` is how many are left, and the label says how many of
/// the threads' samples that is: `All threads (4): 203 of 1,234 samples`.
pub fn threads_label(
    session: &Session,
    totals: &[ThreadTotal],
    shown: Option<&[u32]>,
    narrowed: Option<u64>,
) -> String {
    let samples: u64 = match shown {
        None => session.sample_count(),
        Some(shown) => totals
            .iter()
            .filter(|t| shown.contains(&t.thread.0))
            .map(|t| t.samples)
            .sum(),
    };
    let count = match narrowed {
        Some(n) => format!("{} of {}", thousands(n), samples_text(session, samples)),
        None => samples_text(session, samples),
    };
    match shown {
        None => format!("All threads ({}): {count}", session.threads.len()),
        Some(shown) => format!(
            "{} of {} threads: {count}",
            shown.len(),
            session.threads.len()
        ),
    }
}

/// A process of the thread selector and the timeline, with its threads.
pub struct ProcessEntry {
    /// `spin [4242]`.
    pub label: String,
    /// Its threads' indices, in the order given.
    pub threads: Vec<u32>,
}

/// The threads of `order` grouped by process ([`group_by_process`]); empty when they are all
/// of one process.
pub fn process_groups(
    session: &Session,
    order: &[prof_session::session::ThreadIdx],
) -> Vec<ProcessEntry> {
    let groups = prof_session::aggregate::group_by_process(session, order);
    if groups.len() < 2 {
        return Vec::new();
    }
    let table = session.process_table();
    groups
        .into_iter()
        .map(|g| ProcessEntry {
            label: prof_session::aggregate::process_label(&table[g.process.index()]),
            threads: g.threads.iter().map(|t| t.0).collect(),
        })
        .collect()
}

/// One entry of the thread selector, with the thread's share of the samples.
pub struct ThreadEntry<'a> {
    pub index: usize,
    pub tid: u64,
    pub name: &'a str,
    /// Samples taken on the thread.
    pub samples: u64,
    /// Their summed weight.
    pub weight: u64,
    /// `samples` as a percentage of all samples, formatted as `prof report` formats shares.
    pub samples_pct: String,
    /// The selector's text: `worker [101]: 1,234 samples (12.3%)`.
    pub label: String,
}

impl<'a> ThreadEntry<'a> {
    /// Every thread of `session`, in its order, with its samples counted by `prof`'s core
    /// (`totals`: the session's [`thread_totals`]).
    pub fn all(session: &'a Session, totals: &[ThreadTotal]) -> Vec<Self> {
        let all_samples = totals.iter().map(|t| t.samples).sum();
        totals
            .iter()
            .map(|total| {
                let thread = &session.threads[total.thread.index()];
                let name = session.str(thread.name);
                let samples_pct = format_percent(total.samples, all_samples);
                let label = format!(
                    "{}[{}]: {} ({samples_pct})",
                    if name.is_empty() {
                        String::new()
                    } else {
                        format!("{name} ")
                    },
                    thread.tid,
                    samples_text(session, total.samples)
                );
                ThreadEntry {
                    index: total.thread.index(),
                    tid: thread.tid,
                    name,
                    samples: total.samples,
                    weight: total.weight,
                    samples_pct,
                    label,
                }
            })
            .collect()
    }
}

/// A self and a total weight with the texts every row and tooltip shows of them, formatted
/// exactly as `prof report` prints them.
pub struct Weights {
    /// The weight of the samples that end here.
    pub self_weight: u64,
    /// The weight of the samples that pass through here.
    pub total: u64,
    /// `self_weight` formatted: `1.20 s`.
    pub self_text: String,
    /// `self_weight` as a share of the whole: `12.3%`.
    pub self_pct: String,
    /// `total` formatted.
    pub total_text: String,
    /// `total` as a share of the whole.
    pub total_pct: String,
    /// The whole the shares are of.
    pub whole: u64,
}

impl Weights {
    /// `self_weight` and `total` of `sample_type`, with their shares of `whole`.
    pub fn of(sample_type: &SampleType, self_weight: u64, total: u64, whole: u64) -> Self {
        Weights {
            self_weight,
            total,
            self_text: format_weight(sample_type, self_weight),
            self_pct: format_percent(self_weight, whole),
            total_text: format_weight(sample_type, total),
            total_pct: format_percent(total, whole),
            whole,
        }
    }

    /// Writes them into the object being written, under the keys the page reads: `self`,
    /// `total`, `selfText`, `selfPct`, `totalText`, `totalPct`.
    pub fn write_keys(&self, w: &mut JsonOut) {
        w.key("self").u64(self.self_weight);
        w.key("total").u64(self.total);
        w.key("selfText").string(&self.self_text);
        w.key("selfPct").string(&self.self_pct);
        w.key("totalText").string(&self.total_text);
        w.key("totalPct").string(&self.total_pct);
    }

    /// Writes their fractions of the whole (0 when it is): `selfFraction`, `totalFraction`.
    fn write_fractions(&self, w: &mut JsonOut) {
        let fraction = |weight: u64| match self.whole {
            0 => 0.0,
            whole => weight as f64 / whole as f64,
        };
        w.key("selfFraction").f64(fraction(self.self_weight));
        w.key("totalFraction").f64(fraction(self.total));
    }
}

/// A self and a total number of samples (the core's counts: each sample row's multiplicity,
/// what `prof report --type samples` sums) with their texts (`1,234`).
pub struct Counts {
    pub self_count: u64,
    pub total_count: u64,
}

impl Counts {
    /// Writes them into the object being written as texts, under `selfCount` and `totalCount`.
    pub fn write_keys(&self, w: &mut JsonOut) {
        w.key("selfCount").string(&thousands(self.self_count));
        w.key("totalCount").string(&thousands(self.total_count));
    }
}

/// One row of the top-N table.
pub struct TopEntry<'a> {
    pub func: u32,
    pub name: &'a str,
    pub weights: Weights,
    pub counts: Counts,
    /// The module of the function's code ([`FunctionModules`]), when known and asked for.
    pub module: Option<&'a str>,
    /// Its exact calls, formatted, when `prof record --calls` counted it.
    pub calls: Option<String>,
}

impl<'a> TopEntry<'a> {
    pub fn of(session: &Session, row: &'a TopRow, whole: u64) -> Self {
        let sample_type = &session.meta.sample_type;
        TopEntry {
            func: row.func.0,
            name: &row.name,
            weights: Weights::of(sample_type, row.self_weight, row.total_weight, whole),
            counts: Counts {
                self_count: row.self_count,
                total_count: row.total_count,
            },
            module: None,
            calls: None,
        }
    }
}

/// The module of each function (by name): that of the first frame of the function whose
/// module the session knows ([`module_name`]). A function's frames nearly always share one
/// module; a name found in several (two libraries' `init`) shows the first.
pub struct FunctionModules<'a> {
    /// Indexed by the function's string id.
    modules: Vec<Option<&'a str>>,
}

impl<'a> FunctionModules<'a> {
    pub fn of(session: &'a Session) -> Self {
        let mut modules = vec![None; session.strings.len()];
        for frame in (0..session.frames.len()).map(|i| session.frames.at(i)) {
            if let Some(slot @ None) = modules.get_mut(frame.name.index()) {
                *slot = module_name(session, frame);
            }
        }
        FunctionModules { modules }
    }

    /// The module of function `func`, when known.
    pub fn get(&self, func: StrId) -> Option<&'a str> {
        self.modules.get(func.index()).copied().flatten()
    }
}

/// The file name of the module (binary or shared library) `frame`'s code lives in, as the
/// hovers show it (`liblzma.so.5` of `/usr/lib/x86_64-linux-gnu/liblzma.so.5`; `[kernel]` as
/// it is); `None` when the session does not know the module.
pub fn module_name(session: &Session, frame: Frame) -> Option<&str> {
    let path = session.str(frame.module?);
    let name = path.rsplit('/').next().unwrap_or(path);
    Some(if name.is_empty() { path } else { name })
}

/// What the tooltip shows about one node.
pub struct NodeInfo<'a> {
    pub name: &'a str,
    pub location: Option<String>,
    /// The module of the node's frame ([`module_name`]), when known.
    pub module: Option<&'a str>,
    pub weights: Weights,
}

impl<'a> NodeInfo<'a> {
    pub fn of(session: &'a Session, tree: &CallTree, node: NodeId) -> Self {
        let whole = tree.total_weight(tree.root());
        let frame = tree.frame(node).map(|id| session.frame(id));
        let location = frame.and_then(|f| format_location(session, f));
        let (own, total) = (tree.self_weight(node), tree.total_weight(node));
        NodeInfo {
            name: root_or_name(session, tree, node),
            location,
            module: frame.and_then(|f| module_name(session, f)),
            weights: Weights::of(&session.meta.sample_type, own, total, whole),
        }
    }
}

/// One step of the zoom path.
pub struct Crumb<'a> {
    pub node: u32,
    pub name: &'a str,
}

/// The nodes from the root down to `node`.
pub fn crumbs<'a>(session: &'a Session, tree: &CallTree, node: NodeId) -> Vec<Crumb<'a>> {
    let mut path = Vec::new();
    let mut at = Some(node);
    while let Some(n) = at {
        path.push(Crumb {
            node: n.0,
            name: root_or_name(session, tree, n),
        });
        at = tree.parent(n);
    }
    path.reverse();
    path
}

fn root_or_name<'a>(session: &'a Session, tree: &CallTree, node: NodeId) -> &'a str {
    if node == tree.root() {
        "all"
    } else {
        tree.name(session, node)
    }
}

impl ToJson for Meta<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("program").string(self.program);
        w.key("startTime").string(&self.start_time);
        w.key("durationNs").u64(self.duration_ns);
        w.key("samples").u64(self.samples);
        w.key("dropped").u64(self.dropped);
        w.key("timer").string(self.timer);
        w.key("mode").string(self.mode);
        w.key("unit").string(self.unit);
        w.key("totalWeight").u64(self.total_weight);
        w.key("dateText").string(&self.date_text);
        w.key("durationText").string(&self.duration_text);
        w.key("timed").bool(self.timed);
        w.key("untimedText").string(self.untimed_text);
        w.key("samplesText").string(&self.samples_text);
        w.key("countLabel").string(self.count_label);
        w.key("droppedText").string(&self.dropped_text);
        w.key("rateText").string(&self.rate_text);
        w.key("typeText").string(&self.type_text);
        w.end_object();
    }
}

impl ToJson for ProcessEntry {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("label").string(&self.label);
        w.key("threads")
            .u64s(self.threads.iter().map(|&t| u64::from(t)));
        w.end_object();
    }
}

impl ToJson for ThreadEntry<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("index").u64(self.index as u64);
        w.key("tid").u64(self.tid);
        w.key("name").string(self.name);
        w.key("samples").u64(self.samples);
        w.key("weight").u64(self.weight);
        w.key("samplesPct").string(&self.samples_pct);
        w.key("label").string(&self.label);
        w.end_object();
    }
}

impl ToJson for TopEntry<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("func").u64(u64::from(self.func));
        w.key("name").string(self.name);
        self.weights.write_keys(w);
        self.weights.write_fractions(w);
        self.counts.write_keys(w);
        w.key("module").opt_string(self.module);
        if let Some(calls) = &self.calls {
            w.key("calls").string(calls);
        }
        w.end_object();
    }
}

impl ToJson for NodeInfo<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("name").string(self.name);
        w.key("location").opt_string(self.location.as_deref());
        w.key("module").opt_string(self.module);
        self.weights.write_keys(w);
        self.weights.write_fractions(w);
        w.end_object();
    }
}

impl ToJson for Crumb<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("node").u64(u64::from(self.node));
        w.key("name").string(self.name);
        w.end_object();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::aggregate::thread_totals;
    use prof_session::session::{FrameSpec, Metadata, SessionBuilder};

    fn session(duration_ns: u64, time: u64) -> Session {
        let mut b = SessionBuilder::new(Metadata {
            duration_ns,
            ..Metadata::default()
        });
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_sample(s, t, time, 10);
        b.finish()
    }

    /// A Go heap profile (no duration, no sample times) read `Duration 0 ns` and was
    /// drawn as one spike at 0.
    #[test]
    fn no_duration_reads_unknown_and_no_times_mean_no_timeline() {
        let untimed = session(0, 0);
        let meta = Meta::of(&untimed);
        assert_eq!(meta.duration_text, "unknown");
        assert!(!meta.timed);
        assert_eq!(meta.untimed_text, UNTIMED_TEXT);
        let timed = session(2_000_000, 1_000_000);
        let meta = Meta::of(&timed);
        assert_eq!(meta.duration_text, "2.00 ms");
        assert!(meta.timed);
    }

    /// The header and the thread selector said `Samples` and `N samples` while the tasks'
    /// waits were shown, each of which is one wait.
    #[test]
    fn the_tasks_waits_are_counted_as_waits_and_samples_as_samples() {
        let samples = session(1_000, 0);
        let totals = thread_totals(&samples);
        assert_eq!(Meta::of(&samples).count_label, "Samples");
        assert_eq!(all_threads_label(&samples), "All threads (1): 1 sample");
        assert_eq!(
            ThreadEntry::all(&samples, &totals)[0].label,
            "main [1]: 1 sample (100.0%)"
        );
        let mut b = SessionBuilder::new(Metadata {
            sample_type: SampleType::new(TASK_WAIT_TYPE, Unit::Nanoseconds),
            ..Metadata::default()
        });
        let f = b.intern_frame(&FrameSpec::named("Sleep::poll"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(7, "io");
        b.push_sample(s, t, 0, 10);
        b.push_sample(s, t, 5, 20);
        let waits = b.finish();
        let totals = thread_totals(&waits);
        let meta = Meta::of(&waits);
        assert_eq!(
            (meta.count_label, meta.samples_text.as_str()),
            ("Waits", "2")
        );
        assert_eq!(all_threads_label(&waits), "All threads (1): 2 waits");
        assert_eq!(
            threads_label(&waits, &totals, Some(&[0]), Some(1)),
            "1 of 1 threads: 1 of 2 waits"
        );
        assert_eq!(
            ThreadEntry::all(&waits, &totals)[0].label,
            "io [7]: 2 waits (100.0%)"
        );
        let json: serde_json::Value = serde_json::from_str(&meta.to_json()).unwrap();
        assert_eq!(json["countLabel"], "Waits");
    }

    /// The hover of a frame names its module by file name, and says nothing of one the session
    /// does not know.
    #[test]
    fn a_nodes_hover_names_its_module_by_file_name() {
        let mut b = SessionBuilder::default();
        let inner = b.intern_frame(&FrameSpec {
            module: Some("/usr/lib/x86_64-linux-gnu/liblzma.so.5"),
            ..FrameSpec::named("lzma_code")
        });
        let outer = b.intern_frame(&FrameSpec::named("main"));
        let stack = b.intern_stack_path(&[outer, inner]).unwrap();
        let t = b.thread(1, "main");
        b.push_sample(stack, t, 1, 1);
        let session = b.finish();
        let tree = CallTree::new(&session, &prof_session::aggregate::Filter::all());
        let main = tree.children(tree.root())[0];
        let lzma = tree.children(main)[0];
        let hover = |node| -> serde_json::Value {
            serde_json::from_str(&NodeInfo::of(&session, &tree, node).to_json()).unwrap()
        };
        assert_eq!(hover(lzma)["name"], "lzma_code");
        assert_eq!(hover(lzma)["module"], "liblzma.so.5");
        assert_eq!(hover(main)["module"], serde_json::Value::Null);
        assert_eq!(hover(tree.root())["module"], serde_json::Value::Null);
    }
}
