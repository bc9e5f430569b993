//! [`Profile`]: one loaded session and the current call tree, as the page sees it.

use crate::json_out::{JsonOut, ToJson};
use crate::layout::FlameLayout;
use crate::view::{
    all_threads_label, crumbs, threads_label, Meta, NodeInfo, ThreadEntry, TopEntry,
};
use prof_session::aggregate::{
    format_percent, format_weight, group_by_scope, group_by_task, shell_words, thread_totals_shown,
    CallTree, Filter, NodeId, ScopeCalls, SortBy, StackWeights, ThreadTotal, TransformSpec,
    TransformedStacks,
};
use prof_session::aggregate::{task_waits, TASK_WAIT_TYPE};
use prof_session::json::{Json, Step as JsonStep};
use prof_session::session::{SampleState, SampleType, Session, ThreadIdx, Unit};
use wasm_bindgen::prelude::*;

/// A session loaded in the page, with the call tree of the selected threads.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Profile {
    pub(crate) session: Session,
    /// The call tree of the samples the view selects.
    pub(crate) tree: CallTree,
    /// The session's stacks rewritten by the view's transforms: computed again only when the
    /// transforms change, shared by the call tree, the timeline and the stack chart.
    pub(crate) transformed: TransformedStacks,
    /// What selects the samples.
    pub(crate) view: ViewSpec,
    /// The weight per stack of the samples `view` selects: kept so that a change of transforms
    /// alone skips the pass over the samples.
    pub(crate) weights: StackWeights,
    /// Functions to highlight in layouts (one byte per function id), if any.
    pub(crate) highlight: Option<Vec<u8>>,
    /// Each thread's stack weights over the whole session, when cached (few threads): a thread
    /// change then sums these instead of passing over every sample.
    pub(crate) thread_weights: Option<Vec<StackWeights>>,
    /// Each thread's samples and weight (one pass over the samples, made once).
    pub(crate) thread_totals: Vec<ThreadTotal>,
    /// Each thread's samples and weight after the view's range, state, scope, task and
    /// transforms (what every view shows of it), when any of those narrows the samples; `None`
    /// when none does (`thread_totals` then).
    pub(crate) shown_totals: Option<Vec<ThreadTotal>>,
    /// The names of the session's sample types as the file lists them, its default first:
    /// the sample type selector's entries, whichever is shown.
    pub(crate) sample_types: Vec<String>,
    /// Whether the samples are in time order: a time range is then one run of them.
    pub(crate) time_sorted: bool,
    /// The session as loaded while `session` shows it grouped (by task, each task's name as a
    /// root frame, `prof_session::aggregate::group_by_task`; or by scope, `group_by_scope`); `None`
    /// when it is not grouped.
    pub(crate) ungrouped: Option<Box<Session>>,
    /// What `session` is grouped by, if it is.
    pub(crate) grouping: Option<Grouping>,
    /// The session as loaded while `session` shows its tasks' waits instead of its samples
    /// (the sample type [`TASK_WAIT_TYPE`], `prof_session::aggregate::task_waits`: `prof report
    /// --waits`), grouped or not; `None` when the samples are shown.
    pub(crate) unwaited: Option<Box<Session>>,
    /// Grouped by scope: the calls of each path of scopes among the spans the view keeps, for
    /// the call tree's Calls column.
    pub(crate) scope_calls: Option<ScopeCalls>,
    /// The session's spans, marks and polls indexed for the scope bars, built on first use.
    pub(crate) scope_index: std::cell::OnceCell<prof_session::aggregate::ScopeIndex>,
}

/// What selects the samples every view shows, as the page's state says it (JSON, read by
/// [`ViewSpec::read`]: every field optional, `null` as absent, no other field).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ViewSpec {
    /// Thread indices, `None` for all threads.
    pub threads: Option<Vec<u32>>,
    /// Only samples with `from <= time_ns < to`, `None` for the whole session.
    pub range: Option<(u64, u64)>,
    /// The transform stack, applied in order (those that do not resolve are skipped).
    pub transforms: Vec<TransformSpec>,
    /// The sample type shown, by name (`type`); `None` for the file's default.
    pub sample_type: Option<String>,
    /// Only samples whose thread was running, or waiting; `None` for both.
    pub state: Option<SampleState>,
    /// Only samples taken inside a scope of this name (or a scope within one); `None` for all.
    pub scope: Option<String>,
    /// Only samples taken while a task of this name was polled; `None` for all.
    pub task: Option<String>,
    /// `task` to put each task's name above its stacks (as `prof report --group-by task`),
    /// `scope` to put each sample's open scopes there (`--group-by scope`); `None` for the
    /// stacks as recorded (`groupBy`).
    pub group_by: Option<String>,
}

impl ViewSpec {
    /// Reads the page's JSON form with `prof`'s JSON reader (serde_json's deserializer would
    /// add its instances to the module).
    pub(crate) fn read(text: &str) -> Result<ViewSpec, String> {
        Json::parse(text.as_bytes(), |json| {
            let mut view = ViewSpec::default();
            json.object("struct ViewSpec")?;
            let mut first = true;
            let mut seen = Vec::new();
            while let Some(key) = json.key(&mut first)? {
                if seen.contains(&key) {
                    return Err(json.duplicate(&key));
                }
                let null = json.null()?;
                let string = |json: &mut Json<'_>| -> JsonStep<Option<String>> {
                    match null {
                        true => Ok(None),
                        false => json.string().map(|s| Some(s.into_owned())),
                    }
                };
                match &*key {
                    "threads" if !null => {
                        let mut threads = Vec::new();
                        json.array("a sequence")?;
                        let mut first = true;
                        while json.item(&mut first)? {
                            threads.push(json.u32()?);
                        }
                        view.threads = Some(threads);
                    }
                    "range" if !null => {
                        json.array("a tuple of size 2")?;
                        let mut first = true;
                        let mut bounds = [0; 2];
                        for bound in &mut bounds {
                            if !json.item(&mut first)? {
                                return Err(
                                    json.error("invalid length, expected a tuple of size 2")
                                );
                            }
                            *bound = json.u64()?;
                        }
                        if json.item(&mut first)? {
                            return Err(json.error("trailing characters"));
                        }
                        view.range = Some((bounds[0], bounds[1]));
                    }
                    "transforms" if null => {
                        return Err(json.error("invalid type: null, expected a sequence"))
                    }
                    "transforms" => {
                        json.array("a sequence")?;
                        let mut first = true;
                        while json.item(&mut first)? {
                            view.transforms.push(TransformSpec::read_json(json)?);
                        }
                    }
                    "type" => view.sample_type = string(json)?,
                    "state" if !null => {
                        view.state = Some(match &*json.string()? {
                            "running" => SampleState::Running,
                            "waiting" => SampleState::Waiting,
                            other => {
                                return Err(json.error(format_args!(
                                    "unknown variant `{other}`, expected `running` or `waiting`"
                                )))
                            }
                        })
                    }
                    "scope" => view.scope = string(json)?,
                    "task" => view.task = string(json)?,
                    "groupBy" => view.group_by = string(json)?,
                    "threads" | "range" | "state" => {}
                    other => {
                        return Err(json.unknown(
                            other,
                            &[
                                "threads",
                                "range",
                                "transforms",
                                "type",
                                "state",
                                "scope",
                                "task",
                                "groupBy",
                            ],
                        ))
                    }
                }
                seen.push(key);
            }
            Ok(view)
        })
    }

    /// The core's filter for the timeline, which shows every thread over the whole session
    /// (the threads and range chosen only dim and shade it): this view's filter but those.
    pub(crate) fn timeline_filter(&self, session: &Session) -> Result<Filter, String> {
        ViewSpec {
            threads: None,
            range: None,
            ..self.clone()
        }
        .filter(session)
    }

    /// The core's filter for this view, checked against `session`.
    pub(crate) fn filter(&self, session: &Session) -> Result<Filter, String> {
        let mut filter = Filter::all();
        if let Some(threads) = &self.threads {
            if let Some(i) = threads
                .iter()
                .find(|&&i| i as usize >= session.threads.len())
            {
                return Err(format!("no thread {i}"));
            }
            filter = filter.threads(threads.iter().copied().map(ThreadIdx));
        }
        if let Some((from, to)) = self.range {
            filter = filter.time_range(from, to);
        }
        if let Some(state) = self.state {
            filter = filter.state(state);
        }
        if let Some(name) = &self.scope {
            filter = filter.scope(name.clone());
        }
        if let Some(name) = &self.task {
            filter = filter.task(name.clone());
        }
        Ok(filter)
    }
}

/// What frames a grouped session puts above its stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grouping {
    /// Each sample's task (`task:NAME`).
    Task,
    /// Each sample's open scopes (`scope:NAME`, outermost first).
    Scope,
}

impl Grouping {
    /// The grouping the page's state names (`"task"`, `"scope"`), `None` for none.
    fn named(name: Option<&str>) -> Result<Option<Self>, JsError> {
        match name {
            None => Ok(None),
            Some("task") => Ok(Some(Grouping::Task)),
            Some("scope") => Ok(Some(Grouping::Scope)),
            Some(other) => Err(JsError::new(&format!("cannot group by {other:?}"))),
        }
    }
}

/// `base` grouped by `grouping`, and `base` itself when it is (to ungroup).
fn grouped(base: Session, grouping: Option<Grouping>) -> (Session, Option<Box<Session>>) {
    match grouping {
        None => (base, None),
        Some(Grouping::Task) => (group_by_task(&base), Some(Box::new(base))),
        Some(Grouping::Scope) => (group_by_scope(&base), Some(Box::new(base))),
    }
}

/// What a search matched.
#[wasm_bindgen]
#[derive(Debug)]
pub struct SearchResult {
    mask: Vec<u8>,
    weight: u64,
    fraction: f64,
    text: String,
}

/// The function names of a JSON array (a path the page kept), or the error saying why not.
pub(crate) fn names(names_json: &str) -> Result<Vec<String>, JsError> {
    Json::parse(names_json.as_bytes(), Json::strings)
        .map_err(|e| JsError::new(&format!("not a list of names: {e}")))
}

impl Profile {
    /// Shows sample type `name`: the session's weights become that type's, and everything
    /// computed from them is computed again (the view is reset to all samples). The type
    /// [`TASK_WAIT_TYPE`] shows the tasks' waits in place of the samples.
    fn select_sample_type(&mut self, name: &str) -> Result<(), JsError> {
        if name == TASK_WAIT_TYPE || self.unwaited.is_some() {
            return self.select_waits_or(name);
        }
        let mut session = std::mem::take(&mut self.session);
        let failed = session
            .select_sample_type(name)
            .err()
            .map(|e| e.to_string());
        let ungrouped = self.ungrouped.take().map(|mut original| {
            // Its own type follows, so that ungrouping shows the same one.
            let _ = original.select_sample_type(name);
            original
        });
        self.show(session, ungrouped, self.grouping, None);
        failed.map_or(Ok(()), |message| Err(JsError::new(&message)))
    }

    /// [`Profile::select_sample_type`] to or from the waits: the session as loaded becomes
    /// its tasks' waits (`name` is [`TASK_WAIT_TYPE`]) or its samples weighed in type `name`,
    /// then grouped as it was.
    fn select_waits_or(&mut self, name: &str) -> Result<(), JsError> {
        let shown = std::mem::take(&mut self.session);
        let ungrouped = self.ungrouped.take().map(|s| *s);
        let mut loaded = match self.unwaited.take() {
            Some(loaded) => *loaded,
            None => ungrouped.unwrap_or(shown),
        };
        let (base, unwaited, failed) = if name == TASK_WAIT_TYPE {
            match task_waits(&loaded) {
                Some(waits) => (waits, Some(Box::new(loaded)), None),
                None => {
                    let message = format!(
                        "no task in this profile says where it waited: no {TASK_WAIT_TYPE} to show"
                    );
                    (loaded, None, Some(message))
                }
            }
        } else {
            let failed = loaded.select_sample_type(name).err().map(|e| e.to_string());
            (loaded, None, failed)
        };
        let (shown, ungrouped) = grouped(base, self.grouping);
        self.show(shown, ungrouped, self.grouping, unwaited);
        failed.map_or(Ok(()), |message| Err(JsError::new(&message)))
    }

    /// Shows the session grouped by task (each task's name as a root frame), by scope (each
    /// sample's open scopes above its stack) or as loaded: everything computed from it is
    /// computed again (the view is reset to all samples), the sample type and highlight kept.
    fn group(&mut self, grouping: Option<Grouping>) {
        let session = std::mem::take(&mut self.session);
        let original = self.ungrouped.take().map_or(session, |o| *o);
        let (shown, ungrouped) = grouped(original, grouping);
        let unwaited = self.unwaited.take();
        self.show(shown, ungrouped, grouping, unwaited);
    }

    /// Shows `shown`, everything computed from it computed again (the view reset to all
    /// samples), with the highlight and the sample type selector's entries kept.
    fn show(
        &mut self,
        shown: Session,
        ungrouped: Option<Box<Session>>,
        grouping: Option<Grouping>,
        unwaited: Option<Box<Session>>,
    ) {
        let highlight = self.highlight.take();
        let types = std::mem::take(&mut self.sample_types);
        *self = Profile::of(shown);
        self.highlight = highlight;
        self.sample_types = types;
        self.ungrouped = ungrouped;
        self.grouping = grouping;
        self.unwaited = unwaited;
    }

    fn node(&self, node: u32) -> Result<NodeId, JsError> {
        let id = NodeId(node);
        if id.index() < self.tree.len() {
            Ok(id)
        } else {
            Err(JsError::new(&format!("no call tree node {node}")))
        }
    }
}

#[wasm_bindgen]
impl Profile {
    /// The thread selector's entry for all threads merged: `All threads (4): 1,234 samples`.
    #[wasm_bindgen(js_name = allThreadsLabel)]
    pub fn all_threads_label(&self) -> String {
        all_threads_label(&self.session)
    }

    /// What the thread selector says is shown: all threads, or `2 of 4 threads: 1,234 samples`;
    /// with a time range, a thread state, a scope, a task or transforms, how many of those
    /// samples every view shows after all of them (`203 of 1,234 samples`).
    #[wasm_bindgen(js_name = threadsLabel)]
    pub fn threads_label(&self) -> String {
        let narrowed = (self.view.range.is_some()
            || self.view.state.is_some()
            || self.view.scope.is_some()
            || self.view.task.is_some()
            || self.transformed.is_transformed())
        .then(|| self.tree.total_count(self.tree.root()));
        threads_label(
            &self.session,
            &self.thread_totals,
            self.view.threads.as_deref(),
            narrowed,
        )
    }

    /// A chip for each filter that narrows the samples every view shows, as JSON `[{filter,
    /// text}]`: `filter` is `threads`, `range`, `state`, `scope` or `task` (what its removal
    /// clears), `text` what the chip says (`2 of 4 threads`, `Range 1.20 s – 2.45 s (1.25 s)`,
    /// `Only waiting time`, `Only inside scope parse`, `Only task fetch`). The transforms have
    /// chips of their own.
    #[wasm_bindgen(js_name = filterChipsJson)]
    pub fn filter_chips_json(&self) -> String {
        let mut w = JsonOut::new();
        w.begin_array();
        let mut chip = |filter: &str, text: &str| {
            w.begin_object();
            w.key("filter").string(filter);
            w.key("text").string(text);
            w.end_object();
        };
        if let Some(threads) = &self.view.threads {
            let text = format!(
                "{} of {} threads",
                threads.len(),
                self.session.threads.len()
            );
            chip("threads", &text);
        }
        if let Some((from, to)) = self.view.range {
            chip(
                "range",
                &format!("Range {}", crate::time::range_text(from, to)),
            );
        }
        if let Some(state) = self.view.state {
            chip("state", &format!("Only {} time", state.name()));
        }
        if let Some(scope) = &self.view.scope {
            chip("scope", &format!("Only inside scope {scope}"));
        }
        if let Some(task) = &self.view.task {
            chip("task", &format!("Only task {task}"));
        }
        w.end_array();
        w.finish()
    }

    /// The `prof report` command that selects the samples this view shows (its threads by
    /// id, time range, thread state, scope and task: `prof report FILE --tid 4243,4244 --from
    /// 0.5 --to 1.25`), so that every view can be checked against the command line; empty
    /// when the view shows every sample.
    #[wasm_bindgen(js_name = reportCommand)]
    pub fn report_command(&self) -> String {
        let options = match self.view.filter(&self.session) {
            Ok(filter) => filter.report_options(&self.session),
            Err(_) => Vec::new(),
        };
        if options.is_empty() {
            return String::new();
        }
        format!("prof report FILE {}", shell_words(&options))
    }

    /// `weight` as the core formats it in this session's unit (`4.70 s`).
    #[wasm_bindgen(js_name = weightText)]
    pub fn weight_text(&self, weight: f64) -> String {
        format_weight(&self.session.meta.sample_type, weight as u64)
    }

    /// `weight` as a share of everything shown (the current threads), `12.3%`.
    #[wasm_bindgen(js_name = shareText)]
    pub fn share_text(&self, weight: f64) -> String {
        format_percent(weight as u64, self.tree.total_weight(self.tree.root()))
    }

    /// Highlights the functions set in `mask` (one byte per function id) in later layouts.
    #[wasm_bindgen(js_name = setHighlight)]
    pub fn set_highlight(&mut self, mask: Vec<u8>) {
        self.highlight = Some(mask);
    }

    /// Highlights nothing in later layouts.
    #[wasm_bindgen(js_name = clearHighlight)]
    pub fn clear_highlight(&mut self) {
        self.highlight = None;
    }

    /// The header's facts, as JSON.
    #[wasm_bindgen(js_name = metaJson)]
    pub fn meta_json(&self) -> String {
        Meta::of(&self.session).to_json()
    }

    /// The session's strings (function ids index it), as a JSON array.
    #[wasm_bindgen(js_name = functionNamesJson)]
    pub fn function_names_json(&self) -> String {
        let mut w = JsonOut::new();
        w.strings(self.session.strings.iter());
        w.finish()
    }

    /// The session's sample types, its default first, as JSON: `[{"name": "cpu", "text":
    /// "cpu (nanoseconds)"}, ...]`.
    #[wasm_bindgen(js_name = sampleTypesJson)]
    pub fn sample_types_json(&self) -> String {
        let waits = SampleType::new(TASK_WAIT_TYPE, Unit::Nanoseconds);
        let mut all = self.session.sample_types();
        all.push(&waits);
        if let Some(loaded) = &self.unwaited {
            all.extend(loaded.sample_types());
        }
        let mut w = JsonOut::new();
        w.begin_array();
        for t in self
            .sample_types
            .iter()
            .filter_map(|name| all.iter().find(|t| &t.name == name))
        {
            w.begin_object();
            w.key("name").string(&t.name);
            w.key("text")
                .string(&format!("{} ({})", t.name, t.unit.name()));
            w.end_object();
        }
        w.end_array();
        w.finish()
    }

    /// Whether the samples say if their thread was running or waiting (wall mode), so the
    /// page offers to show either alone.
    #[wasm_bindgen(js_name = hasStates)]
    pub fn has_states(&self) -> bool {
        !self.session.samples.state.is_empty()
    }

    /// The sampled threads with their sample counts and shares of what every view shows (after
    /// the range, state, scope, task and transforms), as JSON.
    #[wasm_bindgen(js_name = threadsJson)]
    pub fn threads_json(&self) -> String {
        let totals = self.shown_totals.as_deref().unwrap_or(&self.thread_totals);
        ThreadEntry::all(&self.session, totals).to_json()
    }

    /// The processes the thread selector groups the threads under, as JSON `[{label, threads:
    /// [indices]}]` in the threads' order; empty when every thread is of one process (nothing to
    /// group).
    #[wasm_bindgen(js_name = processesJson)]
    pub fn processes_json(&self) -> String {
        let order: Vec<_> = self.thread_totals.iter().map(|t| t.thread).collect();
        crate::view::process_groups(&self.session, &order).to_json()
    }

    /// Selects the samples every view shows: `spec` is JSON `{"threads": [indices] or null,
    /// "range": [from_ns, to_ns] or null, "transforms": [TransformSpec...]}` (absent keys:
    /// everything, untransformed).
    #[wasm_bindgen(js_name = setView)]
    pub fn set_view(&mut self, spec: &str) -> Result<(), JsError> {
        let view = ViewSpec::read(spec).map_err(|e| JsError::new(&format!("bad view: {e}")))?;
        if view == self.view {
            // The tree already is this view's (the page sets the view it loaded with).
            return Ok(());
        }
        let grouping = Grouping::named(view.group_by.as_deref())?;
        if grouping != self.grouping {
            self.group(grouping);
        }
        let wanted = match &view.sample_type {
            Some(name) => name.clone(),
            None => self.sample_types.first().cloned().unwrap_or_default(),
        };
        if wanted != self.session.meta.sample_type.name {
            self.select_sample_type(&wanted)?;
        }
        let filter = view.filter(&self.session).map_err(|e| JsError::new(&e))?;
        if view.transforms != self.view.transforms {
            let (transforms, _) =
                TransformSpec::resolve_those_that_apply(&view.transforms, &self.session);
            self.transformed = TransformedStacks::new(&self.session, &transforms);
        }
        let selects = |v: &ViewSpec| {
            (
                v.threads.clone(),
                v.range,
                v.state,
                v.scope.clone(),
                v.task.clone(),
            )
        };
        // The threads' own figures follow everything but the choice of threads.
        let unthreaded = ViewSpec {
            threads: None,
            ..view.clone()
        };
        let narrows = unthreaded.range.is_some()
            || unthreaded.state.is_some()
            || unthreaded.scope.is_some()
            || unthreaded.task.is_some()
            || self.transformed.is_transformed();
        let narrowed_alike = ViewSpec {
            threads: None,
            ..self.view.clone()
        } == unthreaded;
        if !narrows {
            self.shown_totals = None;
        } else if !narrowed_alike || self.shown_totals.is_none() {
            let filter = unthreaded
                .filter(&self.session)
                .map_err(|e| JsError::new(&e))?;
            self.shown_totals = Some(thread_totals_shown(
                &self.session,
                &filter,
                &self.transformed,
                self.time_sorted,
            ));
        }
        if selects(&view) != selects(&self.view) {
            self.weights = StackWeights::select(
                &self.session,
                &filter,
                self.thread_weights.as_deref(),
                self.time_sorted,
            );
        }
        self.tree = CallTree::build_transformed(&self.session, &self.weights, &self.transformed);
        self.scope_calls = (self.grouping == Some(Grouping::Scope))
            .then(|| ScopeCalls::count(&self.session, &filter));
        self.view = view;
        Ok(())
    }

    /// The node reached from the root by following function names (a JSON array), as far as
    /// they lead: a zoom kept across thread and file changes by names, not node ids.
    #[wasm_bindgen(js_name = nodeByPath)]
    pub fn node_by_path(&self, names_json: &str) -> Result<u32, JsError> {
        let names = names(names_json)?;
        let mut node = self.tree.root();
        for name in &names {
            match self
                .tree
                .children(node)
                .iter()
                .find(|&&c| self.tree.name(&self.session, c) == name)
            {
                Some(&child) => node = child,
                None => break,
            }
        }
        Ok(node.0)
    }

    /// The call tree's root node.
    #[wasm_bindgen(js_name = rootNode)]
    pub fn root_node(&self) -> u32 {
        self.tree.root().0
    }

    /// The flame graph of the subtree at `root` for a canvas `pixels` wide, showing the part
    /// `[from, to)` of the root's width (fractions), siblings heaviest first when `left_heavy`.
    pub fn layout(
        &self,
        root: u32,
        pixels: f64,
        from: f64,
        to: f64,
        left_heavy: bool,
    ) -> Result<FlameLayout, JsError> {
        let view = crate::layout::View::of_page(from, to, left_heavy);
        Ok(FlameLayout::compute(
            &self.tree,
            self.node(root)?,
            pixels,
            self.highlight.as_deref(),
            view,
        ))
    }

    /// The `n` heaviest functions by `sort` (`"self"` or `"total"`), as JSON.
    #[wasm_bindgen(js_name = topJson)]
    pub fn top_json(&self, n: usize, sort: &str) -> String {
        let sort = if sort == "total" {
            SortBy::Total
        } else {
            SortBy::SelfWeight
        };
        let rows = self.tree.top(&self.session, n, sort);
        let whole = self.tree.total_weight(self.tree.root());
        let entries: Vec<TopEntry<'_>> = rows
            .iter()
            .map(|row| TopEntry::of(&self.session, row, whole))
            .collect();
        entries.to_json()
    }

    /// Name, location, self and total of a node, as JSON.
    #[wasm_bindgen(js_name = nodeJson)]
    pub fn node_json(&self, node: u32) -> Result<String, JsError> {
        let node = self.node(node)?;
        Ok(NodeInfo::of(&self.session, &self.tree, node).to_json())
    }

    /// The nodes from the root down to `node`, as JSON.
    #[wasm_bindgen(js_name = pathJson)]
    pub fn path_json(&self, node: u32) -> Result<String, JsError> {
        let node = self.node(node)?;
        Ok(crumbs(&self.session, &self.tree, node).to_json())
    }

    /// The functions whose names match the regular expression `pattern`, and the share of the
    /// weight spent in them. The syntax is `regex`'s without Unicode classes (`regex-lite`, which
    /// keeps the wasm module small).
    pub fn search(&self, pattern: &str) -> Result<SearchResult, JsError> {
        let regex = regex_lite::Regex::new(pattern)
            .map_err(|e| JsError::new(&format!("invalid regex: {e}")))?;
        let matches = self.tree.search(&self.session, |name| regex.is_match(name));
        let mut mask = vec![0u8; self.session.strings.len()];
        for func in &matches.functions {
            mask[func.index()] = 1;
        }
        let whole = self.tree.total_weight(self.tree.root());
        let text = format!(
            "matched {} ({})",
            format_percent(matches.weight, whole),
            format_weight(&self.session.meta.sample_type, matches.weight)
        );
        Ok(SearchResult {
            mask,
            text,
            weight: matches.weight,
            fraction: if whole == 0 {
                0.0
            } else {
                matches.weight as f64 / whole as f64
            },
        })
    }
}

#[wasm_bindgen]
impl SearchResult {
    /// One byte per function id: 1 when it matched.
    pub fn mask(&self) -> Vec<u8> {
        self.mask.clone()
    }

    /// The weight of the samples with a matching function on the stack.
    #[wasm_bindgen(getter, js_name = matchedWeight)]
    pub fn matched_weight(&self) -> f64 {
        self.weight as f64
    }

    /// That weight as a fraction of the total shown.
    #[wasm_bindgen(getter)]
    pub fn fraction(&self) -> f64 {
        self.fraction
    }

    /// What the page says about it: `matched 12.3% (4.70 s)`.
    #[wasm_bindgen(getter)]
    pub fn text(&self) -> String {
        self.text.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_choice_of_a_thread_is_the_filter_of_report_tid() {
        use prof_session::session::{FrameSpec, SessionBuilder};
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        for tid in [41, 42, 43] {
            let t = b.thread(tid, "node");
            b.push_sample(stack, t, 1, 1);
        }
        let session = b.finish();
        let view = ViewSpec::read(r#"{"threads":[1],"range":[5,9]}"#).unwrap();
        let page = view.filter(&session).unwrap();
        assert_eq!(
            page.report_options(&session),
            [
                "--tid",
                "42",
                "--from",
                "0.000000005",
                "--to",
                "0.000000009"
            ]
        );
        let report = Filter::all()
            .tids(&session, &[42])
            .seconds(Some(0.000000005), Some(0.000000009))
            .unwrap();
        assert_eq!(report, page);
    }

    /// The page's view is read with `prof`'s JSON reader, as serde read it: every
    /// field optional, `null` as absent, no field twice and no other field.
    #[test]
    fn the_view_reads_every_field_and_refuses_what_serde_refused() {
        let view = ViewSpec::read(
            r#"{"threads":[0,2],"range":[5,9],"transforms":[{"kind":"hide","pattern":"^std"}],
                "type":"samples","state":"waiting","scope":"parse","task":"io","groupBy":"task"}"#,
        )
        .unwrap();
        assert_eq!(
            view,
            ViewSpec {
                threads: Some(vec![0, 2]),
                range: Some((5, 9)),
                transforms: vec![TransformSpec::Hide {
                    pattern: "^std".into()
                }],
                sample_type: Some("samples".into()),
                state: Some(SampleState::Waiting),
                scope: Some("parse".into()),
                task: Some("io".into()),
                group_by: Some("task".into()),
            }
        );
        let nulls = r#"{"threads":null,"range":null,"type":null,"state":null,"scope":null,
            "task":null,"groupBy":null}"#;
        assert_eq!(ViewSpec::read(nulls), Ok(ViewSpec::default()));
        assert_eq!(ViewSpec::read(" {} "), Ok(ViewSpec::default()));
        for (text, error) in [
            (r#"{"thread":[0]}"#, "unknown field `thread`"),
            (r#"{"scope":"a","scope":"b"}"#, "duplicate field `scope`"),
            (r#"{"range":[1]}"#, "invalid length"),
            (r#"{"range":[1,2,3]}"#, "trailing characters"),
            (r#"{"state":"sleeping"}"#, "unknown variant `sleeping`"),
            (r#"{"transforms":null}"#, "invalid type: null"),
            (r#"{"threads":[-1]}"#, "invalid value: integer `-1`"),
            (r#"{} x"#, "trailing characters"),
            (r#"{"#, "EOF while parsing an object"),
        ] {
            let message = ViewSpec::read(text).unwrap_err();
            assert!(message.starts_with(error), "{text}: {message}");
        }
    }
}
