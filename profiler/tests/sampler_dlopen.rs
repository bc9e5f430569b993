//! Code in a library opened with `dlopen` after start, sampled before the collector reads the
//! loaded objects again (up to 20 ms later): its pc is in no known object, so the stack ends
//! there (21 of 298 such stacks had a garbage second frame, guessed with a frame
//! pointer that the library's code used for data). x86_64: the library's loop holds a pointer
//! to a fake frame record in `rbp`, as code built without frame pointers may hold any value.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod common;

use common::serial;
use prof::sampler::thread_cpu_time;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The library: `prof_test_spin(n)` computes for `n` rounds with `rbp` pointing at a record
/// on its stack whose "return address" is no code at all. Its unwind table says where `rbp`
/// is kept meanwhile (`r12`), so that unwinding it once it is known is right.
const SOURCE: &str = r#"
unsigned long prof_test_spin(unsigned long n) {
    unsigned long record[2] = {0, 0x123456789abcUL};
    unsigned long x = 1, m = 6364136223846793005UL;
    __asm__ volatile(
        "mov %%rbp, %%r12\n\t"
        ".cfi_register %%rbp, %%r12\n\t"
        "mov %[rec], %%rbp\n"
        "1:\n\t"
        "imul %[m], %[x]\n\t"
        "add $1, %[x]\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "mov %%r12, %%rbp\n\t"
        ".cfi_restore %%rbp\n\t"
        : [x] "+r"(x), [n] "+r"(n)
        : [rec] "r"(record), [m] "r"(m)
        : "r12", "cc", "memory");
    return x;
}
"#;

/// The junk "return address" in the library's fake record.
const JUNK: u64 = 0x1234_5678_9abc;

/// Builds the library as `count` copies (each `dlopen` of a new path is a new load).
fn build(count: usize, tag: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sampler_dlopen_{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("spin.c");
    std::fs::write(&source, SOURCE).unwrap();
    let first = dir.join("libprofspin0.so");
    // No red zone: the record must be above the stack pointer, as a real frame is.
    let status = Command::new("cc")
        .args([
            "-O1",
            "-fPIC",
            "-shared",
            "-mno-red-zone",
            "-fomit-frame-pointer",
        ])
        .arg(&source)
        .arg("-o")
        .arg(&first)
        .status()
        .expect("cc");
    assert!(status.success(), "cc failed: {status}");
    let mut libs = vec![first.clone()];
    for i in 1..count {
        let copy = dir.join(format!("libprofspin{i}.so"));
        std::fs::copy(&first, &copy).unwrap();
        libs.push(copy);
    }
    libs
}

type Spin = extern "C" fn(u64) -> u64;

/// Opens `lib` and returns its function (the library stays loaded).
fn open(lib: &Path) -> Spin {
    let path = std::ffi::CString::new(lib.to_str().unwrap()).unwrap();
    // SAFETY: loads a library built above, whose only code is `prof_test_spin`; it has no
    // initializers. The handle is never closed, so the function stays valid.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(!handle.is_null(), "dlopen {}", lib.display());
        let f = libc::dlsym(handle, c"prof_test_spin".as_ptr());
        assert!(!f.is_null());
        std::mem::transmute::<*mut libc::c_void, Spin>(f)
    }
}

/// Calls into the library for `cpu` of this thread's CPU time.
#[inline(never)]
fn call_into_library(spin: Spin, cpu: Duration) -> u64 {
    let end = thread_cpu_time() + cpu;
    let mut x = 0;
    while thread_cpu_time() < end {
        x ^= spin(200_000);
    }
    x
}

fn no_caller_outside_a_known_object(unwind: prof::Unwind, tag: &str) {
    let libs = build(3, tag);
    let _serial = serial();
    let options = prof::Options::default()
        .interval(Duration::from_micros(100))
        .unwind(unwind);
    let profiler = prof::Profiler::start(options).unwrap();
    for lib in &libs {
        // Computes at once: the first ~20 ms are before the collector's next look.
        let spin = open(lib);
        std::hint::black_box(call_into_library(spin, Duration::from_millis(60)));
    }
    let report = profiler.stop().unwrap();
    let s = report.session();
    let (mut in_library, mut leaf_only, mut bad) = (0, 0, Vec::new());
    for i in 0..s.samples.len() {
        let frames: Vec<_> = s.stack_frames(s.samples.stack[i]).collect();
        if !s.frame_name(frames[0]).contains("prof_test_spin") {
            continue;
        }
        in_library += 1;
        match frames.get(1).map(|&f| s.frame(f)) {
            None => leaf_only += 1,
            Some(caller) if caller.module.is_none() || caller.address == Some(JUNK) => {
                bad.push(s.frame_name(frames[1]).to_owned())
            }
            Some(_) => {}
        }
    }
    eprintln!(
        "{unwind:?}: {in_library} samples in the library, {leaf_only} of them its pc alone, {} \
         with a caller in no object",
        bad.len()
    );
    assert!(in_library >= 100, "{in_library} samples in the library");
    bad.truncate(5);
    assert!(
        bad.is_empty(),
        "callers in no known object, the first: {bad:?}"
    );
}

#[test]
fn a_library_opened_after_start_gets_no_guessed_caller_dwarf() {
    no_caller_outside_a_known_object(prof::Unwind::Dwarf, "dwarf");
}

#[test]
fn a_library_opened_after_start_gets_no_guessed_caller_frame_pointers() {
    no_caller_outside_a_known_object(prof::Unwind::FramePointers, "fp");
}
