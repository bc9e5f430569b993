//! `prof record` on programs as users build and run them: a C++
//! program with inlined templates, a Rust release build with and without line tables, a shell
//! pipeline, the Python interpreter, a program with its own SIGPROF timer; the rate per running
//! thread, a thousand short threads and a hundred short processes all seen; Ctrl-C handled by
//! the command. Every bound is on CPU time (the task clock, the program's own thread clock), so
//! it holds however loaded the machine is.

use prof::session::Session;
use prof_e2e::recorded::{
    build_c, compile, reaching, record, record_then_ctrl_c, samples_per_tid, share, share_where,
    source,
};
use prof_e2e::{release_fixture, ReleaseProfile, TempDir};
use std::process::Command;

/// The names of the frames of `session` that take at least `min` of its weight, for messages.
fn top_names(session: &Session, min: f64) -> Vec<String> {
    let mut names: Vec<&str> = session
        .samples
        .stack
        .iter()
        .flat_map(|&s| session.stack_frames(s).map(|f| session.frame_name(f)))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter(|n| share(session, n) >= min)
        .map(str::to_owned)
        .collect()
}

#[test]
fn record_names_the_inlined_templates_of_a_cpp_program() {
    let dir = TempDir::new("record_cpp");
    let src = source("templates.cpp");
    for (flags, inlined) in [(&["-O2", "-g"][..], true), (&["-O2"][..], false)] {
        let exe = compile("g++", flags, &src, &dir.join("templates"));
        let (output, session) = record(&dir, &["--", exe.to_str().unwrap(), "0.6"]);
        assert!(output.status.success(), "{output:?}");
        let top = top_names(&session, 0.05);
        // Both instances of the out-of-line template, demangled as C++ names.
        for generator in ["Lcg", "XorShift"] {
            let instance = format!("crunch<{generator}>");
            let got = share_where(&session, |f| f.contains(&instance));
            assert!(got >= 0.3, "{flags:?}: {instance} {got:.3}; {top:?}");
        }
        assert!(
            !top.iter().any(|n| n.starts_with("_Z")),
            "{flags:?}: mangled names {top:?}"
        );
        // With -g, the template inlined into both: named from DWARF as the in-process sampler
        // names inlined frames.
        if inlined {
            let fold = share_where(&session, |f| f.contains("fold<unsigned long>"));
            assert!(fold >= 0.7, "{flags:?}: fold {fold:.3}; {top:?}");
        }
        assert!(reaching(&session, &["main"]) >= 0.95, "{flags:?}: {top:?}");
    }
}

#[test]
fn record_attributes_a_rust_release_build_with_and_without_line_tables() {
    let dir = TempDir::new("record_rust");
    for profile in [ReleaseProfile::Default, ReleaseProfile::LineTablesOnly] {
        let exe = release_fixture(profile, "cpu_split");
        // The fixture profiles itself in-process too (a SIGPROF-free perf timer or signals):
        // prof record must not care.
        let inner = dir.join("inner.json.gz");
        let (output, session) = record(
            &dir,
            &["--", exe.to_str().unwrap(), inner.to_str().unwrap()],
        );
        assert!(output.status.success(), "{profile:?}: {output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let top = top_names(&session, 0.02);
        // The program's own measurement of each thread: "truth TID HEAVY_NS LIGHT_NS".
        for line in stdout.lines().filter(|l| l.starts_with("truth ")) {
            let w: Vec<u64> = line
                .split(' ')
                .skip(1)
                .map(|w| w.parse().unwrap())
                .collect();
            let (tid, heavy, light) = (w[0], w[1] as f64, w[2] as f64);
            let t = session
                .threads
                .iter()
                .position(|t| t.tid == tid)
                .unwrap_or_else(|| panic!("{profile:?}: no thread {tid}"));
            let (mut in_heavy, mut in_light) = (0u64, 0u64);
            for (i, &stack) in session.samples.stack.iter().enumerate() {
                if session.samples.thread[i].index() != t {
                    continue;
                }
                let names: Vec<&str> = session
                    .stack_frames(stack)
                    .map(|f| session.frame_name(f))
                    .collect();
                if names.contains(&"cpu_split::heavy") {
                    in_heavy += session.samples.weight[i];
                } else if names.contains(&"cpu_split::light") {
                    in_light += session.samples.weight[i];
                }
            }
            let got = in_heavy as f64 / (in_heavy + in_light) as f64;
            let truth = heavy / (heavy + light);
            assert!(
                in_heavy + in_light >= 300 * 1_000_000 && (got - truth).abs() <= 0.02,
                "{profile:?} thread {tid}: heavy {got:.4} (the program: {truth:.4}), \
                 {in_heavy} + {in_light} ns; {top:?}"
            );
        }
        assert_eq!(stdout.matches("truth ").count(), 2, "{stdout}");
        // Line tables name `mix`, inlined into `heavy` (by its short name and file, as line
        // tables give it); without them it is `heavy`'s own code.
        let mix = share_where(&session, |f| {
            f == "mix (cpu_split.rs)" || f == "cpu_split::mix"
        });
        match profile {
            // Not all of `heavy`'s loop: its counter's compare and increment are named from the
            // range iterator (`next<u64>`, `lt`), where rustc 1.95 puts as many samples as on
            // `mix` itself (mix 0.18 to 0.24 of all, `heavy` 0.63, in three runs here).
            ReleaseProfile::LineTablesOnly => assert!(mix >= 0.1, "mix {mix:.3}; {top:?}"),
            _ => assert_eq!(mix, 0.0, "{top:?}"),
        }
        let start = reaching(&session, &["main", "start_thread", "__GI___clone3"]);
        assert!(
            start >= 0.9,
            "{profile:?}: {start:.3} reach the start; {top:?}"
        );
    }
}

#[test]
fn record_sees_both_ends_of_a_shell_pipeline() {
    let dir = TempDir::new("record_pipeline");
    let exe = build_c(dir.path(), "pipe");
    let script = format!("{0} produce 0.4 | {0} consume", exe.display());
    let (output, session) = record(&dir, &["--", "sh", "-c", &script]);
    assert!(output.status.success(), "{output:?}");
    let top = top_names(&session, 0.02);
    // Each end computes, in a process of its own.
    let mut tids = Vec::new();
    for function in ["produce_lines", "consume_lines"] {
        assert!(share(&session, function) >= 0.1, "{function}: {top:?}");
        let (i, _) = session
            .samples
            .stack
            .iter()
            .enumerate()
            .find(|(_, &s)| {
                session
                    .stack_frames(s)
                    .any(|f| session.frame_name(f) == function)
            })
            .unwrap();
        tids.push(session.threads[session.samples.thread[i].index()].tid);
    }
    assert_ne!(tids[0], tids[1], "both ends on one thread: {tids:?}");
    assert!(reaching(&session, &["main"]) >= 0.9, "{top:?}");
}

#[test]
fn record_names_the_python_interpreters_own_c_frames() {
    let Ok(version) = Command::new("python3").arg("--version").output() else {
        eprintln!("skipped: no python3 on PATH");
        return;
    };
    assert!(version.status.success(), "{version:?}");
    let dir = TempDir::new("record_python");
    let program = "import time\nt = time.process_time()\nn = 0\n\
                   while time.process_time() - t < 0.6:\n    n = sum(i * i for i in range(1000))\n";
    let (output, session) = record(&dir, &["--", "python3", "-c", program]);
    assert!(output.status.success(), "{output:?}");
    let top = top_names(&session, 0.05);
    let eval = share(&session, "_PyEval_EvalFrameDefault");
    assert!(eval >= 0.5, "_PyEval_EvalFrameDefault {eval:.3}; {top:?}");
    assert!(
        reaching(&session, &["main", "_start", "__libc_start_main"]) >= 0.9,
        "{top:?}"
    );
}

/// Runs the SIGPROF program (`sigprof SECS`) and returns its figures: signals from its itimer,
/// SIGPROF or SIGTRAP from anything else, its CPU milliseconds, and naps cut short.
fn sigprof_figures(stdout: &[u8]) -> [f64; 4] {
    let text = String::from_utf8_lossy(stdout);
    let w: Vec<f64> = text
        .split_whitespace()
        .skip(1)
        .step_by(2)
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(w.len(), 4, "{text}");
    [w[0], w[1], w[2], w[3]]
}

#[test]
fn record_leaves_a_programs_own_sigprof_timer_as_it_is() {
    let dir = TempDir::new("record_sigprof");
    let exe = build_c(dir.path(), "sigprof");
    let alone = Command::new(&exe).arg("1").output().unwrap();
    assert!(alone.status.success(), "{alone:?}");
    let [timer_alone, others_alone, cpu_alone, eintr_alone] = sigprof_figures(&alone.stdout);
    let (output, session) = record(&dir, &["--", exe.to_str().unwrap(), "1"]);
    assert!(output.status.success(), "{output:?}");
    let [timer, others, cpu, eintr] = sigprof_figures(&output.stdout);
    // No signal from prof, none of the program's own lost, no sleep cut short: as without prof.
    assert_eq!((others, others_alone), (0.0, 0.0), "{output:?}");
    assert_eq!((eintr, eintr_alone), (0.0, 0.0), "{output:?}");
    let (rate, rate_alone) = (timer / cpu, timer_alone / cpu_alone);
    assert!(
        rate >= 0.8 * rate_alone && rate <= 1.25 * rate_alone,
        "itimer signals per CPU ms: {rate:.3} under prof, {rate_alone:.3} without"
    );
    assert!(share(&session, "spin_with_itimer") >= 0.8);
}

#[test]
fn record_lets_the_command_act_on_ctrl_c_and_passes_on_what_it_returns() {
    let dir = TempDir::new("record_trap");
    let out = dir.join("out.json.gz");
    // A command that catches SIGINT and exits 5, as a server that shuts down cleanly does.
    let script = "trap 'exit 5' INT; while :; do :; done";
    let (status, stderr) = record_then_ctrl_c(&out, &["sh", "-c", script]);
    assert_eq!(status.code(), Some(5), "{status:?} {stderr}");
    let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(session.samples.stack.len() >= 100, "{stderr}");
}

/// Whether the kernel lets prof sample time in the kernel (root, or `perf_event_paranoid` 1 or
/// lower): a user-only task clock loses the samples whose timer fires there.
fn kernel_time_sampled() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    root || paranoid.is_some_and(|p| p <= 1)
}

#[test]
fn record_samples_each_running_thread_at_the_requested_rate() {
    let dir = TempDir::new("record_rate");
    let exe = build_c(dir.path(), "rate");
    // User only, the kernel drops 2-4% of a busy thread's task-clock samples (as it does
    // perf's): the bound is then that, said so.
    let least = if kernel_time_sampled() {
        0.99
    } else {
        eprintln!("user-only sampling (perf_event_paranoid > 1): bound 95% rather than 99%");
        0.95
    };
    // Since Linux 6.12 each sample carries its thread's count of CPU time, so the weights add
    // up to the CPU time whether or not the kernel's timer fired late; before, a sample weighs
    // its period and the weights are only as good as the count of samples.
    let counted = kernel_at_least(6, 12);
    for hz in [1_000u64, 10_000] {
        let period_ns = 1e9 / hz as f64;
        let steal_before = steal_ns();
        let (output, session) = record(
            &dir,
            &[
                "-F",
                &hz.to_string(),
                "--",
                exe.to_str().unwrap(),
                "2",
                "0.5",
            ],
        );
        assert!(output.status.success(), "{output:?}");
        // Time the hypervisor took from this VM's CPUs while the program ran: see `steal_ns`.
        let steal = steal_ns() - steal_before + STEAL_TICK_NS;
        let counts = samples_per_tid(&session);
        let weights = weight_per_tid(&session);
        // Records the kernel could not write because prof's reader was late (a busy machine
        // starves it) are counted, never silent: they count as seen here, whichever thread
        // they were of. Nothing else may be missing.
        let dropped = session.meta.dropped_samples as f64;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Each thread's CPU time as it measured it: "TID CPU_NS". The count of samples: on a
        // busy machine the kernel's timer fires late and the periods it skipped are not
        // sampled (with two CPU hogs beside it, 98.5-99% of CPU time × rate came at 10 kHz),
        // so each thread and all together get at least 95%; the rate on an idle machine is a
        // benchmark's. One thread against its own clock varies more than the total, as the
        // task clock's per-CPU partial periods move between threads that keep changing CPUs.
        // The weights are the task clock's time: at least `least` of the CPU time (a thread's
        // last partial period on each CPU is never sampled), and at most 5% above it, as the
        // task clock counts the interrupts taken while the thread runs, the kernel's copy of
        // each sample's stack among them, which the thread's own clock leaves out where the
        // kernel accounts interrupt time apart (CI at 10 kHz beside two CPU hogs: 508.3 ms for
        // 500.0 ms of CPU). Weighed by the period, one thread got 503 ms for 500 ms of CPU
        // and the other fewer, with the total short. In a VM the task clock also counts the
        // time the hypervisor stole from the thread's CPU, which its own clock leaves out (the
        // one cause we know for 563.2 ms for 500.0 ms of CPU in CI beside two hogs), so the
        // bounds above the CPU time grow by all the time stolen from the VM's CPUs meanwhile.
        let (mut all_got, mut all_weight, mut all_cpu) = (0.0, 0.0, 0.0);
        for line in stdout.lines() {
            let (tid, cpu_ns) = line.split_once(' ').unwrap();
            let (tid, cpu_ns): (u64, f64) = (tid.parse().unwrap(), cpu_ns.parse().unwrap());
            let expected = cpu_ns / period_ns;
            let got = counts.iter().find(|c| c.0 == tid).map_or(0, |c| c.1) as f64;
            let weight = weights.iter().find(|c| c.0 == tid).map_or(0, |c| c.1) as f64;
            all_got += got;
            all_weight += weight;
            all_cpu += cpu_ns;
            assert!(
                got + dropped >= 0.95 * expected
                    && got <= 1.05 * expected + steal / period_ns + 1.0,
                "{hz} Hz, thread {tid}: {got} samples ({dropped} dropped) for {:.1} ms of CPU \
                 ({expected:.0} asked for, {:.1} ms stolen); {stderr}",
                cpu_ns / 1e6,
                steal / 1e6,
            );
            assert!(
                !counted || weight <= IRQ_SLACK * cpu_ns + steal + period_ns,
                "{hz} Hz, thread {tid}: samples weigh {:.2} ms for {:.2} ms of CPU \
                 ({:.1} ms stolen); {stderr}",
                weight / 1e6,
                cpu_ns / 1e6,
                steal / 1e6,
            );
        }
        let all_expected = all_cpu / period_ns;
        assert!(
            all_got + dropped >= 0.95 * all_expected && all_got <= all_expected + 2.0,
            "{hz} Hz: {all_got} samples ({dropped} dropped) for {all_expected:.0} asked for; \
             {stderr}"
        );
        if counted {
            assert!(
                all_weight >= least * all_cpu && all_weight <= IRQ_SLACK * all_cpu + steal,
                "{hz} Hz: samples weigh {:.2} ms for {:.2} ms of CPU ({:.1} ms stolen); {stderr}",
                all_weight / 1e6,
                all_cpu / 1e6,
                steal / 1e6,
            );
        }
        assert_eq!(stdout.lines().count(), 2, "{stdout}");
    }
}

/// How far above a thread's own CPU clock its task clock may run (see
/// `record_samples_each_running_thread_at_the_requested_rate`).
const IRQ_SLACK: f64 = 1.05;

/// The time, in nanoseconds, the hypervisor has taken from all of this machine's CPUs since
/// boot: the `steal` column of /proc/stat's `cpu` line (0 on bare metal). With
/// `CONFIG_PARAVIRT_TIME_ACCOUNTING` a thread's CPU clock leaves stolen time out and the task
/// clock, which runs while the thread is current, counts it; what a thread can gain that way
/// while a program runs is at most what was stolen from every CPU meanwhile.
fn steal_ns() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let steal = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0);
    steal * STEAL_TICK_NS
}

/// /proc/stat's unit, USER_HZ (100 a second on every Linux architecture prof runs on): the
/// most a difference of two readings can be short by.
const STEAL_TICK_NS: f64 = 1e7;

/// Each thread's id and the sum of its samples' weights.
fn weight_per_tid(session: &Session) -> Vec<(u64, u64)> {
    let mut sums = vec![0u64; session.threads.len()];
    for (t, w) in session.samples.thread.iter().zip(&session.samples.weight) {
        sums[t.index()] += w;
    }
    session.threads.iter().map(|t| t.tid).zip(sums).collect()
}

/// Whether the running kernel's version is `major.minor` or later.
fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    version >= (major, minor)
}

#[test]
fn record_sees_every_one_of_a_thousand_short_threads() {
    let dir = TempDir::new("record_burst");
    let exe = build_c(dir.path(), "burst");
    let (output, session) = record(
        &dir,
        &[
            "-F",
            "2000",
            "--stack-bytes",
            "8192",
            "--",
            exe.to_str().unwrap(),
            "1000",
            "2",
        ],
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "1000");
    // Each thread computes for 2 ms of its CPU time: 4 periods at 2 kHz. The per-CPU events
    // count a thread's time on each CPU apart, so at least 1 ms of it on one of the two CPUs
    // gives it a sample however it migrates (at 1 kHz, one that splits its 2 ms between them
    // can have none: 965 of 1,000 seen in benches/benches/record.rs). Shallow stacks: 8 KB
    // copies keep the rings from filling when prof is slow to read them (at 10 kHz with 32 KB
    // on a loaded machine, 341 samples were lost).
    let seen = samples_per_tid(&session)
        .iter()
        .zip(&session.threads)
        // The main thread is named after the program too.
        .filter(|((_, n), t)| {
            *n > 0 && session.str(t.name) == "burst" && t.tid != u64::from(session.meta.pid)
        })
        .count();
    // On a busy machine a thread preempted in slices shorter than a period on both CPUs can
    // still go unsampled: CI's run (two CPU hogs beside the suite) saw 999 once. Every thread
    // seen is for an idle machine, which benches/benches/record.rs measures.
    assert!(
        seen >= 995,
        "{seen} of 1000 threads seen\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn record_sees_every_one_of_a_hundred_short_child_processes() {
    let dir = TempDir::new("record_many");
    let exe = build_c(dir.path(), "split");
    // A shell script starting the program 100 times, each for 3 ms of CPU time.
    let script = format!(
        "i=0; while [ $i -lt 100 ]; do {} 0.003 >/dev/null; i=$((i + 1)); done",
        exe.display()
    );
    let (output, session) = record(&dir, &["-F", "1000", "--", "sh", "-c", &script]);
    assert!(output.status.success(), "{output:?}");
    let mut tids: Vec<u64> = Vec::new();
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        let ours = session.stack_frames(stack).any(|f| {
            let name = session.frame_name(f);
            name == "spin_alpha" || name == "spin_beta"
        });
        let tid = session.threads[session.samples.thread[i].index()].tid;
        if ours && !tids.contains(&tid) {
            tids.push(tid);
        }
    }
    assert_eq!(
        tids.len(),
        100,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether the tests run as root (CI's do): what needs root skips otherwise, saying so.
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().any(|l| {
        l.strip_prefix("Uid:")
            .is_some_and(|ids| ids.split_whitespace().next() == Some("0"))
    })
}

/// A copy of `exe` owned by `nobody`, mode 4755 (set-uid), in a scratch directory whose file
/// system honours set-uid (the test's own under /tmp, else one under the target directory, for
/// a /tmp mounted `nosuid`), with that directory (removed when dropped); `None` when neither
/// does. A copy that honours it says `euid 65534` when run.
fn set_uid_copy(exe: &std::path::Path) -> Option<(std::path::PathBuf, TempDir)> {
    use std::os::unix::fs::PermissionsExt;
    let target = std::env::current_exe()
        .ok()?
        .ancestors()
        .nth(3)?
        .to_path_buf();
    let scratch = [
        TempDir::new("record_set_uid_copy"),
        TempDir::in_dir(&target, "record_set_uid_copy"),
    ];
    for place in scratch {
        let copy = place.join("set_uid_spin");
        std::fs::copy(exe, &copy).ok()?;
        let chown = Command::new("chown")
            .arg("nobody")
            .arg(&copy)
            .status()
            .ok()?;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).ok()?;
        let run = Command::new(&copy).output().ok()?;
        if chown.success() && String::from_utf8_lossy(&run.stdout).contains("euid 65534") {
            return Some((copy, place));
        }
    }
    None
}

/// A regression test: a set-uid program (owned by nobody, run by root) got no samples and the message
/// "ran for less than one sampling interval", though it ran 0.5 s of CPU: the kernel ends
/// inherited perf events at a set-uid or set-gid `exec`, and the dynamic loader ignores
/// `LD_PRELOAD` in its secure mode. prof names the program and the cause, in CPU and alloc mode.
#[test]
fn record_says_a_set_uid_program_could_not_be_sampled_and_why() {
    if !is_root() {
        eprintln!("skipped: making a program set-uid to another user needs root (CI runs as root)");
        return;
    }
    let dir = TempDir::new("record_set_uid");
    let exe = build_c(dir.path(), "setuid_spin");
    let Some((copy, _scratch)) = set_uid_copy(&exe) else {
        eprintln!("skipped: neither /tmp nor the target directory honours set-uid bits");
        return;
    };
    for mode in ["cpu", "alloc"] {
        let (output, _) = record(&dir, &["--mode", mode, "--", copy.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{mode}: {output:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("euid 65534"),
            "{mode}: {output:?}"
        );
        assert!(
            stderr.contains(copy.to_str().unwrap())
                && stderr.contains("set-uid")
                && !stderr.contains("less than"),
            "{mode}: {stderr}"
        );
    }
}

/// How to run a command as `nobody`: `setpriv` or `runuser`, whichever is installed.
fn as_nobody() -> Option<Command> {
    let works = |program: &str| {
        Command::new(program)
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works("setpriv") {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
        Some(c)
    } else if works("runuser") {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]);
        Some(c)
    } else {
        None
    }
}

/// `prof record --pid PID` run as `nobody` (bounded by `timeout`): its exit status and
/// standard error.
fn attach_as_nobody(dir: &TempDir, pid: u32) -> (std::process::ExitStatus, String) {
    let out = dir.join("out.json.gz");
    let output = as_nobody()
        .unwrap()
        .args(["timeout", "60"])
        .arg(prof_e2e::prof_bin())
        .args([
            "record",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "1s",
            "--pid",
        ])
        .arg(pid.to_string())
        .output()
        .unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A regression test: `--pid` of another user's process, or of one's own non-dumpable process, said
/// "perf_event_paranoid is 2; … needs 2 or lower", which no sysctl fixes. prof now says the
/// real cause in one line: the owner, or the process's being non-dumpable.
#[test]
fn record_pid_refused_names_the_owner_or_non_dumpable_not_the_paranoid_sysctl() {
    use std::io::BufRead;
    use std::os::unix::fs::PermissionsExt;
    if !is_root() || as_nobody().is_none() {
        eprintln!("skipped: needs root and setpriv or runuser to run prof as nobody");
        return;
    }
    // Through `timeout`, as the attaches below: setpriv keeps root's capabilities until its
    // own `exec`, so it can start a binary under a directory closed to nobody, which nobody's
    // `timeout` then cannot.
    let reachable = as_nobody()
        .unwrap()
        .args(["timeout", "60"])
        .arg(prof_e2e::prof_bin())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !reachable {
        eprintln!(
            "skipped: nobody cannot run the prof binary where it was built (a private home?)"
        );
        return;
    }
    let dir = TempDir::new("record_pid_refused");
    // nobody writes the session here (it is never written: the attach is refused).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut root_sleep = Command::new("sleep").arg("60").spawn().unwrap();
    let (status, stderr) = attach_as_nobody(&dir, root_sleep.id());
    root_sleep.kill().unwrap();
    root_sleep.wait().unwrap();
    assert!(!status.success(), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("another user")
            && stderr.contains("CAP_PERFMON")
            && !stderr.contains("paranoid"),
        "{stderr}"
    );

    let exe = build_c(dir.path(), "nondumpable");
    let mut own = as_nobody()
        .unwrap()
        .arg(&exe)
        .arg("60")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(own.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    // setpriv and runuser run the program as their own process, or as a child: the sleeper.
    let pid = find_nondumpable(own.id());
    let (status, stderr) = attach_as_nobody(&dir, pid);
    own.kill().unwrap();
    own.wait().unwrap();
    assert!(!status.success(), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("non-dumpable") && !stderr.contains("paranoid"),
        "{stderr}"
    );
}

/// The process named `nondumpable` that is `pid` or a child of it.
fn find_nondumpable(pid: u32) -> u32 {
    let comm = |p: u32| std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
    if comm(pid).trim() == "nondumpable" {
        return pid;
    }
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    children
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .find(|&c| comm(c).trim() == "nondumpable")
        .unwrap_or_else(|| panic!("no nondumpable under {pid}"))
}
