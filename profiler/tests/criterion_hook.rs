//! `prof::criterion::Profiler` under a real criterion run in profiling mode (what
//! `cargo bench -- --profile-time S` sets): one session per benchmark in criterion's folder,
//! its top function the benchmarked one, and failures as one line on the caller's writer.

mod common;

use criterion::Criterion;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The benchmarked function: all of its time is its own.
#[inline(never)]
fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// A writer the test reads back after criterion has consumed the hook.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// A fresh folder for criterion's output.
fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-criterion-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs benchmark `fib` in profiling mode for one second under the hook.
fn profile_fib(dir: &Path, out: &Shared) {
    let hook = prof::criterion::Profiler::new(
        prof::Options::default().interval(Duration::from_millis(1)),
        out.clone(),
    )
    .top(3);
    let mut c = Criterion::default()
        .output_directory(dir)
        .profile_time(Some(Duration::from_secs(1)))
        .with_profiler(hook);
    c.bench_function("fib", |b| b.iter(|| fib(black_box(20))));
}

#[test]
fn each_profiled_benchmark_saves_a_session_topped_by_the_benchmarked_function() {
    let _serial = common::serial();
    let dir = out_dir("saves");
    let out = Shared::default();
    profile_fib(&dir, &out);

    let path = dir
        .join("fib")
        .join("profile")
        .join(prof::criterion::FILE_NAME);
    let report = prof::Report::load(&path).unwrap();
    let top = report.top(1);
    assert!(top[0].name.ends_with("::fib"), "top: {:?}", top[0].name);
    let text = out.text();
    let first = format!(
        "prof: fib: {} samples saved to {}",
        report.total_samples(),
        path.display()
    );
    assert!(text.starts_with(&first), "{text}");
    // The header line and three rows.
    assert_eq!(text.lines().count(), 1 + 2 + 3, "{text}");
    assert!(
        text.lines().nth(3).unwrap().ends_with(&top[0].name),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_benchmark_that_cannot_be_profiled_says_why_in_one_line_and_saves_nothing() {
    let _serial = common::serial();
    let dir = out_dir("busy");
    let out = Shared::default();
    let other = prof::Profiler::start(prof::Options::default()).unwrap();
    profile_fib(&dir, &out);
    drop(other);

    assert_eq!(
        out.text(),
        "prof: fib: not profiled: a profiling session is already running in this process\n"
    );
    assert!(!dir.join("fib").join("profile").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
