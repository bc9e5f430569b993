//! Helpers shared by the sampler tests: serialization of process-wide sessions, CPU-time busy
//! loops, and reading attributions out of a report.
#![allow(dead_code)]

use prof::sampler::thread_cpu_time;
use prof::Report;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// Only one profiling session per process at a time: every test that starts one holds this.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Burns `cpu` of this thread's CPU time (measured with the thread CPU clock, so a loaded
/// machine only makes it take longer) without allocating.
#[inline(never)]
pub fn spin(cpu: Duration) -> u64 {
    let end = thread_cpu_time() + cpu;
    let mut x = 1u64;
    while thread_cpu_time() < end {
        for _ in 0..20_000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

/// The frame names of a sample's stack, leaf first.
pub fn names(report: &Report, sample: usize) -> Vec<String> {
    let s = report.session();
    s.stack_frames(s.samples.stack[sample])
        .map(|f| s.frame_name(f).to_owned())
        .collect()
}

/// Indices of the samples taken on thread `tid`.
pub fn samples_on(report: &Report, tid: u64) -> Vec<usize> {
    let s = report.session();
    (0..s.samples.len())
        .filter(|&i| s.threads[s.samples.thread[i].index()].tid == tid)
        .collect()
}

/// Total weight of the samples whose stack has a frame whose name contains `needle`.
pub fn weight_with(report: &Report, needle: &str) -> u64 {
    let s = report.session();
    (0..s.samples.len())
        .filter(|&i| names(report, i).iter().any(|n| n.contains(needle)))
        .map(|i| s.samples.weight[i])
        .sum()
}

/// Voluntary plus involuntary context switches of thread `tid` so far: a blocked thread that
/// a signal woke has at least one more.
pub fn context_switches(tid: u64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    status
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum()
}
