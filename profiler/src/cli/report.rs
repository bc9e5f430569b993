//! `prof report FILE`: the top-N functions of a session file as a table.

use super::exit::{fail, BAD_INPUT};
use clap::{Args, ValueEnum};
use prof::aggregate::{CallTree, SortBy, StackWeights, TableOptions, TransformSpec};
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
    /// Instead of the functions, the marks (`prof::mark!`): a line per mark, in time order,
    /// with its seconds into the session, its thread and its fields. Honours the thread,
    /// process and time options; takes no transform, `--group-by`, `--source`, `--sort` or
    /// `--top`.
    #[arg(long, conflicts_with_all = ["scopes", "tasks"], conflicts_with_all = NOT_WITH_TABLES)]
    marks: bool,
    /// Instead of the functions, those whose calls `prof record --calls` counted: per
    /// function its exact calls, its self and total time from the samples and both per call,
    /// as Ruby's profiler prints a method's. Honours every sample filter, `--sort` and
    /// `--top`; takes no transform, `--group-by` or `--source`.
    #[arg(long, conflicts_with_all = ["scopes", "tasks", "marks"], conflicts_with_all = NOT_WITH_CALLS)]
    calls: bool,
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

/// The options `--calls` refuses: they act on stacks, which its table does not show.
const NOT_WITH_CALLS: [&str; 10] = [
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
];

/// The options `--scopes` and `--tasks` refuse: those of [`NOT_WITH_CALLS`], and `--sort` and
/// `--top`, which rank and count stacks (the calls table's rows are ranked and counted too).
const NOT_WITH_TABLES: [&str; 12] = with_ranking(NOT_WITH_CALLS);

/// `options` and `sort` and `top` (clap takes the lists as constants).
const fn with_ranking(options: [&'static str; 10]) -> [&'static str; 12] {
    let mut all = [""; 12];
    let mut i = 0;
    while i < options.len() {
        all[i] = options[i];
        i += 1;
    }
    all[10] = "sort";
    all[11] = "top";
    all
}

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
        prof::aggregate::GroupBy::from(self).apply(session)
    }
}

impl From<GroupBy> for prof::aggregate::GroupBy {
    fn from(group_by: GroupBy) -> Self {
        match group_by {
            GroupBy::Task => prof::aggregate::GroupBy::Task,
            GroupBy::Scope => prof::aggregate::GroupBy::Scope,
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

/// An option error as the command says it: the option with its dashes, and the file it
/// looked in.
fn option_error(e: prof::aggregate::OptionError, file: &std::path::Path) -> prof::Error {
    let message = match (e.option, e.known) {
        ("transform", _) => e.problem,
        ("from/to", _) => format!("--from/--to: {}", e.problem),
        (option, Some(known)) => {
            format!("--{option}: {} in {} ({known})", e.problem, file.display())
        }
        (option, None) => format!("--{option}: {}", e.problem),
    };
    prof::Error::InvalidOption(message)
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
    let mut options = TableOptions::default()
        .top(args.top)
        .sort(match args.sort {
            Sort::SelfWeight => SortBy::SelfWeight,
            Sort::Total => SortBy::Total,
        })
        .seconds(args.transforms.from, args.transforms.to)
        .scheduler_frames(args.scheduler_frames);
    for name in &args.thread {
        options = options.thread(name.clone());
    }
    for &tid in &args.tid {
        options = options.tid(tid);
    }
    for &pid in &args.pid {
        options = options.pid(pid);
    }
    for name in &args.process {
        options = options.process(name.clone());
    }
    if let Some(state) = args.state {
        options = options.state(match state {
            ThreadState::Running => prof::session::SampleState::Running,
            ThreadState::Waiting => prof::session::SampleState::Waiting,
        });
    }
    if let Some(name) = &args.scope {
        options = options.scope(name.clone());
    }
    if let Some(name) = &args.task {
        options = options.task(name.clone());
    }
    if let Some(group_by) = args.group_by {
        options = options.group_by(group_by.into());
    }
    for spec in args.transforms.specs() {
        options = options.transform(spec);
    }
    let failed = |e| fail(&option_error(e, &args.file));
    if args.scopes {
        return match options.scopes(&session) {
            Ok(table) => written(print(&table)),
            Err(e) => failed(e),
        };
    }
    if args.calls {
        if session.counted.is_empty() {
            eprintln!(
                "prof: {}: no function's calls were counted (prof record --calls REGEX counts them)",
                args.file.display()
            );
            return ExitCode::from(BAD_INPUT);
        }
        return match options.calls(&session) {
            Ok(table) => written(print(&table)),
            Err(e) => failed(e),
        };
    }
    if args.marks {
        return match options.marks(&session) {
            Ok(list) => written(print(&list)),
            Err(e) => failed(e),
        };
    }
    if args.tasks {
        return match options.tasks(&session) {
            Ok(table) => written(print(&table)),
            Err(e) => failed(e),
        };
    }
    if let Some(name) = &args.source {
        let filter = match options.filter(&session) {
            Ok(filter) => filter,
            Err(e) => return failed(e),
        };
        let session = options.grouped(&session);
        let transforms = match options.transforms(&session) {
            Ok(transforms) => transforms,
            Err(e) => return failed(e),
        };
        let weights = StackWeights::compute(&session, &filter);
        let tree = CallTree::build(&session, &weights, &transforms);
        return source(&session, &weights, &transforms, &tree, name);
    }
    let table = match options.functions(&session) {
        Ok(table) => table,
        Err(e) => return failed(e),
    };
    if table.folds_scheduler() {
        eprintln!(
            "prof: time switched out is charged to the call that blocked (the kernel's \
             scheduler frames folded into it; --scheduler-frames shows them)"
        );
    }
    written(print(&table))
}

/// Writes `table` to standard output.
fn print(table: &impl std::fmt::Display) -> prof::Result<()> {
    write!(std::io::stdout().lock(), "{table}").map_err(prof::Error::Write)
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
