//! `prof diff BASE NEW`: the functions whose weight changed most between two profiles.

use super::exit::fail;
use clap::{Args, ValueEnum};
use prof::aggregate::{DiffOptions, DiffSide, DiffTable, SortBy};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `prof diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The profile to compare against (any format `prof report` reads).
    base: PathBuf,
    /// The profile to compare (any format `prof report` reads).
    new: PathBuf,
    /// How many functions to list.
    #[arg(long, default_value_t = prof::DEFAULT_TOP)]
    top: usize,
    #[command(flatten)]
    limit: super::InputLimit,
    /// Compare self weights (time in the function itself) or total (with callees).
    #[arg(long, value_enum, default_value_t = By::SelfWeight)]
    sort: By,
    /// Compare raw weights instead of each side's share of its own total.
    #[arg(long)]
    absolute: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum By {
    #[value(name = "self")]
    SelfWeight,
    Total,
}

/// Runs `prof diff`.
pub fn run(args: DiffArgs) -> ExitCode {
    let mut options = prof::import::LoadOptions::default();
    options.max_bytes = args.limit.bytes();
    let load = |path: &PathBuf| prof::import::load_any_with(path, &options).map(|l| l.session);
    let (base, new) = match (load(&args.base), load(&args.new)) {
        (Ok(base), Ok(new)) => (base, new),
        (Err(err), _) | (_, Err(err)) => return fail(&err),
    };
    let (base_label, new_label) = (
        args.base.display().to_string(),
        args.new.display().to_string(),
    );
    let options = DiffOptions::default()
        .top(args.top)
        .by(match args.sort {
            By::SelfWeight => SortBy::SelfWeight,
            By::Total => SortBy::Total,
        })
        .absolute(args.absolute);
    let side = |label, session| DiffSide { label, session };
    let table = match DiffTable::new(side(&base_label, &base), side(&new_label, &new), options) {
        Ok(table) => table,
        Err(err) => return fail(&err.into()),
    };
    match write!(std::io::stdout().lock(), "{table}") {
        // A closed pipe (`prof diff a b | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(&prof::Error::Write(e)),
        _ => ExitCode::SUCCESS,
    }
}
