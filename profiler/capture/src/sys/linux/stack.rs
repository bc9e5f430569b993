//! Reading the interrupted thread's stack when the memory may no longer be there.
//!
//! The bounds of a stack come from a snapshot of `/proc/self/maps` (see `stackmap.rs`). It can be
//! stale, and the mapping that holds a stack pointer can be an anonymous mapping the kernel
//! merged with a neighbour of the same permissions, whose part above the stack another thread
//! may unmap at any moment. A frame-pointer or DWARF walk that follows a garbage frame pointer
//! (code built without frame pointers keeps anything in that register) into such memory would
//! take SIGSEGV, or SIGBUS past the end of a truncated file.
//!
//! So no premise about the range is needed: every word is read by `prof_sys_read_word_v1`, three
//! instructions of assembly whose load, when it faults, is caught by prof's SIGSEGV and SIGBUS
//! handler, which resumes the thread in `prof_sys_read_word_fault_v1`: the read returns "no
//! value" and the walk ends there. Any other fault goes on to the handler that was installed
//! before prof's (Rust's stack overflow report, a program's own handler, or the default action).
//! A read costs a call (a few nanoseconds); the handler allocates nothing and takes no lock.
//! Checking a kept stack before reusing its frames compares a hundred words or so at once: on
//! x86_64 `prof_sys_same_words_v1` does it in one call, a loop whose one load is caught the
//! same way (resuming in `prof_sys_same_words_fault_v1`, which answers "different").

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The signals a read of unmapped (or truncated file) memory raises.
const CAUGHT: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// The dispositions of [`CAUGHT`] before prof's handler, which it passes other faults to.
static PREVIOUS: [OnceLock<libc::sigaction>; 2] = [OnceLock::new(), OnceLock::new()];

/// True once prof's fault handler is installed for both signals.
static CATCHING: AtomicBool = AtomicBool::new(false);

/// Bytes of stack a caught fault needs below the reader's frame when the kernel puts its signal
/// frame on the current stack: the kernel's frame (`AT_MINSIGSTKSZ`, which counts the vector
/// registers' state) and the fault handler's own frame, with a margin.
static FAULT_FRAME: AtomicU64 = AtomicU64::new(0);

/// Reads that faulted and were caught, since the process started.
pub static READ_FAULTS: AtomicU64 = AtomicU64::new(0);

/// The probe read and where the kernel keeps a saved program counter, per architecture: x86_64
/// and aarch64 (other architectures walk no stack: their registers are not read).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod probe {
    /// What `prof_sys_read_word_v1` returns: the word, and 1 in `ok` (0 when the load faulted).
    #[repr(C)]
    struct Word {
        value: u64,
        ok: u64,
    }

    extern "C" {
        /// Loads the 8 bytes at `addr` (its first instruction) and returns them with `ok = 1`.
        fn prof_sys_read_word_v1(addr: u64) -> Word;
        /// Where a faulting load of `prof_sys_read_word_v1` resumes: returns `ok = 0`.
        fn prof_sys_read_word_fault_v1() -> Word;
    }

    /// What `prof_sys_same_words_v1` found.
    #[cfg(target_arch = "x86_64")]
    const SAME: u64 = 1;
    #[cfg(target_arch = "x86_64")]
    const DIFFERENT: u64 = 0;
    #[cfg(target_arch = "x86_64")]
    const UNSURE: u64 = 2;

    #[cfg(target_arch = "x86_64")]
    extern "C" {
        /// Compares `count` kept reads at `kept` (pairs of an address and the value read there)
        /// with the words at those addresses now, in order: returns [`SAME`] when all hold
        /// their values, [`DIFFERENT`] at the first that does not, [`UNSURE`] at the first
        /// address that has a low bit set (a read that failed, or misaligned) or lies outside
        /// `[lo, last]`, and 3 when a load faulted (from `prof_sys_same_words_fault_v1`).
        fn prof_sys_same_words_v1(kept: *const [u64; 2], count: usize, lo: u64, last: u64) -> u64;
        /// The load in `prof_sys_same_words_v1` that may fault (a label, not a function).
        fn prof_sys_same_words_load_v1();
        /// Where a faulting load of `prof_sys_same_words_v1` resumes: returns 3.
        fn prof_sys_same_words_fault_v1() -> u64;
    }

    // Weak and hidden: two copies of prof in one program (different versions) share one
    // definition (the same instructions under this versioned name) instead of failing to link.
    // Both are leaf functions that leave the stack alone, so the default CFI describes them.
    #[cfg(target_arch = "x86_64")]
    std::arch::global_asm!(
        ".pushsection .text.prof_sys_read_word_v1,\"ax\",@progbits",
        ".weak prof_sys_read_word_v1",
        ".hidden prof_sys_read_word_v1",
        ".type prof_sys_read_word_v1,@function",
        ".p2align 4",
        "prof_sys_read_word_v1:",
        ".cfi_startproc",
        "mov rax, qword ptr [rdi]",
        "mov edx, 1",
        "ret",
        ".cfi_endproc",
        ".size prof_sys_read_word_v1, .-prof_sys_read_word_v1",
        ".weak prof_sys_read_word_fault_v1",
        ".hidden prof_sys_read_word_fault_v1",
        ".type prof_sys_read_word_fault_v1,@function",
        ".p2align 4",
        "prof_sys_read_word_fault_v1:",
        ".cfi_startproc",
        "xor eax, eax",
        "xor edx, edx",
        "ret",
        ".cfi_endproc",
        ".size prof_sys_read_word_fault_v1, .-prof_sys_read_word_fault_v1",
        ".popsection",
        // A leaf that uses only argument and scratch registers and leaves the stack alone, so
        // that its fault path (below) finds the return address on top, as the default CFI says.
        // rdi: the kept pairs, rsi: their count, rdx: lo, rcx: the last readable word's address.
        ".pushsection .text.prof_sys_same_words_v1,\"ax\",@progbits",
        ".weak prof_sys_same_words_v1",
        ".hidden prof_sys_same_words_v1",
        ".type prof_sys_same_words_v1,@function",
        ".weak prof_sys_same_words_load_v1",
        ".hidden prof_sys_same_words_load_v1",
        ".p2align 4",
        "prof_sys_same_words_v1:",
        ".cfi_startproc",
        "2:",
        "test rsi, rsi",
        "jz 5f",
        "mov r8, qword ptr [rdi]",
        "test r8b, 7",
        "jnz 4f",
        "cmp r8, rdx",
        "jb 4f",
        "cmp r8, rcx",
        "ja 4f",
        "prof_sys_same_words_load_v1:",
        "mov r9, qword ptr [r8]",
        "cmp r9, qword ptr [rdi + 8]",
        "jne 3f",
        "add rdi, 16",
        "dec rsi",
        "jmp 2b",
        "3:",
        "xor eax, eax",
        "ret",
        "4:",
        "mov eax, 2",
        "ret",
        "5:",
        "mov eax, 1",
        "ret",
        ".cfi_endproc",
        ".size prof_sys_same_words_v1, .-prof_sys_same_words_v1",
        ".weak prof_sys_same_words_fault_v1",
        ".hidden prof_sys_same_words_fault_v1",
        ".type prof_sys_same_words_fault_v1,@function",
        ".p2align 4",
        "prof_sys_same_words_fault_v1:",
        ".cfi_startproc",
        "mov eax, 3",
        "ret",
        ".cfi_endproc",
        ".size prof_sys_same_words_fault_v1, .-prof_sys_same_words_fault_v1",
        ".popsection",
    );

    #[cfg(target_arch = "aarch64")]
    std::arch::global_asm!(
        ".pushsection .text.prof_sys_read_word_v1,\"ax\",@progbits",
        ".weak prof_sys_read_word_v1",
        ".hidden prof_sys_read_word_v1",
        ".type prof_sys_read_word_v1,@function",
        ".p2align 4",
        "prof_sys_read_word_v1:",
        ".cfi_startproc",
        "ldr x0, [x0]",
        "mov x1, #1",
        "ret",
        ".cfi_endproc",
        ".size prof_sys_read_word_v1, .-prof_sys_read_word_v1",
        ".weak prof_sys_read_word_fault_v1",
        ".hidden prof_sys_read_word_fault_v1",
        ".type prof_sys_read_word_fault_v1,@function",
        ".p2align 4",
        "prof_sys_read_word_fault_v1:",
        ".cfi_startproc",
        "mov x0, xzr",
        "mov x1, xzr",
        "ret",
        ".cfi_endproc",
        ".size prof_sys_read_word_fault_v1, .-prof_sys_read_word_fault_v1",
        ".popsection",
    );

    /// There is a probe: a fault handler is worth installing.
    pub const AVAILABLE: bool = true;

    /// The word at `addr`, `None` when the load faulted.
    pub fn read_word(addr: u64) -> Option<u64> {
        // SAFETY: `prof_sys_read_word_v1` (the assembly above) loads 8 bytes from `addr` and
        // returns them; it touches no other memory and follows the C ABI. `addr` may have been
        // unmapped since the snapshot, or belong to a mapping another thread unmaps now: the
        // load then faults, and the caller holds a `StackAccess`, so the fault is caught:
        // prof's handler is installed, the thread does not block SIGSEGV or SIGBUS, and the
        // caller left `fault_room` free for the kernel's frame. The handler resumes the thread
        // at `prof_sys_read_word_fault_v1` (see `resume_if_probe`), which returns ok = 0 to
        // this call as if the probe had. The load is in assembly, outside Rust's memory model:
        // no reference to the memory is made. Premise: the program does not replace the
        // SIGSEGV or SIGBUS handler during a session without passing on faults it does not own
        // (Rust's runtime and well-behaved libraries pass them on); if it did, the process
        // would die of the fault, as it did before reads were caught.
        let word = unsafe { prof_sys_read_word_v1(addr) };
        (word.ok != 0).then_some(word.value)
    }

    /// Whether the words at the kept reads' addresses (pairs of an address and the value
    /// read there) still hold those values, the addresses inside `[lo, hi)`; `None` when
    /// this cannot tell in one pass (a kept read failed, an address is misaligned or outside
    /// the range), and the caller reads word by word. One probe for all, where
    /// [`read_word`] is a call each.
    #[cfg(target_arch = "x86_64")]
    pub fn same_words(kept: &[[u64; 2]], lo: u64, hi: u64) -> Option<bool> {
        let last = hi.checked_sub(8)?;
        // SAFETY: `prof_sys_same_words_v1` (the assembly above) reads the `kept.len()` pairs
        // at `kept.as_ptr()`, which the slice holds, and loads one word at each pair's address
        // (only 8-aligned ones inside `[lo, hi)`); it writes no memory, keeps to the scratch
        // registers of the C ABI and returns. A load that faults is caught as
        // `prof_sys_read_word_v1`'s is (see `read_word`, whose premises the caller's
        // `StackAccess` stands for, as they do here): the fault handler resumes the thread
        // at `prof_sys_same_words_fault_v1`, which returns 3 from this call as the probe would
        // have, the stack untouched by the probe (a leaf: the return address on top).
        let found = unsafe { prof_sys_same_words_v1(kept.as_ptr(), kept.len(), lo, last) };
        match found {
            SAME => Some(true),
            DIFFERENT => Some(false),
            UNSURE => None,
            // A load faulted: a word read before is unreadable now.
            _ => Some(false),
        }
    }

    /// Word by word on aarch64 (no comparing probe there).
    #[cfg(target_arch = "aarch64")]
    pub fn same_words(_kept: &[[u64; 2]], _lo: u64, _hi: u64) -> Option<bool> {
        None
    }

    /// If the saved context stopped on a probe's load, moves it to that probe's fault path
    /// and says so. `prof_sys_read_word_v1`'s load is its first instruction: nothing was done
    /// yet, and its other path expects the same registers and stack (a leaf, the caller's
    /// return address on top). `prof_sys_same_words_v1`'s fault path returns its "faulted"
    /// answer whatever its scratch registers hold, from the same stack.
    pub fn resume_if_probe(uc: &mut libc::ucontext_t) -> bool {
        let pc = pc_slot(uc);
        if *pc == prof_sys_read_word_v1 as *const () as u64 {
            *pc = prof_sys_read_word_fault_v1 as *const () as u64;
            return true;
        }
        #[cfg(target_arch = "x86_64")]
        if *pc == prof_sys_same_words_load_v1 as *const () as u64 {
            *pc = prof_sys_same_words_fault_v1 as *const () as u64;
            return true;
        }
        false
    }

    /// The program counter slot of a saved context, where the kernel resumes the thread.
    #[cfg(target_arch = "x86_64")]
    fn pc_slot(uc: &mut libc::ucontext_t) -> &mut u64 {
        let slot = &mut uc.uc_mcontext.gregs[libc::REG_RIP as usize];
        // SAFETY: greg_t is an i64; viewing it as a u64 keeps size, alignment and validity
        // (every bit pattern is valid for both), and the borrow is the slot's.
        unsafe { &mut *(slot as *mut i64 as *mut u64) }
    }

    /// The program counter slot of a saved context, where the kernel resumes the thread.
    #[cfg(target_arch = "aarch64")]
    fn pc_slot(uc: &mut libc::ucontext_t) -> &mut u64 {
        &mut uc.uc_mcontext.pc
    }
}

/// No probe on other architectures: no stack is read there.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod probe {
    /// There is no probe: no fault handler is installed.
    pub const AVAILABLE: bool = false;

    /// Never called: no `StackAccess` is given without a probe.
    pub fn read_word(_addr: u64) -> Option<u64> {
        None
    }

    /// Never called, as [`read_word`].
    pub fn same_words(_kept: &[[u64; 2]], _lo: u64, _hi: u64) -> Option<bool> {
        None
    }

    /// No context stops on a probe that does not exist.
    pub fn resume_if_probe(_uc: &mut libc::ucontext_t) -> bool {
        false
    }
}

/// Installs prof's SIGSEGV and SIGBUS handler, once per process; it stays for the process's
/// life (a handler installed after it may pass faults on to it at any later time). Until it is
/// in place no [`StackAccess`] is given, so no stack is read.
pub fn catch_read_faults() -> crate::Result<()> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if CATCHING.load(Ordering::Acquire) || !probe::AVAILABLE {
        return Ok(());
    }
    // SAFETY: getauxval only reads the auxiliary vector (0 when the kernel does not say).
    let kernel_frame = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as u64;
    let kernel_frame = if kernel_frame == 0 {
        libc::SIGSTKSZ as u64
    } else {
        kernel_frame.max(libc::MINSIGSTKSZ as u64)
    };
    FAULT_FRAME.store(kernel_frame + 2048, Ordering::Relaxed);
    for (signal, previous) in CAUGHT.into_iter().zip(&PREVIOUS) {
        // SAFETY: an all-zero sigaction is a valid value of this plain C struct (empty mask, no
        // flags); every field we rely on is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_fault as *const () as usize;
        // On the alternate stack when the thread has one, as Rust's own handler is: a stack
        // overflow can only be reported from there, and passes through here first.
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `action.sa_mask` is a valid sigset_t owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: as for `action`.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to valid sigaction structs owned by this frame; `on_fault`
        // has the three-argument signature SA_SIGINFO requires and calls only
        // async-signal-safe code (or the previous handler, as the kernel would have).
        if unsafe { libc::sigaction(signal, &action, &mut old) } != 0 {
            return Err(super::super::last_error("sigaction"));
        }
        if old.sa_sigaction != on_fault as *const () as usize {
            let _ = previous.set(old);
        }
    }
    CATCHING.store(true, Ordering::Release);
    Ok(())
}

/// prof's SIGSEGV and SIGBUS handler: resumes a faulting probe read with its "no value" path,
/// passes anything else on.
extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if !ctx.is_null() {
        // SAFETY: for an SA_SIGINFO handler the kernel passes the ucontext_t it saved, valid
        // for reads and writes during the handler; what is written back to it is where the
        // thread resumes.
        let uc = unsafe { &mut *(ctx as *mut libc::ucontext_t) };
        if probe::resume_if_probe(uc) {
            READ_FAULTS.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    pass_on(sig, info, ctx);
}

/// Gives a fault that is not a probe's what it would have had without prof: the previous
/// handler (called with the mask it asked for), or the default action (the process ends with
/// this signal: a fault recurs when the handler returns, anything else is raised again and,
/// blocked in this handler, delivered when it returns), or "ignore" for a signal that was sent.
fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    const SI_KERNEL: libc::c_int = 0x80;
    let previous = CAUGHT
        .iter()
        .position(|&s| s == sig)
        .and_then(|i| PREVIOUS[i].get());
    let handler = previous.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    // SAFETY: a non-null `info` is the siginfo the kernel passed, valid during the handler.
    let code = unsafe { info.as_ref() }.map_or(0, |i| i.si_code);
    let recurs = code > 0 && code != SI_KERNEL;
    match (handler, previous) {
        (libc::SIG_IGN, _) if code <= 0 => {}
        (libc::SIG_DFL | libc::SIG_IGN, _) | (_, None) => {
            // SAFETY: an all-zero sigaction with SIG_DFL as handler is the default
            // disposition; sigaction and raise are async-signal-safe.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &default, std::ptr::null_mut());
                if !recurs {
                    libc::raise(sig);
                }
            }
        }
        (handler, Some(previous)) => {
            // SAFETY: an all-zero sigset_t is valid storage for pthread_sigmask to fill.
            let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
            // SAFETY: `handler` is the address the program installed for `sig`, with the
            // signature its flags say (three arguments with SA_SIGINFO, one without), so
            // calling it with what the kernel gave us is what the kernel would have done;
            // pthread_sigmask is async-signal-safe and its sets are valid and owned here.
            unsafe {
                libc::pthread_sigmask(libc::SIG_BLOCK, &previous.sa_mask, &mut mask);
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(handler);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                    f(sig);
                }
                libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
            }
        }
    }
}

/// Leave to read the calling thread's stack: prof's fault handler is installed, the thread has
/// SIGSEGV and SIGBUS unblocked (a blocked fault kills the process whatever the handler), and
/// [`StackAccess::fault_room`] says what stack a caught fault needs.
#[derive(Clone, Copy, Debug)]
pub struct StackAccess {
    fault_room: u64,
}

impl StackAccess {
    /// Bytes that must be free on the current stack below the deepest frame that reads, for the
    /// kernel to deliver a caught fault: 0 when it goes to the thread's alternate signal stack
    /// (enabled, not in use, large enough), else the kernel's signal frame and the handler's.
    pub fn fault_room(self) -> u64 {
        self.fault_room
    }

    fn new(mask: &libc::sigset_t, alt: &libc::stack_t) -> Option<StackAccess> {
        if !CATCHING.load(Ordering::Acquire) {
            return None;
        }
        let blocked = |signal| {
            // SAFETY: sigismember only reads the set, a valid sigset_t; it is
            // async-signal-safe.
            unsafe { libc::sigismember(mask, signal) == 1 }
        };
        if CAUGHT.into_iter().any(blocked) {
            return None;
        }
        let frame = FAULT_FRAME.load(Ordering::Relaxed);
        let alt_free = alt.ss_flags & (libc::SS_DISABLE | libc::SS_ONSTACK) == 0
            && alt.ss_size as u64 >= frame;
        Some(StackAccess {
            fault_room: if alt_free { 0 } else { frame },
        })
    }
}

/// Leave to read the stack in the signal handler, from the interrupted thread's mask and
/// alternate stack saved in the `ucontext` (the handler's mask adds only its own signal).
pub(in crate::sys) fn stack_access(ctx: *mut libc::c_void) -> Option<StackAccess> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes the ucontext_t it saved, valid for
    // reads during the handler.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    StackAccess::new(&uc.uc_sigmask, &uc.uc_stack)
}

/// Leave to read the calling thread's stack outside a signal handler (an allocation hook): asks
/// the kernel for the thread's mask and alternate stack (two system calls).
pub fn stack_access_here() -> Option<StackAccess> {
    // SAFETY: all-zero sigset_t and stack_t are valid storage for the calls below to fill.
    let (mut mask, mut alt): (libc::sigset_t, libc::stack_t) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: null new values only query; the outputs are valid and owned by this frame.
    let ok = unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) == 0
            && libc::sigaltstack(std::ptr::null(), &mut alt) == 0
    };
    if ok {
        StackAccess::new(&mask, &alt)
    } else {
        None
    }
}

/// Reads the calling thread's stack between its stack pointer and a bound.
#[derive(Clone, Copy, Debug)]
pub struct StackReader {
    lo: u64,
    hi: u64,
}

impl StackReader {
    /// A reader for the calling thread's own stack, given the readable mapping `[lo, hi)` that
    /// holds the interrupted stack pointer `sp` (from a snapshot of `/proc/self/maps`, or the
    /// thread's stack bounds). Returns `None` when `sp` is not inside it. The range only keeps
    /// reads where a stack can be; it need not be mapped any more (see the module's docs).
    pub fn for_current_thread(
        _access: StackAccess,
        sp: u64,
        lo: u64,
        hi: u64,
    ) -> Option<StackReader> {
        (lo <= sp && sp < hi).then_some(StackReader { lo: sp, hi })
    }

    /// The word at `addr`, or `None` outside `[sp, hi)`, when misaligned, or when the memory is
    /// not readable (any more).
    pub fn read(&self, addr: u64) -> Option<u64> {
        if addr < self.lo || addr.checked_add(8)? > self.hi || addr % 8 != 0 {
            return None;
        }
        probe::read_word(addr)
    }

    /// Whether the words at the kept reads' addresses (pairs of an address and the value
    /// read there) still hold those values, in one probe: `None` where this processor has no
    /// such probe (aarch64) or it cannot tell (a kept read failed, or lay outside this
    /// reader's range), and the caller reads word by word.
    pub fn same_words(&self, kept: &[[u64; 2]]) -> Option<bool> {
        probe::same_words(kept, self.lo, self.hi)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{
        in_child, map, map_past_end_of_file, poke, read_unguarded, run_child, unmap,
    };
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    const PAGE: usize = 4096;

    /// A reader over `[lo, hi)` as the handler would make one.
    fn reader(lo: u64, hi: u64) -> StackReader {
        catch_read_faults().unwrap();
        let access = stack_access_here().expect("faults are caught in tests");
        StackReader::for_current_thread(access, lo, lo, hi).unwrap()
    }

    #[test]
    fn a_read_of_an_unmapped_page_reports_a_fault_instead_of_taking_it() {
        let base = map(2 * PAGE);
        poke(base, 42);
        let stack = reader(base, base + 2 * PAGE as u64);
        assert_eq!(stack.read(base), Some(42));
        unmap(base + PAGE as u64, PAGE);
        let faults = READ_FAULTS.load(Ordering::Relaxed);
        assert_eq!(stack.read(base + PAGE as u64 + 8), None);
        assert!(READ_FAULTS.load(Ordering::Relaxed) > faults);
        assert_eq!(stack.read(base), Some(42), "reads work after a fault");
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn kept_words_are_compared_in_one_probe_that_survives_a_fault() {
        let base = map(3 * PAGE);
        let at = |i: u64| base + 8 * i;
        let page = PAGE as u64;
        for i in 0..(3 * page / 8) {
            poke(at(i), i * 3);
        }
        let stack = reader(base, base + 3 * page);
        // Words on all three pages, as a kept stack holds them (outwards, not all adjacent).
        let mut kept: Vec<[u64; 2]> = [0, 1, 7, 300, 511, 512, 900, 1100]
            .iter()
            .map(|&i| [at(i), i * 3])
            .collect();
        let same = |kept: &[[u64; 2]]| stack.same_words(kept);
        let by_word = |kept: &[[u64; 2]]| {
            kept.iter().all(|&[a, v]| match stack.read(a & !1) {
                Some(now) => a & 1 == 0 && now == v,
                None => a & 1 == 1,
            })
        };
        assert_eq!(same(&kept), Some(true));
        assert_eq!(same(&[]), Some(true));
        poke(at(900), 1);
        assert_eq!(same(&kept), Some(false));
        assert!(!by_word(&kept));
        poke(at(900), 2700);
        // A kept failed read, a misaligned address or one outside the reader: word by word.
        let mut failed = kept.clone();
        failed[3][0] |= 1;
        assert_eq!(same(&failed), None);
        let mut outside = kept.clone();
        outside.push([base + 3 * page, 0]);
        assert_eq!(same(&outside), None);
        assert_eq!(same(&[[base - 8, 0]]), None);
        assert_eq!(same(&[[at(2) + 4, 0]]), None);
        // The last page unmapped: the probe's load faults there, is caught, and says
        // "different" (a word read before cannot be read now), as word by word does.
        unmap(base + 2 * page, PAGE);
        let faults = READ_FAULTS.load(Ordering::Relaxed);
        assert_eq!(same(&kept), Some(false));
        assert!(!by_word(&kept));
        assert!(READ_FAULTS.load(Ordering::Relaxed) > faults);
        kept.truncate(6);
        assert_eq!(same(&kept), Some(true), "compares work after a fault");
        assert!(by_word(&kept));
    }

    #[test]
    fn a_read_past_the_end_of_a_truncated_file_reports_a_fault() {
        let base = map_past_end_of_file(1);
        poke(base, 7);
        let stack = reader(base, base + 2 * PAGE as u64);
        assert_eq!(stack.read(base), Some(7));
        assert_eq!(stack.read(base + PAGE as u64), None);
    }

    #[test]
    fn other_faults_still_end_the_process_with_sigsegv() {
        if in_child("other_faults_still_end_the_process_with_sigsegv") {
            catch_read_faults().unwrap();
            let base = map(PAGE);
            unmap(base, PAGE);
            // An unmapped page read on purpose, in a child process, to see it die of SIGSEGV
            // as it would without prof's handler.
            std::hint::black_box(read_unguarded(base));
            return;
        }
        let (status, out) = run_child(
            module_path!(),
            "other_faults_still_end_the_process_with_sigsegv",
        );
        assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status:?}: {out}");
    }

    #[inline(never)]
    fn recurse(n: u64) -> u64 {
        let pad = std::hint::black_box([n; 64]);
        if n == 0 {
            return pad[0];
        }
        recurse(n - 1).wrapping_add(pad[1])
    }

    #[test]
    fn a_stack_overflow_is_still_reported_by_rusts_handler() {
        if in_child("a_stack_overflow_is_still_reported_by_rusts_handler") {
            catch_read_faults().unwrap();
            std::hint::black_box(recurse(u64::MAX));
            return;
        }
        let (status, out) = run_child(
            module_path!(),
            "a_stack_overflow_is_still_reported_by_rusts_handler",
        );
        assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}: {out}");
        assert!(out.contains("has overflowed its stack"), "{out}");
    }
}
