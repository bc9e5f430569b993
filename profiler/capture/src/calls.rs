//! Counting calls (`prof record --calls REGEX`, `Options::count_calls`): every call of the
//! functions whose names match, counted exactly by the kernel with no change to the program.
//! Each function gets a uprobe (defined in tracefs, on the function's first instruction in its
//! file: see [`crate::sys::Uprobes`] for why not the `uprobe` PMU) and a perf event counting
//! its hits, opened on a command held before its `exec` (or on each thread of a running
//! process) and inherited by every thread and child process started after; the kernel counts
//! each entry with no record written, and the counts are read once, at the end (a process that
//! ended had its count added as it did).
//!
//! The files searched are the program and the shared libraries it links (found as the dynamic
//! loader finds them: [`crate::probes::needed_libraries`]); for a running process, every file it
//! has mapped executable. Libraries opened later with `dlopen`, and other programs a
//! child process runs, are not probed. Calls the compiler inlined are not entries: the count is
//! of calls that reached the function's own code.

use crate::perf::records::CallRecord;
use crate::probes::{self, ProbePoint};
use crate::sys;
use crate::timed_calls::{CallTimer, DEFAULT_MAX_SPANS};
use prof_session::session::CountedFunction;
use prof_session::{Error, Result};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How many functions the patterns may match before the recording is refused (unless the
/// caller raises it): a counting event each, and a breakpoint in each.
pub const DEFAULT_CALLS_MAX: usize = 5_000;

/// The counting events of one recording, with `--calls-timed` the events recording each entry
/// and return and their rings, and the uprobes they count (removed after the events are closed:
/// the fields drop in this order).
pub struct CallCounters {
    counters: Vec<Counter>,
    timing: Option<Timing>,
    _uprobes: sys::Uprobes,
}

/// The events that record each entry and return of the counted functions: one of each per
/// function, CPU and task opened on, writing to one ring per CPU (the first event opened on
/// it), each record naming its event by id; and the calls their records timed.
struct Timing {
    /// The ring of each CPU, by CPU.
    rings: Vec<(u32, sys::PerfRing)>,
    /// The events writing to them (kept open while recording).
    events: Vec<OwnedFd>,
    /// Each event's id: its function (an index into the counters) and whether it is a return.
    ids: HashMap<u64, (u32, bool)>,
    timer: CallTimer,
}

/// Data pages of each CPU's ring of call records (a power of two): 1 MiB, some 13,000 records,
/// read every few milliseconds.
const CALL_RING_PAGES: usize = 256;

/// One function's counting events: one per task opened on (with `--pid`, each thread that
/// ran when prof came; else the command, whose threads and children inherit it).
struct Counter {
    /// Its uprobe's tracepoint.
    id: u64,
    /// Its return probe's tracepoint, when its calls are timed.
    return_id: Option<u64>,
    /// The file, as the session names it.
    module: String,
    point: ProbePoint,
    /// Whether its file's debug info shows inlined copies (`None`: no debug info).
    inlined: Option<bool>,
    events: Vec<OwnedFd>,
}

/// The functions of `files` whose names match one of `patterns` (regular expressions, found
/// anywhere in the name), at most `max` of them; each function once, in the files' order.
fn matching(
    files: &[File],
    patterns: &[String],
    max: usize,
) -> Result<Vec<(File, ProbePoint, Option<bool>)>> {
    let regexes = patterns
        .iter()
        .map(|p| {
            regex::Regex::new(p).map_err(|e| {
                let why = e.to_string();
                let why = why
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                Error::InvalidOption(format!("--calls {p:?} is not a regular expression: {why}"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let wanted = |name: &str| regexes.iter().any(|r| r.is_match(name));
    let found: Vec<(&File, Vec<ProbePoint>)> = files
        .iter()
        .map(|file| (file, probes::functions_matching(&file.open, &wanted)))
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let matched: usize = found.iter().map(|(_, points)| points.len()).sum();
    let searched = || {
        let names: Vec<String> = files
            .iter()
            .take(4)
            .map(|f| f.shown.rsplit('/').next().unwrap_or(&f.shown).to_owned())
            .collect();
        let more = files.len().saturating_sub(4);
        if more > 0 {
            format!("{} and {more} more", names.join(", "))
        } else {
            names.join(", ")
        }
    };
    if matched == 0 {
        return Err(Error::Calls(format!(
            "{} matches no function with a symbol in {} (stripped code has none to match)",
            quoted(patterns),
            searched()
        )));
    }
    if matched > max {
        return Err(Error::Calls(format!(
            "{} matches {matched} functions, more than {max} (narrow it, or raise the bound with --calls-max)",
            quoted(patterns),
        )));
    }
    // Only the files with a function to count have their debug info read, once the count is
    // known to be within the bound.
    let mut out = Vec::with_capacity(matched);
    for (file, points) in found {
        let inlined = probes::inlined_functions(&file.open);
        for point in points {
            let inlined = inlined.as_ref().map(|names| names.contains(&point.name));
            out.push((file.clone(), point, inlined));
        }
    }
    Ok(out)
}

/// The patterns as the user gave them: `'a' 'b'`.
fn quoted(patterns: &[String]) -> String {
    patterns
        .iter()
        .map(|p| format!("'{p}'"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The functions to count, found before the command starts.
pub struct CallProbes {
    /// Each function, its file, and whether its file's debug info shows inlined copies.
    found: Vec<(File, ProbePoint, Option<bool>)>,
}

/// A file to probe: the path the kernel opens, and the path shown.
#[derive(Clone, Debug)]
pub struct File {
    /// Where prof and the kernel read it (through `/proc/PID/root` for a running process).
    pub open: PathBuf,
    /// Its path as the process sees it.
    pub shown: String,
}

impl File {
    fn plain(path: PathBuf) -> File {
        File {
            shown: path.to_string_lossy().into_owned(),
            open: path,
        }
    }
}

impl CallProbes {
    /// The functions of `files` whose names match one of `patterns`: refused when none does
    /// and when more than `max` do.
    pub fn find(files: &[File], patterns: &[String], max: usize) -> Result<CallProbes> {
        Ok(CallProbes {
            found: matching(files, patterns, max)?,
        })
    }

    /// How many functions were found.
    pub fn len(&self) -> usize {
        self.found.len()
    }

    /// Whether none was (never, once found: [`CallProbes::find`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// A uprobe on each function found (and, when `timed`, a return probe), its counters
    /// counting nothing until opened on a task ([`CallCounters::open_on`]).
    pub fn counters(self, timed: bool) -> Result<CallCounters> {
        let mut uprobes = sys::Uprobes::new().map_err(|e| defining(e, None))?;
        let mut counters = Vec::with_capacity(self.found.len());
        for (file, point, inlined) in self.found {
            let id = uprobes
                .add(&file.open, point.offset)
                .map_err(|e| defining(e, Some(&point.name)))?;
            let return_id = if timed {
                Some(
                    uprobes
                        .add_return(&file.open, point.offset)
                        .map_err(|e| defining(e, Some(&point.name)))?,
                )
            } else {
                None
            };
            counters.push(Counter {
                id,
                return_id,
                module: file.shown,
                point,
                inlined,
                events: Vec::new(),
            });
        }
        Ok(CallCounters {
            timing: timed.then(|| Timing {
                rings: Vec::new(),
                events: Vec::new(),
                ids: HashMap::new(),
                timer: CallTimer::new(counters.len(), DEFAULT_MAX_SPANS),
            }),
            counters,
            _uprobes: uprobes,
        })
    }
}

/// The error for a uprobe tracefs would not define (for function `name`).
fn defining(e: std::io::Error, name: Option<&str>) -> Error {
    let what = name.map_or(String::new(), |n| format!(" for {n}"));
    if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) {
        Error::Calls(format!(
            "cannot define a uprobe{what} in tracefs ({e}): counting calls needs root"
        ))
    } else {
        Error::Calls(format!("cannot define a uprobe{what}: {e}"))
    }
}

impl CallCounters {
    /// Counts the calls that task `tid` makes to each function, and those of the threads and
    /// child processes it starts from now on (a held command's, before its `exec`, unless
    /// `attach`: then from now, for a task that runs).
    pub fn open_on(&mut self, tid: u32, attach: bool) -> Result<()> {
        // A descriptor each (and two per CPU more each when timed), beside the rings' and
        // prof's own.
        let opened: usize = self.counters.iter().map(|c| c.events.len()).sum::<usize>()
            + self.timing.as_ref().map_or(0, |t| t.events.len());
        let cpus = sys::online_cpus();
        let per_counter = if self.timing.is_some() {
            1 + 2 * cpus.len()
        } else {
            1
        };
        sys::raise_open_files_limit((opened + self.counters.len() * per_counter) as u64 + 1024);
        for counter in &mut self.counters {
            let event = sys::tracepoint_counter(counter.id, tid, attach)
                .map_err(|e| refused(e, &counter.point.name, opened))?;
            counter.events.push(event);
        }
        if let Some(timing) = &mut self.timing {
            for (function, counter) in self.counters.iter().enumerate() {
                let probes = [(counter.id, false)]
                    .into_iter()
                    .chain(counter.return_id.map(|id| (id, true)));
                for (id, returned) in probes {
                    for &cpu in &cpus {
                        let event = sys::tracepoint_recorder(id, tid, cpu, attach)
                            .map_err(|e| refused(e, &counter.point.name, opened))?;
                        timing.add(event, cpu, function as u32, returned)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Appends the call records written since the last call to `out` (whole records, every
    /// CPU's after another's: `crate::perf::records::parse_calls` reads them).
    pub fn drain(&mut self, out: &mut Vec<u8>) {
        if let Some(timing) = &mut self.timing {
            for (_, ring) in &mut timing.rings {
                ring.drain(out);
            }
        }
    }

    /// Takes in a record of [`CallCounters::drain`]'s, in time order with the others: an entry
    /// or a return of a counted function (a record of another event is ignored).
    pub fn record(&mut self, c: &CallRecord) {
        let Some(timing) = &mut self.timing else {
            return;
        };
        let Some(&(function, returned)) = timing.ids.get(&c.id) else {
            return;
        };
        if returned {
            timing.timer.returned(c.tid, function, c.time, c.sp);
        } else {
            timing.timer.entered(c.tid, function, c.time, c.sp, c.top);
        }
    }

    /// The kernel dropped `n` call records (a full ring).
    pub fn lost(&mut self, n: u64) {
        if let Some(timing) = &mut self.timing {
            timing.timer.lost(n);
        }
    }

    /// Thread `tid` ended: its calls still open will not return.
    pub fn thread_ended(&mut self, tid: u32) {
        if let Some(timing) = &mut self.timing {
            timing.timer.thread_ended(tid);
        }
    }

    /// The calls timed so far, when entries and returns are recorded (`--calls-timed`).
    pub fn timer(&self) -> Option<&CallTimer> {
        self.timing.as_ref().map(|t| &t.timer)
    }

    /// Each function's calls until now, timed when entries and returns are recorded, and the
    /// timer with the calls it kept; the events are closed and the uprobes removed.
    pub fn finish(self) -> (Vec<CountedFunction>, Option<CallTimer>) {
        let counted = self.counts();
        (counted, self.timing.map(|t| t.timer))
    }

    /// Each function's calls so far (the sum over the tasks it was opened on), in the order
    /// found, with its timed calls when entries and returns are recorded.
    pub fn counts(&self) -> Vec<CountedFunction> {
        let timed = self.timer().map(CallTimer::timed);
        self.counters
            .iter()
            .enumerate()
            .map(|(i, c)| CountedFunction {
                name: c.point.name.clone(),
                module: c.module.clone(),
                offset: c.point.offset,
                calls: c
                    .events
                    .iter()
                    .map(|e| sys::read_count(e).unwrap_or(0))
                    .fold(0, u64::saturating_add),
                inlined: c.inlined,
                timed: timed.and_then(|t| t.get(i).copied()),
            })
            .collect()
    }
}

impl Timing {
    /// Keeps `event` (on `cpu`, recording `function`'s entries or returns): the first on its
    /// CPU gets a ring, the others write to it.
    fn add(&mut self, event: OwnedFd, cpu: u32, function: u32, returned: bool) -> Result<()> {
        let id = sys::perf_event_id(&event)?;
        self.ids.insert(id, (function, returned));
        match self.rings.iter().find(|(c, _)| *c == cpu) {
            Some((_, ring)) => {
                sys::perf_event_set_output(&event, ring.fd())?;
                self.events.push(event);
            }
            None => {
                let ring = sys::PerfRing::new(event, CALL_RING_PAGES)?;
                self.rings.push((cpu, ring));
            }
        }
        Ok(())
    }
}

/// The error for a counting event the kernel would not open.
fn refused(e: Error, name: &str, opened: usize) -> Error {
    match e {
        Error::Os { source, .. } => match source.raw_os_error() {
            Some(libc::EACCES | libc::EPERM) => Error::Calls(format!(
                "the kernel refused to count calls of {name} ({source}): counting calls needs root"
            )),
            Some(libc::EMFILE | libc::ENFILE) => Error::Calls(format!(
                "out of descriptors after {opened} counted functions ({source}): raise `ulimit -n` or match fewer"
            )),
            _ => Error::Calls(format!("cannot count calls of {name}: {source}")),
        },
        e => e,
    }
}

/// The files whose functions a command's calls may reach before any `dlopen`: its program and
/// the libraries that links. `None` when the program is not found (the spawn then says so).
pub fn command_files(command: &Command) -> Option<Vec<File>> {
    let program = program_path(command)?;
    let libraries =
        probes::needed_libraries(&program, env_of(command, "LD_LIBRARY_PATH").as_deref());
    Some(
        std::iter::once(program)
            .chain(libraries)
            .map(File::plain)
            .collect(),
    )
}

/// The value of `name` in the environment `command` runs with: its own setting, else prof's.
fn env_of(command: &Command, name: &str) -> Option<OsString> {
    match command.get_envs().find(|(k, _)| *k == OsStr::new(name)) {
        Some((_, value)) => value.map(OsStr::to_owned),
        None => std::env::var_os(name),
    }
}

/// The file a command's program names, as `exec` finds it: a path with a `/` from the
/// command's directory, else the first executable file of that name in `PATH`.
fn program_path(command: &Command) -> Option<PathBuf> {
    let program = Path::new(command.get_program());
    let base = command
        .get_current_dir()
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())?;
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Some(base.join(program));
    }
    let path = env_of(command, "PATH")?;
    std::env::split_paths(&path)
        .map(|dir| base.join(dir).join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The files process `pid` has mapped executable (its program and libraries), each once, read
/// through `/proc/PID/root` so a process in another mount namespace gives its own files.
pub fn process_files(pid: u32) -> Vec<File> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    let mut files: Vec<File> = Vec::new();
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let perms = fields.nth(1).unwrap_or("");
        let path = fields.nth(3).unwrap_or("");
        if !perms.contains('x') || !path.starts_with('/') {
            continue;
        }
        if !files.iter().any(|f| f.shown == path) {
            files.push(File {
                open: PathBuf::from(format!("/proc/{pid}/root{path}")),
                shown: path.to_owned(),
            });
        }
    }
    files
}
