//! Which processes `prof record -- CMD` records, and for how long, against the real binary: a
//! command that leaves a child running (`tests/data/record/leaves_child.c`), as a plain
//! orphan or as a daemon that left the session. By default the recording ends when the
//! command exits, keeps what the child did until then, names the child left running and does
//! not touch it; `--follow-descendants` records the child to its end; Ctrl-C to the terminal's
//! group ends the recording at the command's end though the child ignores it; `--duration`
//! ends the recording of a command that runs on. Alloc mode keeps the same rule.

use prof::session::Session;
use prof_e2e::recorded::{
    build_c, cpu_ticks, ctrl_c, reaching, record, record_in_foreground, record_then_ctrl_c_with,
};
use prof_e2e::TempDir;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The pid `leaves_child` printed for its child (`child PID` on its standard output).
fn child_pid(stdout: &[u8]) -> u32 {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("child ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no child pid in {text:?}"))
}

/// The state letter of process `pid` (`R`, `S`, `Z`...), `None` once it is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Whether process `pid` still runs (not gone, not a zombie).
fn running(pid: u32) -> bool {
    matches!(state(pid), Some(s) if s != 'Z' && s != 'X')
}

/// Kills process `pid` when dropped (a child left running by a test that failed half-way).
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

/// The CPU nanoseconds of `session`'s samples in `function` (on their stack), and the time of
/// the last of them (nanoseconds from the session's start); `(0, None)` without any.
fn in_function(session: &Session, function: &str) -> (u64, Option<u64>) {
    let mut weight = 0;
    let mut last = None;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session
            .stack_frames(stack)
            .any(|f| session.frame_name(f) == function)
        {
            weight += session.samples.weight[i];
            last = last.max(Some(session.samples.time_ns[i]));
        }
    }
    (weight, last)
}

/// Records `leaves_child ARGS...` with `flags` in `dir`: prof's output, the session, and the
/// child's pid (killed when the guard drops).
fn record_leaves_child(
    dir: &TempDir,
    flags: &[&str],
    args: &[&str],
) -> (Output, Session, KillOnDrop) {
    let exe = build_c(dir.path(), "leaves_child");
    let mut all: Vec<&str> = flags.to_vec();
    all.push("--");
    all.push(exe.to_str().unwrap());
    all.extend_from_slice(args);
    let (output, session) = record(dir, &all);
    let child = child_pid(&output.stdout);
    (output, session, KillOnDrop(child))
}

#[test]
fn a_command_leaving_a_child_running_is_recorded_until_it_exits_and_the_child_is_named() {
    let dir = TempDir::new("record_children_orphan");
    // The child spins 30 s of CPU: far longer than prof may take to end.
    let (output, session, child) = record_leaves_child(&dir, &[], &["30", "0.3"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // prof ended with the command, as it ended, and left the child running, untouched.
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        running(child.0),
        "the child was ended: {:?}",
        state(child.0)
    );
    assert!(
        stderr.contains(&format!(
            "leaving 1 process running (pid {} `leaves_child`), not recorded after that: \
             --follow-descendants records them until they end",
            child.0
        )),
        "{stderr}"
    );
    // What the child did while the command ran is kept, and nothing after the command's end.
    let (parent, parent_last) = in_function(&session, "spin_parent");
    let (left, left_last) = in_function(&session, "spin_left");
    assert!(parent > 100_000_000, "spin_parent {parent} ns");
    assert!(left > 0, "no sample of the child while the command ran");
    let (parent_last, left_last) = (parent_last.unwrap(), left_last.unwrap());
    assert!(
        left_last <= parent_last + 100_000_000,
        "the child's last sample at {left_last} ns, the command's at {parent_last} ns"
    );
    assert!(left < 5_000_000_000, "spin_left {left} ns");
}

#[test]
fn follow_descendants_records_a_child_left_running_until_it_exits() {
    let dir = TempDir::new("record_children_follow");
    let (output, session, child) =
        record_leaves_child(&dir, &["--follow-descendants"], &["1", "0.1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    // prof waited for the child, which ran its whole second of CPU.
    assert!(!running(child.0), "{:?}", state(child.0));
    let (left, _) = in_function(&session, "spin_left");
    assert!(left >= 800_000_000, "spin_left {left} ns: {stderr}");
    assert!(!stderr.contains("leaving"), "{stderr}");
}

#[test]
fn a_daemon_is_named_by_default_and_followed_to_its_end_with_follow_descendants() {
    let dir = TempDir::new("record_children_daemon");
    // By default: the daemon (a child that called setsid) is left to run and named.
    let (output, _, daemon) = record_leaves_child(&dir, &[], &["30", "0", "daemon"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(running(daemon.0), "{:?}", state(daemon.0));
    assert!(
        stderr.contains(&format!("(pid {} `leaves_child`)", daemon.0)),
        "{stderr}"
    );
    drop(daemon);
    // Followed: recorded until it exits, listed as the command's child.
    let (output, session, daemon) =
        record_leaves_child(&dir, &["--follow-descendants"], &["1", "0", "daemon"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!running(daemon.0), "{:?}", state(daemon.0));
    let (left, _) = in_function(&session, "spin_left");
    assert!(left >= 800_000_000, "spin_left {left} ns: {stderr}");
    let listed = session
        .processes
        .iter()
        .find(|p| p.pid == daemon.0)
        .unwrap_or_else(|| panic!("the daemon is not listed: {:#?}", session.processes));
    assert_eq!(listed.parent_pid, Some(session.meta.pid));
}

#[test]
fn ctrl_c_to_the_group_ends_the_recording_at_the_commands_end_though_its_child_ignores_it() {
    let dir = TempDir::new("record_children_ctrl_c");
    let exe = build_c(dir.path(), "leaves_child");
    for flags in [&[][..], &["--follow-descendants"][..]] {
        let out = dir.join("out.json.gz");
        let _ = std::fs::remove_file(&out);
        // The command spins until Ctrl-C ends it; its child ignores Ctrl-C and spins 60 s.
        let command = [exe.to_str().unwrap(), "60", "600", "ignore-int"];
        let (status, stderr) = record_then_ctrl_c_with(&out, flags, &command);
        let child = stderr
            .split("(pid ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next()?.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("{flags:?}: the child is not named: {stderr}"));
        let child = KillOnDrop(child);
        // The command's status (its default action on SIGINT), with the child still running.
        assert_eq!(status.code(), Some(128 + 2), "{flags:?}: {stderr}");
        assert!(running(child.0), "{flags:?}: {:?}", state(child.0));
        let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        assert!(in_function(&session, "spin_parent").0 > 0, "{stderr}");
    }
}

#[test]
fn with_follow_descendants_ctrl_c_after_the_command_exited_ends_the_recording_and_saves() {
    let dir = TempDir::new("record_children_follow_ctrl_c");
    let exe = build_c(dir.path(), "leaves_child");
    let out = dir.join("out.json.gz");
    let command = [exe.to_str().unwrap(), "60", "0.2", "ignore-int"];
    let mut prof = record_in_foreground(&out, &["--follow-descendants"], &command, Stdio::piped());
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(prof.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let child = KillOnDrop(child_pid(line.as_bytes()));
    // The command has exited (prof has no child left) and its child has run a while since.
    prof_e2e::page::eventually("the command's end", || {
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", prof.id()));
        children.is_ok_and(|c| c.trim().is_empty())
    });
    let before = cpu_ticks(child.0);
    prof_e2e::page::eventually("the child's CPU time", || cpu_ticks(child.0) >= before + 30);
    let (status, stderr) = ctrl_c(prof);
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(running(child.0), "{:?}", state(child.0));
    assert!(stderr.contains("interrupted"), "{stderr}");
    let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    // The child's time after the command's end is in the session.
    let (left, _) = in_function(&session, "spin_left");
    assert!(left >= 200_000_000, "spin_left {left} ns: {stderr}");
}

/// Records `sh -c 'exec PROGRAM ARGS >/dev/null'` (the command holds none of prof's pipes)
/// for `duration` in `mode`; the output, the session and the command's pid.
fn record_for(
    dir: &TempDir,
    mode: &str,
    duration: &str,
    program: &Path,
    args: &str,
) -> (Output, Session, KillOnDrop) {
    let script = format!("exec {} {args} >/dev/null 2>&1", program.display());
    let (output, session) = record(
        dir,
        &[
            "--mode",
            mode,
            "--duration",
            duration,
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let pid = session.meta.pid;
    (output, session, KillOnDrop(pid))
}

#[test]
fn duration_ends_the_recording_of_a_command_that_runs_on_untouched() {
    let dir = TempDir::new("record_children_duration");
    let exe = build_c(dir.path(), "leaves_child");
    for mode in ["cpu", "alloc"] {
        let started = std::time::Instant::now();
        // The command spins ten minutes of CPU.
        let (output, session, command) = record_for(&dir, mode, "1s", &exe, "0 600");
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{mode}: {stderr}");
        assert!(took < Duration::from_secs(60), "{mode}: prof took {took:?}");
        assert!(
            matches!(state(command.0), Some('R' | 'S')),
            "{mode}: the command is {:?}",
            state(command.0)
        );
        assert!(
            session.meta.duration_ns >= 1_000_000_000,
            "{mode}: {}",
            session.meta.duration_ns
        );
        assert!(
            stderr.contains("recorded for --duration 1.00 s: the command runs on"),
            "{mode}: {stderr}"
        );
        assert!(!session.samples.is_empty(), "{mode}: {stderr}");
    }
}

#[test]
fn alloc_mode_ends_with_the_command_unless_asked_to_follow_its_descendants() {
    let dir = TempDir::new("record_children_alloc");
    let (output, session, child) = record_leaves_child(&dir, &["--mode", "alloc"], &["30", "0.3"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(running(child.0), "{:?}", state(child.0));
    assert!(
        stderr.contains(&format!(
            "leaving 1 process running (pid {} `leaves_child`)",
            child.0
        )),
        "{stderr}"
    );
    assert!(in_function(&session, "spin_parent").0 > 0, "{stderr}");
    drop(child);
    let (output, session, child) = record_leaves_child(
        &dir,
        &["--mode", "alloc", "--follow-descendants"],
        &["1", "0.1"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!running(child.0), "{:?}", state(child.0));
    // A second of rounds allocating 64 KiB each (against 0.1 s of the command's): many
    // samples at the 512 KiB mean, most of them the child's.
    let left = reaching(&session, &["spin_left"]);
    let samples = session.samples.len();
    assert!(
        samples >= 20 && left >= 0.5,
        "{samples} samples, {left} in spin_left: {stderr}"
    );
}
