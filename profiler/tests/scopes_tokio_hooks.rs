//! `prof::task::tokio::hooks` (the `tokio` feature, built with `--cfg tokio_unstable`): every
//! task of the runtime records its polls, named where it was spawned. Empty in other builds:
//! `RUSTFLAGS="--cfg tokio_unstable" cargo test -p prof --features tokio --test scopes_tokio_hooks`.
#![allow(unexpected_cfgs)]
#![cfg(all(feature = "tokio", tokio_unstable))]

mod common;

use common::{names, serial, spin};
use std::time::Duration;

#[inline(never)]
fn task_work() -> u64 {
    spin(Duration::from_millis(2))
}

#[test]
fn tokio_hooks_name_every_task_and_give_its_samples_their_task() {
    let _serial = serial();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    prof::task::tokio::hooks(&mut builder);
    let rt = builder.worker_threads(2).enable_all().build().unwrap();
    let options = prof::Options::default().interval(Duration::from_millis(1));
    let profiler = prof::Profiler::start(options).unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                tokio::spawn(async {
                    for _ in 0..5 {
                        task_work();
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let report = profiler.stop().unwrap();
    let s = report.session();
    let spawned_here = s
        .tasks
        .tasks
        .iter()
        .filter(|t| s.str(t.name).contains("scopes_tokio_hooks.rs:"))
        .count();
    assert!(spawned_here >= 50, "{spawned_here}");
    let mut in_work = 0;
    for i in 0..s.samples.len() {
        if names(&report, i).iter().any(|n| n.ends_with("task_work")) {
            let task = s.samples.task(i).map(|t| s.tasks.task(t));
            let task = task.expect("a sample of a task's poll has its task");
            assert!(task.id >> 63 == 1);
            assert!(s.str(task.name).contains("scopes_tokio_hooks.rs:"));
            in_work += 1;
        }
    }
    assert!(in_work >= 50, "{in_work}");
}
