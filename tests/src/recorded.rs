//! Helpers for the tests and benches of `prof record`: the test programs of `tests/data/record/`
//! built as users build them, a recording's output and session, and what a session says about
//! named functions and threads.

use crate::{prof, TempDir};
use prof::session::Session;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The path of `tests/data/record/NAME`.
pub fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/record")
        .join(name)
}

/// Compiles `tests/data/record/NAME.c` as a user would (`cc -O2 -fomit-frame-pointer`, no debug
/// info) into `dir`.
pub fn build_c(dir: &Path, name: &str) -> PathBuf {
    compile(
        "cc",
        &["-O2", "-fomit-frame-pointer"],
        &source(&format!("{name}.c")),
        &dir.join(name),
    )
}

/// Compiles `source` with `compiler` and `flags` (and `-pthread`) into `exe`.
pub fn compile(compiler: &str, flags: &[&str], source: &Path, exe: &Path) -> PathBuf {
    let status = Command::new(compiler)
        .args(flags)
        .args(["-pthread", "-o"])
        .arg(exe)
        .arg(source)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} runs (the tests need it): {e}"));
    assert!(status.success(), "{compiler} {}", source.display());
    exe.to_path_buf()
}

/// Runs `prof record -o DIR/out.json.gz ARGS...` and returns the output and the session.
pub fn record(dir: &TempDir, args: &[&str]) -> (Output, Session) {
    let out = dir.join("out.json.gz");
    let mut all = vec!["record", "-o", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = prof(&all);
    let session = prof::session::load(&out)
        .unwrap_or_else(|e| panic!("{e}; stderr: {}", String::from_utf8_lossy(&output.stderr)));
    (output, session)
}

/// The share of `session`'s weight whose stack holds a frame `named` accepts.
pub fn share_where(session: &Session, named: impl Fn(&str) -> bool) -> f64 {
    let mut with = 0;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session
            .stack_frames(stack)
            .any(|f| named(session.frame_name(f)))
        {
            with += session.samples.weight[i];
        }
    }
    with as f64 / session.total_weight() as f64
}

/// The share of `session`'s weight whose stack holds a frame named `name`.
pub fn share(session: &Session, name: &str) -> f64 {
    share_where(session, |f| f == name)
}

/// The share of samples whose stack reaches one of `roots`.
pub fn reaching(session: &Session, roots: &[&str]) -> f64 {
    let n = session.samples.stack.len();
    let reached = session
        .samples
        .stack
        .iter()
        .filter(|&&s| {
            session
                .stack_frames(s)
                .any(|f| roots.contains(&session.frame_name(f)))
        })
        .count();
    reached as f64 / n as f64
}

/// The number of samples of each thread id, in the order the session lists its threads.
pub fn samples_per_tid(session: &Session) -> Vec<(u64, usize)> {
    let mut counts = vec![0usize; session.threads.len()];
    for t in &session.samples.thread {
        counts[t.index()] += 1;
    }
    session
        .threads
        .iter()
        .zip(counts)
        .map(|(t, n)| (t.tid, n))
        .collect()
}

/// The clock ticks of user CPU time process `pid` has used (0 once it is gone).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |x| x.1)
        .split_whitespace()
        .collect();
    fields.get(11).and_then(|t| t.parse().ok()).unwrap_or(0)
}

/// Waits until a child of `parent` (prof, running the command) has used `ticks` clock ticks of
/// CPU, so that it has samples, or two minutes have passed.
pub fn wait_for_cpu(parent: u32, ticks: u64) {
    let started = std::time::Instant::now();
    while started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        // The children of each of its threads (prof starts the command on a thread of its own).
        let mut children = String::new();
        for task in std::fs::read_dir(format!("/proc/{parent}/task"))
            .into_iter()
            .flatten()
        {
            let path = task.map(|t| t.path().join("children"));
            children += &path.and_then(std::fs::read_to_string).unwrap_or_default();
            children.push(' ');
        }
        let busy = children
            .split_whitespace()
            .any(|pid| pid.parse().is_ok_and(|pid| cpu_ticks(pid) >= ticks));
        if busy {
            return;
        }
    }
}

/// Runs `prof record -o OUT -- COMMAND...` in a process group of its own (as a terminal's
/// foreground job), waits until it has used 30 ticks of CPU, sends Ctrl-C (SIGINT) to the whole
/// group, and returns how prof ended and its standard error.
pub fn record_then_ctrl_c(out: &Path, command: &[&str]) -> (std::process::ExitStatus, String) {
    record_then_ctrl_c_with(out, &[], command)
}

/// [`record_then_ctrl_c`] with `flags` given to `prof record` too.
pub fn record_then_ctrl_c_with(
    out: &Path,
    flags: &[&str],
    command: &[&str],
) -> (std::process::ExitStatus, String) {
    let prof = record_in_foreground(out, flags, command, std::process::Stdio::null());
    wait_for_cpu(prof.id(), 30);
    ctrl_c(prof)
}

/// Starts `prof record -o OUT FLAGS... -- COMMAND...` in a process group of its own, as a
/// terminal's foreground job, its standard error piped and its standard output to `stdout`.
pub fn record_in_foreground(
    out: &Path,
    flags: &[&str],
    command: &[&str],
    stdout: std::process::Stdio,
) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    // As a terminal's foreground job has them, whatever this process inherited: a shell
    // running the tests in the background ignores SIGINT and SIGQUIT, and the command would
    // inherit that through prof (as it would without prof) and never see the Ctrl-C.
    Command::new("env")
        .arg("--default-signal=INT,QUIT")
        .arg(crate::prof_bin())
        .args(["record", "-o", out.to_str().unwrap()])
        .args(flags)
        .arg("--")
        .args(command)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Sends Ctrl-C (SIGINT) to the process group of `prof` (started by [`record_in_foreground`])
/// and returns how prof ended and its standard error.
pub fn ctrl_c(mut prof: std::process::Child) -> (std::process::ExitStatus, String) {
    let kill = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", prof.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = prof.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(prof.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}
