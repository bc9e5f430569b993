//! The allocation sampler's `unsafe` part: the [`GlobalAlloc`] wrapper that forwards every call
//! to the wrapped allocator and tells the sampler's safe hooks ([`AllocHooks`]) about each
//! block, and the registers of the calling function (where a sampled allocation's unwinding
//! starts).

use super::Regs;
use std::alloc::{GlobalAlloc, Layout};
use std::marker::PhantomData;

/// This file's path as the compiler was given it: the frames of the wrapper, which a build
/// with only line tables names by their short names (`current_regs`), are known by it.
pub const GLOBAL_ALLOC_SOURCE: &str = file!();

/// What [`Sampling`] tells of every block: the allocation sampler's side of the wrapper (the
/// in-process sampler above this crate implements it). Neither may touch the block's memory,
/// panic, or allocate through the wrapper in a way that recurses without end.
pub trait AllocHooks {
    /// Called after every successful allocation of `size` bytes at `addr`.
    fn allocated(addr: usize, size: usize);
    /// Called before every free of the block at `addr`.
    fn freed(addr: usize);
}

std::thread_local! {
    /// Set while this thread's allocations are not the program's to sample: while it samples
    /// one (or for good on a collector thread), or makes prof's own memory ([`bypass`]).
    static BYPASS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the calling thread's allocations left unsampled: for prof's own memory made
/// on a program's thread (its scope buffers), which is not the program's.
pub fn bypass<T>(f: impl FnOnce() -> T) -> T {
    let was = set_bypass(true);
    let out = f();
    set_bypass(was);
    out
}

/// Sets whether the calling thread's allocations are left unsampled (see [`bypass`]); returns
/// what it was.
#[inline]
pub fn set_bypass(on: bool) -> bool {
    BYPASS.with(|b| b.replace(on))
}

/// Whether the calling thread's allocations are left unsampled now (see [`bypass`]).
#[inline]
pub fn bypassing() -> bool {
    BYPASS.with(std::cell::Cell::get)
}

/// A global allocator that samples the allocations of `A` while an allocation session runs
/// (`prof::Mode::Alloc`), telling `H` of each block, and otherwise costs what `H` costs: one
/// thread-local subtraction and one branch per allocation (and one load and branch per free)
/// for `prof`'s sampler. Programs name it as `prof::alloc::Sampling<A>`.
pub struct Sampling<A, H> {
    inner: A,
    hooks: PhantomData<fn() -> H>,
}

impl<A, H> Sampling<A, H> {
    /// Wraps `inner`, e.g. `Sampling::new(std::alloc::System)`.
    pub const fn new(inner: A) -> Self {
        Sampling {
            inner,
            hooks: PhantomData,
        }
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

impl<A: Default, H> Default for Sampling<A, H> {
    fn default() -> Self {
        Sampling::new(A::default())
    }
}

impl<A: std::fmt::Debug, H> std::fmt::Debug for Sampling<A, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampling")
            .field("inner", &self.inner)
            .finish()
    }
}

// SAFETY: every method forwards to `inner` with the caller's own arguments and returns what it
// returned, so each method's contract is exactly `A`'s, which `A: GlobalAlloc` upholds. The hooks
// are told only the block's address and size, so they cannot touch the block's memory; they are
// called before a free (so a block leaves the sampler's in-use table before `inner` may hand its
// address out again) and after an allocation succeeded. A global allocator must not unwind: the
// hooks are called through `extern "C"` functions ([`allocated`], [`freed`]), out of which a
// panic cannot unwind (it aborts the process), whatever the hooks do. Recursion through this
// allocator is the hooks' to bound (prof's sampler sends nested allocations straight to `inner`
// with a thread-local flag); unbounded recursion would overflow the stack, which Rust reports
// and aborts on, not undefined behaviour.
unsafe impl<A: GlobalAlloc, H: AllocHooks> GlobalAlloc for Sampling<A, H> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`, which is `inner`'s too.
        let ptr = unsafe { self.inner.alloc(layout) };
        if !ptr.is_null() {
            allocated::<H>(ptr as usize, layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated::<H>(ptr as usize, layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        freed::<H>(ptr as usize);
        // SAFETY: the caller guarantees `ptr` was allocated by this allocator (so by `inner`)
        // with `layout`.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation is a free and an allocation: the old block leaves the in-use table
        // before `inner` may hand its address to another thread.
        freed::<H>(ptr as usize);
        // SAFETY: the caller upholds `realloc`'s contract (`ptr` from this allocator with
        // `layout`, `new_size` valid for it), which is `inner`'s.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            allocated::<H>(new as usize, new_size);
        }
        new
    }
}

/// Tells `H` of an allocation. `extern "C"`: a panic in the hook aborts instead of unwinding out
/// of the allocator.
#[inline(always)]
extern "C" fn allocated<H: AllocHooks>(addr: usize, size: usize) {
    H::allocated(addr, size);
}

/// Tells `H` of a free, as [`allocated`] does of an allocation.
#[inline(always)]
extern "C" fn freed<H: AllocHooks>(addr: usize) {
    H::freed(addr);
}

/// The registers of the calling function at the point of the call (inlined into it), for
/// unwinding its own stack: the instruction after the read, the stack pointer and the frame
/// pointer. Zeros on other architectures, where the unwinding then records nothing.
#[inline(always)]
pub fn current_regs() -> Regs {
    #[cfg(target_arch = "x86_64")]
    {
        let (pc, sp, fp): (u64, u64, u64);
        // SAFETY: reads the instruction pointer (rip-relative `lea` of the next instruction),
        // rsp and rbp into output registers; touches no memory, the stack or the flags.
        unsafe {
            std::arch::asm!(
                "lea {pc}, [rip]",
                "mov {sp}, rsp",
                "mov {fp}, rbp",
                pc = out(reg) pc,
                sp = out(reg) sp,
                fp = out(reg) fp,
                options(nomem, nostack, preserves_flags),
            );
        }
        Regs { pc, sp, fp, lr: 0 }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let (pc, sp, fp, lr): (u64, u64, u64, u64);
        // SAFETY: reads the address of the next instruction (`adr .`-style label), sp, x29 and
        // x30 into output registers; touches no memory, the stack or the flags.
        unsafe {
            std::arch::asm!(
                "adr {pc}, .",
                "mov {sp}, sp",
                "mov {fp}, x29",
                "mov {lr}, x30",
                pc = out(reg) pc,
                sp = out(reg) sp,
                fp = out(reg) fp,
                lr = out(reg) lr,
                options(nomem, nostack, preserves_flags),
            );
        }
        Regs { pc, sp, fp, lr }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Regs::default()
    }
}

/// Keeps glibc's `malloc` from holding on to freed large blocks; does nothing with another C
/// library. glibc serves a block of 128 KiB or more with a mapping of its own and unmaps it
/// when it is freed, but each such free raises that threshold to the freed block's size (up to
/// 32 MiB), so the blocks of a later phase come from the heap, whose freed memory stays
/// resident. A command that builds large tables in turn (an import's hash tables, then a call
/// tree, then an export's buffers) then peaks at the sum of its phases rather than at the
/// largest: on two million distinct names, `prof convert --to pprof` took 264 MiB instead of
/// 203. Setting the threshold fixes it at glibc's default, 128 KiB.
///
/// For the `prof` command only: a program that links prof keeps its allocator's behaviour.
pub fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a tunable of glibc's allocator; it touches no memory of ours
    // and is safe to call at any time from any thread (glibc takes its arena lock). 128 KiB is
    // within the range glibc accepts for `M_MMAP_THRESHOLD` (at most 32 MiB on 64-bit).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
