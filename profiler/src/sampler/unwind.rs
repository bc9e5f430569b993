//! Walking the interrupted stack, from the registers in the signal's `ucontext` (so the
//! handler's own frames and the signal trampoline never appear). DWARF CFI first where the code
//! has unwind tables, frame pointers otherwise; every stack read is bounds-checked.

use super::ring::Claim;
use super::sys::{Regs, StackReader};

/// Which unwinder to use, forcible with `PROF_UNWIND=fp|dwarf` for tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindMode {
    /// DWARF CFI where available, falling back to frame pointers.
    Dwarf,
    /// Frame pointers only.
    FramePointers,
}

impl UnwindMode {
    /// The mode from the environment, DWARF by default.
    pub fn from_env() -> UnwindMode {
        match std::env::var("PROF_UNWIND").as_deref() {
            Ok("fp") => UnwindMode::FramePointers,
            _ => UnwindMode::Dwarf,
        }
    }
}

/// Follows the frame-pointer chain: each frame record holds the caller's frame pointer and the
/// return address. Stops at a null or non-increasing frame pointer or outside the stack.
pub fn frame_pointers(regs: &Regs, stack: Option<&StackReader>, out: &mut Claim<'_>) {
    if !out.push(regs.pc) {
        return;
    }
    let Some(stack) = stack else { return };
    let mut fp = regs.fp;
    loop {
        let (Some(next), Some(ret)) = (stack.read(fp), stack.read(fp.wrapping_add(8))) else {
            return;
        };
        if ret == 0 || !out.push(ret) || next <= fp {
            return;
        }
        fp = next;
    }
}

/// Unwinds with DWARF CFI; returns false (having pushed nothing) when it could not start, so
/// the caller can fall back to frame pointers.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn dwarf(
    regs: &Regs,
    stack: &StackReader,
    unwinder: &super::dwarf::Dwarf,
    cache: &mut super::dwarf::Cache,
    out: &mut Claim<'_>,
) -> bool {
    use framehop::Unwinder;
    let start = super::dwarf::start_regs(regs);
    let mut read = |addr: u64| stack.read(addr).ok_or(());
    let mut frames = unwinder.iter_frames(regs.pc, start, cache, &mut read);
    let mut pushed = 0;
    while let Ok(Some(frame)) = frames.next() {
        if !out.push(frame.address()) {
            break;
        }
        pushed += 1;
    }
    if pushed <= 1 && regs.fp > regs.sp && stack.read(regs.fp).is_some() {
        // DWARF knew nothing past the leaf (e.g. code outside any module): try the frame chain
        // from the caller's record instead, without repeating the leaf.
        let mut fp = regs.fp;
        while let (Some(next), Some(ret)) = (stack.read(fp), stack.read(fp.wrapping_add(8))) {
            if ret == 0 || !out.push(ret) || next <= fp {
                break;
            }
            pushed += 1;
            fp = next;
        }
    }
    pushed > 0
}
