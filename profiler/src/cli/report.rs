//! `prof report FILE`: the top-N functions of a session file as a table.

use super::exit::fail;
use clap::{Args, ValueEnum};
use prof::aggregate::{CallTree, Filter, SortBy, StackWeights, TopTable};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `prof report`.
#[derive(Debug, Args)]
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
    /// Only samples of threads with this name.
    #[arg(long, value_name = "NAME")]
    thread: Option<String>,
    /// The sample type to show: a pprof value column (`inuse_space`, `alloc_objects`, ...) or a
    /// `perf script` event (`cycles`); by default pprof's default type or perf's first event.
    #[arg(long = "type", value_name = "NAME")]
    sample_type: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Sort {
    #[value(name = "self")]
    SelfWeight,
    Total,
}

/// Runs `prof report`.
pub fn run(args: ReportArgs) -> ExitCode {
    let session = match super::load(&args.file, args.sample_type) {
        Ok(session) => session,
        Err(err) => return fail(&err),
    };
    let mut filter = Filter::all();
    if let Some(name) = &args.thread {
        filter = filter.thread_named(&session, name);
        if filter.threads.as_ref().is_some_and(Vec::is_empty) {
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
    }
    let sort = match args.sort {
        Sort::SelfWeight => SortBy::SelfWeight,
        Sort::Total => SortBy::Total,
    };
    let tree = CallTree::build(&session, &StackWeights::compute(&session, &filter), &[]);
    let rows = tree.top(&session, args.top, sort);
    let table = TopTable {
        session: &session,
        rows: &rows,
        total_weight: tree.total_weight(tree.root()),
        total_count: tree.total_count(tree.root()),
        sort,
    };
    match write!(std::io::stdout().lock(), "{table}") {
        // A closed pipe (`prof report f | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(&prof::Error::Write(e)),
        _ => ExitCode::SUCCESS,
    }
}
