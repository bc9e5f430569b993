//! What the tests of a stack walk need and safe Rust cannot make: raw anonymous mappings, words
//! written into them, a thread spinning on a stack and frame pointer of the test's choosing, and
//! tests run alone in a child process (their faults are meant to end it). For this crate's
//! tests and, with the `testing` feature, the sampler's; never for a profiled program.

use std::process::Command;
#[cfg(target_arch = "x86_64")]
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// An anonymous read-write mapping of `len` bytes, never freed (the test process ends).
pub fn map(len: usize) -> u64 {
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED);
    base as u64
}

/// Unmaps `[addr, addr + len)`, then keeps the range unreadable (`PROT_NONE`) so that no
/// other mapping lands there while the test still points into it.
pub fn unmap(addr: u64, len: usize) {
    // SAFETY: the range is part of a mapping this test made and nothing refers to it as
    // Rust memory (only raw addresses in frame records and reads through the probe).
    unsafe {
        assert_eq!(libc::munmap(addr as *mut libc::c_void, len), 0);
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        );
    }
}

/// A shared mapping of `pages + 1` pages of a new file (a memfd) that holds only the first
/// `pages`: a load from the last page raises SIGBUS. Never freed (the test process ends).
pub fn map_past_end_of_file(pages: usize) -> u64 {
    let page = page_size();
    // SAFETY: memfd_create takes a NUL-terminated name and flags; the descriptor is ours.
    let fd = unsafe { libc::memfd_create(c"prof-truncated".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: `fd` is an open memfd we own: the file is made `pages + 1` pages long, mapped
    // shared whole (a fresh mapping nothing else refers to), then cut to `pages`, so the last
    // page of the mapping lies past its end; the descriptor is closed, the mapping stays.
    unsafe {
        assert_eq!(libc::ftruncate(fd, ((pages + 1) * page) as libc::off_t), 0);
        let base = libc::mmap(
            std::ptr::null_mut(),
            (pages + 1) * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        assert_ne!(base, libc::MAP_FAILED);
        assert_eq!(libc::ftruncate(fd, (pages * page) as libc::off_t), 0);
        libc::close(fd);
        base as u64
    }
}

/// The size of a page here (4 KiB on x86_64; 4, 16 or 64 KiB on aarch64).
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).expect("the page size is known")
}

/// Loads the word at `addr` as ordinary code does, with no fault caught: for tests that check
/// that a fault outside prof's reads still ends the process as it would without prof.
pub fn read_unguarded(addr: u64) -> u64 {
    // SAFETY: none in general: the caller may pass an unmapped address on purpose, in a
    // process that is meant to die of the fault; for a mapped 8-aligned address it is a plain
    // load of a `u64` that any bit pattern makes valid.
    unsafe { std::ptr::read_volatile(addr as *const u64) }
}

/// Writes `value` at `addr`, in a mapping this test made.
pub fn poke(addr: u64, value: u64) {
    // SAFETY: `addr` is 8-aligned, inside a read-write mapping this test made and owns.
    unsafe { (addr as *mut u64).write(value) };
}

/// Set in a child process: the name of the test it runs.
const CHILD_ENV: &str = "PROF_TEST_CHILD";

/// Runs this test binary's test `name` of the test module `module` (its `module_path!()`) alone
/// in a child process (which then does the work, see [`in_child`]), killing it after a minute;
/// returns its exit status and output. Panics when the child found no such test.
pub fn run_child(module: &str, name: &str) -> (std::process::ExitStatus, String) {
    let module = module.split_once("::").map_or("", |(_crate, path)| path);
    let path = format!("{module}::{name}");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &path, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // A filter that matches no test would make an empty run that succeeds.
    assert!(
        text.contains("running 1 test"),
        "the child ran no test named {path}: {text}"
    );
    (out.status, text)
}

/// Whether this process is the child [`run_child`] started for test `name`.
pub fn in_child(name: &str) -> bool {
    std::env::var(CHILD_ENV).as_deref() == Ok(name)
}

/// A return address inside this function, for a frame record the test writes.
#[inline(never)]
pub fn frame_marker() -> u64 {
    std::hint::black_box(17)
}

/// Spins with the stack pointer at `stack_top` and the frame pointer at `fp` until `stop`.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn spin_on(stack_top: u64, fp: u64, stop: &AtomicBool) -> u64 {
    let mut n = 0u64;
    // SAFETY: switches to the test's own stack `stack_top` (16-aligned, below it a mapping
    // this test owns with room for signal frames and the handler), points rbp at a frame
    // record (or at memory that is unmapped on purpose: only prof's fault-catching reads
    // follow it), spins until `stop` is set, and puts rsp and rbp back before the block
    // ends. The saved registers are outputs distinct from the inputs.
    unsafe {
        std::arch::asm!(
            "mov {sp_saved}, rsp",
            "mov {fp_saved}, rbp",
            "mov rsp, {top}",
            "mov rbp, {fp}",
            "2:",
            "add {n}, 1",
            "pause",
            "cmp byte ptr [{stop}], 0",
            "je 2b",
            "mov rsp, {sp_saved}",
            "mov rbp, {fp_saved}",
            top = in(reg) stack_top,
            fp = in(reg) fp,
            stop = in(reg) stop.as_ptr(),
            n = inout(reg) n,
            sp_saved = out(reg) _,
            fp_saved = out(reg) _,
        );
    }
    n
}
