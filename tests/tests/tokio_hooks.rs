//! prof's tokio task hooks (`prof::task::tokio::hooks`, feature `tokio`, which needs
//! `--cfg tokio_unstable`) in a real tokio program built in release: the fixture
//! `tokio_tasks` runs a few hundred tasks (computing, sleeping, waiting on a channel), each
//! computing task measuring its CPU time with its thread's CPU clock; the session must name
//! every task by its spawn line, give every sample of a poll its task, and split the CPU
//! between the tasks as they measured it.

use prof::session::{Poll, Session};
use prof_e2e::{tokio_fixture, tokio_fixture_with, ReleaseProfile, TempDir};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// What the fixture printed of one kind of task.
struct Kind {
    kind: String,
    name: String,
    cpu_ns: u64,
    polls: u64,
}

fn run() -> (Session, Vec<Kind>) {
    let exe = tokio_fixture("tokio_tasks");
    let dir = TempDir::new("tokio-hooks");
    let file = dir.join("tokio.json");
    let out = Command::new(&exe).arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{exe:?}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("truth "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Kind {
                kind: w[0].to_owned(),
                name: format!("tokio_tasks.rs:{}", w[1]),
                cpu_ns: w[2].parse().unwrap(),
                polls: w[3].parse().unwrap(),
            }
        })
        .collect();
    (prof::session::load(&file).unwrap(), kinds)
}

#[test]
fn tokio_hooks_name_every_task_and_split_its_cpu_as_the_tasks_measured_it() {
    let (s, kinds) = run();
    assert_eq!(kinds.len(), 4);
    let name_of = |t| s.str(s.tasks.task(t).name);
    for k in &kinds {
        let tasks: Vec<usize> = (0..s.tasks.tasks.len())
            .filter(|&t| s.str(s.tasks.tasks[t].name).ends_with(&k.name))
            .collect();
        assert_eq!(tasks.len(), 100, "{} tasks named {}", k.kind, k.name);
        let polls = s
            .tasks
            .polls
            .iter()
            .filter(|p| name_of(p.task).ends_with(&k.name))
            .count() as u64;
        assert!(polls >= 100 * k.polls, "{}: {polls} polls", k.kind);
    }
    // Every sample computing in a task's poll has its task, one of the computing kinds.
    let computing: Vec<&str> = kinds[..2].iter().map(|k| k.name.as_str()).collect();
    let mut weight = [0u64; 2];
    let mut in_work = 0;
    for i in 0..s.samples.len() {
        let working = s
            .stack_frames(s.samples.stack[i])
            .any(|f| s.frame_name(f).ends_with("burn_cpu"));
        if !working {
            continue;
        }
        in_work += 1;
        let task = s.samples.task(i).map(name_of);
        let task = task.unwrap_or_else(|| panic!("sample {i} in burn_cpu has no task"));
        let kind = computing.iter().position(|n| task.ends_with(n));
        let kind = kind.unwrap_or_else(|| panic!("sample {i} in burn_cpu is in task {task}"));
        weight[kind] += s.samples.weight[i];
    }
    assert!(in_work >= 500, "{in_work} samples in burn_cpu");
    let measured = kinds[0].cpu_ns as f64 / (kinds[0].cpu_ns + kinds[1].cpu_ns) as f64;
    let sampled = weight[0] as f64 / (weight[0] + weight[1]) as f64;
    let line = format!(
        "heavy tasks' share: measured {:.1}%, sampled {:.1}% ({weight:?} ns)",
        100.0 * measured,
        100.0 * sampled
    );
    eprintln!("{line}");
    // Within 1 point on an idle machine; 2 seen with two CPU hogs beside the tests (a signal
    // due in one poll can land in the next), 3 allowed: the release fixtures' CPU split, the
    // same kind of bound, went from 2.5 to 3.3 points off between two CI runs.
    assert!((measured - sampled).abs() <= 0.03, "{line}");
    let total = (kinds[0].cpu_ns + kinds[1].cpu_ns) as f64;
    let found = (weight[0] + weight[1]) as f64;
    assert!(found >= 0.9 * total && found <= 1.1 * total, "{line}");
}

/// Runs the fixture `tokio_awaits` built with `profile`: its session, and the file holding it
/// (in the directory returned).
fn run_awaits(profile: ReleaseProfile) -> (Session, PathBuf, TempDir) {
    let exe = tokio_fixture_with(profile, "tokio_awaits");
    let dir = TempDir::new(&format!("tokio-awaits-{}", profile.debug()));
    let file = dir.join("awaits.json");
    let out = Command::new(&exe).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{exe:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (prof::session::load(&file).unwrap(), file, dir)
}

/// Each task's polls (by its index in the tasks table), in time order.
fn polls_by_task(s: &Session) -> HashMap<u32, Vec<&Poll>> {
    let mut by_task: HashMap<u32, Vec<&Poll>> = HashMap::new();
    for p in &s.tasks.polls {
        by_task.entry(p.task.0).or_default().push(p);
    }
    for polls in by_task.values_mut() {
        polls.sort_by_key(|p| p.start_ns);
    }
    by_task
}

/// In a release build (line tables only, the tasks' async functions inlined into
/// their polls): in wall mode each poll that leaves its task waiting says at which `.await`,
/// the leaf future below the task's own async function.
#[test]
fn a_release_build_says_at_which_await_each_task_waited() {
    let (s, file, _dir) = run_awaits(ReleaseProfile::LineTablesOnly);
    let by_task = polls_by_task(&s);
    assert_eq!(by_task.len(), 40);
    let (mut pending, mut known) = (0, 0);
    for (task, polls) in &by_task {
        let name = s.str(s.tasks.tasks[*task as usize].name);
        // A line-tables-only build names an inlined async function `{async_fn#0}` (no
        // namespace: see docs/sampler.md, Names); its line says which one it is.
        let (leaf, line) = match name {
            "sleeper" => ("Sleep", 10),
            _ => ("recv", 14),
        };
        for p in &polls[..polls.len() - 1] {
            pending += 1;
            let Some(stack) = p.waited_at else { continue };
            known += 1;
            // Leaf first.
            let frames: Vec<(&str, Option<u32>)> = s
                .stack_frames(stack)
                .map(|f| (s.frame_name(f), s.frame(f).line))
                .collect();
            let leaf = frames.iter().position(|f| f.0.contains(leaf));
            let mine = frames.iter().position(|f| {
                f.0.starts_with("{async_fn#0} (tokio_awaits.rs)") && f.1 == Some(line)
            });
            assert!(
                matches!((mine, leaf), (Some(m), Some(l)) if l < m),
                "{name}: {frames:#?}"
            );
            // The root is the task's own future (an async block of `main`), not prof's wrapper,
            // with its path from the symbol table (which spells it `{{closure}}`).
            let root = frames.last().unwrap().0;
            assert!(
                root.starts_with("tokio_awaits::main::") && root.contains("::{async_block#"),
                "{name}: {frames:#?}"
            );
        }
        assert_eq!(polls.last().unwrap().waited_at, None, "{name}");
    }
    assert!(
        known * 100 >= pending * 95,
        "{known} of {pending} pending polls say where"
    );

    // `prof report --waits`: each wait charged to its await stack, as long as it lasted. The
    // sleepers waited in `Sleep`, the listeners in `recv`; grouped by task, each name's share
    // is the gaps after its polls (until the next poll, or the session's end).
    let path = file.to_str().unwrap();
    let args = [
        "report",
        path,
        "--waits",
        "--group-by",
        "task",
        "--sort",
        "total",
        "--top",
        "99",
    ];
    let out = prof_e2e::prof(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("task_wait"), "{text}");
    let share_of = |name: &str| -> f64 {
        let line = text.lines().find(|l| l.trim_end().ends_with(name));
        let line = line.unwrap_or_else(|| panic!("no row {name}:\n{text}"));
        let pct = line.split_whitespace().nth(2).unwrap();
        pct.trim_end_matches('%').parse().unwrap()
    };
    let gaps = |name: &str| -> u64 {
        let mut sum = 0;
        for polls in by_task.values() {
            if s.str(s.tasks.task(polls[0].task).name) != name {
                continue;
            }
            for (k, p) in polls.iter().enumerate() {
                if p.waited_at.is_some() {
                    let next = polls.get(k + 1).map_or(s.meta.duration_ns, |n| n.start_ns);
                    sum += next.saturating_sub(p.end_ns);
                }
            }
        }
        sum
    };
    let (sleep, listen) = (gaps("sleeper"), gaps("listener"));
    let want = 100.0 * sleep as f64 / (sleep + listen) as f64;
    let got = share_of("task:sleeper");
    assert!(
        (want - got).abs() < 0.2,
        "sleepers waited {want:.1}% of the waits, the report says {got}%\n{text}"
    );
    assert!(
        (100.0 - want - share_of("task:listener")).abs() < 0.2,
        "{text}"
    );

    // `prof convert --waits`: the same waits in every format; folded, each line a stack of
    // waits and its nanoseconds, which add up to the gaps.
    let out = prof_e2e::prof(&["convert", path, "--waits", "--to", "folded", "-o", "-"]);
    let folded = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sum: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, sleep + listen, "{folded}");

    // A session whose polls say nothing of waits: a one-line error.
    let v5 = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/session/v5.json");
    let out = prof_e2e::prof(&["report", v5.to_str().unwrap(), "--waits"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--waits: no task in"), "{err}");
}

/// In a release build without debug info (cargo's default profile): names come from
/// the symbol table alone, and the async functions inlined into the tasks' futures leave no
/// frame; the tasks' own futures keep theirs (prof polls them through a pointer, never inlined
/// into its wrapper), so the cut at the wrapper still leaves each await stack rooted at the
/// task's future (an async block of `main`), with no frame of prof's or of the executor.
#[test]
fn a_release_build_without_debug_info_roots_await_stacks_at_the_tasks_future() {
    let (s, _file, _dir) = run_awaits(ReleaseProfile::Default);
    let by_task = polls_by_task(&s);
    assert_eq!(by_task.len(), 40);
    let (mut pending, mut known) = (0, 0);
    for (task, polls) in &by_task {
        let name = s.str(s.tasks.tasks[*task as usize].name);
        let leaf = match name {
            "sleeper" => "Sleep",
            _ => "recv",
        };
        for p in &polls[..polls.len() - 1] {
            pending += 1;
            let Some(stack) = p.waited_at else { continue };
            known += 1;
            // Leaf first.
            let frames: Vec<&str> = s.stack_frames(stack).map(|f| s.frame_name(f)).collect();
            // `{{closure}}` in the default symbol mangling, `{closure#0}` in v0's.
            let root = frames.last().unwrap();
            assert!(
                root.starts_with("tokio_awaits::main::{") && root.contains("closure"),
                "{name}: {frames:#?}"
            );
            assert!(
                frames.iter().any(|f| f.contains(leaf)),
                "{name}: {frames:#?}"
            );
            assert!(
                !frames.iter().any(|f| {
                    f.contains("prof::")
                        || f.contains("prof_capture::")
                        || f.contains("tokio::runtime")
                }),
                "{name}: {frames:#?}"
            );
        }
        assert_eq!(polls.last().unwrap().waited_at, None, "{name}");
    }
    assert!(
        known * 100 >= pending * 95,
        "{known} of {pending} pending polls say where"
    );
}
