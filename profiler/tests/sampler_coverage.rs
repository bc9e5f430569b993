//! What a session covers: threads that live only a few milliseconds are sampled with
//! their CPU time, and code in a library closed with `dlclose` before stop keeps its names.

mod common;

use common::{names, serial, spin, weight_with};
use prof::sampler::{current_tid, thread_cpu_time};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Threads that each burn about 2 ms of CPU, one after another, while profiled at 1 kHz.
const SHORT_THREADS: usize = 1_000;

#[test]
fn short_lived_threads_are_sampled_with_their_cpu_time() {
    let _serial = serial();
    let p =
        prof::Profiler::start(prof::Options::default().interval(Duration::from_millis(1))).unwrap();
    let mut measured: HashMap<u64, Duration> = HashMap::new();
    for _ in 0..SHORT_THREADS {
        let (tid, cpu) = std::thread::Builder::new()
            .name("short-lived".into())
            .spawn(|| {
                spin(Duration::from_millis(2));
                (current_tid(), thread_cpu_time())
            })
            .unwrap()
            .join()
            .unwrap();
        measured.insert(tid, cpu);
    }
    let report = p.stop().unwrap();
    let s = report.session();
    let mut weight = 0u64;
    let mut in_spin = 0u64;
    let mut seen = HashSet::new();
    for i in 0..s.samples.len() {
        let tid = s.threads[s.samples.thread[i].index()].tid;
        if measured.contains_key(&tid) {
            weight += s.samples.weight[i];
            seen.insert(tid);
            if names(&report, i).iter().any(|n| n.contains("common::spin")) {
                in_spin += s.samples.weight[i];
            }
        }
    }
    let cpu: u64 = measured.values().map(|d| d.as_nanos() as u64).sum();
    let named = s
        .threads
        .iter()
        .filter(|t| seen.contains(&t.tid) && s.str(t.name) == "short-lived")
        .count();
    let summary = format!(
        "timer {}: {} of {SHORT_THREADS} threads sampled ({named} named), weight {:.1} ms of \
         {:.1} ms measured, {:.1} ms with `spin` in the stack",
        s.meta.timer,
        seen.len(),
        weight as f64 / 1e6,
        cpu as f64 / 1e6,
        in_spin as f64 / 1e6
    );
    eprintln!("{summary}");
    if !s.meta.timer.starts_with("perf_event_sigtrap") {
        // Only the SIGTRAP perf events follow new threads; the other timers still find
        // threads by sweeping /proc/self/task (see docs/sampler.md).
        return;
    }
    assert!(seen.len() * 10 >= SHORT_THREADS * 8, "{summary}");
    assert!(named * 10 >= seen.len() * 8, "{summary}");
    assert!(
        weight * 10 >= cpu * 8 && weight <= cpu + cpu / 20,
        "{summary}"
    );
}

#[test]
fn a_child_forked_while_profiling_inherits_no_sampling() {
    let _serial = serial();
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    spin(Duration::from_millis(20));
    // SAFETY: the child stops its copy of the profiler (which must not wait for the parent's
    // collector), burns CPU in its thread and a new one, and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = match p.stop() {
            Err(prof::Error::ForkedChild) => 0,
            _ => 3,
        };
        // The events of the parent's threads must not follow it into a forked child: with the
        // default disposition back, one SIGTRAP from them would kill this process.
        // SAFETY: SIG_DFL is a valid disposition for SIGTRAP; no handler runs concurrently.
        unsafe { libc::signal(libc::SIGTRAP, libc::SIG_DFL) };
        spin(Duration::from_millis(30));
        let x = std::thread::spawn(|| spin(Duration::from_millis(30)))
            .join()
            .unwrap_or(1);
        // SAFETY: _exit ends the child without running the parent's atexit handlers.
        unsafe { libc::_exit(if x == 1 { 4 } else { code }) };
    }
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid int.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "status {status}"
    );
    assert!(p.stop().unwrap().total_samples() > 0);
}

/// zlib's `crc32(crc, buf, len)`.
type Crc32 = extern "C" fn(libc::c_ulong, *const u8, libc::c_uint) -> libc::c_ulong;

#[test]
fn a_library_closed_before_stop_keeps_its_names() {
    let _serial = serial();
    let name = c"libz.so.1";
    // SAFETY: dlopen with RTLD_NOLOAD only looks libz up; the name is a valid C string.
    let already = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(
        already.is_null(),
        "libz is loaded already: dlclose would not unload it"
    );
    // SAFETY: loads the system's zlib, whose initializers are trivial; the name is valid.
    let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!lib.is_null(), "libz.so.1 is needed for this test");
    // SAFETY: `lib` is a live handle and the symbol name a valid C string.
    let symbol = unsafe { libc::dlsym(lib, c"crc32".as_ptr()) };
    assert!(!symbol.is_null());
    // SAFETY: zlib's crc32 has this C signature.
    let crc32: Crc32 = unsafe { std::mem::transmute::<*mut libc::c_void, Crc32>(symbol) };
    let tid = current_tid();
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    let data = vec![7u8; 64 * 1024];
    let end = thread_cpu_time() + Duration::from_millis(300);
    let mut crc = 0;
    while thread_cpu_time() < end {
        crc = crc32(crc, data.as_ptr(), data.len() as libc::c_uint);
    }
    std::hint::black_box(crc);
    // SAFETY: nothing of libz is used after this (`crc32` goes out of use here).
    assert_eq!(unsafe { libc::dlclose(lib) }, 0);
    // SAFETY: as above.
    let after = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(after.is_null(), "dlclose did not unload libz");
    let report = p.stop().unwrap();
    let s = report.session();
    let mine: u64 = (0..s.samples.len())
        .filter(|&i| s.threads[s.samples.thread[i].index()].tid == current_tid())
        .map(|i| s.samples.weight[i])
        .sum();
    let named = weight_with(&report, "crc32");
    assert_eq!(tid, current_tid());
    assert!(
        named * 10 >= mine * 8,
        "{:.1} ms of {:.1} ms in frames named crc32",
        named as f64 / 1e6,
        mine as f64 / 1e6
    );
}

#[test]
fn stop_ends_the_events_of_threads_created_while_profiling() {
    let _serial = serial();
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    // Created while profiling: on perf_event_sigtrap it inherits an event from this thread.
    let worker = std::thread::spawn(move || {
        spin(Duration::from_millis(20));
        wait.recv().unwrap();
        spin(Duration::from_millis(50))
    });
    spin(Duration::from_millis(20));
    let report = p.stop().unwrap();
    assert!(report.total_samples() > 0);
    // With the default disposition back, one more SIGTRAP from an event that outlived stop
    // would kill the process.
    // SAFETY: SIG_DFL is a valid disposition for SIGTRAP; the previous one is put back below.
    let before = unsafe { libc::signal(libc::SIGTRAP, libc::SIG_DFL) };
    go.send(()).unwrap();
    let x = worker.join().unwrap();
    spin(Duration::from_millis(20));
    // SAFETY: puts back the disposition read above.
    unsafe { libc::signal(libc::SIGTRAP, before) };
    std::hint::black_box(x);
}
