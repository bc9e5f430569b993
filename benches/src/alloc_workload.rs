//! The allocation-heavy workload of `benches/benches/alloc.rs`, run in a child process that is
//! one of two binaries: `alloc-plain` (the system allocator) and `alloc-sampled` (the system
//! allocator under `prof::alloc::Sampling`). A global allocator is fixed per binary, hence two.
//!
//! The work: parse a JSON document of small records into `serde_json::Value`s (strings, vectors,
//! maps), then rebuild each record's strings and vectors by hand, and drop everything; repeat.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

/// The JSON document: `records` objects with a name, tags, numbers and a nested object.
pub fn document(records: usize) -> String {
    let mut text = String::from("[");
    for i in 0..records {
        if i > 0 {
            text.push(',');
        }
        let _ = write!(
            text,
            r#"{{"id":{i},"name":"record-{i}","tags":["a{}","b{}","c{}"],"values":[{},{},{},{},{}],"meta":{{"owner":"user{}","ok":{}}}}}"#,
            i % 13,
            i % 17,
            i % 19,
            i,
            i * 3,
            i * 7,
            i % 1000,
            i / 3,
            i % 101,
            i % 2 == 0
        );
    }
    text.push(']');
    text
}

/// One pass over the document: parse it, then make a `String` and a `Vec` per value.
#[inline(never)]
pub fn pass(text: &str) -> u64 {
    let value: serde_json::Value = serde_json::from_str(text).expect("the document is JSON");
    let mut sum = 0u64;
    for record in value.as_array().into_iter().flatten() {
        let name = record["name"].as_str().unwrap_or_default().to_owned();
        let tags: Vec<String> = record["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        let values: Vec<u64> = record["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_u64)
            .collect();
        sum += name.len() as u64 + tags.len() as u64 + values.iter().sum::<u64>();
        black_box((name, tags, values));
    }
    sum
}

/// Runs `passes` passes over a document of 20,000 records.
pub fn workload(passes: usize) -> u64 {
    let text = document(20_000);
    (0..passes).fold(0, |acc, _| acc ^ pass(&text))
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// A thread that only waits, so that glibc's malloc runs as in any multi-threaded program.
fn idle_thread() -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("idle".into())
        .spawn(std::thread::park)
        .expect("a thread")
}

/// A child's run: `session` says whether an allocation session runs around the workload (at the
/// default interval); `thread` starts an idle thread first, which makes glibc's malloc take its
/// arena lock on every call, as in any multi-threaded program (a session's collector thread
/// does the same). Prints `wall_ns thread_cpu_ns peak_rss_kib samples in_use_rows`.
pub fn child(session: bool, thread: bool, passes: usize) {
    let _idle = thread.then(idle_thread);
    let cpu0 = prof::sampler::thread_cpu_time();
    let t0 = Instant::now();
    let (samples, in_use) = if session {
        let options = prof::Options::default().mode(prof::Mode::Alloc);
        let profiler = prof::Profiler::start(options).expect("alloc session");
        black_box(workload(passes));
        let wall = t0.elapsed();
        let cpu = prof::sampler::thread_cpu_time() - cpu0;
        let report = profiler.stop().expect("report");
        let samples = report.total_samples();
        // Rows whose block was still allocated at stop: the in-use table's entries then.
        let mut s = report.into_session();
        s.select_sample_type("inuse_bytes")
            .expect("alloc sessions carry inuse_bytes");
        let in_use = s.samples.weight.iter().filter(|&&w| w > 0).count();
        println!(
            "{} {} {} {} {}",
            wall.as_nanos(),
            cpu.as_nanos(),
            peak_rss_kib(),
            samples,
            in_use
        );
        return;
    } else {
        black_box(workload(passes));
        (0, 0)
    };
    println!(
        "{} {} {} {samples} {in_use}",
        t0.elapsed().as_nanos(),
        (prof::sampler::thread_cpu_time() - cpu0).as_nanos(),
        peak_rss_kib()
    );
}

/// The in-process comparison: an idle thread beside the workload, then `rounds` rounds of two
/// chunks of `passes` passes each, one unprofiled and one inside its own allocation session, in
/// alternating order (a warm-up round first, not counted). Only the passes are timed, on the
/// workload thread's CPU clock: start and stop are not. Prints one line per round,
/// `plain_cpu_ns session_cpu_ns session_samples`.
pub fn chunks(rounds: usize, passes: usize) {
    let _idle = idle_thread();
    let text = document(20_000);
    let timed = |session: bool| -> (u64, u64) {
        let profiler = session.then(|| {
            let options = prof::Options::default().mode(prof::Mode::Alloc);
            prof::Profiler::start(options).expect("alloc session")
        });
        let cpu0 = prof::sampler::thread_cpu_time();
        for _ in 0..passes {
            black_box(pass(&text));
        }
        let cpu = (prof::sampler::thread_cpu_time() - cpu0).as_nanos() as u64;
        let samples = profiler.map_or(0, |p| p.stop().expect("report").total_samples());
        (cpu, samples)
    };
    for round in 0..=rounds {
        let session_first = round % 2 == 1;
        let first = timed(session_first);
        let second = timed(!session_first);
        let ((plain, _), (session, samples)) = if session_first {
            (second, first)
        } else {
            (first, second)
        };
        if round > 0 {
            println!("{plain} {session} {samples}");
        }
    }
}
