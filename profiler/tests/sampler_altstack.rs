//! A program whose own signal handler runs on a small alternate stack (`sigaltstack`), profiled
//! at 10 kHz: prof's signal interrupts that handler, prof's handler runs on the same alternate
//! stack, and it must fit in what is left there (issue 9: DWARF unwinding overflowed an 8 KiB
//! alternate stack into its guard page). Each case runs in a child process with a time limit.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Set in the child: the alternate stack's size in bytes.
const CHILD_ENV: &str = "PROF_ALTSTACK_CHILD";
/// What fills the alternate stack before the run, to see how deep it was used.
const PAINT: u8 = 0xa5;
/// CPU time the program's SIGUSR1 handler spins on the alternate stack per signal.
const IN_HANDLER: Duration = Duration::from_micros(300);

/// The lowest stack pointer seen in the program's own handler (the address of a local).
static HANDLER_SP: AtomicUsize = AtomicUsize::new(usize::MAX);

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

extern "C" fn on_usr1(_: libc::c_int) {
    let local = 0u8;
    HANDLER_SP.fetch_min(
        std::hint::black_box(&local) as *const u8 as usize,
        Ordering::Relaxed,
    );
    std::hint::black_box(spin_in_handler());
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
    let profiler = prof::Profiler::start(options.interval(Duration::from_micros(100))).unwrap();
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut raised = 0u64;
    while Instant::now() < end {
        // SAFETY: sends SIGUSR1 to this thread, whose handler is installed above.
        unsafe { libc::raise(libc::SIGUSR1) };
        raised += 1;
    }
    let report = profiler.stop().unwrap();
    // SAFETY: the alternate stack is mapped and no signal handler runs on it any more.
    let painted = unsafe { std::slice::from_raw_parts(stack, size) };
    let deepest = painted.iter().position(|&b| b != PAINT).unwrap_or(size);
    let lowest = stack as usize + deepest;
    let handler_sp = HANDLER_SP.load(Ordering::Relaxed);
    let (fp, skipped) = prof::diagnostics::stack_room_stats();
    println!(
        "raised {raised} samples {} dropped {} timer {} used {} below_handler {} fp {fp} \
         skipped {skipped}",
        report.total_samples(),
        report.session().meta.dropped_samples,
        report.session().meta.timer,
        size - deepest,
        handler_sp.saturating_sub(lowest),
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
    // empty handler.
    let mut options = prof::Options::default();
    match std::env::var("PROF_ALTSTACK_VARIANT").as_deref() {
        Ok("fp") => options = options.unwind(prof::Unwind::FramePointers),
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
fn r9_a_handler_on_an_8_kib_alternate_stack_survives_10_khz_sampling() {
    let out = assert_survives(8192, &[]);
    eprintln!("{out}");
    // Samples taken on the alternate stack had no room for DWARF there.
    assert!(field(&out, "fp") + field(&out, "skipped") > 0, "{out}");
    assert!(field(&out, "samples") > 0, "{out}");
}

#[test]
fn r9_a_handler_on_a_minimal_alternate_stack_survives_10_khz_sampling() {
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
