//! Reading the interrupted thread's stack, within bounds.

/// Reads the stack of the interrupted thread between `lo` and `hi`.
#[derive(Clone, Copy, Debug)]
pub struct StackReader {
    lo: u64,
    hi: u64,
}

impl StackReader {
    /// A reader for the calling thread's own stack, given the readable mapping `[lo, hi)` that
    /// holds the interrupted stack pointer `sp` (from a snapshot of `/proc/self/maps`).
    /// Returns `None` when `sp` is not inside it.
    pub fn for_current_thread(sp: u64, lo: u64, hi: u64) -> Option<StackReader> {
        (lo <= sp && sp < hi).then_some(StackReader { lo: sp, hi })
    }

    /// The word at `addr`, or `None` outside `[sp, hi)` or when misaligned.
    pub fn read(&self, addr: u64) -> Option<u64> {
        if addr < self.lo || addr.checked_add(8)? > self.hi || addr % 8 != 0 {
            return None;
        }
        // SAFETY: `[lo, hi)` lies in a readable mapping that contains the interrupted stack
        // pointer, i.e. the calling thread's own stack, which cannot be unmapped while this
        // thread runs on it; `addr` is 8-aligned and `addr + 8 <= hi`. A volatile read of
        // memory another frame may be writing is fine for a plain integer.
        Some(unsafe { std::ptr::read_volatile(addr as *const u64) })
    }
}
