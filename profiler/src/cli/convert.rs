//! `prof convert FILE --to FORMAT -o OUT`: reads any profile `prof` understands and writes it in
//! another format.

use super::exit::{fail, BAD_INPUT};
use clap::{Args, ValueEnum};
use prof::aggregate::{DiffSide, DiffTree};
use prof::export::{svg, write_folded_diff, Format};
use prof::session::Session;
use prof::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `prof convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The profile to read: a prof session (.json, .json.gz), folded stacks, `perf script` output
    /// or pprof (gzipped or not); the format is told from the content.
    file: PathBuf,
    /// The format to write; by default inferred from the output name (.folded, .svg,
    /// .speedscope.json, .pb.gz/.pprof, .dot, .json/.json.gz for a session, .html).
    #[arg(long, value_enum)]
    to: Option<Target>,
    /// Where to write (`-` for standard output).
    #[arg(short, long)]
    output: PathBuf,
    /// The sample type to read: a pprof value column (`inuse_space`, `alloc_objects`, ...) or a
    /// `perf script` event (`cycles`); by default pprof's default type or perf's first event.
    #[arg(long = "type", value_name = "NAME")]
    sample_type: Option<String>,
    /// Start each stack of a `perf script` file with its process name (spaces as `_`), as
    /// stackcollapse-perf.pl and inferno do by default; other formats have no process name.
    #[arg(long)]
    process_root: bool,
    #[command(flatten)]
    limit: super::InputLimit,
    /// Draw FILE against this profile: a differential flame graph (`--to svg`, red where FILE
    /// grew, blue where it shrank) or differential folded stacks (`--to folded`).
    #[arg(long, value_name = "BASE")]
    diff: Option<PathBuf>,
    /// With --diff: compare raw weights instead of each side's share of its own total.
    #[arg(long, requires = "diff")]
    absolute: bool,
    /// Put each task's name (`task:NAME`, `task:(none)` outside tasks), or each sample's open
    /// scopes (`scope:NAME` frames, outermost first), above its stacks, as `go tool pprof
    /// -tagroot` does (every format but a session file, which keeps the tasks and scopes).
    #[arg(long, value_enum, value_name = "WHAT", conflicts_with = "diff")]
    group_by: Option<super::report::GroupBy>,
    /// Instead of the samples, where async tasks waited, as `prof report --waits` shows them:
    /// each wait between two polls of a task, weighted by its length, on the stack of the
    /// `.await` it waited at (a wall mode session of tasks wrapped in `prof::task::instrument`).
    #[arg(long, conflicts_with_all = ["diff", "sample_type"])]
    waits: bool,
}

/// The formats `prof convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Target {
    /// Folded stacks (flamegraph.pl, inferno).
    Folded,
    /// Flame graph SVG.
    Svg,
    /// speedscope JSON.
    Speedscope,
    /// Gzipped pprof profile.proto.
    Pprof,
    /// Graphviz dot call graph.
    Dot,
    /// prof session file (gzipped when the name ends in .gz).
    Session,
    /// Source lines annotated with weights (reads the source files named in the profile).
    Source,
    /// One self-contained HTML file with the viewer and the profile, to open from disk offline.
    Html,
}

impl Target {
    /// The library's name of the format.
    fn format(self) -> Format {
        match self {
            Target::Folded => Format::Folded,
            Target::Svg => Format::Svg,
            Target::Speedscope => Format::Speedscope,
            Target::Pprof => Format::Pprof,
            Target::Dot => Format::Dot,
            Target::Session => Format::Session,
            Target::Source => Format::Source,
            Target::Html => Format::Html,
        }
    }
}

/// The format an output name implies, if any (the library's table of names).
fn infer(output: &Path) -> Option<Target> {
    let format = Format::from_path(output)?;
    Target::value_variants()
        .iter()
        .copied()
        .find(|t| t.format() == format)
}

/// Runs `prof convert`.
pub fn run(args: ConvertArgs) -> ExitCode {
    let Some(target) = args.to.or_else(|| infer(&args.output)) else {
        eprintln!(
            "prof: cannot tell the output format from `{}`: add --to folded|svg|speedscope|pprof|dot|session|source|html",
            args.output.display()
        );
        return ExitCode::from(BAD_INPUT);
    };
    if args.diff.is_some() && !matches!(target, Target::Svg | Target::Folded) {
        eprintln!(
            "prof: --diff draws a differential flame graph: use it with --to svg or --to folded"
        );
        return ExitCode::from(BAD_INPUT);
    }
    let reading = super::Reading {
        sample_type: args.sample_type,
        process_root: args.process_root,
        limit: args.limit,
    };
    let result = match &args.diff {
        Some(base) => convert_diff(
            base,
            &args.file,
            &reading,
            target,
            args.absolute,
            &args.output,
        ),
        None => convert(
            &args.file,
            &reading,
            args.waits,
            args.group_by,
            target,
            &args.output,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&err),
    }
}

fn convert(
    input: &Path,
    reading: &super::Reading,
    waits: bool,
    group_by: Option<super::report::GroupBy>,
    target: Target,
    output: &Path,
) -> prof::Result<()> {
    // Before loading: a refused option should not wait for a large file to be read.
    if group_by.is_some() && target == Target::Session {
        return Err(Error::InvalidOption(
            "--group-by: a session file keeps the tasks and scopes themselves; group when \
             viewing or exporting it"
                .to_owned(),
        ));
    }
    let session = super::load(input, reading)?;
    let session = if waits {
        super::report::waits_of(&session, input)?
    } else {
        session
    };
    let session = match group_by {
        Some(group_by) => group_by.apply(&session),
        None => session,
    };
    if target == Target::Session && output != Path::new("-") {
        // No larger than a session prof reads back: the input is still there to narrow.
        return prof::session::save_within(&session, output, reading.limit.bytes());
    }
    if target == Target::Svg {
        // inferno draws after the session is dropped: it keeps its own frames.
        let flame = svg::FlameGraph::of(&session)?;
        drop(session);
        return write_output(output, move |bytes| flame.write(bytes));
    }
    let name = input.file_name().map_or_else(
        || input.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    write_output(output, |bytes| render(&session, target, &name, bytes))
}

/// Writes `new` against `base`: a differential flame graph or differential folded stacks.
fn convert_diff(
    base: &Path,
    new: &Path,
    reading: &super::Reading,
    target: Target,
    absolute: bool,
    output: &Path,
) -> prof::Result<()> {
    let base_session = super::load(base, reading)?;
    let new_session = super::load(new, reading)?;
    let (base_label, new_label) = (base.display().to_string(), new.display().to_string());
    let base = DiffSide {
        label: &base_label,
        session: &base_session,
    };
    let new = DiffSide {
        label: &new_label,
        session: &new_session,
    };
    write_output(output, |bytes| match target {
        Target::Svg => svg::write_diff_svg(base, new, absolute, bytes),
        _ => write_folded_diff(&DiffTree::between(base, new, absolute)?, bytes),
    })
}

/// Writes what `render` makes to `output` atomically, through a temporary file beside it (so a
/// failure never leaves a partial file and the output is never held in memory whole), or into
/// memory and then to standard output for `-`.
fn write_output(
    output: &Path,
    render: impl FnOnce(&mut dyn Write) -> prof::Result<()>,
) -> prof::Result<()> {
    let to_output = |e| match e {
        Error::Write(source) => Error::Io {
            path: output.to_owned(),
            source,
        },
        other => other,
    };
    if output == Path::new("-") {
        let mut bytes = Vec::new();
        render(&mut bytes).map_err(to_output)?;
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(&bytes)
            .and_then(|()| stdout.flush())
            .map_err(Error::Write);
    }
    prof::session::write_file_with(output, render)
}

/// Writes `session` as `target`; `name` is what the single-file viewer calls the profile.
fn render(session: &Session, target: Target, name: &str, out: &mut dyn Write) -> prof::Result<()> {
    prof::write_as(session, target.format(), name, &mut { out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_imply_formats() {
        let cases = [
            ("out.speedscope.json", Some(Target::Speedscope)),
            ("out.json", Some(Target::Session)),
            ("out.json.gz", Some(Target::Session)),
            ("a/b/OUT.SVG", Some(Target::Svg)),
            ("cpu.pb.gz", Some(Target::Pprof)),
            ("x.pprof", Some(Target::Pprof)),
            ("g.dot", Some(Target::Dot)),
            ("profile.html", Some(Target::Html)),
            ("stacks.folded", Some(Target::Folded)),
            ("stacks.txt", None),
        ];
        for (name, want) in cases {
            assert_eq!(infer(Path::new(name)), want, "{name}");
        }
    }
}
