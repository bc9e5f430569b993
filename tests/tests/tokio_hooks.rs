//! prof's tokio task hooks (`prof::task::tokio::hooks`, feature `tokio`, which needs
//! `--cfg tokio_unstable`) in a real tokio program built in release: the fixture
//! `tokio_tasks` runs a few hundred tasks (computing, sleeping, waiting on a channel), each
//! computing task measuring its CPU time with its thread's CPU clock; the session must name
//! every task by its spawn line, give every sample of a poll its task, and split the CPU
//! between the tasks as they measured it.

use prof::session::Session;
use prof_e2e::{tokio_fixture, TempDir};
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
fn r22_tokio_hooks_name_every_task_and_split_its_cpu_as_the_tasks_measured_it() {
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
