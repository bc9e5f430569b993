//! `prof record -- CMD` against the real binary: C programs built as users build them
//! (`cc -O2 -fomit-frame-pointer`, no debug info) recorded from outside, their sessions read
//! back: attribution against the program's own CPU clock, names, stacks that reach the thread's
//! start, threads, child processes, the exit status passed through, and a command too short to
//! be sampled.

use prof::session::Session;
use prof_e2e::recorded::{build_c, reaching, record, record_then_ctrl_c, share};
use prof_e2e::{prof, TempDir};
use std::path::Path;
use std::process::Command;

#[test]
fn record_attributes_a_c_program_without_frame_pointers_as_its_own_cpu_clock_does() {
    let dir = TempDir::new("record_split");
    let exe = build_c(dir.path(), "split");
    let (output, session) = record(&dir, &["-F", "2000", "--", exe.to_str().unwrap(), "2"]);
    assert!(output.status.success(), "{output:?}");
    // The program's own measurement, on the standard output prof leaves to it.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"alpha"), "{stdout}");
    let alpha: f64 = words[1].parse().unwrap();
    let beta: f64 = words[3].parse().unwrap();
    assert!(
        session.samples.stack.len() >= 1000,
        "{} samples",
        session.samples.stack.len()
    );
    let (got_alpha, got_beta) = (share(&session, "spin_alpha"), share(&session, "spin_beta"));
    assert!(
        (got_alpha - alpha).abs() <= 0.02 && (got_beta - beta).abs() <= 0.02,
        "prof: alpha {got_alpha:.4} beta {got_beta:.4}; the program: alpha {alpha} beta {beta}"
    );
    let main = reaching(&session, &["main"]);
    assert!(main >= 0.95, "{:.1}% of stacks reach main", main * 100.0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("spin_beta") && stderr.contains("saved"),
        "{stderr}"
    );
}

/// The threads of `tests/data/record/threads.c` and the function each spins in.
const WORKERS: [(&str, &str); 2] = [
    ("left-worker", "crunch_left"),
    ("right-worker", "crunch_right"),
];

/// How many samples of the thread named `thread` have `function` on their stack, and how many
/// it has in all.
fn worker_samples(session: &Session, thread: &str, function: &str) -> (usize, usize) {
    let t = session
        .threads
        .iter()
        .position(|t| session.str(t.name) == thread)
        .unwrap_or_else(|| panic!("no thread {thread}"));
    let mut own = 0;
    let mut total = 0;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session.samples.thread[i].index() != t {
            continue;
        }
        total += 1;
        if session
            .stack_frames(stack)
            .any(|f| session.frame_name(f) == function)
        {
            own += 1;
        }
    }
    (own, total)
}

#[test]
fn record_names_each_thread_and_unwinds_it_to_its_start() {
    let dir = TempDir::new("record_threads");
    let exe = build_c(dir.path(), "threads");
    let (output, session) = record(&dir, &["--", exe.to_str().unwrap(), "0.5"]);
    assert!(output.status.success(), "{output:?}");
    for (thread, function) in WORKERS {
        let (own, total) = worker_samples(&session, thread, function);
        assert!(total >= 200, "{thread}: {total} samples");
        assert!(
            own * 100 >= total * 95,
            "{thread}: {own} of {total} in {function}"
        );
    }
    let start = reaching(
        &session,
        &["start_thread", "clone3", "__GI___clone3", "main"],
    );
    assert!(
        start >= 0.95,
        "{:.1}% of stacks reach the thread's start",
        start * 100.0
    );
}

#[test]
fn record_follows_the_processes_a_command_starts() {
    let dir = TempDir::new("record_children");
    let exe = build_c(dir.path(), "split");
    let script = format!("{0} 0.3 >/dev/null; {0} 0.3 >/dev/null", exe.display());
    let (output, session) = record(&dir, &["--", "sh", "-c", &script]);
    assert!(output.status.success(), "{output:?}");
    // Each run of the program is a process of its own, with its own main thread.
    let mut tids: Vec<u64> = Vec::new();
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session
            .stack_frames(stack)
            .any(|f| session.frame_name(f) == "spin_beta")
        {
            let tid = session.threads[session.samples.thread[i].index()].tid;
            if !tids.contains(&tid) {
                tids.push(tid);
            }
        }
    }
    assert_eq!(tids.len(), 2, "threads in spin_beta: {tids:?}");
    assert!(reaching(&session, &["main"]) >= 0.9);
}

#[test]
fn record_exits_with_the_commands_status() {
    let dir = TempDir::new("record_status");
    let (output, _) = record(&dir, &["--", "sh", "-c", "exit 3"]);
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let (output, _) = record(&dir, &["--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(output.status.code(), Some(128 + 9), "{output:?}");
    let output = prof(&[
        "record",
        "-o",
        dir.join("x.json").to_str().unwrap(),
        "--",
        "/no/such/program",
    ]);
    assert_eq!(output.status.code(), Some(127), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot run /no/such/program"));
}

#[test]
fn record_of_a_command_too_short_to_sample_saves_an_empty_valid_session() {
    let dir = TempDir::new("record_true");
    // 100 ms between samples: `true` (with its exec and page faults in the kernel, which the
    // task clock counts) never gets near one, even on a busy machine.
    let (output, session) = record(&dir, &["--interval", "100ms", "--", "true"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(session.samples.stack.len(), 0);
    assert_eq!(session.meta.program, "true");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no samples") && stderr.contains("empty session"),
        "{stderr}"
    );
    // The other commands read it.
    let report = prof(&["report", dir.join("out.json.gz").to_str().unwrap()]);
    assert!(report.status.success(), "{report:?}");
}

#[test]
fn code_run_before_exec_is_named_from_the_program_that_ran_it() {
    // Samples of a pid were once symbolized against the objects of its last program only, so
    // what it ran before `exec` came out as hex addresses (or another program's names).
    let dir = TempDir::new("record_exec");
    let first = build_c(dir.path(), "exec_after");
    let then = build_c(dir.path(), "split");
    let args = ["--", first.to_str().unwrap(), then.to_str().unwrap(), "0.3"];
    let (output, session) = record(&dir, &args);
    assert!(output.status.success(), "{output:?}");
    let before = share(&session, "spin_before_exec");
    let after = share(&session, "spin_alpha") + share(&session, "spin_beta");
    assert!(
        before >= 0.3 && after >= 0.3,
        "before exec {before:.3}, after {after:.3}"
    );
    let main = reaching(&session, &["main"]);
    assert!(main >= 0.95, "{:.1}% of stacks reach main", main * 100.0);
}

#[test]
fn record_leaves_ctrl_c_to_the_command_and_still_saves_the_session() {
    let dir = TempDir::new("record_interrupt");
    let exe = build_c(dir.path(), "split");
    let out = dir.join("out.json.gz");
    let (status, stderr) = record_then_ctrl_c(&out, &[exe.to_str().unwrap(), "600"]);
    assert_eq!(status.code(), Some(128 + 2), "{status:?} {stderr}");
    let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(share(&session, "spin_beta") > 0.3, "{stderr}");
}

/// The weight of `session`'s samples in `state` whose stack holds a frame named `name`.
fn weight_in_state(session: &Session, name: &str, state: prof::session::SampleState) -> u64 {
    let mut with = 0;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session.samples.state(i) == Some(state)
            && session
                .stack_frames(stack)
                .any(|f| session.frame_name(f) == name)
        {
            with += session.samples.weight[i];
        }
    }
    with
}

#[test]
fn record_wall_mode_charges_sleep_to_the_stack_that_slept_as_the_programs_clock_does() {
    use prof::session::SampleState;
    let dir = TempDir::new("record_wall");
    let exe = build_c(dir.path(), "sleepy");
    let (output, session) = record(&dir, &["--mode", "wall", "--", exe.to_str().unwrap(), "2"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"sleepy"), "{stdout}");
    let sleepy: f64 = words[1].parse().unwrap();
    let compute: f64 = words[3].parse().unwrap();
    assert_eq!(session.meta.mode, prof::Mode::Wall);
    assert_eq!(session.meta.sample_type.name, "wall");
    let (got_sleepy, got_compute) = (share(&session, "sleepy"), share(&session, "compute"));
    // 2 points on a quiet machine (docs/record.md); 5 with two CPU hogs beside the test.
    assert!(
        (got_sleepy - sleepy).abs() <= 0.05 && (got_compute - compute).abs() <= 0.05,
        "prof: sleepy {got_sleepy:.4} compute {got_compute:.4}; the program: sleepy {sleepy} \
         compute {compute}"
    );
    // The sleep is waiting time, the computing running time.
    let total = session.total_weight() as f64;
    let waiting = weight_in_state(&session, "sleepy", SampleState::Waiting) as f64 / total;
    assert!(waiting >= got_sleepy * 0.9, "waiting {waiting:.4}");
    assert_eq!(
        weight_in_state(&session, "compute", SampleState::Waiting),
        0,
        "compute never blocks"
    );
    // The wall time recorded is the program's: its main thread's whole life, to a few percent.
    let wall_ns = session.total_weight() as f64;
    assert!(
        (1.9e9..3.0e9).contains(&wall_ns),
        "{:.3} s recorded for a 2 s program",
        wall_ns / 1e9
    );
}

/// The names of the `[kernel]` frames of `session`, and the share of samples with one.
fn kernel_frames(session: &Session) -> (Vec<String>, f64) {
    let mut names = Vec::new();
    let mut with = 0;
    for &stack in &session.samples.stack {
        let mut any = false;
        // Root first: once a stack is in the kernel it stays there to its leaf.
        let mut in_kernel = false;
        for f in session
            .stack_frames(stack)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let module = session.frame(f).module.map(|m| session.str(m));
            let kernel = module == Some("[kernel]");
            assert!(kernel || !in_kernel, "a user frame called from the kernel");
            in_kernel |= kernel;
            if kernel {
                any = true;
                let name = session.frame_name(f).to_owned();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        with += usize::from(any);
    }
    (
        names,
        with as f64 / session.samples.stack.len().max(1) as f64,
    )
}

/// A command that spends its time in the kernel's read and write, copying zeros.
const DD: [&str; 5] = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=2000"];

#[test]
fn record_names_kernel_frames_from_kallsyms_and_user_only_leaves_them_out() {
    let dir = TempDir::new("record_kernel");
    let dd = [&["--"][..], &DD].concat();
    let (output, session) = record(&dir, &dd);
    assert!(output.status.success(), "{output:?}");
    let (names, share) = kernel_frames(&session);
    // dd spends its time copying zeros in the kernel's read and write.
    assert!(
        share >= 0.5,
        "{:.1}% of samples in the kernel",
        share * 100.0
    );
    assert!(
        names.iter().any(|n| n.contains("sys_read")) && names.iter().all(|n| !n.starts_with("0x")),
        "kernel frames: {names:?}"
    );
    let (output, session) = record(&dir, &[&["--user-only", "--"][..], &DD].concat());
    assert!(output.status.success(), "{output:?}");
    let (names, _) = kernel_frames(&session);
    assert!(
        names.is_empty(),
        "kernel frames with --user-only: {names:?}"
    );
}

#[test]
fn record_refused_by_perf_event_paranoid_says_which_value_it_needs_and_exits_2() {
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1);
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if paranoid < 2 || !root {
        eprintln!(
            "skipped: an unprivileged user is refused kernel frames only at perf_event_paranoid \
             2 or above (it is {paranoid}), and only root can become one here (setpriv)"
        );
        return;
    }
    let dir = TempDir::new("record_paranoid");
    let mut open = std::fs::metadata(dir.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut open, 0o777);
    std::fs::set_permissions(dir.path(), open).unwrap();
    let out = dir.join("out.json.gz");
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(prof_e2e::prof_bin())
            .args(["record", "-o", out.to_str().unwrap()])
            .args(args)
            .output()
            .expect("setpriv runs")
    };
    for (args, needed) in [
        (&["--", "true"][..], 1),
        (&["--mode", "wall", "--user-only", "--", "true"][..], 1),
        (&["--user-only", "--", "true"][..], 2),
    ] {
        let output = as_nobody(args);
        if paranoid <= needed {
            assert!(output.status.success(), "{args:?}: {output:?}");
            continue;
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("perf_event_paranoid is {paranoid}"))
                && stderr.contains(&format!("sudo sysctl kernel.perf_event_paranoid={needed}")),
            "{args:?}: {stderr}"
        );
        assert!(
            !out.exists(),
            "no session is written when nothing could be recorded"
        );
    }
}

#[test]
fn record_names_jit_code_from_the_perf_map_node_writes() {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipped: no node (.ci/install-tools installs nodejs)");
        return;
    }
    let dir = TempDir::new("record_jit");
    let script = dir.join("hot.js");
    std::fs::write(
        &script,
        "function hotLoop(n) {\n\
         \x20 let x = 0;\n\
         \x20 for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;\n\
         \x20 return x;\n\
         }\n\
         let s = 0;\n\
         const end = Date.now() + 1500;\n\
         while (Date.now() < end) s += hotLoop(100000);\n\
         console.log(s);\n",
    )
    .unwrap();
    // The log V8 writes with the map (else `isolate-*-v8.log` in the working directory).
    let log = format!("--logfile={}", dir.join("v8.log").display());
    let args = [
        "--",
        "node",
        "--perf-basic-prof",
        "--no-logfile-per-isolate",
        &log,
        script.to_str().unwrap(),
    ];
    let (output, session) = record(&dir, &args);
    // node leaves its map file behind, as perf expects it to.
    let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", session.meta.pid));
    assert!(output.status.success(), "{output:?}");
    let mut hot = 0;
    let mut module = None;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        let leaf = session.stack_frames(stack).next();
        if let Some(f) = leaf.filter(|&f| session.frame_name(f).contains("hotLoop")) {
            hot += session.samples.weight[i];
            module = session.frame(f).module.map(|m| session.str(m));
        }
    }
    let share = hot as f64 / session.total_weight() as f64;
    assert!(share >= 0.3, "{:.1}% in hotLoop", share * 100.0);
    let map = format!("perf-{}.map", session.meta.pid);
    assert_eq!(module, Some(map.as_str()));
    // JIT code has no unwind tables: its frame pointers lead back to node's own code (this
    // reached 7% of samples with DWARF alone, which stops at the first JIT frame).
    let start = reaching(&session, &["main", "__libc_start_call_main", "_start"]);
    assert!(start >= 0.8, "{:.1}% of stacks reach main", start * 100.0);
}

#[test]
fn wall_mode_user_only_still_counts_the_time_in_system_calls() {
    // With --user-only the task clock once excluded the kernel in wall mode too, so dd's time
    // copying in read and write (most of its life) was in no sample.
    let dir = TempDir::new("record_wall_user_only");
    let args = [&["--mode", "wall", "--user-only", "--"][..], &DD].concat();
    let (output, session) = record(&dir, &args);
    assert!(output.status.success(), "{output:?}");
    let (names, _) = kernel_frames(&session);
    assert!(
        names.is_empty(),
        "kernel frames with --user-only: {names:?}"
    );
    let recorded = session.total_weight() as f64;
    let lasted = session.meta.duration_ns as f64;
    assert!(
        recorded >= 0.8 * lasted,
        "{:.3} s of wall time recorded for a {:.3} s run",
        recorded / 1e9,
        lasted / 1e9
    );
}

#[test]
fn record_lists_each_process_with_its_parent_command_line_and_executable() {
    let dir = TempDir::new("record_processes");
    let exe = build_c(dir.path(), "split");
    let script = format!("{0} 1 >/dev/null & {0} 1 >/dev/null; wait", exe.display());
    let (output, session) = record(&dir, &["--", "sh", "-c", &script]);
    assert!(output.status.success(), "{output:?}");
    let table = session.process_table();
    let shell = table
        .iter()
        .find(|p| p.command_line.first().map(String::as_str) == Some("sh"))
        .unwrap_or_else(|| panic!("no shell in {table:#?}"));
    assert_eq!(shell.command_line[1..], ["-c", script.as_str()]);
    let runs: Vec<_> = table
        .iter()
        .filter(|p| p.parent_pid == Some(shell.pid) && p.name == "split")
        .collect();
    assert_eq!(runs.len(), 2, "{table:#?}");
    for run in &runs {
        assert_eq!(run.executable.as_deref(), exe.to_str(), "{run:?}");
        // Read from `/proc` while it ran (it runs for 1 s of CPU; prof reads every 5 ms, but
        // at load 12 a run of 0.3 s had ended before prof, behind on its rings, looked).
        assert_eq!(run.command_line, [exe.to_str().unwrap(), "1"], "{run:?}");
    }
    // Every sample in the program's code is on a thread of one of its two processes.
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session
            .stack_frames(stack)
            .any(|f| session.frame_name(f) == "spin_beta")
        {
            let thread = &session.threads[session.samples.thread[i].index()];
            let pid = table[thread.process.index()].pid;
            assert!(runs.iter().any(|r| r.pid == pid), "{thread:?} in {pid}");
        }
    }
    // `prof report --pid` and `--process` keep those processes' samples only.
    let file = dir.join("out.json.gz");
    let report = |args: &[&str]| {
        let mut all = vec!["report", file.to_str().unwrap(), "--top", "3"];
        all.extend_from_slice(args);
        prof(&all)
    };
    let shell_only = report(&["--pid", &shell.pid.to_string()]);
    let text = String::from_utf8_lossy(&shell_only.stdout);
    assert!(
        shell_only.status.success() && !text.contains("spin_beta"),
        "{text}"
    );
    for args in [
        vec!["--process", "split"],
        vec!["--pid", &runs[0].pid.to_string()],
    ] {
        let out = report(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("spin_beta"),
            "{args:?}: {text}"
        );
    }
    let missing = report(&["--process", "nosuch"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no process named \"nosuch\"") && stderr.contains(" split"),
        "{stderr}"
    );
}

/// Starts `threads SECONDS` and waits until both its workers have their names.
fn start_threads(exe: &Path, seconds: &str) -> std::process::Child {
    let child = Command::new(exe).arg(seconds).spawn().unwrap();
    prof_e2e::page::eventually("the workers' names", || {
        let names: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", child.id()))
            .map(|d| {
                d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                    .collect()
            })
            .unwrap_or_default();
        names.iter().any(|n| n.trim() == "right-worker")
    });
    child
}

/// The state letter of process `pid` (`R`, `S`, `T` for stopped...), `None` once it is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Panics unless `session` holds samples of both workers of `threads` in their own functions,
/// all of process `pid`.
fn assert_both_workers(session: &Session, pid: u32) {
    for (thread, function) in WORKERS {
        let (own, _) = worker_samples(session, thread, function);
        assert!(own > 0, "no sample of {thread} in {function}");
    }
    let table = session.process_table();
    assert!(session
        .threads
        .iter()
        .all(|t| table[t.process.index()].pid == pid));
    assert_eq!(session.meta.pid, pid);
}

#[test]
fn record_pid_attaches_to_a_running_program_until_the_duration_without_stopping_it() {
    let dir = TempDir::new("record_pid_duration");
    let exe = build_c(dir.path(), "threads");
    // Sixty CPU seconds per worker: it runs long after a one-second recording.
    let mut target = start_threads(&exe, "60");
    let pid = target.id().to_string();
    let (output, session) = record(&dir, &["--pid", &pid, "--duration", "1s"]);
    // The recording ended at the duration: the program still runs, and is not stopped.
    let running = target.try_wait().unwrap().is_none();
    let now = state(target.id());
    target.kill().unwrap();
    target.wait().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(running && matches!(now, Some('R' | 'S')), "{now:?}");
    assert!(
        session.meta.duration_ns >= 1_000_000_000,
        "{}",
        session.meta.duration_ns
    );
    assert_both_workers(&session, target.id());
    assert_eq!(session.meta.program, exe.to_str().unwrap());
    assert_eq!(session.meta.args, ["60"]);
}

#[test]
fn record_pid_ends_with_the_process_which_ends_unharmed_and_ctrl_c_saves() {
    let dir = TempDir::new("record_pid_end");
    let exe = build_c(dir.path(), "threads");
    // Five CPU seconds per worker: prof (started after its workers are named) attaches well
    // before its end, even on a busy machine.
    let mut target = start_threads(&exe, "5");
    let pid = target.id().to_string();
    let (output, session) = record(&dir, &["--pid", &pid]);
    assert!(output.status.success(), "{output:?}");
    // prof ended because the program did, which ran to its normal end.
    assert!(target.wait().unwrap().success());
    assert_both_workers(&session, target.id());

    // Ctrl-C (SIGINT to prof alone: the program is not its child) ends the recording and saves.
    let mut target = start_threads(&exe, "60");
    let out = dir.join("int.json.gz");
    let mut prof = Command::new(prof_e2e::prof_bin())
        .args(["record", "-o", out.to_str().unwrap(), "--pid"])
        .arg(target.id().to_string())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once prof catches SIGINT (bit 2 of its caught-signal mask), and has run a second.
    prof_e2e::page::eventually("prof catching SIGINT", || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", prof.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & 2 != 0)
    });
    std::thread::sleep(std::time::Duration::from_secs(1));
    let kill = Command::new("kill")
        .args(["-INT", &prof.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = prof.wait().unwrap();
    let still = target.try_wait().unwrap().is_none();
    target.kill().unwrap();
    target.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(prof.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status:?} {stderr}");
    assert!(still, "the program ended with the recording");
    let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_both_workers(&session, target.id());
}

#[test]
fn record_serve_prints_the_url_and_serves_the_recorded_session() {
    let dir = TempDir::new("record_serve");
    let exe = build_c(dir.path(), "split");
    let file = dir.join("out.json.gz");
    let served = prof_e2e::served::Served::run(&[
        "record".as_ref(),
        "--serve".as_ref(),
        "--no-open".as_ref(),
        "--port".as_ref(),
        "0".as_ref(),
        "-o".as_ref(),
        file.as_os_str(),
        "--".as_ref(),
        exe.as_os_str(),
        "0.3".as_ref(),
    ]);
    // The command's own output went before the URL, on the same standard output.
    let page = minreq::get(&served.url).with_timeout(30).send().unwrap();
    assert_eq!(page.status_code, 200);
    let shown = minreq::get(format!("{}session/0", served.url))
        .with_timeout(30)
        .send()
        .unwrap();
    assert_eq!(shown.status_code, 200);
    let shown = prof::session::read(shown.as_bytes()).unwrap();
    let saved = prof::session::load(&file).unwrap();
    assert_eq!(
        shown, saved,
        "the page gets exactly the session record saved"
    );
    assert!(share(&saved, "spin_beta") > 0.3);
    assert!(served.stderr_contains("saved"), "{}", served.stderr());
}

#[test]
fn record_pid_follows_the_processes_it_starts_only_with_children() {
    let dir = TempDir::new("record_pid_children");
    let exe = build_c(dir.path(), "threads");
    for children in [true, false] {
        // A shell that starts the program a while after prof attaches (or, on a slow machine,
        // before: `--children` attaches to the children already running too).
        let script = format!("sleep 2; {} 1; true", exe.display());
        let mut shell = Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let pid = shell.id().to_string();
        let mut args = vec!["--pid", pid.as_str()];
        if children {
            args.push("--children");
        }
        let (output, session) = record(&dir, &args);
        assert!(shell.wait().unwrap().success());
        assert!(output.status.success(), "{output:?}");
        let table = session.process_table();
        let spinning =
            share_or_zero(&session, "crunch_left") + share_or_zero(&session, "crunch_right");
        if children {
            let child = table
                .iter()
                .find(|p| p.executable.as_deref() == exe.to_str())
                .unwrap_or_else(|| panic!("no child process in {table:#?}"));
            assert_eq!(child.parent_pid, Some(shell.id()), "{child:?}");
            assert!(spinning > 0.5, "{spinning}");
        } else {
            assert!(table.iter().all(|p| p.pid == shell.id()), "{table:#?}");
            assert_eq!(spinning, 0.0);
        }
    }
}

/// [`share`], 0 for a session without samples.
fn share_or_zero(session: &Session, name: &str) -> f64 {
    if session.total_weight() == 0 {
        0.0
    } else {
        share(session, name)
    }
}
