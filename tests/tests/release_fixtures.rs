//! What users build: the fixture programs of `tests/fixtures`, built in release with the
//! default profile (no debug info), `line-tables-only` and `limited`, profile themselves and
//! print what they measured; these tests compare the sessions with those measurements. The
//! tests' own debug builds keep a frame pointer in every function; these builds do not.

use prof::session::{SampleState, Session};
use prof_e2e::{release_fixture, ReleaseProfile, TempDir};
use std::process::Command;

/// Runs fixture `name` built with `profile` with `args` and a session path; the session and
/// the `truth` lines it printed (their words after `truth`).
fn run_fixture(
    profile: ReleaseProfile,
    name: &str,
    args: &[&str],
    dir: &TempDir,
) -> (Session, Vec<Vec<String>>) {
    let exe = release_fixture(profile, name);
    let out_file = dir.join(&format!(
        "{name}-{}-{}.json",
        profile.debug(),
        args.join("-")
    ));
    let out = Command::new(&exe)
        .args(args)
        .arg(&out_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{exe:?} {args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let session = prof::session::load(&out_file).unwrap();
    let truths = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("truth "))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    (session, truths)
}

/// The frame names of sample `i`, leaf first.
fn names(s: &Session, i: usize) -> Vec<&str> {
    s.stack_frames(s.samples.stack[i])
        .map(|f| s.frame_name(f))
        .collect()
}

/// Where a thread's stack starts: the outermost frame a complete unwind reaches.
fn is_thread_start(name: &str) -> bool {
    matches!(
        name.trim_start_matches("__GI___"),
        "_start" | "clone3" | "clone" | "start_thread"
    )
}

/// A frame named by its address only.
fn is_bare_address(name: &str) -> bool {
    name.starts_with("0x") && name[2..].chars().all(|c| c.is_ascii_hexdigit())
}

const WALL_KINDS: [&str; 8] = [
    "sleep", "mutex", "condvar", "channel", "join", "poll", "epoll", "read",
];

/// The measured and the sampled share of the blocked part.
fn split(blocked: f64, computing: f64, in_sleepy: u64, in_compute: u64) -> (f64, f64) {
    (
        blocked / (blocked + computing),
        in_sleepy as f64 / (in_sleepy + in_compute).max(1) as f64,
    )
}

/// How far the sampled split of both threads may be from the measured one. Within 2 points on
/// an idle machine; a busy one delays the collector's ticks and the signals of running threads,
/// and each switch between the parts may charge that delay to the wrong one (measured at load
/// 10-18: up to 6.6 points on one thread, 4 on both).
const BOUND: f64 = 0.05;
/// The same for each thread alone.
const PER_THREAD_BOUND: f64 = 0.08;

/// A regression test: in release builds a blocked thread's stack lost its callers (the search for the
/// frame record of a function that keeps a frame pointer, called from one that does not,
/// rejected the true record), so `sleepy` got 0-7% of the wall time instead of 70%.
fn wall_split_in(profile: ReleaseProfile) {
    let dir = TempDir::new(&format!("wall-split-{}", profile.debug()));
    let mut failures = Vec::new();
    for kind in WALL_KINDS {
        let (s, truths) = run_fixture(profile, "wall_split", &[kind], &dir);
        check_wall_split(&format!("{profile:?} {kind}"), &s, &truths, &mut failures);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Compares a wall_split session with the program's `truths`: each thread's sampled split
/// (and both threads') against its measured one, and the share of waiting time whose stack
/// reaches the thread's start (at least 99%) or holds a bare address (at most 1%). Each
/// figure is printed; those out of bounds go to `failures`.
fn check_wall_split(label: &str, s: &Session, truths: &[Vec<String>], failures: &mut Vec<String>) {
    let (mut waiting, mut reached, mut bare) = (0u64, 0u64, 0u64);
    let (mut all_blocked, mut all_computing, mut all_sleepy, mut all_compute) =
        (0.0, 0.0, 0u64, 0u64);
    for truth in truths {
        let tid: u64 = truth[0].parse().unwrap();
        let blocked: f64 = truth[1].parse().unwrap();
        let computing: f64 = truth[2].parse().unwrap();
        let (mut in_sleepy, mut in_compute) = (0u64, 0u64);
        for i in (0..s.samples.len()).filter(|&i| s.threads[s.samples.thread[i].index()].tid == tid)
        {
            let frames = names(s, i);
            let w = s.samples.weight[i];
            if frames.iter().any(|n| n.contains("sleepy")) {
                in_sleepy += w;
            } else if frames.iter().any(|n| n.contains("compute_for")) {
                in_compute += w;
            }
            if s.samples.state[i] == SampleState::Waiting {
                waiting += w;
                reached += w * u64::from(frames.last().is_some_and(|n| is_thread_start(n)));
                bare += w * u64::from(frames.iter().any(|n| is_bare_address(n)));
            }
        }
        let (measured, sampled) = split(blocked, computing, in_sleepy, in_compute);
        let line = format!(
            "{label} thread {tid}: measured {:.1}% blocked, sampled {:.1}%",
            100.0 * measured,
            100.0 * sampled
        );
        eprintln!("{line}");
        if (measured - sampled).abs() > PER_THREAD_BOUND {
            failures.push(line);
        }
        all_blocked += blocked;
        all_computing += computing;
        all_sleepy += in_sleepy;
        all_compute += in_compute;
    }
    let (measured, sampled) = split(all_blocked, all_computing, all_sleepy, all_compute);
    let line = format!(
        "{label}, both threads: measured {:.1}% blocked, sampled {:.1}%",
        100.0 * measured,
        100.0 * sampled
    );
    eprintln!("{line}");
    if (measured - sampled).abs() > BOUND {
        failures.push(line);
    }
    let line = format!(
        "{label}: {:.2}% of waiting samples reach the thread's start, {:.2}% have a bare address",
        100.0 * reached as f64 / waiting.max(1) as f64,
        100.0 * bare as f64 / waiting.max(1) as f64,
    );
    eprintln!("{line}");
    if (reached as f64) < 0.99 * waiting as f64 || bare as f64 > 0.01 * waiting as f64 {
        failures.push(line);
    }
}

/// `prof record --mode wall` on the same program, profiled from outside: blocked time comes
/// from context switches (no signal), charged to the stack each thread blocked in, whatever
/// blocked it.
#[test]
fn record_wall_split_of_a_default_release_build() {
    let exe = release_fixture(ReleaseProfile::Default, "wall_split");
    let dir = TempDir::new("record-wall-split");
    let mut failures = Vec::new();
    for kind in WALL_KINDS {
        let out_file = dir.join(&format!("{kind}.json.gz"));
        let out = Command::new(prof_e2e::prof_bin())
            .args(["record", "--mode", "wall", "-o"])
            .arg(&out_file)
            .arg("--")
            .arg(&exe)
            .args([kind, "-"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{kind}: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s = prof::session::load(&out_file).unwrap();
        let truths: Vec<Vec<String>> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("truth "))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect();
        assert_eq!(truths.len(), 2, "{stdout}");
        check_wall_split(&format!("prof record {kind}"), &s, &truths, &mut failures);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn wall_split_in_a_default_release_build() {
    wall_split_in(ReleaseProfile::Default);
}

#[test]
fn wall_split_in_a_line_tables_only_build() {
    wall_split_in(ReleaseProfile::LineTablesOnly);
}

#[test]
fn wall_split_in_a_limited_debug_build() {
    wall_split_in(ReleaseProfile::Limited);
}

/// The total weight, of sample type `ty`, of the samples with a frame containing `needle`.
fn weight_with(s: &Session, ty: &str, needle: &str, tid: Option<u64>) -> u64 {
    weight_where(s, ty, |n| n.contains(needle), tid)
}

/// The total weight, of sample type `ty`, of the samples (of thread `tid`, or all) with a frame
/// whose name passes `frame`.
fn weight_where(s: &Session, ty: &str, frame: impl Fn(&str) -> bool, tid: Option<u64>) -> u64 {
    let mut s = s.clone();
    s.select_sample_type(ty).expect("the session has the type");
    (0..s.samples.len())
        .filter(|&i| tid.is_none_or(|t| s.threads[s.samples.thread[i].index()].tid == t))
        .filter(|&i| names(&s, i).iter().any(|n| frame(n)))
        .map(|i| s.samples.weight[i])
        .sum()
}

/// CPU attribution and names in a release build: the CPU split between two functions, as the
/// program measured it with each thread's CPU clock (so load cannot skew it), and, where the
/// build has debug info, the inlined function named.
fn cpu_split_in(profile: ReleaseProfile) {
    let dir = TempDir::new(&format!("cpu-split-{}", profile.debug()));
    let (s, truths) = run_fixture(profile, "cpu_split", &[], &dir);
    for truth in &truths {
        let tid: u64 = truth[0].parse().unwrap();
        let heavy: f64 = truth[1].parse().unwrap();
        let light: f64 = truth[2].parse().unwrap();
        let in_heavy = weight_with(&s, "cpu", "cpu_split::heavy", Some(tid));
        let in_light = weight_with(&s, "cpu", "cpu_split::light", Some(tid));
        let measured = heavy / (heavy + light);
        let sampled = in_heavy as f64 / (in_heavy + in_light).max(1) as f64;
        let line = format!(
            "{profile:?} thread {tid}: measured {:.1}% in heavy, sampled {:.1}% ({} + {} ns)",
            100.0 * measured,
            100.0 * sampled,
            in_heavy,
            in_light
        );
        eprintln!("{line}");
        // 5 points, as the wall split's `BOUND`: about 400 samples a thread, and with two CPU
        // hogs beside it a signal can land after the part it was due in (2.5 points off once
        // in CI, 3.3 another time); an idle machine holds 0.5 (the sampler_accuracy benches).
        assert!((measured - sampled).abs() <= BOUND, "{line}");
        // Nearly all of the thread's CPU time is in the two parts, and is found there.
        assert!(
            (in_heavy + in_light) as f64 >= 0.9 * (heavy + light),
            "{line}"
        );
    }
    // Inlined frames are named by their path with `limited` debug info, by their name and
    // file with `line-tables-only`.
    let is_mix = |n: &str| n == "cpu_split::mix" || n == "mix (cpu_split.rs)";
    let inlined = weight_where(&s, "cpu", is_mix, None);
    let heavy = weight_with(&s, "cpu", "cpu_split::heavy", None);
    if profile == ReleaseProfile::Default {
        // No debug info: nothing says `mix` was inlined; its time is `heavy`'s own.
        assert_eq!(inlined, 0);
    } else {
        // Not all of `heavy`: its loop counter's compare and increment are named from the
        // range iterator (`next<u64>`, `lt`), and rustc 1.95 puts most of the loop's samples
        // there (`mix` had 22% and 26% of `heavy` here).
        assert!(
            inlined as f64 >= 0.15 * heavy as f64,
            "{profile:?}: the inlined `mix` has {inlined} of heavy's {heavy} ns"
        );
    }
}

#[test]
fn cpu_split_and_names_in_a_default_release_build() {
    cpu_split_in(ReleaseProfile::Default);
}

#[test]
fn cpu_split_and_names_in_a_line_tables_only_build() {
    cpu_split_in(ReleaseProfile::LineTablesOnly);
}

#[test]
fn cpu_split_and_names_in_a_limited_debug_build() {
    cpu_split_in(ReleaseProfile::Limited);
}

/// Allocation attribution in a release build: bytes and objects of each function, estimated
/// from samples, against what the program allocated.
fn alloc_split_in(profile: ReleaseProfile) {
    let dir = TempDir::new(&format!("alloc-split-{}", profile.debug()));
    let (s, truths) = run_fixture(profile, "alloc_split", &[], &dir);
    for truth in &truths {
        let function = format!("alloc_split::{}", truth[0]);
        let bytes: u64 = truth[1].parse().unwrap();
        let objects: u64 = truth[2].parse().unwrap();
        let est_bytes = weight_with(&s, "alloc_bytes", &function, None);
        let est_objects = weight_with(&s, "alloc_objects", &function, None);
        let line = format!(
            "{profile:?} {function}: {est_bytes} bytes estimated of {bytes}, {est_objects} objects of {objects}"
        );
        eprintln!("{line}");
        let off = |est: u64, truth: u64| (est as f64 / truth as f64 - 1.0).abs();
        assert!(off(est_bytes, bytes) <= 0.05, "{line}");
        assert!(off(est_objects, objects) <= 0.05, "{line}");
    }
}

#[test]
fn alloc_split_in_a_default_release_build() {
    alloc_split_in(ReleaseProfile::Default);
}

#[test]
fn alloc_split_in_a_line_tables_only_build() {
    alloc_split_in(ReleaseProfile::LineTablesOnly);
}

#[test]
fn alloc_split_in_a_limited_debug_build() {
    alloc_split_in(ReleaseProfile::Limited);
}

/// A regression test: frame reuse where optimized code holds data in bp. Each caller passes the leaf's
/// bp on unchanged, so the registers never matched whole below the first frame that restores
/// bp, and every sample unwound its whole recursion again (32 frames a sample where it now
/// unwinds 2). Reuse must still give exactly the frames a full unwind gives.
fn frame_reuse_in(profile: ReleaseProfile) {
    let dir = TempDir::new(&format!("frame-reuse-{}", profile.debug()));
    let (_, truths) = run_fixture(profile, "frame_reuse", &[], &dir);
    let numbers: Vec<u64> = truths[0].iter().map(|w| w.parse().unwrap()).collect();
    let [samples, reused, mismatches, frames_before] = numbers[..] else {
        panic!("{truths:?}");
    };
    let line = format!(
        "{profile:?}: {reused} of {samples} samples reused frames, {mismatches} differed from a \
         full unwind; {frames_before} frames unwound before the joins"
    );
    eprintln!("{line}");
    assert!(samples >= 1_000, "{line}");
    assert_eq!(mismatches, 0, "{line}");
    assert!(reused * 10 >= samples * 9, "{line}");
    // 20 to 40 frames of recursion between the leaf and the outer frames: a join below them
    // takes 2 or 3; only the first sample at each depth joins above.
    assert!(frames_before <= reused * 6, "{line}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn frame_reuse_with_data_in_bp_in_a_default_release_build() {
    frame_reuse_in(ReleaseProfile::Default);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn frame_reuse_with_data_in_bp_in_a_limited_debug_build() {
    frame_reuse_in(ReleaseProfile::Limited);
}
