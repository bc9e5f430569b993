//! `prof record` measured from outside, in three parts, each
//! selected by name on the command line (default all):
//!
//! - `accuracy`: `tests/data/record/split.c` (`cc -O2 -fomit-frame-pointer`), two functions of
//!   a CPU split the program measures with `CLOCK_THREAD_CPUTIME_ID`, recorded at 1 kHz for 2 s
//!   of CPU, `ROUNDS` times: prof's split against the program's, in points.
//! - `rate`: `rate.c` (two threads spinning 1 s of CPU each) at 1 and 10 kHz, samples per
//!   thread over its own CPU time times the rate; `burst.c` (1,000 threads of 2 ms, four at a
//!   time) and a shell script starting `split` 100 times for 3 ms each: threads and processes
//!   with samples.
//! - `cost`: the programs of `programs` (xz and gzip on 5 MB of generated text, the
//!   `fixed_work` Rust fixture, sqlite3, python3, node with its perf map, a shell pipeline and
//!   `make -j2` of 17 C files), each unprofiled, under `prof record -F 1000`,
//!   `samply record --rate 1000 --save-only` and `perf record --call-graph dwarf -F 1000`, the
//!   configurations alternating within each round. Per configuration, the median over rounds
//!   of: wall time and the CPU time of the whole tree (the recorder and the command, from
//!   `wait4`) over the unprofiled run's; the recorder process's own CPU time and peak resident
//!   memory (`/proc/PID/stat` and `VmHWM`, read every 10 ms until it exits, so up to 10 ms of
//!   its end is missed); the output's bytes, and for prof its bytes per sample. A recorder that
//!   is not installed is left out with a note; samply refuses `perf_event_paranoid` above 1
//!   even for root, so its runs set it to 1 and back (as root).
//!
//! - `wall`: `tests/data/record/pingpong.c` (two threads passing a byte over pipes, 1 µs of
//!   work a round: about 150,000 context switches a second unprofiled on the 2-core machines),
//!   `ROUNDS` times unprofiled and under `prof record --mode wall` with the switch's stack copy
//!   at 32,000 bytes (the task clock's, as every switch copied before) and at its default,
//!   alternating: per configuration the median of the program's switches a second, the share
//!   of records dropped, prof's split against the program's (`compute` and `wait_peer`, in
//!   points), prof's own CPU time (as in `cost`) and the stacks reaching the thread's start.
//!
//! - `calls`: `tests/data/record/calls.c` (1,012,452 calls of four small functions, from two
//!   threads, by recursion and in a forked child), `ROUNDS` times each, alternating: unprofiled;
//!   `prof record --calls` counting all four, and with `--calls-timed` timing each call too;
//!   uftrace on a `-pg` build of the same source and
//!   with its dynamic patching (`-P`) of the plain build; bpftrace counting the four with
//!   uprobes; valgrind's callgrind. Per tool the median wall time and the cost per counted
//!   call (its time less the unprofiled run's, over the calls), and whether prof's counts were
//!   exact. A tool that is not installed is left out with a note.
//!
//! Run: `cargo bench -p prof-benches --bench record -- [accuracy] [rate] [cost] [wall] [calls]
//! [--rounds N] [--program NAME]` (`--program` keeps the cost table's programs whose name holds
//! NAME).

use prof_e2e::installed;
use prof_e2e::recorded::{build_c, samples_per_tid, share};
use prof_e2e::{release_fixture, ReleaseProfile, TempDir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(5);
    let parts: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["accuracy", "rate", "cost", "wall", "calls"].contains(a))
        .collect();
    let all = parts.is_empty();
    let dir = TempDir::new("bench_record");
    let prof = prof_e2e::prof_bin();
    println!("prof: {}", prof.display());
    if all || parts.contains(&"accuracy") {
        accuracy(&prof, &dir, rounds);
    }
    if all || parts.contains(&"rate") {
        rate(&prof, &dir);
    }
    if all || parts.contains(&"cost") {
        let only = args
            .iter()
            .position(|a| a == "--program")
            .and_then(|i| args.get(i + 1))
            .map(String::as_str);
        cost(&prof, &dir, rounds, only);
    }
    if all || parts.contains(&"wall") {
        wall(&prof, &dir, rounds);
    }
    if all || parts.contains(&"calls") {
        calls(&prof, &dir, rounds);
    }
}

/// Runs `prof record -o DIR/NAME ARGS...` to its end; returns its output and the session.
fn record(
    prof: &Path,
    dir: &TempDir,
    args: &[&str],
) -> (std::process::Output, prof::session::Session) {
    let out = dir.join("bench.json.gz");
    let output = Command::new(prof)
        .args(["record", "-o", out.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let session = prof::session::load(&out).unwrap();
    (output, session)
}

fn accuracy(prof: &Path, dir: &TempDir, rounds: usize) {
    let exe = build_c(dir.path(), "split");
    println!("\n## accuracy: split 2 (1 kHz), prof's share of spin_alpha against the program's");
    let mut errors = Vec::new();
    for round in 0..rounds {
        let (output, session) =
            record(prof, dir, &["-F", "1000", "--", exe.to_str().unwrap(), "2"]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let truth: f64 = stdout.split_whitespace().nth(1).unwrap().parse().unwrap();
        let got = share(&session, "spin_alpha");
        let points = (got - truth) * 100.0;
        println!(
            "round {round}: program {:.2}%, prof {:.2}%, {points:+.2} points, {} samples",
            truth * 100.0,
            got * 100.0,
            session.samples.stack.len()
        );
        errors.push(points.abs());
    }
    errors.sort_by(f64::total_cmp);
    println!(
        "error: median {:.2} points, largest {:.2}",
        errors[errors.len() / 2],
        errors[errors.len() - 1]
    );
}

fn rate(prof: &Path, dir: &TempDir) {
    println!("\n## rate");
    let exe = build_c(dir.path(), "rate");
    for hz in [1_000u64, 10_000] {
        let (output, session) = record(
            prof,
            dir,
            &["-F", &hz.to_string(), "--", exe.to_str().unwrap(), "2", "1"],
        );
        let counts = samples_per_tid(&session);
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let (tid, cpu) = line.split_once(' ').unwrap();
            let (tid, cpu): (u64, f64) = (tid.parse().unwrap(), cpu.parse().unwrap());
            let got = counts.iter().find(|c| c.0 == tid).map_or(0, |c| c.1);
            let asked = cpu * hz as f64 / 1e9;
            println!(
                "{hz} Hz, thread {tid}: {got} samples for {:.1} ms of CPU: {:.2}% of the rate; \
                 dropped {}",
                cpu / 1e6,
                got as f64 / asked * 100.0,
                session.meta.dropped_samples
            );
        }
    }
    let burst = build_c(dir.path(), "burst");
    let (_, session) = record(
        prof,
        dir,
        &["-F", "1000", "--", burst.to_str().unwrap(), "1000", "2"],
    );
    let seen = samples_per_tid(&session)
        .iter()
        .zip(&session.threads)
        // The main thread is named after the program too.
        .filter(|((_, n), t)| {
            *n > 0 && session.str(t.name) == "burst" && t.tid != u64::from(session.meta.pid)
        })
        .count();
    println!("1,000 threads of 2 ms at 1 kHz: {seen} seen");
    let split = build_c(dir.path(), "split");
    let script = format!(
        "i=0; while [ $i -lt 100 ]; do {} 0.003 >/dev/null; i=$((i + 1)); done",
        split.display()
    );
    let (_, session) = record(prof, dir, &["-F", "1000", "--", "sh", "-c", &script]);
    let mut tids: Vec<u64> = session
        .samples
        .stack
        .iter()
        .zip(&session.samples.thread)
        .filter(|(&s, _)| {
            session
                .stack_frames(s)
                .any(|f| session.frame_name(f).starts_with("spin_"))
        })
        .map(|(_, t)| session.threads[t.index()].tid)
        .collect();
    tids.sort_unstable();
    tids.dedup();
    println!("100 processes of 3 ms at 1 kHz: {} seen", tids.len());
}

/// 5 MB of text: lines of words drawn from a small vocabulary (xorshift), compressible as prose.
fn text(path: &Path) {
    const WORDS: &[&str] = &[
        "the", "sample", "profile", "stack", "thread", "process", "kernel", "frame", "of", "a",
        "time", "clock", "ring", "record", "symbol", "address", "and", "to", "in", "is",
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut out = String::with_capacity(5_100_000);
    while out.len() < 5_000_000 {
        for i in 0..12 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out += WORDS[(x % WORDS.len() as u64) as usize];
            out += if i == 11 { ".\n" } else { " " };
        }
        out += &format!("{}\n", x % 100_000);
    }
    std::fs::write(path, out).unwrap();
}

/// What one run gave.
#[derive(Clone, Copy, Default)]
struct Run {
    wall: f64,
    tree_cpu: f64,
    own_cpu: f64,
    peak_kib: u64,
    bytes: u64,
    samples: u64,
}

/// The recorder's own CPU seconds (not its children's) and peak resident KiB, from /proc.
fn own_usage(pid: u32) -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((ticks as f64 / hz, hwm))
}

/// `bytes` as kB below a megabyte, as MB from there.
fn size(bytes: f64) -> String {
    if bytes < 1e6 {
        format!("{:.0} kB", bytes / 1e3)
    } else {
        format!("{:.1} MB", bytes / 1e6)
    }
}

/// Runs `argv` to its end in the directory `cwd` (node writes its V8 logs where it runs),
/// watching it; the CPU of the whole tree comes from `wait4`.
#[expect(clippy::zombie_processes, reason = "reaped by wait4, for its rusage")]
fn run(argv: &[String], cwd: &Path, out: Option<&Path>) -> Run {
    let start = Instant::now();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let (mut own_cpu, mut peak_kib) = (0.0, 0);
    let (status, usage) = loop {
        if let Some((cpu, hwm)) = own_usage(pid) {
            own_cpu = cpu;
            peak_kib = hwm;
        }
        let mut status = 0;
        // SAFETY: rusage is plain integers, for which all zeros is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `usage` are valid for writes; `pid` is our child.
        let got = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid as i32 {
            break (status, usage);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall = start.elapsed().as_secs_f64();
    let stderr = reader.join().unwrap();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{argv:?} failed: {stderr}"
    );
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    // prof's summary line: "saved FILE (N samples, ...)".
    let samples = stderr
        .lines()
        .find_map(|l| l.strip_prefix("saved "))
        .and_then(|l| l.split_once(" ("))
        .and_then(|(_, n)| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Run {
        wall,
        tree_cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
        own_cpu,
        peak_kib,
        bytes: out
            .and_then(|o| std::fs::metadata(o).ok())
            .map_or(0, |m| m.len()),
        samples,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The programs of the cost table: compressors (xz with liblzma, gzip: stripped distro
/// binaries), a Rust release build, sqlite3, python3, node with its JIT's perf map, a shell
/// pipeline and `make -j2` of 17 C files (a process per compiler pass).
fn programs(dir: &TempDir) -> Vec<(&'static str, Vec<String>)> {
    let input = dir.join("text.txt");
    text(&input);
    let input = input.display().to_string();
    let fixed = release_fixture(ReleaseProfile::Default, "fixed_work");
    let node_script = dir.join("fib.js");
    std::fs::write(
        &node_script,
        "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
         let t = 0; for (let k = 0; k < 200; k++) t += fib(30); console.log(t);\n",
    )
    .unwrap();
    let make_dir = dir.join("make");
    std::fs::create_dir_all(&make_dir).unwrap();
    let mut objects = String::new();
    for i in 1..=17 {
        // Thirty functions a file, so each compiler pass runs tens of milliseconds.
        let mut source = String::from("#include <string.h>\nstruct s { int a[64]; };\n");
        for f in 0..30 {
            source += &format!(
                "int f{i}_{f}(int n) {{ struct s x; memset(&x, 0, sizeof x); \
                 for (int k = 0; k < 64; k++) x.a[k] = k * {f} + {i}; int t = 0; \
                 for (int k = 0; k < n; k++) t += x.a[(k * {f}) % 64] * k - (t >> 3); \
                 return t; }}\n"
            );
        }
        std::fs::write(make_dir.join(format!("f{i}.c")), source).unwrap();
        objects += &format!("f{i}.o ");
    }
    std::fs::write(
        make_dir.join("Makefile"),
        format!(
            "all: {objects}\n\t$(CC) -shared -o libf.so {objects}\n\
             %.o: %.c\n\t$(CC) -O2 -fPIC -c $< -o $@\n"
        ),
    )
    .unwrap();
    let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    vec![
        (
            "xz -6 -T1 (5 MB of text)",
            argv(&["xz", "-6", "-T1", "-c", "-k", &input]),
        ),
        (
            "fixed_work (Rust, default release profile)",
            vec![fixed.display().to_string()],
        ),
        (
            "gzip -9 (5 MB of text)",
            argv(&["gzip", "-9", "-c", &input]),
        ),
        (
            "sqlite3, a recursive query",
            argv(&[
                "sqlite3",
                ":memory:",
                "with recursive c(x) as (select 1 union all select x + 1 from c \
                 where x < 12000000) select sum(x % 1000) from c;",
            ]),
        ),
        (
            "python3, a loop",
            argv(&[
                "python3",
                "-c",
                "print(sum(i * i for i in range(3 * 10**7)))",
            ]),
        ),
        (
            "node --perf-basic-prof (JIT)",
            argv(&[
                "node",
                "--perf-basic-prof",
                &node_script.display().to_string(),
            ]),
        ),
        (
            "sh -c 'xz | gzip'",
            argv(&["sh", "-c", &format!("xz -6 -T1 -c {input} | gzip -9 -c")]),
        ),
        (
            "make -j2, 17 C files",
            argv(&[
                "sh",
                "-c",
                &format!(
                    "rm -f {0}/*.o {0}/libf.so && make -s -j2 -C {0}",
                    make_dir.display()
                ),
            ]),
        ),
    ]
}

/// Sets `perf_event_paranoid` to 1 while it lives, and back: samply refuses more (even for
/// root), and the other recorders and prof's tests run at the machine's own setting.
struct Paranoid(Option<String>);

impl Paranoid {
    const PATH: &str = "/proc/sys/kernel/perf_event_paranoid";

    fn at_most_one() -> Paranoid {
        let was = std::fs::read_to_string(Self::PATH).unwrap_or_default();
        let above = was.trim().parse::<i32>().is_ok_and(|p| p > 1);
        if above && std::fs::write(Self::PATH, "1").is_ok() {
            return Paranoid(Some(was));
        }
        Paranoid(None)
    }
}

impl Drop for Paranoid {
    fn drop(&mut self) {
        if let Some(was) = &self.0 {
            std::fs::write(Self::PATH, was.trim()).ok();
        }
    }
}

fn cost(prof: &Path, dir: &TempDir, rounds: usize, only: Option<&str>) {
    let programs: Vec<_> = programs(dir)
        .into_iter()
        .filter(|(name, _)| only.is_none_or(|o| name.contains(o)))
        .collect();
    let out = |name: &str| -> PathBuf { dir.join(name) };
    let mut configs: Vec<(&str, Vec<String>, Option<PathBuf>)> = vec![("unprofiled", vec![], None)];
    let prof_out = out("prof.json.gz");
    configs.push((
        "prof record -F 1000",
        vec![
            prof.display().to_string(),
            "record".into(),
            "-F".into(),
            "1000".into(),
            "-o".into(),
            prof_out.display().to_string(),
            "--".into(),
        ],
        Some(prof_out.clone()),
    ));
    // samply checks the sysctl itself and refuses above 1, even for root: its runs set it to 1
    // (as root) and back.
    if installed("samply") {
        let o = out("samply.json.gz");
        configs.push((
            "samply record --rate 1000",
            [
                "samply",
                "record",
                "--save-only",
                "--rate",
                "1000",
                "-o",
                o.to_str().unwrap(),
                "--",
            ]
            .map(String::from)
            .to_vec(),
            Some(o),
        ));
    } else {
        println!("samply is not installed (cargo install samply --locked): left out");
    }
    if installed("perf") {
        let o = out("perf.data");
        configs.push((
            "perf record --call-graph dwarf -F 1000",
            [
                "perf",
                "record",
                "-q",
                "--call-graph",
                "dwarf",
                "-F",
                "1000",
                "-o",
                o.to_str().unwrap(),
                "--",
            ]
            .map(String::from)
            .to_vec(),
            Some(o),
        ));
    } else {
        println!("perf is not installed: left out");
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("\n## cost ({rounds} rounds, configurations alternating; load before: {load})");
    for (name, argv) in &programs {
        let mut runs = vec![Vec::new(); configs.len()];
        for round in 0..rounds {
            // A different configuration first each round.
            for k in 0..configs.len() {
                let c = (k + round) % configs.len();
                let (_, prefix, o) = &configs[c];
                let mut full = prefix.clone();
                full.extend(argv.iter().cloned());
                let _paranoid = (prefix.first().map(String::as_str) == Some("samply"))
                    .then(Paranoid::at_most_one);
                runs[c].push(run(&full, dir.path(), o.as_deref()));
            }
        }
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let base_wall = median(runs[0].iter().map(|r| r.wall).collect());
        let base_cpu = median(runs[0].iter().map(|r| r.tree_cpu).collect());
        println!(
            "\n### {name}: unprofiled {base_wall:.2} s wall, {base_cpu:.2} s CPU (load after: {})",
            load.trim()
        );
        println!(
            "| recorder | wall | CPU (all) | recorder's own CPU | recorder's peak RSS | output | \
             bytes/sample |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for (c, (config, _, _)) in configs.iter().enumerate().skip(1) {
            let r = &runs[c];
            let m = |f: fn(&Run) -> f64| median(r.iter().map(f).collect());
            let samples = m(|r| r.samples as f64);
            let bytes = m(|r| r.bytes as f64);
            println!(
                "| {config} | {:.3} | {:.3} | {:.2} s ({:.1}%) | {:.1} MB | {} | {} |",
                m(|r| r.wall) / base_wall,
                m(|r| r.tree_cpu) / base_cpu,
                m(|r| r.own_cpu),
                m(|r| r.own_cpu) / base_cpu * 100.0,
                m(|r| r.peak_kib as f64) / 1024.0,
                size(bytes),
                if samples > 0.0 {
                    format!("{:.0} ({samples:.0} samples)", bytes / samples)
                } else {
                    "".into()
                }
            );
        }
    }
}

/// One run of `pingpong` (under prof when `prof_args` is given): the program's own line, and
/// for prof its session, own CPU seconds and summary line.
struct PingPong {
    truth: Vec<(String, f64)>,
    session: Option<prof::session::Session>,
    own_cpu: f64,
    saved: String,
}

fn ping_pong(exe: &Path, prof: &Path, prof_args: Option<&[&str]>, out: &Path) -> PingPong {
    let program = [exe.to_str().unwrap(), "2", "1"];
    let mut command = match prof_args {
        Some(args) => {
            let mut c = Command::new(prof);
            c.args(["record", "-o", out.to_str().unwrap()])
                .args(args)
                .arg("--")
                .args(program);
            c
        }
        None => {
            let mut c = Command::new(program[0]);
            c.args(&program[1..]);
            c
        }
    };
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let mut own_cpu = 0.0;
    while child.try_wait().unwrap().is_none() {
        if let Some((cpu, _)) = own_usage(pid) {
            own_cpu = cpu;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = reader.join().unwrap();
    let saved = errors.join().unwrap();
    let words: Vec<&str> = text.split_whitespace().collect();
    let truth = words
        .chunks(2)
        .filter_map(|w| Some((w[0].to_owned(), w.get(1)?.parse().ok()?)))
        .collect();
    PingPong {
        truth,
        session: prof_args.map(|_| prof::session::load(out).unwrap()),
        own_cpu,
        saved: saved
            .lines()
            .find(|l| l.starts_with("saved "))
            .unwrap_or("")
            .to_owned(),
    }
}

fn wall(prof: &Path, dir: &TempDir, rounds: usize) {
    let exe = build_c(dir.path(), "pingpong");
    let out = dir.join("wall.json.gz");
    let configs: [(&str, Option<&[&str]>); 3] = [
        ("unprofiled", None),
        (
            "--switch-stack-bytes 32000 (the task clock's copy, as before)",
            Some(&["--mode", "wall", "--switch-stack-bytes", "32000"]),
        ),
        (
            "--mode wall (2,048-byte switch copy)",
            Some(&["--mode", "wall"]),
        ),
    ];
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\n## wall: pingpong 2 1, {rounds} rounds, configurations alternating; load before: {}",
        load.trim()
    );
    let mut runs: Vec<Vec<PingPong>> = (0..configs.len()).map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for k in 0..configs.len() {
            let c = (k + round) % configs.len();
            runs[c].push(ping_pong(&exe, prof, configs[c].1, &out));
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load after: {}", load.trim());
    let value = |r: &PingPong, name: &str| {
        r.truth
            .iter()
            .find(|(n, _)| n == name)
            .map_or(f64::NAN, |(_, v)| *v)
    };
    println!(
        "| configuration | switches/s | dropped | compute: prof − program | wait: prof − \
         program | prof's own CPU | samples (reaching the start) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|");
    for (c, (name, _)) in configs.iter().enumerate() {
        let r = &runs[c];
        let m = |f: &dyn Fn(&PingPong) -> f64| median(r.iter().map(f).collect());
        // Two switch-outs a round, over 2 s.
        let rate = m(&|r| value(r, "rounds"));
        if c == 0 {
            println!("| {name} | {rate:.0} | | | | | |");
            continue;
        }
        let dropped = m(&|r| {
            let s = r.session.as_ref().unwrap();
            let d = s.meta.dropped_samples as f64;
            100.0 * d / (d + s.samples.len() as f64)
        });
        let points = |f: &'static str, t: &'static str| {
            move |r: &PingPong| 100.0 * (share(r.session.as_ref().unwrap(), f) - value(r, t))
        };
        let compute = m(&points("compute", "compute"));
        let wait = m(&points("wait_peer", "wait"));
        let saved = &r[r.len() / 2].saved;
        println!(
            "| {name} | {rate:.0} | {dropped:.2}% | {compute:+.2} | {wait:+.2} | {:.2} s | {} |",
            m(&|r| r.own_cpu),
            saved
                .split_once(" (")
                .map_or("", |(_, rest)| rest.trim_end_matches(')'))
        );
    }
}

/// The calls `calls.c` makes to the four functions counted.
const COUNTED_CALLS: f64 = 1_012_452.0;

/// Counting calls: prof's uprobes beside uftrace, bpftrace and callgrind (see the module's
/// documentation).
fn calls(prof: &Path, dir: &TempDir, rounds: usize) {
    let plain = build_c(dir.path(), "calls");
    let pg = prof_e2e::recorded::compile(
        "cc",
        &["-O2", "-pg"],
        &prof_e2e::recorded::source("calls.c"),
        &dir.join("calls_pg"),
    );
    let plain_s = plain.to_str().unwrap().to_owned();
    let out = dir.join("calls.json.gz");
    let out_s = out.to_str().unwrap().to_owned();
    let uftrace_data = dir.join("uftrace.data");
    let uftrace_s = uftrace_data.to_str().unwrap().to_owned();
    let functions = "^(leaf|parse|depth|in_child)$";
    let probes = ["leaf", "parse", "depth", "in_child"]
        .map(|f| format!("uprobe:{plain_s}:{f}"))
        .join(",");
    // `prof record --calls FUNCTIONS` with `extra` options, on the plain build.
    let prof_record = |extra: &[&str]| -> Vec<String> {
        let mut argv: Vec<String> = vec![
            prof.to_str().unwrap().into(),
            "record".into(),
            "-o".into(),
            out_s.clone(),
            "--calls".into(),
            functions.into(),
        ];
        argv.extend(extra.iter().map(|a| (*a).to_owned()));
        argv.extend(["--".into(), plain_s.clone()]);
        argv
    };
    let mut configs: Vec<(&str, Vec<String>)> = vec![
        ("unprofiled", vec![plain_s.clone()]),
        ("prof record --calls", prof_record(&[])),
        (
            "prof record --calls --calls-timed",
            prof_record(&["--calls-timed"]),
        ),
    ];
    if installed("uftrace") {
        configs.push((
            "uftrace record (-pg build)",
            vec![
                "uftrace".into(),
                "record".into(),
                "-d".into(),
                uftrace_s.clone(),
                pg.to_str().unwrap().into(),
            ],
        ));
        configs.push((
            "uftrace record -P (patched)",
            vec![
                "uftrace".into(),
                "record".into(),
                "-d".into(),
                uftrace_s.clone(),
                "-P".into(),
                functions.into(),
                plain_s.clone(),
            ],
        ));
    } else {
        println!("uftrace is not installed: left out");
    }
    if installed("bpftrace") {
        configs.push((
            "bpftrace uprobes count()",
            vec![
                "bpftrace".into(),
                "-e".into(),
                format!("{probes} {{ @[probe] = count(); }}"),
                "-c".into(),
                plain_s.clone(),
            ],
        ));
    } else {
        println!("bpftrace is not installed: left out");
    }
    if installed("valgrind") {
        configs.push((
            "valgrind --tool=callgrind",
            vec![
                "valgrind".into(),
                "--tool=callgrind".into(),
                format!(
                    "--callgrind-out-file={}",
                    dir.join("callgrind.out").display()
                ),
                plain_s.clone(),
            ],
        ));
    } else {
        println!("valgrind is not installed: left out");
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut exact = 0;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    for _ in 0..rounds {
        for (i, (name, argv)) in configs.iter().enumerate() {
            let _ = std::fs::remove_dir_all(&uftrace_data);
            let started = Instant::now();
            let status = Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("the tool runs");
            times[i].push(started.elapsed().as_secs_f64());
            assert!(status.success(), "{name}: {status}");
            if name.starts_with("prof record --calls") {
                let session = prof::session::load(&out).expect("prof saved its session");
                let total: u64 = session.counted.iter().map(|c| c.calls).sum();
                exact += usize::from(total as f64 == COUNTED_CALLS);
            }
        }
    }
    println!(
        "\n## Counting calls: {COUNTED_CALLS} calls, {rounds} rounds, load {}",
        load.trim()
    );
    println!("| tool | wall s (median) | per counted call |");
    println!("|---|---|---|");
    let base = median(times[0].clone());
    for (i, (name, _)) in configs.iter().enumerate() {
        let t = median(times[i].clone());
        let per_call = if i == 0 {
            "-".to_owned()
        } else {
            format!("{:.2} µs", (t - base).max(0.0) / COUNTED_CALLS * 1e6)
        };
        println!("| {name} | {t:.3} | {per_call} |");
    }
    println!(
        "prof's counts exact in {exact} of {} recordings",
        2 * rounds
    );
}
