//! `prof record --mode alloc -- CMD` against the real binary: a C program built as users build
//! it (`cc -O2 -fomit-frame-pointer`, no debug info) whose functions allocate known amounts,
//! recorded from outside through prof's interposed `malloc`: bytes and objects attributed to the
//! functions that allocated them, in-use bytes to the blocks never freed, a forked child's
//! allocations, the program's output and exit status untouched, a static program refused.

use prof::session::Session;
use prof_e2e::recorded::{compile, source};
use prof_e2e::{prof, TempDir};
use std::path::PathBuf;

/// Compiles `tests/data/record/allocs.c` as a user would (`cc -O2 -fomit-frame-pointer`, no
/// debug info) and `flags` into `dir`.
fn build(dir: &TempDir, flags: &[&str]) -> PathBuf {
    let all: Vec<&str> = ["-O2", "-fomit-frame-pointer"]
        .iter()
        .chain(flags)
        .copied()
        .collect();
    compile("cc", &all, &source("allocs.c"), &dir.join("allocs"))
}

/// Runs `prof record --mode alloc -o OUT ARGS...`: the output, and the session when it saved one.
fn record(dir: &TempDir, args: &[&str]) -> (std::process::Output, Option<Session>) {
    let out = dir.join("out.json.gz");
    let mut all = vec!["record", "--mode", "alloc", "-o", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = prof(&all);
    (output, prof::session::load(&out).ok())
}

/// The share of `session`'s weight of sample type `ty` whose stack holds a frame `name`.
fn share(session: &Session, ty: &str, name: &str) -> f64 {
    let mut session = session.clone();
    session.select_sample_type(ty).unwrap();
    prof_e2e::recorded::share(&session, name)
}

#[test]
fn alloc_mode_charges_bytes_to_the_functions_that_allocated_them() {
    let dir = TempDir::new("record_alloc_split");
    let exe = build(&dir, &[]);
    let (output, session) = record(
        &dir,
        &[
            "--alloc-interval",
            "32768",
            "--",
            exe.to_str().unwrap(),
            "2000",
            "",
            "3",
        ],
    );
    // The program's output and exit status are its own.
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("parent kept 131072000 churn 131072000"),
        "{stdout}"
    );
    let session = session.expect("a session");
    assert_eq!(session.meta.mode, prof::Mode::Alloc);
    // Both allocated 125 MiB: the estimates (4,000-odd samples at a 32 KiB mean) split them
    // evenly, and add up to what was allocated.
    let kept = share(&session, "alloc_bytes", "kept");
    let churn = share(&session, "alloc_bytes", "churn");
    assert!((kept - 0.5).abs() < 0.05, "kept {kept}, churn {churn}");
    assert!((churn - 0.5).abs() < 0.05, "kept {kept}, churn {churn}");
    let mut bytes = session.clone();
    bytes.select_sample_type("alloc_bytes").unwrap();
    let total = bytes.total_weight() as f64;
    // `kept_blocks`' own array (512 KiB) and stdio's buffer come on top of the 250 MiB.
    let allocated = 2.0 * 131_072_000.0;
    assert!(
        (total / allocated - 1.0).abs() < 0.05,
        "{total} bytes estimated for {allocated}"
    );
    // 32 blocks of 2 KiB for each of 64 KiB: objects 32 to 1.
    let kept_objects = share(&session, "alloc_objects", "kept");
    assert!(kept_objects > 0.95, "{kept_objects}");
    // What is still in use at the end is what `kept` kept; every `churn` block was freed.
    let kept_in_use = share(&session, "inuse_bytes", "kept");
    let churn_in_use = share(&session, "inuse_bytes", "churn");
    assert!(kept_in_use > 0.97, "kept {kept_in_use} of the bytes in use");
    assert_eq!(churn_in_use, 0.0, "churn's blocks were all freed");
    // The interposer's own frames are not shown: stacks end in the program's calls.
    for &stack in &session.samples.stack {
        let leaf = session.stack_frames(stack).next().unwrap();
        let name = session.frame_name(leaf);
        assert!(
            !name.starts_with("0x") && !name.contains("prof_preload"),
            "a stack ends in {name}"
        );
    }
}

#[test]
fn alloc_mode_follows_a_forked_child() {
    let dir = TempDir::new("record_alloc_fork");
    let exe = build(&dir, &[]);
    let (output, session) = record(&dir, &["--", exe.to_str().unwrap(), "1000", "fork"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("child kept") && stdout.contains("parent kept"),
        "{stdout}"
    );
    let session = session.expect("a session");
    // Parent and child each allocated the same: samples of both, each thread's stacks named.
    let mut per_thread = std::collections::HashMap::new();
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        if session
            .stack_frames(stack)
            .any(|f| session.frame_name(f) == "kept")
        {
            *per_thread.entry(session.samples.thread[i]).or_insert(0u64) +=
                session.samples.weight[i];
        }
    }
    assert_eq!(per_thread.len(), 2, "{per_thread:?}");
    // Both processes are listed, the child under its parent.
    let processes = &session.processes;
    assert_eq!(processes.len(), 2, "{processes:?}");
    let parent = &processes[0];
    assert_eq!(processes[1].parent_pid, Some(parent.pid), "{processes:?}");
    assert!(
        parent.command_line.iter().any(|w| w == "fork"),
        "{processes:?}"
    );
}

#[test]
fn alloc_mode_refuses_a_statically_linked_program_in_one_line() {
    let dir = TempDir::new("record_alloc_static");
    let exe = build(&dir, &["-static"]);
    let (output, _) = record(&dir, &["--", exe.to_str().unwrap(), "10"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("statically linked"), "{stderr}");
    // The program did not run.
    assert!(output.stdout.is_empty());
}

#[test]
fn alloc_mode_on_a_program_that_allocates_too_little_saves_an_empty_session() {
    let dir = TempDir::new("record_alloc_true");
    let (output, session) = record(&dir, &["--", "true"]);
    assert!(output.status.success(), "{output:?}");
    let session = session.expect("an empty but valid session");
    assert_eq!(session.samples.len(), 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no samples"), "{stderr}");
}

#[test]
fn alloc_mode_names_cpp_frames_demangled() {
    let dir = TempDir::new("record_alloc_cpp");
    let exe = compile(
        "g++",
        &["-O2"],
        &source("vectors.cpp"),
        &dir.join("vectors"),
    );
    let (output, session) = record(&dir, &["--", exe.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let session = session.expect("a session");
    let new = share(&session, "alloc_bytes", "operator new(unsigned long)");
    assert!(new > 0.99, "operator new holds {new} of the bytes");
    let doubles = share(
        &session,
        "alloc_bytes",
        "std::vector<double, std::allocator<double> > make<double>(unsigned long)",
    );
    assert!(doubles > 0.5 && doubles < 0.8, "make<double>: {doubles}");
}

/// Runs `tests/data/record/closefds.c` under alloc mode: it closes its descriptors from 3 up to
/// `first_kept` (0: all), opens sockets of its own and allocates 64 MiB.
fn record_closefds(dir: &TempDir, first_kept: &str) -> (std::process::Output, Option<Session>) {
    let exe = prof_e2e::recorded::build_c(dir.path(), "closefds");
    record(
        dir,
        &[
            "--alloc-interval",
            "65536",
            "--",
            exe.to_str().unwrap(),
            first_kept,
            "64",
        ],
    )
}

#[test]
fn alloc_mode_never_writes_into_a_socket_the_program_opened_at_the_channels_old_number() {
    let dir = TempDir::new("record_alloc_foreign");
    let (output, _) = record_closefds(&dir, "0");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Its own sockets received nothing it did not send, and it ended as it does without prof.
    assert_eq!(stdout.trim(), "foreign 0", "{output:?}");
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn alloc_mode_keeps_sampling_a_program_that_closes_its_low_descriptors() {
    let dir = TempDir::new("record_alloc_low_closed");
    // Closes 3 to 255 (the range ordinary programs use), as many daemons close "all" of theirs.
    let (output, session) = record_closefds(&dir, "256");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "foreign 0");
    let session = session.expect("a session");
    // 64 MiB at a 64 KiB mean: about a thousand samples, after the closing.
    assert!(
        share(&session, "alloc_bytes", "allocate_after_closing") > 0.9,
        "{} samples; {}",
        session.samples.len(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A daemon of `tests/data/record/daemon.c` started under alloc mode: prof's output, how long
/// prof took, and the daemon's pid (killed when dropped) with its go and output files.
struct Daemon {
    output: std::process::Output,
    took: std::time::Duration,
    pid: Option<i32>,
    go: PathBuf,
    out: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

fn start_daemon(dir: &TempDir) -> Daemon {
    let exe = prof_e2e::recorded::build_c(dir.path(), "daemon");
    let (pid_file, go, out) = (dir.join("pid"), dir.join("go"), dir.join("env.txt"));
    let started = std::time::Instant::now();
    let (output, _) = record(
        dir,
        &[
            "--",
            exe.to_str().unwrap(),
            pid_file.to_str().unwrap(),
            go.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    let took = started.elapsed();
    let pid = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|p| p.trim().parse().ok());
    Daemon {
        output,
        took,
        pid,
        go,
        out,
    }
}

#[test]
fn a_daemon_started_under_alloc_mode_starts_programs_without_prof_in_their_environment() {
    let dir = TempDir::new("record_alloc_daemon_env");
    let daemon = start_daemon(&dir);
    assert!(daemon.output.status.success(), "{:?}", daemon.output);
    // prof has exited: the daemon now starts `env`.
    std::fs::write(&daemon.go, "").unwrap();
    let started = std::time::Instant::now();
    let env = loop {
        let text = std::fs::read_to_string(&daemon.out).unwrap_or_default();
        if text.contains("PATH=") || started.elapsed().as_secs() > 60 {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(env.contains("PATH="), "env ran: {env}");
    assert!(
        !env.contains("LD_PRELOAD") && !env.contains("PROF_ALLOC") && !env.contains("ld.so"),
        "{env}"
    );
}

#[test]
fn alloc_mode_leaves_the_environment_as_the_user_set_it_and_still_follows_exec() {
    let dir = TempDir::new("record_alloc_env");
    let out = dir.join("out.json.gz");
    let run = |preload: Option<&str>| {
        let mut command = std::process::Command::new(prof_e2e::prof_bin());
        command.args([
            "record",
            "--mode",
            "alloc",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "env; sleep 0.3; true",
        ]);
        command.env_remove("LD_PRELOAD");
        if let Some(p) = preload {
            command.env("LD_PRELOAD", p);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let env = String::from_utf8_lossy(&output.stdout).into_owned();
        (env, prof::session::load(&out).unwrap())
    };
    let (env, session) = run(None);
    assert!(
        !env.contains("LD_PRELOAD") && !env.contains("PROF_ALLOC"),
        "{env}"
    );
    // `sh` and the `sleep` it started both loaded the interposer (`env` too, gone before prof
    // could read its name).
    let names: Vec<_> = session.processes.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"sleep") && names.contains(&"sh"),
        "{names:?}"
    );
    // The user's own LD_PRELOAD is theirs, unchanged.
    let (env, _) = run(Some("libm.so.6"));
    let preloads: Vec<_> = env.lines().filter(|l| l.contains("LD_PRELOAD")).collect();
    assert_eq!(preloads, ["LD_PRELOAD=libm.so.6"], "{env}");
    assert!(!env.contains("PROF_ALLOC"), "{env}");
}

#[test]
fn alloc_mode_says_the_program_closed_its_channel_rather_than_that_it_allocated_too_little() {
    let dir = TempDir::new("record_alloc_closed_said");
    let (output, session) = record_closefds(&dir, "0");
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(session.is_some(), "{stderr}");
    assert!(
        stderr.contains("closed prof's channel") && !stderr.contains("less than the sampling"),
        "{stderr}"
    );
}

#[test]
fn alloc_mode_does_not_wait_for_a_daemon_that_left_its_session_with_the_channel() {
    let dir = TempDir::new("record_alloc_daemon_wait");
    let daemon = start_daemon(&dir);
    assert!(daemon.output.status.success(), "{:?}", daemon.output);
    assert!(daemon.pid.is_some(), "the daemon started");
    // The daemon waits 30 s for its go file: prof must not wait for it (a generous bound, for
    // a loaded machine; it takes well under a second).
    assert!(
        daemon.took < std::time::Duration::from_secs(20),
        "prof took {:?}",
        daemon.took
    );
}

#[test]
fn alloc_mode_follows_posix_spawn_and_exec_but_not_system() {
    let dir = TempDir::new("record_alloc_spawns");
    let exe = prof_e2e::recorded::build_c(dir.path(), "spawns");
    let (output, session) = record(&dir, &["--", exe.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let session = session.expect("a session");
    // Each `sleep` lives 0.3 s, long enough for prof to read its name when it loads the
    // interposer: the two started by posix_spawnp and execvp did; system()'s shell did not.
    let names: Vec<_> = session.processes.iter().map(|p| p.name.as_str()).collect();
    let sleeps = names.iter().filter(|&&n| n == "sleep").count();
    assert_eq!(sleeps, 2, "{names:?}");
    assert!(!names.contains(&"sh"), "{names:?}");
}
