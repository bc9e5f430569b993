//! A program whose own signal handler runs on a small alternate stack (`sigaltstack`), profiled
//! at 10 kHz: prof's signal interrupts that handler, prof's handler runs on the same alternate
//! stack, and it must fit in what is left there (DWARF unwinding overflowed an 8 KiB
//! alternate stack into its guard page). Each case runs in a child process with a time limit.
//!
//! Handlers installed with `SA_ONSTACK` before a session starts get prof's signal in their mask
//! for the session (the kernel could not fit prof's signal frame below a handler using
//! 2 KiB of an 8 KiB alternate stack, and the process died), so prof's handler runs on an
//! alternate stack only under a handler installed after start: the r9 cases install theirs then.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Set in the child: the alternate stack's size in bytes.
const CHILD_ENV: &str = "PROF_ALTSTACK_CHILD";
/// What fills the alternate stack before the run, to see how deep it was used.
const PAINT: u8 = 0xa5;
/// CPU time the program's SIGUSR1 handler spins on the alternate stack per signal.
const IN_HANDLER: Duration = Duration::from_micros(300);

/// The lowest stack pointer seen in the program's own handler (the address of a local).
static HANDLER_SP: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The CPU time spent in the program's handler, in nanoseconds.
static HANDLER_NS: AtomicU64 = AtomicU64::new(0);
/// Set when the program's handler is to use 2 KiB of its stack while it spins.
static USE_2_KIB: AtomicBool = AtomicBool::new(false);

#[inline(never)]
fn spin_in_handler() -> u64 {
    let end = prof::sampler::thread_cpu_time() + IN_HANDLER;
    let mut x = 1u64;
    while prof::sampler::thread_cpu_time() < end {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

/// Spins with 2 KiB of the stack in use.
#[inline(never)]
fn spin_with_2_kib() -> u64 {
    let mut buf = [0u8; 2048];
    std::hint::black_box(&mut buf);
    spin_in_handler() + u64::from(std::hint::black_box(&buf)[7])
}

extern "C" fn on_usr1(_: libc::c_int) {
    let local = 0u8;
    HANDLER_SP.fetch_min(
        std::hint::black_box(&local) as *const u8 as usize,
        Ordering::Relaxed,
    );
    let start = prof::sampler::thread_cpu_time();
    if USE_2_KIB.load(Ordering::Relaxed) {
        std::hint::black_box(spin_with_2_kib());
    } else {
        std::hint::black_box(spin_in_handler());
    }
    let spent = prof::sampler::thread_cpu_time().saturating_sub(start);
    HANDLER_NS.fetch_add(spent.as_nanos() as u64, Ordering::Relaxed);
}

/// Installs the program's SIGUSR1 handler, on the alternate stack.
fn install_usr1() {
    // SAFETY: an all-zero sigaction is valid; the handler only reads clocks and spins.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_usr1 as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// Whether `signal` is in the mask of the SIGUSR1 handler now (1) or not (0).
fn usr1_masks(signal: libc::c_int) -> u8 {
    // SAFETY: an all-zero sigaction is valid storage; a null new action only queries.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, std::ptr::null(), &mut now),
            0
        );
        u8::from(libc::sigismember(&now.sa_mask, signal) == 1)
    }
}

/// The child: an alternate stack of `size` bytes above a guard page, a SIGUSR1 handler on it,
/// SIGUSR1 raised in a loop under a 10 kHz session with `options` for `seconds`. Prints what
/// it measured.
fn child(size: usize, seconds: f64, options: prof::Options) {
    let page = 4096;
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED);
    // SAFETY: the first page of the mapping made above becomes the guard page; the rest, the
    // alternate stack, is painted before any signal can use it.
    let stack = unsafe {
        assert_eq!(libc::mprotect(base, page, libc::PROT_NONE), 0);
        let stack = (base as *mut u8).add(page);
        std::ptr::write_bytes(stack, PAINT, size);
        stack
    };
    let ss = libc::stack_t {
        ss_sp: stack.cast(),
        ss_flags: 0,
        ss_size: size,
    };
    // SAFETY: `ss` describes the mapping above, which stays mapped until the process ends.
    let rc = unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "sigaltstack: {}", std::io::Error::last_os_error());
    // The r9 cases install the handler after start, so that prof's signal can land in it
    // (see the module's comment); `before` installs it first.
    let before = std::env::var("PROF_ALTSTACK_INSTALL").as_deref() == Ok("before");
    if before {
        install_usr1();
    }
    let interval = std::env::var("PROF_ALTSTACK_INTERVAL_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let profiler =
        prof::Profiler::start(options.interval(Duration::from_micros(interval))).unwrap();
    if !before {
        install_usr1();
    }
    // The session's signal: SIGTRAP on `perf_event_sigtrap`, SIGPROF otherwise.
    let signal = if prof::diagnostics::current_sigtrap_handler()
        == prof::diagnostics::our_handler_address()
    {
        libc::SIGTRAP
    } else {
        libc::SIGPROF
    };
    let masked_during = usr1_masks(signal);
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut raised = 0u64;
    let cpu_start = prof::sampler::thread_cpu_time();
    while Instant::now() < end {
        // SAFETY: sends SIGUSR1 to this thread, whose handler is installed above.
        unsafe { libc::raise(libc::SIGUSR1) };
        raised += 1;
    }
    let cpu = prof::sampler::thread_cpu_time().saturating_sub(cpu_start);
    let report = profiler.stop().unwrap();
    // SAFETY: the alternate stack is mapped and no signal handler runs on it any more.
    let painted = unsafe { std::slice::from_raw_parts(stack, size) };
    let deepest = painted.iter().position(|&b| b != PAINT).unwrap_or(size);
    let lowest = stack as usize + deepest;
    let handler_sp = HANDLER_SP.load(Ordering::Relaxed);
    let (fp, skipped) = prof::diagnostics::stack_room_stats();
    // The share of this thread's sampled CPU time whose stack is in the program's handler, and
    // the share of its CPU time the handler really took, in per mille.
    let session = report.session();
    let tid = prof::sampler::current_tid();
    let (mut all, mut in_handler) = (0u64, 0u64);
    for i in 0..session.samples.len() {
        if session.threads[session.samples.thread[i].index()].tid != tid {
            continue;
        }
        let w = session.samples.weight[i];
        all += w;
        if session
            .stack_frames(session.samples.stack[i])
            .any(|f| session.frame_name(f).contains("on_usr1"))
        {
            in_handler += w;
        }
    }
    let handler_cpu = HANDLER_NS.load(Ordering::Relaxed) * 1000 / (cpu.as_nanos() as u64).max(1);
    println!(
        "raised {raised} samples {} dropped {} timer {} used {} below_handler {} fp {fp} \
         skipped {skipped} masked_during {masked_during} masked_after {} sampled_in_handler \
         {} handler_cpu {handler_cpu}",
        report.total_samples(),
        report.session().meta.dropped_samples,
        report.session().meta.timer,
        size - deepest,
        handler_sp.saturating_sub(lowest),
        usr1_masks(signal),
        in_handler * 1000 / all.max(1),
    );
}

/// Runs the child with an alternate stack of `size` bytes and `env`, killing it after a minute.
fn run_child(size: usize, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "altstack_child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, size.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (status, out)
}

/// Run in a child process by the tests below.
#[test]
fn altstack_child() {
    let Some(size) = std::env::var(CHILD_ENV).ok() else {
        return;
    };
    let seconds = std::env::var("PROF_ALTSTACK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    // The parent's choices, as the child's environment: `fp` frame pointers only, `empty` an
    // empty handler, `2k` a program handler that uses 2 KiB of its stack (`2k_sigprof`: with
    // the `perf_event` timer, whose signal is SIGPROF).
    let mut options = prof::Options::default();
    match std::env::var("PROF_ALTSTACK_VARIANT").as_deref() {
        Ok("fp") => options = options.unwind(prof::Unwind::FramePointers),
        Ok("2k") => USE_2_KIB.store(true, Ordering::Relaxed),
        Ok("2k_sigprof") => {
            USE_2_KIB.store(true, Ordering::Relaxed);
            options = options.timer(prof::Timer::PerfEvent);
        }
        Ok("empty") => {
            let empty = prof::diagnostics::Measure::Empty;
            options = options.diagnostics(prof::diagnostics::Settings::default().measure(empty));
        }
        _ => {}
    }
    child(size.parse().unwrap(), seconds, options);
}

/// The number after `key` in the child's report line.
fn field(out: &str, key: &str) -> u64 {
    let mut words = out.split_whitespace();
    words.find(|w| *w == key);
    words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {out:?}"))
}

fn assert_survives(size: usize, env: &[(&str, &str)]) -> String {
    let (status, out) = run_child(size, env);
    assert!(
        status.success(),
        "alternate stack of {size} bytes, {env:?}: {status:?} (signal {:?}); {out}",
        status.signal()
    );
    out
}

#[test]
fn a_handler_on_an_8_kib_alternate_stack_survives_10_khz_sampling() {
    let out = assert_survives(8192, &[]);
    eprintln!("{out}");
    // Samples taken on the alternate stack had no room for DWARF there.
    assert!(field(&out, "fp") + field(&out, "skipped") > 0, "{out}");
    assert!(field(&out, "samples") > 0, "{out}");
}

#[test]
fn a_handler_on_a_minimal_alternate_stack_survives_10_khz_sampling() {
    // About the least that holds the program's signal frame and prof's (the kernel's own frames
    // for two nested signals, and a little for the program's handler): without prof, a
    // handler that returns at once already needs 6.9 KiB of it on x86_64 with AVX-512.
    // SAFETY: getauxval only reads the auxiliary vector.
    let kernel_min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    let size = 2 * kernel_min.max(libc::MINSIGSTKSZ) + 1024;
    assert_survives(size, &[("PROF_ALTSTACK_SECONDS", "2")]);
}

#[test]
fn the_handler_uses_no_more_stack_than_it_checks_for() {
    // On a large alternate stack every path runs; how deep each goes below the program's handler,
    // less what the kernel's signal frame takes there (the empty handler), is prof's own use.
    let depth = |env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.push(("PROF_ALTSTACK_SECONDS", "1"));
        field(&assert_survives(256 << 10, &env), "below_handler")
    };
    let kernel = depth(&[("PROF_ALTSTACK_VARIANT", "empty")]);
    let dwarf = depth(&[]).saturating_sub(kernel);
    let fp = depth(&[("PROF_ALTSTACK_VARIANT", "fp")]).saturating_sub(kernel);
    eprintln!("kernel frame {kernel}, DWARF path {dwarf}, frame-pointer path {fp} bytes");
    assert!(dwarf < prof::diagnostics::DWARF_ROOM, "{dwarf}");
    assert!(fp < prof::diagnostics::FP_ROOM, "{fp}");
}

#[test]
fn prof_never_lands_in_a_handler_using_2_kib_of_an_8_kib_alternate_stack() {
    // The program's handler, installed before start, spins with 2 KiB of its 8 KiB alternate
    // stack in use, most of the time; prof samples at 1 kHz. The kernel cannot put prof's
    // signal frame (`AT_MINSIGSTKSZ`, 3.5 KiB with AVX-512) below it on that stack: before, the
    // process died of SIGSEGV in every run. Now prof's signal waits for the handler to return.
    for variant in ["2k", "2k_sigprof"] {
        let out = assert_survives(
            8192,
            &[
                ("PROF_ALTSTACK_INSTALL", "before"),
                ("PROF_ALTSTACK_VARIANT", variant),
                ("PROF_ALTSTACK_INTERVAL_US", "1000"),
                ("PROF_ALTSTACK_SECONDS", "1"),
            ],
        );
        eprintln!("{out}");
        handler_masked_for_the_session(&out);
    }
}

fn handler_masked_for_the_session(out: &str) {
    assert!(field(out, "samples") > 0, "{out}");
    // Masked for the session only.
    assert_eq!(field(out, "masked_during"), 1, "{out}");
    assert_eq!(field(out, "masked_after"), 0, "{out}");
    // What it costs: the samples that would have landed in the handler come when it returns,
    // so the handler's own time goes to the code it interrupted.
    assert_eq!(field(out, "sampled_in_handler"), 0, "{out}");
    assert!(field(out, "handler_cpu") > 0, "{out}");
}
