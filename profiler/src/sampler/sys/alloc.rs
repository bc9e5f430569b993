//! The allocation sampler's `unsafe` part: the [`GlobalAlloc`] wrapper that forwards every call
//! to the wrapped allocator and tells the safe hooks in `sampler::alloc` about each block, the
//! registers of the calling function (where a sampled allocation's unwinding starts).

use crate::sampler::alloc as hooks;
use crate::sampler::sys::Regs;
use std::alloc::{GlobalAlloc, Layout};

/// A global allocator that samples the allocations of `A` while an allocation session runs
/// ([`Mode::Alloc`](crate::Mode::Alloc)), and otherwise costs one thread-local subtraction and
/// one branch per allocation (and one load and branch per free). See [`crate::alloc`].
#[derive(Debug, Default)]
pub struct Sampling<A> {
    inner: A,
}

impl<A> Sampling<A> {
    /// Wraps `inner`, e.g. `Sampling::new(std::alloc::System)`.
    pub const fn new(inner: A) -> Self {
        Sampling { inner }
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

// SAFETY: every method forwards to `inner` with the caller's own arguments and returns what it
// returned, so each method's contract is exactly `A`'s, which `A: GlobalAlloc` upholds. The hooks
// only read the block's address and size; they never touch the block's memory, never unwind
// (they cannot panic: no indexing without bounds, no unwrap on the allocation path), and never
// allocate through this allocator re-entrantly in a way that recurses without end (a thread-local
// flag makes nested allocations go straight to `inner`). A block is removed from the in-use table
// before `inner` frees it, so the address is not handed out again while it is still listed.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Sampling<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`, which is `inner`'s too.
        let ptr = unsafe { self.inner.alloc(layout) };
        if !ptr.is_null() {
            hooks::allocated(ptr as usize, layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if !ptr.is_null() {
            hooks::allocated(ptr as usize, layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        hooks::freed(ptr as usize);
        // SAFETY: the caller guarantees `ptr` was allocated by this allocator (so by `inner`)
        // with `layout`.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation is a free and an allocation: the old block leaves the in-use table
        // before `inner` may hand its address to another thread.
        hooks::freed(ptr as usize);
        // SAFETY: the caller upholds `realloc`'s contract (`ptr` from this allocator with
        // `layout`, `new_size` valid for it), which is `inner`'s.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            hooks::allocated(new as usize, new_size);
        }
        new
    }
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
/// 203 (issue 20). Setting the threshold fixes it at glibc's default, 128 KiB.
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
