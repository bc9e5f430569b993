//! `prof report FILE`: the top-N functions of a session file as a table.

use super::exit::fail;
use clap::{Args, ValueEnum};
use prof::aggregate::{
    group_by_scope, group_by_task, scope_table, task_table, CallTree, Filter, ScopeCalls,
    ScopeTable, SortBy, StackWeights, TaskTable, TopTable, TransformSpec,
};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `prof report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Transforms apply in this order, whatever their order on the command line: \
--focus, --ignore, --drop, --hide, --merge, --collapse-module, --collapse-recursion, \
--focus-function. The viewer's transform stack gives the same numbers in the same order."
)]
pub struct ReportArgs {
    /// The profile: a session file (`.json`, `.json.gz`), folded stacks, `perf script` output or
    /// pprof.
    file: PathBuf,
    /// How many functions to list.
    #[arg(long, default_value_t = prof::DEFAULT_TOP)]
    top: usize,
    /// Rank functions by self weight (time in the function itself) or total (with callees).
    #[arg(long, value_enum, default_value_t = Sort::SelfWeight)]
    sort: Sort,
    /// Only samples of threads with this name (repeat for several threads).
    #[arg(long, value_name = "NAME")]
    thread: Vec<String>,
    /// Only samples of the thread with this id (repeat, or list them with commas): one of
    /// several threads of the same name, as the viewer's thread selector picks it (it shows
    /// each thread's id in brackets, and the options of its selection in the selector's tooltip).
    #[arg(long, value_name = "TID", value_delimiter = ',')]
    tid: Vec<u64>,
    /// Only samples of the process with this id (repeat for several processes).
    #[arg(long, value_name = "PID")]
    pid: Vec<u32>,
    /// Only samples of processes with this name: their `comm`, or their executable's or
    /// command's file name (repeat for several).
    #[arg(long, value_name = "NAME")]
    process: Vec<String>,
    /// The sample type to show: a pprof value column (`inuse_space`, `alloc_objects`, ...) or a
    /// `perf script` event (`cycles`); by default pprof's default type or perf's first event.
    #[arg(long = "type", value_name = "NAME")]
    sample_type: Option<String>,
    /// Start each stack of a `perf script` file with its process name (spaces as `_`), as
    /// stackcollapse-perf.pl and inferno do by default; other formats have no process name.
    #[arg(long)]
    process_root: bool,
    #[command(flatten)]
    limit: super::InputLimit,
    /// Only samples whose thread was running (on CPU) or waiting (off CPU), as wall mode
    /// records; a profile without states has only running samples.
    #[arg(long, value_enum, value_name = "STATE")]
    state: Option<ThreadState>,
    /// Instead of the table, the source lines of the function NAME with their self and total
    /// weight (the viewer's Source view), its files read from the current directory.
    #[arg(long, value_name = "NAME")]
    source: Option<String>,
    /// Only samples taken inside a scope NAME (`prof::scope!("NAME")`), or inside a scope
    /// within one.
    #[arg(long, value_name = "NAME")]
    scope: Option<String>,
    /// Only samples taken while an async task named NAME was polled.
    #[arg(long, value_name = "NAME")]
    task: Option<String>,
    /// Put each task's name (`task:NAME`, `task:(none)` outside tasks) above its stacks, as
    /// `go tool pprof -tagroot` does: the task's share is that row's total percentage. Or each
    /// sample's open scopes (`scope:NAME` frames, outermost first; `scope:(none)` outside
    /// scopes), with a CALLS column: the exact calls of each scope row.
    #[arg(long, value_enum, value_name = "WHAT")]
    group_by: Option<GroupBy>,
    /// Instead of the functions, the scopes: per scope name its exact calls, total and self
    /// milliseconds, milliseconds per call, and the spread of call durations. Honours the
    /// thread, process and time options; stacks are not shown, so it takes no transform,
    /// `--group-by`, `--source`, `--sort` or `--top`.
    #[arg(long, conflicts_with = "tasks", conflicts_with_all = NOT_WITH_TABLES)]
    scopes: bool,
    /// Instead of the functions, the tasks: per task name its samples' weight and its polls.
    /// Honours every sample filter but `--task`; takes no transform, `--group-by`,
    /// `--source`, `--sort` or `--top`.
    #[arg(long, conflicts_with_all = NOT_WITH_TABLES)]
    tasks: bool,
    /// Instead of the samples, where async tasks waited (a wall mode session of tasks wrapped
    /// in `prof::task::instrument`): each wait between two polls of a task, weighted by its
    /// length, charged to the stack of the `.await` the task waited at. Works with every other
    /// option but `--type`, `--state`, `--scope`, `--scopes` and `--tasks`; `--group-by task`
    /// shows each task's waits under its name.
    #[arg(long, conflicts_with_all = ["sample_type", "state", "scope", "scopes", "tasks"])]
    waits: bool,
    /// Show the kernel's scheduler frames of a wall session as recorded. By default the time a
    /// thread spent switched out (blocked, or preempted) is charged to the user frame that
    /// entered the kernel (the blocking call: `read`, `epoll_wait`, a futex wait), before any
    /// other transform, as the viewer's default transform stack does.
    #[arg(long)]
    scheduler_frames: bool,
    /// Boxed: keeps the subcommand enum small.
    #[command(flatten)]
    transforms: Box<TransformArgs>,
}

/// The options `--scopes` and `--tasks` refuse: they act on stacks, which those tables do not
/// show.
const NOT_WITH_TABLES: [&str; 12] = [
    "group_by",
    "source",
    "focus",
    "ignore",
    "drop",
    "hide",
    "merge",
    "collapse_module",
    "collapse_recursion",
    "focus_function",
    "sort",
    "top",
];

/// What `--group-by` puts above the stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// The async task a sample was taken in.
    Task,
    /// The scopes open on the sample's thread when it was taken.
    Scope,
}

impl GroupBy {
    /// `session` with these frames above its stacks.
    pub fn apply(self, session: &prof::session::Session) -> prof::session::Session {
        match self {
            GroupBy::Task => group_by_task(session),
            GroupBy::Scope => group_by_scope(session),
        }
    }
}

/// A thread state for `--state`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ThreadState {
    /// On CPU.
    Running,
    /// Off CPU: blocked or sleeping.
    Waiting,
}

/// The time range and the transforms: the viewer's transform stack, as options. They apply in
/// the order listed here, whatever their order on the command line.
#[derive(Debug, Args)]
struct TransformArgs {
    /// Only samples taken at or after this many seconds into the session.
    #[arg(long, value_name = "SECONDS")]
    from: Option<f64>,
    /// Only samples taken before this many seconds into the session.
    #[arg(long, value_name = "SECONDS")]
    to: Option<f64>,
    /// Keep only samples with a function matching REGEX on their stack (pprof's -focus).
    #[arg(long, value_name = "REGEX")]
    focus: Vec<String>,
    /// Drop samples with a function matching REGEX on their stack (pprof's -ignore).
    #[arg(long, value_name = "REGEX")]
    ignore: Vec<String>,
    /// Drop the samples whose stack passes through the function NAME.
    #[arg(long, value_name = "NAME")]
    drop: Vec<String>,
    /// Remove the frames of functions matching REGEX, charging their callers (pprof's -hide).
    #[arg(long, value_name = "REGEX")]
    hide: Vec<String>,
    /// Remove the function NAME's frames, charging its callers.
    #[arg(long, value_name = "NAME")]
    merge: Vec<String>,
    /// Show each run of frames of the module (binary or library) NAME as one frame.
    #[arg(long, value_name = "NAME")]
    collapse_module: Vec<String>,
    /// Turn direct recursion into one frame.
    #[arg(long)]
    collapse_recursion: bool,
    /// Keep only samples through the function NAME, rooted at it (merged over its call sites).
    #[arg(long, value_name = "NAME")]
    focus_function: Option<String>,
}

impl TransformArgs {
    /// The transforms, in the documented order.
    fn specs(&self) -> Vec<TransformSpec> {
        let mut specs = Vec::new();
        let each = |names: &[String], make: fn(String) -> TransformSpec| {
            names.iter().cloned().map(make).collect::<Vec<_>>()
        };
        specs.extend(each(&self.focus, |pattern| TransformSpec::Focus {
            pattern,
        }));
        specs.extend(each(&self.ignore, |pattern| TransformSpec::Ignore {
            pattern,
        }));
        specs.extend(each(&self.drop, |function| TransformSpec::Drop {
            function,
        }));
        specs.extend(each(&self.hide, |pattern| TransformSpec::Hide { pattern }));
        specs.extend(each(&self.merge, |function| TransformSpec::Merge {
            function,
        }));
        specs.extend(each(&self.collapse_module, |module| {
            TransformSpec::CollapseModule { module }
        }));
        if self.collapse_recursion {
            specs.push(TransformSpec::CollapseRecursion);
        }
        if let Some(function) = &self.focus_function {
            specs.push(TransformSpec::FocusFunction {
                function: function.clone(),
            });
        }
        specs
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Sort {
    #[value(name = "self")]
    SelfWeight,
    Total,
}

/// Narrows `filter` to the processes `--pid` and `--process` name; one of them that names no
/// process is an error listing those there are.
fn process_filter(
    session: &prof::session::Session,
    args: &ReportArgs,
    filter: &mut Filter,
) -> Result<(), prof::Error> {
    let table = session.process_table();
    let known = || {
        table
            .iter()
            .map(|p| format!("{} {}", p.pid, p.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let missing = |what: String| {
        prof::Error::InvalidOption(format!(
            "{what} in {} (processes: {})",
            args.file.display(),
            known()
        ))
    };
    if let Some(pid) = args
        .pid
        .iter()
        .find(|&&pid| table.iter().all(|p| p.pid != pid))
    {
        return Err(missing(format!("--pid: no process {pid}")));
    }
    if let Some(name) = args
        .process
        .iter()
        .find(|name| table.iter().all(|p| !p.is_named(name)))
    {
        return Err(missing(format!("--process: no process named {name:?}")));
    }
    if !args.pid.is_empty() {
        *filter = std::mem::take(filter).processes(session, |p| args.pid.contains(&p.pid));
    }
    if !args.process.is_empty() {
        *filter = std::mem::take(filter)
            .processes(session, |p| args.process.iter().any(|n| p.is_named(n)));
    }
    Ok(())
}

/// Narrows `filter` to the threads `--tid` names; an id no thread has is an error listing some
/// that there are.
fn tid_filter(
    session: &prof::session::Session,
    args: &ReportArgs,
    filter: &mut Filter,
) -> Result<(), prof::Error> {
    if args.tid.is_empty() {
        return Ok(());
    }
    if let Some(tid) = args
        .tid
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
        return Err(prof::Error::InvalidOption(format!(
            "--tid: no thread {tid} in {} (threads: {})",
            args.file.display(),
            known.join(", ")
        )));
    }
    *filter = std::mem::take(filter).tids(session, &args.tid);
    Ok(())
}

/// Checks that `name` (given to `option`) is one of the session's `names` of a `what`, or says
/// which there are.
fn known_name(
    option: &str,
    what: &str,
    name: &str,
    mut names: Vec<&str>,
    file: &std::path::Path,
) -> Result<(), String> {
    if names.contains(&name) {
        return Ok(());
    }
    names.sort_unstable();
    names.dedup();
    Err(format!(
        "{option}: no {what} named {name:?} in {} ({}s: {})",
        file.display(),
        what,
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    ))
}

/// `--waits`: the session of `session`'s tasks' waits (read from `file`), or the error saying
/// it has none.
pub fn waits_of(
    session: &prof::session::Session,
    file: &std::path::Path,
) -> prof::Result<prof::session::Session> {
    prof::aggregate::task_waits(session).ok_or_else(|| {
        prof::Error::InvalidOption(format!(
            "--waits: no task in {} says where it waited (record in wall mode, with the tasks \
             wrapped in prof::task::instrument)",
            file.display()
        ))
    })
}

/// Runs `prof report`.
pub fn run(args: ReportArgs) -> ExitCode {
    let reading = super::Reading {
        sample_type: args.sample_type.clone(),
        process_root: args.process_root,
        limit: args.limit,
    };
    let session = match super::load(&args.file, &reading) {
        Ok(session) => session,
        Err(err) => return fail(&err),
    };
    let session = if args.waits {
        match waits_of(&session, &args.file) {
            Ok(waits) => waits,
            Err(e) => return fail(&e),
        }
    } else {
        session
    };
    let mut filter = Filter::all();
    let mut threads = Vec::new();
    for name in &args.thread {
        let named = Filter::all()
            .thread_named(&session, name)
            .threads
            .unwrap_or_default();
        if named.is_empty() {
            let mut names: Vec<&str> = session
                .threads
                .iter()
                .map(|t| session.str(t.name))
                .collect();
            names.sort_unstable();
            names.dedup();
            let err = prof::Error::InvalidOption(format!(
                "--thread: no thread named {name:?} in {} (threads: {})",
                args.file.display(),
                names.join(", ")
            ));
            return fail(&err);
        }
        threads.extend(named);
    }
    if !args.thread.is_empty() {
        filter = filter.threads(threads);
    }
    if let Err(e) = tid_filter(&session, &args, &mut filter) {
        return fail(&e);
    }
    if let Err(e) = process_filter(&session, &args, &mut filter) {
        return fail(&e);
    }
    if let Some(state) = args.state {
        filter = filter.state(match state {
            ThreadState::Running => prof::session::SampleState::Running,
            ThreadState::Waiting => prof::session::SampleState::Waiting,
        });
    }
    let options = |e: String| fail(&prof::Error::InvalidOption(e));
    let mut filter = match filter.seconds(args.transforms.from, args.transforms.to) {
        Ok(filter) => filter,
        Err(e) => return options(format!("--from/--to: {e}")),
    };
    if let Some(name) = &args.scope {
        // Marks share the sites table but are never open: only scope sites can hold samples.
        let names = session
            .scopes
            .sites
            .iter()
            .filter(|s| s.kind == prof::session::SiteKind::Scope)
            .map(|s| session.str(s.name))
            .collect();
        if let Err(e) = known_name("--scope", "scope", name, names, &args.file) {
            return options(e);
        }
        filter = filter.scope(name.clone());
    }
    if let Some(name) = &args.task {
        let names = session
            .tasks
            .tasks
            .iter()
            .map(|t| session.str(t.name))
            .collect();
        if let Err(e) = known_name("--task", "task", name, names, &args.file) {
            return options(e);
        }
        filter = filter.task(name.clone());
    }
    if args.scopes {
        let rows = scope_table(&session, &filter);
        let table = ScopeTable {
            session: &session,
            rows: &rows,
        };
        return written(write!(std::io::stdout().lock(), "{table}").map_err(prof::Error::Write));
    }
    if args.tasks {
        let tasks = task_table(&session, &filter);
        let table = TaskTable {
            session: &session,
            rows: &tasks.rows,
            total_weight: tasks.total_weight,
        };
        return written(write!(std::io::stdout().lock(), "{table}").map_err(prof::Error::Write));
    }
    let session = match args.group_by {
        Some(group_by) => group_by.apply(&session),
        None => session,
    };
    // No CALLS column for a session without scopes: grouping by scope leaves it as it is.
    let by_scope = args.group_by == Some(GroupBy::Scope) && !session.scopes.spans.is_empty();
    let calls = by_scope.then(|| ScopeCalls::count(&session, &filter));
    let mut specs = Vec::new();
    if !args.scheduler_frames {
        specs = prof::aggregate::default_transforms(&session);
        if !specs.is_empty() {
            eprintln!(
                "prof: time switched out is charged to the call that blocked (the kernel's \
                 scheduler frames folded into it; --scheduler-frames shows them)"
            );
        }
    }
    specs.extend(args.transforms.specs());
    let transforms = match TransformSpec::resolve_all(&specs, &session) {
        Ok(transforms) => transforms,
        Err(e) => return options(e),
    };
    let sort = match args.sort {
        Sort::SelfWeight => SortBy::SelfWeight,
        Sort::Total => SortBy::Total,
    };
    if let Some(name) = &args.source {
        let weights = StackWeights::compute(&session, &filter);
        let tree = CallTree::build(&session, &weights, &transforms);
        return source(&session, &weights, &transforms, &tree, name);
    }
    let tree = CallTree::filtered(&session, &filter, &transforms);
    let rows = tree.top(&session, args.top, sort);
    let table = TopTable {
        session: &session,
        threads: filter.threads.as_deref(),
        rows: &rows,
        total_weight: tree.total_weight(tree.root()),
        total_count: tree.total_count(tree.root()),
        sort,
        calls: calls.as_ref(),
    };
    written(write!(std::io::stdout().lock(), "{table}").map_err(prof::Error::Write))
}

/// The exit code after writing to standard output.
fn written(result: prof::Result<()>) -> ExitCode {
    match result {
        // A closed pipe (`prof report f | head`) is the reader's choice, not a failure.
        Err(prof::Error::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
        Ok(()) => ExitCode::SUCCESS,
    }
}

/// `prof report --source NAME`: the function's source lines over the chosen samples.
fn source(
    session: &prof::session::Session,
    weights: &StackWeights,
    transforms: &[prof::aggregate::Transform],
    tree: &CallTree,
    name: &str,
) -> ExitCode {
    let Some(func) = session
        .frames
        .iter()
        .map(|f| f.name)
        .find(|&id| session.str(id) == name)
    else {
        let err = format!("--source: no function named {name:?} in the profile");
        return fail(&prof::Error::InvalidOption(err));
    };
    let files = prof::aggregate::function_lines(session, weights, transforms, func);
    written(prof::export::annotate::write_annotation(
        &files,
        &session.meta.sample_type,
        tree.total_weight(tree.root()),
        |file| std::fs::read_to_string(file).ok(),
        std::io::stdout().lock(),
    ))
}
