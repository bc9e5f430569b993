//! The environment prof gives the program: taken back at load, given again at `exec`.
//!
//! prof starts the command with `LD_PRELOAD=LIB` (`LIB:OLD` when the user had set `OLD`) and
//! the `PROF_ALLOC_*` variables, `PROF_ALLOC_LIB` naming `LIB`. At load [`strip`] removes them
//! from `environ` in place (the user's own `LD_PRELOAD` restored byte for byte, or the variable
//! removed when there was none), so the program sees the environment it would have without
//! prof, and nothing of prof's stays in the environment of a daemon that outlives prof: `LIB`
//! is `/proc/<prof's pid>/fd/N`, which means something else once that pid is reused.
//!
//! The functions that start a program with an environment that can be interposed (`execve`,
//! `execv`, `execvp`, `execvpe`, `fexecve`, `posix_spawn`, `posix_spawnp`) give prof's entries
//! back to the new program, and only while the channel is still prof's socket and prof holds
//! its end ([`crate::channel_alive`]). Not covered (their programs run without the library, as
//! without prof): `execl`, `execlp` and `execle` (variadic, which stable Rust cannot define,
//! and the C library's call its internal `execve`), and `system` and `popen` (an internal
//! `posix_spawn`).
//!
//! The wrappers may run in a `vfork` child, which shares the parent's memory: they write only
//! to their own stack (the new environment is built there, with a bound; one that does not fit
//! passes unchanged) and call nothing that allocates or locks.

use crate::Real;
use libc::{c_char, c_int, c_void, pid_t};
use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

extern "C" {
    /// The C library's environment: a null-terminated array of `NAME=value` strings.
    static mut environ: *mut *mut c_char;
}

/// Bytes kept of prof's entries (`PROF_ALLOC_*=...`, NUL-terminated one after another).
const SAVED_BYTES: usize = 2048;
/// The most entries kept.
const SAVED_ENTRIES: usize = 8;
/// The most entries of an environment given prof's entries at `exec` (the rest pass unchanged,
/// unprofiled): 8 KiB of the caller's stack.
const MAX_ENV: usize = 1024;
/// The longest `LD_PRELOAD=...` entry built at `exec`.
const MAX_PRELOAD: usize = 4096;

const PREFIX: &[u8] = b"PROF_ALLOC_";
const LIB: &[u8] = b"PROF_ALLOC_LIB=";
const PRELOAD: &[u8] = b"LD_PRELOAD=";

/// prof's entries, as they were at load.
struct Kept {
    bytes: [u8; SAVED_BYTES],
    used: usize,
    /// Where each entry starts in `bytes`.
    entries: [usize; SAVED_ENTRIES],
    count: usize,
    /// The library's path in `bytes` (start, length).
    lib: (usize, usize),
}

struct Saved(UnsafeCell<Kept>);

// SAFETY: written only by `strip`, once, at load (from `.init_array`, before the program's code
// runs and before `READY` is set); read only after `READY` is seen set, never written again.
unsafe impl Sync for Saved {}

static SAVED: Saved = Saved(UnsafeCell::new(Kept {
    bytes: [0; SAVED_BYTES],
    used: 0,
    entries: [0; SAVED_ENTRIES],
    count: 0,
    lib: (0, 0),
}));

/// Set once prof's entries are kept whole.
static READY: AtomicBool = AtomicBool::new(false);

impl Kept {
    /// Keeps `text` (an entry, without its NUL); false when it does not fit.
    fn keep(&mut self, text: &[u8]) -> bool {
        if self.count == SAVED_ENTRIES || self.used + text.len() + 1 > SAVED_BYTES {
            return false;
        }
        let at = self.used;
        self.bytes[at..at + text.len()].copy_from_slice(text);
        self.bytes[at + text.len()] = 0;
        self.used += text.len() + 1;
        self.entries[self.count] = at;
        self.count += 1;
        if text.starts_with(LIB) {
            self.lib = (at + LIB.len(), text.len() - LIB.len());
        }
        true
    }

    fn lib(&self) -> &[u8] {
        &self.bytes[self.lib.0..self.lib.0 + self.lib.1]
    }
}

/// The bytes of the NUL-terminated string at `p`.
///
/// # Safety
/// `p` points at a NUL-terminated string that lives and does not change while the result is used.
unsafe fn text<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: as the caller promises.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// Removes prof's entries from `environ` in place (see the module's documentation), keeping
/// them for [`with_prof`]. Called once, at load.
pub(crate) fn strip() {
    // SAFETY: reads the pointer the C library set before any initializer ran.
    let env = unsafe { environ };
    if env.is_null() {
        return;
    }
    // SAFETY: `strip` runs once, at load, on the only thread, before `READY` is set: nothing
    // else reads or writes `SAVED` meanwhile.
    let kept = unsafe { &mut *SAVED.0.get() };
    let mut whole = true;
    let mut n = 0;
    // SAFETY: `environ` is a null-terminated array of NUL-terminated strings, all live for the
    // process (its start-up block), and no other thread runs yet to change them.
    unsafe {
        while !(*env.add(n)).is_null() {
            let entry = text(*env.add(n));
            if entry.starts_with(PREFIX) {
                whole &= kept.keep(entry);
            }
            n += 1;
        }
    }
    let lib = kept.lib();
    let mut write = 0;
    for read in 0..n {
        // SAFETY: `read < n`, an entry of the array (see above); entries before `write <= read`
        // were moved down already, so each is read before it is overwritten.
        let entry = unsafe { *env.add(read) };
        // SAFETY: as above.
        let bytes = unsafe { text(entry) };
        if bytes.starts_with(PREFIX) {
            continue;
        }
        if let Some(value) = bytes.strip_prefix(PRELOAD).filter(|_| !lib.is_empty()) {
            if value == lib {
                continue;
            }
            if value.starts_with(lib) && value.get(lib.len()) == Some(&b':') {
                // `LIB:OLD`: OLD (and its NUL) moves left over `LIB:`.
                let rest = value.len() - lib.len() - 1 + 1;
                // SAFETY: both ranges lie inside this entry's string (its NUL included), which
                // is writable (the start-up block); `copy` allows the overlap.
                unsafe {
                    let to = entry.add(PRELOAD.len());
                    std::ptr::copy(to.add(lib.len() + 1), to, rest);
                }
            }
        }
        // SAFETY: `write <= read < n`: inside the array.
        unsafe { *env.add(write) = entry };
        write += 1;
    }
    // SAFETY: `write <= n`: the array's slot of its old terminator or before.
    unsafe { *env.add(write) = std::ptr::null_mut() };
    if whole && kept.count > 0 && !lib.is_empty() {
        READY.store(true, Ordering::Release);
    }
}

/// Runs `run` with `envp` given prof's entries (`LD_PRELOAD` with the library first, the
/// `PROF_ALLOC_*` variables) when the channel is alive and they fit, else with `envp` as it is.
/// Writes only to its own stack (see the module's documentation).
///
/// # Safety
/// `envp` is null or a null-terminated array of NUL-terminated strings that live until `run`
/// returns.
unsafe fn with_prof<R>(
    envp: *const *const c_char,
    run: impl FnOnce(*const *const c_char) -> R,
) -> R {
    if !READY.load(Ordering::Acquire) || !crate::channel_alive() {
        return run(envp);
    }
    // SAFETY: `READY` is set only after `SAVED` was written for good.
    let kept = unsafe { &*SAVED.0.get() };
    let mut list = [std::ptr::null::<c_char>(); MAX_ENV];
    let mut preload = [0u8; MAX_PRELOAD];
    let lib = kept.lib();
    let mut len = PRELOAD.len() + lib.len();
    if len + 1 > MAX_PRELOAD {
        return run(envp);
    }
    preload[..PRELOAD.len()].copy_from_slice(PRELOAD);
    preload[PRELOAD.len()..len].copy_from_slice(lib);
    let mut n = 1;
    for &at in &kept.entries[..kept.count] {
        list[n] = kept.bytes[at..].as_ptr().cast();
        n += 1;
    }
    let mut merged = false;
    let mut i = 0;
    while !envp.is_null() {
        // SAFETY: `envp` is a null-terminated array (the caller's promise); `i` stops at its
        // terminator.
        let entry = unsafe { *envp.add(i) };
        if entry.is_null() {
            break;
        }
        i += 1;
        // SAFETY: each entry is a NUL-terminated string (the caller's promise).
        let bytes = unsafe { text(entry) };
        if bytes.starts_with(PREFIX) {
            continue;
        }
        if let Some(value) = bytes.strip_prefix(PRELOAD).filter(|_| !merged) {
            if len + 1 + value.len() + 1 > MAX_PRELOAD {
                return run(envp);
            }
            preload[len] = b':';
            preload[len + 1..len + 1 + value.len()].copy_from_slice(value);
            len += 1 + value.len();
            merged = true;
            continue;
        }
        if n + 1 >= MAX_ENV {
            return run(envp);
        }
        list[n] = entry;
        n += 1;
    }
    preload[len] = 0;
    list[0] = preload.as_ptr().cast();
    list[n] = std::ptr::null();
    run(list.as_ptr())
}

type ExecveFn =
    unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type FexecveFn = unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) -> c_int;
type SpawnFn = unsafe extern "C" fn(
    *mut pid_t,
    *const c_char,
    *const c_void,
    *const c_void,
    *const *const c_char,
    *const *const c_char,
) -> c_int;

static EXECVE: Real = Real::new(b"execve\0");
static EXECVPE: Real = Real::new(b"execvpe\0");
static FEXECVE: Real = Real::new(b"fexecve\0");
static POSIX_SPAWN: Real = Real::new(b"posix_spawn\0");
static POSIX_SPAWNP: Real = Real::new(b"posix_spawnp\0");

/// Looks up the C library's functions, at load (see `setup`).
pub(crate) fn resolve() {
    for real in [&EXECVE, &EXECVPE, &FEXECVE, &POSIX_SPAWN, &POSIX_SPAWNP] {
        real.get();
    }
}

/// The environment as `environ` holds it now.
fn current() -> *const *const c_char {
    // SAFETY: reads the pointer (the program may have changed it with `setenv`; it is then the
    // C library's new array, as the real `execv` would read).
    unsafe { environ as *const *const c_char }
}

/// -1 with `errno` ENOSYS: the C library has no such function.
fn missing() -> c_int {
    // SAFETY: `__errno_location` returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

/// The C library's `execve`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(EXECVE, ExecveFn) else {
        return missing();
    };
    // SAFETY: the caller's contract is the C library's (`envp` a valid environment).
    unsafe { with_prof(envp, |e| f(path, argv, e)) }
}

/// The C library's `execv`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    let Some(f) = real!(EXECVE, ExecveFn) else {
        return missing();
    };
    // SAFETY: `environ` is a valid environment; the rest is the caller's contract.
    unsafe { with_prof(current(), |e| f(path, argv, e)) }
}

/// The C library's `execvp`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    let Some(f) = real!(EXECVPE, ExecveFn) else {
        return missing();
    };
    // SAFETY: `environ` is a valid environment; `execvpe` with it is `execvp`.
    unsafe { with_prof(current(), |e| f(file, argv, e)) }
}

/// The C library's `execvpe`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(EXECVPE, ExecveFn) else {
        return missing();
    };
    // SAFETY: the caller's contract is the C library's.
    unsafe { with_prof(envp, |e| f(file, argv, e)) }
}

/// The C library's `fexecve`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn fexecve(
    fd: c_int,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(FEXECVE, FexecveFn) else {
        return missing();
    };
    // SAFETY: the caller's contract is the C library's.
    unsafe { with_prof(envp, |e| f(fd, argv, e)) }
}

/// The C library's `posix_spawn`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: *const c_char,
    actions: *const c_void,
    attr: *const c_void,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(POSIX_SPAWN, SpawnFn) else {
        return libc::ENOSYS;
    };
    // SAFETY: the caller's contract is the C library's.
    unsafe { with_prof(envp, |e| f(pid, path, actions, attr, argv, e)) }
}

/// The C library's `posix_spawnp`, given prof's entries while the channel lives.
///
/// # Safety
/// As the C library's.
#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: *const c_char,
    actions: *const c_void,
    attr: *const c_void,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(POSIX_SPAWNP, SpawnFn) else {
        return libc::ENOSYS;
    };
    // SAFETY: the caller's contract is the C library's.
    unsafe { with_prof(envp, |e| f(pid, file, actions, attr, argv, e)) }
}
