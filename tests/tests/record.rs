//! `prof record -- CMD` against the real binary: C programs built as users build them
//! (`cc -O2 -fomit-frame-pointer`, no debug info) recorded from outside, their sessions read
//! back: attribution against the program's own CPU clock, names, stacks that reach the thread's
//! start, threads, child processes, the exit status passed through, and a command too short to
//! be sampled.

use prof_e2e::recorded::{build_c, reaching, record, share, wait_for_cpu};
use prof_e2e::{prof, TempDir};
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

#[test]
fn record_names_each_thread_and_unwinds_it_to_its_start() {
    let dir = TempDir::new("record_threads");
    let exe = build_c(dir.path(), "threads");
    let (output, session) = record(&dir, &["--", exe.to_str().unwrap(), "0.5"]);
    assert!(output.status.success(), "{output:?}");
    for (thread, function) in [
        ("left-worker", "crunch_left"),
        ("right-worker", "crunch_right"),
    ] {
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
    let (output, session) = record(&dir, &["--", "true"]);
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
fn r21_code_run_before_exec_is_named_from_the_program_that_ran_it() {
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
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("record_interrupt");
    let exe = build_c(dir.path(), "split");
    let out = dir.join("out.json.gz");
    // prof and the command in a process group of their own, as a terminal's foreground job.
    let mut prof = Command::new(prof_e2e::prof_bin())
        .args(["record", "-o", out.to_str().unwrap(), "--"])
        .arg(&exe)
        .arg("600")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Until the command has run a while (so it has samples), then Ctrl-C to the whole group.
    wait_for_cpu(prof.id(), 30);
    let kill = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", prof.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = prof.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(prof.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(128 + 2), "{status:?} {stderr}");
    let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(share(&session, "spin_beta") > 0.3, "{stderr}");
}
