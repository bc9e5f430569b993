//! The tables of `prof report` as values a program can print or read: [`TableOptions`] holds
//! the command's options (how many rows, the sort, the sample filters, the transforms), checks
//! them against a session, and gives the functions table ([`FunctionTable`]), the scopes table
//! ([`ScopeSummary`]) and the tasks table ([`TaskSummary`]), each printing as the command
//! prints it. `prof report` builds its tables here, so the two cannot disagree.

use super::{
    default_transforms, group_by_scope, group_by_task, scope_table, task_table, CallRow, CallTree,
    Filter, ScopeCalls, ScopeRow, ScopeTable, SortBy, StackWeights, TaskRow, TaskTable, TopRow,
    TopTable, Transform, TransformSpec, DEFAULT_TOP,
};
use crate::session::{Mark, SampleState, Session, SiteKind, ThreadIdx};
use std::borrow::Cow;
use std::fmt;

/// What goes above each sample's stack before the functions are counted (`prof report
/// --group-by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// The async task the sample was taken in (`task:NAME`), as `go tool pprof -tagroot`
    /// shows labels.
    Task,
    /// The scopes open on the sample's thread (`scope:NAME` frames, outermost first), with a
    /// CALLS column for them.
    Scope,
}

impl GroupBy {
    /// `session` with these frames above its stacks.
    pub fn apply(self, session: &Session) -> Session {
        match self {
            GroupBy::Task => group_by_task(session),
            GroupBy::Scope => group_by_scope(session),
        }
    }
}

/// An option that does not fit the session: which one (as `prof report` names it, without
/// its dashes: `thread`, `tid`, `pid`, `process`, `scope`, `task`, `from/to`, a transform), what
/// is wrong, and what the session has instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// The option, as `prof report` names it without its dashes.
    pub option: &'static str,
    /// What is wrong: `no thread named "x"`.
    pub problem: String,
    /// What the session has instead (`threads: main, worker`), when there is a list to give.
    pub known: Option<String>,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.option, self.problem)?;
        match &self.known {
            Some(known) => write!(f, " ({known})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for OptionError {}

impl From<OptionError> for crate::Error {
    fn from(e: OptionError) -> Self {
        crate::Error::InvalidOption(e.to_string())
    }
}

/// The options of `prof report`'s tables, set one by one from [`TableOptions::default`] (the
/// command's defaults: the top 10 functions by self weight, every sample, the default
/// transforms of the session's mode).
///
/// ```
/// use prof_session::aggregate::{SortBy, TableOptions};
/// use prof_session::session::SessionBuilder;
///
/// let mut b = SessionBuilder::default();
/// let main = b.thread(1, "main");
/// let worker = b.thread(2, "worker");
/// b.push_named(&["main", "parse"], main, 0, 3_000_000);
/// b.push_named(&["main", "work"], main, 1, 1_000_000);
/// b.push_named(&["run", "work"], worker, 2, 5_000_000);
/// let session = b.finish();
///
/// // prof report FILE --sort total --top 2 --thread main
/// let options = TableOptions::default().sort(SortBy::Total).top(2).thread("main");
/// let table = options.functions(&session)?;
/// let names: Vec<&str> = table.rows().iter().map(|r| r.name.as_str()).collect();
/// assert_eq!(names, ["main", "parse"]);
/// assert_eq!(table.total_count(), 2);
/// assert!(table.to_string().starts_with("main [1] of (unknown program): cpu mode, 2 samples"));
///
/// let wrong = TableOptions::default().thread("nobody").functions(&session).unwrap_err();
/// assert_eq!(wrong.to_string(), "thread: no thread named \"nobody\" (threads: main, worker)");
/// # Ok::<(), prof_session::aggregate::OptionError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TableOptions {
    top: usize,
    sort: SortBy,
    threads: Vec<String>,
    tids: Vec<u64>,
    pids: Vec<u32>,
    processes: Vec<String>,
    state: Option<SampleState>,
    seconds: (Option<f64>, Option<f64>),
    scope: Option<String>,
    task: Option<String>,
    group_by: Option<GroupBy>,
    scheduler_frames: bool,
    transforms: Vec<TransformSpec>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            top: DEFAULT_TOP,
            sort: SortBy::SelfWeight,
            threads: Vec::new(),
            tids: Vec::new(),
            pids: Vec::new(),
            processes: Vec::new(),
            state: None,
            seconds: (None, None),
            scope: None,
            task: None,
            group_by: None,
            scheduler_frames: false,
            transforms: Vec::new(),
        }
    }
}

impl TableOptions {
    /// How many functions to list (`--top`).
    pub fn top(mut self, count: usize) -> Self {
        self.top = count;
        self
    }

    /// What to rank functions by (`--sort self|total`).
    pub fn sort(mut self, sort: SortBy) -> Self {
        self.sort = sort;
        self
    }

    /// Only samples of threads named `name` (`--thread`; call again for several).
    pub fn thread(mut self, name: impl Into<String>) -> Self {
        self.threads.push(name.into());
        self
    }

    /// Only samples of the thread with id `tid` (`--tid`; call again for several).
    pub fn tid(mut self, tid: u64) -> Self {
        self.tids.push(tid);
        self
    }

    /// Only samples of the process with id `pid` (`--pid`; call again for several).
    pub fn pid(mut self, pid: u32) -> Self {
        self.pids.push(pid);
        self
    }

    /// Only samples of processes named `name`: their `comm`, or their executable's or
    /// command's file name (`--process`; call again for several).
    pub fn process(mut self, name: impl Into<String>) -> Self {
        self.processes.push(name.into());
        self
    }

    /// Only samples whose thread was running, or waiting (`--state`).
    pub fn state(mut self, state: SampleState) -> Self {
        self.state = Some(state);
        self
    }

    /// Only samples taken from `from` seconds into the session, and before `to` (`--from`,
    /// `--to`; `None` leaves that end open).
    pub fn seconds(mut self, from: Option<f64>, to: Option<f64>) -> Self {
        self.seconds = (from, to);
        self
    }

    /// Only samples taken inside a scope named `name`, or inside a scope within one
    /// (`--scope`).
    pub fn scope(mut self, name: impl Into<String>) -> Self {
        self.scope = Some(name.into());
        self
    }

    /// Only samples taken while a task named `name` was polled (`--task`).
    pub fn task(mut self, name: impl Into<String>) -> Self {
        self.task = Some(name.into());
        self
    }

    /// Put tasks or scopes above the stacks (`--group-by`).
    pub fn group_by(mut self, group_by: GroupBy) -> Self {
        self.group_by = Some(group_by);
        self
    }

    /// Keep a wall session's scheduler frames as recorded (`--scheduler-frames`), rather than
    /// charging switched-out time to the call that blocked.
    pub fn scheduler_frames(mut self, keep: bool) -> Self {
        self.scheduler_frames = keep;
        self
    }

    /// Apply `transform` after those added before (`--focus`, `--hide`, `--merge`, …: the
    /// command adds them in the order its help lists).
    pub fn transform(mut self, transform: TransformSpec) -> Self {
        self.transforms.push(transform);
        self
    }

    /// The sample filter the options give in `session`: threads, processes, state, time range,
    /// scope and task, each checked to name something the session has.
    pub fn filter(&self, session: &Session) -> Result<Filter, OptionError> {
        let mut filter = Filter::all();
        let mut threads = Vec::new();
        for name in &self.threads {
            let named = Filter::all()
                .thread_named(session, name)
                .threads
                .unwrap_or_default();
            if named.is_empty() {
                let names = session.threads.iter().map(|t| session.str(t.name));
                return Err(unknown(
                    "thread",
                    format!("no thread named {name:?}"),
                    "threads",
                    names.collect(),
                ));
            }
            threads.extend(named);
        }
        if !self.threads.is_empty() {
            filter = filter.threads(threads);
        }
        if let Some(tid) = self
            .tids
            .iter()
            .find(|&&tid| session.threads.iter().all(|t| t.tid != tid))
        {
            const LISTED: usize = 20;
            let mut known: Vec<String> = session
                .threads
                .iter()
                .take(LISTED)
                .map(|t| match session.str(t.name) {
                    "" => t.tid.to_string(),
                    name => format!("{} {name}", t.tid),
                })
                .collect();
            if session.threads.len() > LISTED {
                known.push(format!("and {} more", session.threads.len() - LISTED));
            }
            return Err(OptionError {
                option: "tid",
                problem: format!("no thread {tid}"),
                known: Some(format!("threads: {}", known.join(", "))),
            });
        }
        if !self.tids.is_empty() {
            filter = filter.tids(session, &self.tids);
        }
        let table = session.process_table();
        let processes = || {
            let known: Vec<String> = table
                .iter()
                .map(|p| format!("{} {}", p.pid, p.name))
                .collect();
            Some(format!("processes: {}", known.join(", ")))
        };
        if let Some(pid) = self
            .pids
            .iter()
            .find(|&&pid| table.iter().all(|p| p.pid != pid))
        {
            return Err(OptionError {
                option: "pid",
                problem: format!("no process {pid}"),
                known: processes(),
            });
        }
        if let Some(name) = self
            .processes
            .iter()
            .find(|name| table.iter().all(|p| !p.is_named(name)))
        {
            return Err(OptionError {
                option: "process",
                problem: format!("no process named {name:?}"),
                known: processes(),
            });
        }
        if !self.pids.is_empty() {
            filter = filter.processes(session, |p| self.pids.contains(&p.pid));
        }
        if !self.processes.is_empty() {
            filter = filter.processes(session, |p| self.processes.iter().any(|n| p.is_named(n)));
        }
        if let Some(state) = self.state {
            filter = filter.state(state);
        }
        let (from, to) = self.seconds;
        let mut filter = filter.seconds(from, to).map_err(|problem| OptionError {
            option: "from/to",
            problem,
            known: None,
        })?;
        if let Some(name) = &self.scope {
            // Marks share the sites table but are never open: only scope sites hold samples.
            let sites = session
                .scopes
                .sites
                .iter()
                .filter(|s| s.kind == SiteKind::Scope);
            let names: Vec<&str> = sites.map(|s| session.str(s.name)).collect();
            if !names.contains(&name.as_str()) {
                return Err(unknown(
                    "scope",
                    format!("no scope named {name:?}"),
                    "scopes",
                    names,
                ));
            }
            filter = filter.scope(name.clone());
        }
        if let Some(name) = &self.task {
            let names: Vec<&str> = session
                .tasks
                .tasks
                .iter()
                .map(|t| session.str(t.name))
                .collect();
            if !names.contains(&name.as_str()) {
                return Err(unknown(
                    "task",
                    format!("no task named {name:?}"),
                    "tasks",
                    names,
                ));
            }
            filter = filter.task(name.clone());
        }
        Ok(filter)
    }

    /// `session` as the functions table counts it: with tasks or scopes above its stacks when
    /// [`TableOptions::group_by`] asks, else as it is.
    pub fn grouped<'s>(&self, session: &'s Session) -> Cow<'s, Session> {
        match self.group_by {
            Some(group_by) => Cow::Owned(group_by.apply(session)),
            None => Cow::Borrowed(session),
        }
    }

    /// The transforms the options give in `session` (a [`TableOptions::grouped`] one): the
    /// default transforms of its mode (unless [`TableOptions::scheduler_frames`]), then those
    /// added, resolved against its functions and modules.
    pub fn transforms(&self, session: &Session) -> Result<Vec<Transform>, OptionError> {
        let mut specs = match self.scheduler_frames {
            true => Vec::new(),
            false => default_transforms(session),
        };
        specs.extend(self.transforms.iter().cloned());
        TransformSpec::resolve_all(&specs, session).map_err(|problem| OptionError {
            option: "transform",
            problem,
            known: None,
        })
    }

    /// The functions table (`prof report`): the top functions by the sort, over the samples
    /// the filters keep, after the transforms.
    pub fn functions<'s>(&self, session: &'s Session) -> Result<FunctionTable<'s>, OptionError> {
        let filter = self.filter(session)?;
        let session = self.grouped(session);
        // No CALLS column for a session without scopes: grouping by scope leaves it as it is.
        let by_scope = self.group_by == Some(GroupBy::Scope) && !session.scopes.spans.is_empty();
        let calls = by_scope.then(|| ScopeCalls::count(&session, &filter));
        let transforms = self.transforms(&session)?;
        let folds_scheduler = !self.scheduler_frames && !default_transforms(&session).is_empty();
        let tree = CallTree::filtered(&session, &filter, &transforms);
        let rows = tree.top(&session, self.top, self.sort);
        Ok(FunctionTable {
            total_weight: tree.total_weight(tree.root()),
            total_count: tree.total_count(tree.root()),
            threads: filter.threads,
            rows,
            sort: self.sort,
            calls,
            folds_scheduler,
            session,
        })
    }

    /// The scopes table (`prof report --scopes`): per scope name its exact calls, total and
    /// self time, time per call and the spread of call durations, on the threads, processes
    /// and time range the options keep (the transforms, sort and count do not apply).
    pub fn scopes<'s>(&self, session: &'s Session) -> Result<ScopeSummary<'s>, OptionError> {
        let filter = self.filter(session)?;
        Ok(ScopeSummary {
            rows: scope_table(session, &filter),
            session,
        })
    }

    /// The counted functions' table (`prof report --calls`): per function counted by `prof
    /// record --calls` its exact calls, and its self and total time from the samples the
    /// filters keep, with both per call; the first [`TableOptions::top`] by the sort (the
    /// transforms do not apply).
    pub fn calls<'s>(&self, session: &'s Session) -> Result<CallSummary<'s>, OptionError> {
        let filter = self.filter(session)?;
        let total_weight = StackWeights::compute(session, &filter).total();
        let mut rows = super::call_table(session, &filter, self.sort);
        let counted = rows.len();
        rows.truncate(self.top);
        Ok(CallSummary {
            rows,
            counted,
            total_weight,
            session,
        })
    }

    /// The marks (`prof report --marks`): every `prof::mark!` instant on the threads,
    /// processes and in the time range the options keep, in time order, with its thread and
    /// fields.
    pub fn marks<'s>(&self, session: &'s Session) -> Result<MarkList<'s>, OptionError> {
        let filter = self.filter(session)?;
        let threads = super::scope_stats::thread_mask(session, &filter);
        let (start, end) = filter.time_ns.unwrap_or((0, u64::MAX));
        let mut marks: Vec<&'s Mark> = session
            .scopes
            .marks
            .iter()
            .filter(|m| {
                threads
                    .as_ref()
                    .is_none_or(|keep| keep.get(m.thread.index()) == Some(&true))
            })
            .filter(|m| (start..end).contains(&m.time_ns))
            .collect();
        marks.sort_by_key(|m| (m.time_ns, m.thread.index()));
        Ok(MarkList { session, marks })
    }

    /// The tasks table (`prof report --tasks`): per task name its samples' weight and its
    /// polls, over the samples every filter but the task keeps.
    pub fn tasks<'s>(&self, session: &'s Session) -> Result<TaskSummary<'s>, OptionError> {
        let filter = self.filter(session)?;
        let tasks = task_table(session, &filter);
        Ok(TaskSummary {
            rows: tasks.rows,
            total_weight: tasks.total_weight,
            session,
        })
    }
}

/// An option that names nothing the session has, with the names it has (sorted, distinct).
fn unknown(option: &'static str, problem: String, what: &str, mut names: Vec<&str>) -> OptionError {
    names.sort_unstable();
    names.dedup();
    let list = match names.is_empty() {
        true => "none".to_owned(),
        false => names.join(", "),
    };
    OptionError {
        option,
        problem,
        known: Some(format!("{what}: {list}")),
    }
}

/// The functions table of [`TableOptions::functions`]: prints as `prof report` does (a header
/// line naming what is shown, then TOTAL, SELF and FRAME columns) and has its rows.
#[derive(Clone, Debug)]
pub struct FunctionTable<'s> {
    session: Cow<'s, Session>,
    threads: Option<Vec<ThreadIdx>>,
    rows: Vec<TopRow>,
    total_weight: u64,
    total_count: u64,
    sort: SortBy,
    calls: Option<ScopeCalls>,
    folds_scheduler: bool,
}

impl FunctionTable<'_> {
    /// The rows, in the order printed.
    pub fn rows(&self) -> &[TopRow] {
        &self.rows
    }

    /// The weight of every sample the filters kept: what the percentages are of.
    pub fn total_weight(&self) -> u64 {
        self.total_weight
    }

    /// How many samples the filters kept.
    pub fn total_count(&self) -> u64 {
        self.total_count
    }

    /// True when the table charges a wall session's switched-out time to the call that
    /// blocked (the scheduler's frames folded into it), as it does unless
    /// [`TableOptions::scheduler_frames`].
    pub fn folds_scheduler(&self) -> bool {
        self.folds_scheduler
    }
}

impl fmt::Display for FunctionTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        TopTable {
            session: &self.session,
            threads: self.threads.as_deref(),
            rows: &self.rows,
            total_weight: self.total_weight,
            total_count: self.total_count,
            sort: self.sort,
            calls: self.calls.as_ref(),
        }
        .fmt(f)
    }
}

/// The scopes table of [`TableOptions::scopes`]: prints as `prof report --scopes` does and has
/// its rows.
#[derive(Clone, Debug)]
pub struct ScopeSummary<'s> {
    session: &'s Session,
    rows: Vec<ScopeRow>,
}

impl ScopeSummary<'_> {
    /// One row per scope name, in the order printed.
    pub fn rows(&self) -> &[ScopeRow] {
        &self.rows
    }
}

impl fmt::Display for ScopeSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ScopeTable {
            session: self.session,
            rows: &self.rows,
        }
        .fmt(f)
    }
}

/// The counted functions' table of [`TableOptions::calls`]: prints as `prof report --calls`
/// does and has its rows.
#[derive(Clone, Debug)]
pub struct CallSummary<'s> {
    session: &'s Session,
    rows: Vec<CallRow>,
    /// The functions counted, shown or not.
    counted: usize,
    total_weight: u64,
}

impl CallSummary<'_> {
    /// One row per counted function, in the order printed.
    pub fn rows(&self) -> &[CallRow] {
        &self.rows
    }

    /// The weight of every sample kept, counted function or not.
    pub fn total_weight(&self) -> u64 {
        self.total_weight
    }
}

impl fmt::Display for CallSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::CallTable {
            session: self.session,
            rows: &self.rows,
            total_weight: self.total_weight,
        }
        .fmt(f)?;
        if self.counted > self.rows.len() {
            writeln!(
                f,
                "({} more counted functions: --top N shows more)",
                self.counted - self.rows.len()
            )?;
        }
        Ok(())
    }
}

/// The tasks table of [`TableOptions::tasks`]: prints as `prof report --tasks` does and has its
/// rows.
#[derive(Clone, Debug)]
pub struct TaskSummary<'s> {
    session: &'s Session,
    rows: Vec<TaskRow>,
    total_weight: u64,
}

impl TaskSummary<'_> {
    /// One row per task name, in the order printed.
    pub fn rows(&self) -> &[TaskRow] {
        &self.rows
    }

    /// The weight of every sample kept, in a task or not.
    pub fn total_weight(&self) -> u64 {
        self.total_weight
    }
}

impl fmt::Display for TaskSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        TaskTable {
            session: self.session,
            rows: &self.rows,
            total_weight: self.total_weight,
        }
        .fmt(f)
    }
}

/// The marks of [`TableOptions::marks`]: prints a line per mark (seconds into the session, the
/// thread with its id, the mark's name and its fields) and has them.
#[derive(Clone, Debug)]
pub struct MarkList<'s> {
    session: &'s Session,
    marks: Vec<&'s Mark>,
}

impl<'s> MarkList<'s> {
    /// The marks kept, in time order.
    pub fn marks(&self) -> &[&'s Mark] {
        &self.marks
    }

    /// The name of `mark` (its site's).
    pub fn name(&self, mark: &Mark) -> &'s str {
        self.session.str(self.session.scopes.site(mark.site).name)
    }
}

impl fmt::Display for MarkList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.session;
        writeln!(f, "{} marks", super::thousands(self.marks.len() as u64))?;
        writeln!(f, "{:>12}  {:<24}  MARK", "SECONDS", "THREAD")?;
        for mark in &self.marks {
            let thread = &s.threads[mark.thread.index()];
            let who = format!("{} ({})", s.str(thread.name), thread.tid);
            let fields: Vec<String> = mark
                .fields
                .iter()
                .map(|field| format!("{}={}", s.str(field.key), s.str(field.value)))
                .collect();
            let seconds = super::fixed(mark.time_ns as f64 / 1e9, 6, false);
            write!(f, "{seconds:>12}  {who:<24}  {}", self.name(mark))?;
            if !fields.is_empty() {
                write!(f, "  {}", fields.join(" "))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
