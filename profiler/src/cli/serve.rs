//! `prof serve FILE...`: the browser viewer for profiles of any format `prof` reads.

use super::exit::fail;
use clap::Args;
use prof::import::LoadOptions;
use prof::serve::{self, Opened, Port, ServeOptions, Server};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `prof serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Profiles to show: sessions (JSON, optionally gzipped), folded stacks, `perf script` output
    /// or pprof, as `prof report` reads them; the page switches between them.
    #[arg(required_unless_present = "diff", value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Compare NEW with BASE: serves both (before any FILE) and opens the page on the Diff view
    /// of NEW against BASE, as `prof diff BASE NEW` compares them.
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"])]
    diff: Option<Vec<PathBuf>>,
    /// Start each stack of a `perf script` file with its process name (spaces as `_`), as
    /// stackcollapse-perf.pl and inferno do by default; other formats have no process name.
    #[arg(long)]
    process_root: bool,
    #[command(flatten)]
    limit: super::InputLimit,
    #[command(flatten)]
    flags: ServeFlags,
}

/// How to serve: shared by `prof serve` and `prof demo`, which serves its session the same way.
#[derive(Debug, Args)]
pub struct ServeFlags {
    /// Listen on exactly this port (0: any free port). By default the first free port from 7420.
    #[arg(long, value_name = "N")]
    port: Option<u16>,
    /// Listen on this address instead of 127.0.0.1. Anything but loopback exposes the profile
    /// to the network.
    #[arg(long, value_name = "ADDR")]
    host: Option<IpAddr>,
    /// Do not open a browser; just print the URL.
    #[arg(long)]
    no_open: bool,
    /// Where the Source view reads source files from (default: the current directory). Only
    /// files that frames of the served profiles name are read, and only under this directory.
    #[arg(long, value_name = "DIR")]
    source_root: Option<PathBuf>,
}

/// The page's state for `--diff`: the second file (NEW) in the Diff view, against the first.
const DIFF_FRAGMENT: &str = "#file=1&view=diff&base=0";

/// Runs `prof serve`: serves until interrupted.
pub fn run(args: ServeArgs) -> ExitCode {
    let mut load = LoadOptions::default();
    load.process_root = args.process_root;
    load.max_bytes = args.limit.bytes();
    match args.diff {
        Some(pair) => {
            let files: Vec<PathBuf> = pair.into_iter().chain(args.files).collect();
            serve_files_at(&files, &load, &args.flags, DIFF_FRAGMENT)
        }
        None => serve_files_at(&args.files, &load, &args.flags, ""),
    }
}

/// Serves `files` in the viewer until interrupted.
pub fn serve_files(files: &[PathBuf], args: &ServeFlags) -> ExitCode {
    serve_files_at(files, &LoadOptions::default(), args, "")
}

/// Serves `files`, read with `load`, in the viewer until interrupted, opening the page in the
/// state `fragment` says (`#...`, or empty for the first file's flame graph).
fn serve_files_at(
    files: &[PathBuf],
    load: &LoadOptions,
    args: &ServeFlags,
    fragment: &str,
) -> ExitCode {
    let mut sessions = Vec::with_capacity(files.len());
    for path in files {
        match serve::load_for_serving_with(path, load) {
            Ok((file, problem)) => {
                if let Some(problem) = problem {
                    eprintln!("warning: {problem} (the page will show this error)");
                }
                sessions.push(file);
            }
            Err(e) => return fail(&e),
        }
    }
    let host = args.host.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    if let Some(warning) = serve::exposure_warning(host) {
        eprintln!("warning: {warning}");
    }
    let port = match args.port {
        Some(n) => Port::Exact(n),
        None => Port::FirstFreeFrom(serve::DEFAULT_PORT),
    };
    let mut options = ServeOptions::new(host, port);
    if let Some(root) = &args.source_root {
        if !root.is_dir() {
            return fail(&prof::Error::InvalidOption(format!(
                "--source-root {}: not a directory",
                root.display()
            )));
        }
        options = options.with_source_root(root);
    }
    let server = match Server::start(sessions, &options) {
        Ok(server) => server,
        Err(e @ prof::Error::PortsInUse { first, last, .. }) => {
            let hint = match first == last {
                true => format!(
                    "--port {first}: {e}; choose another port, or --port 0 for any free one"
                ),
                false => format!("{e}; choose one with --port (0 for any free one)"),
            };
            return fail(&prof::Error::InvalidOption(hint));
        }
        Err(e) => return fail(&e),
    };
    let url = format!("{}{fragment}", server.url());
    println!("prof viewer: {url}");
    if !args.no_open {
        report_open(serve::open_browser(&url));
    }
    println!("press Ctrl-C to stop");
    // The server runs until the process is interrupted; it returns only when it cannot go on.
    match server.wait() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn report_open(opened: Opened) {
    match opened {
        Opened::Launched(_) => {}
        Opened::NoDisplay => eprintln!("no display: open the URL above in a browser"),
        Opened::Failed(why) => {
            eprintln!("could not open a browser ({why}): open the URL above yourself")
        }
        _ => {}
    }
}
