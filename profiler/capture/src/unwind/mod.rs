//! Walking a stack: the interrupted thread's own, from the registers in the signal's `ucontext`
//! (so the handler's own frames and the signal trampoline never appear), or a copy a perf ring
//! recorded with its registers (`prof record`'s, or the in-process sampler's own rings). DWARF
//! CFI first where the code has unwind tables ([`dwarf()`], over [`dwarf`](mod@dwarf), with [`frame_reuse`]), frame pointers
//! otherwise; every stack read is bounds-checked. Frames go to any [`Frames`] sink: a closure,
//! or the in-process sampler's ring record.

pub mod blocked;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod dwarf;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub mod frame_reuse;

use crate::sys::{Regs, StackReader};

/// Where an unwinder's addresses go, leaf first: any closure that takes one and says whether it
/// wants more, or a sink of the caller's (the in-process sampler's ring record).
pub trait Frames {
    /// Takes `address`; false when it wants no more (the address may or may not have been
    /// taken: a full ring record refuses it, a closure at its depth takes it and says so).
    fn push(&mut self, address: u64) -> bool;

    /// Takes `addresses` in order until one is refused, as [`Frames::push`] of each would;
    /// says whether none was.
    fn extend(&mut self, addresses: &[u64]) -> bool {
        addresses.iter().all(|&a| self.push(a))
    }
}

impl<F: FnMut(u64) -> bool> Frames for F {
    fn push(&mut self, address: u64) -> bool {
        self(address)
    }
}

/// Whether [`dwarf()`] copies frames from the thread's previous stack, and whether its stack is
/// kept for the next one to copy from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Copies where it provably may, and keeps the stack.
    Join,
    /// Copies nothing, but keeps the stack (reuse turned off for comparison, or a caller whose
    /// stacks no thread continues).
    Off,
    /// Copies nothing and leaves the kept stack as it was: a second unwind of the same sample
    /// that checks a joined one (`Settings::verify_reuse`).
    Check,
}

/// Which unwinder a sampler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindMode {
    /// DWARF CFI where available, falling back to frame pointers.
    Dwarf,
    /// Frame pointers only.
    FramePointers,
}

/// Whether this build has the DWARF unwinder (framehop's x86_64 and aarch64 unwinders).
pub const HAS_DWARF: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Where there is no DWARF unwinder (other processors), no list of the loaded objects' code
/// either: every pc counts as known.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub struct NoDwarf;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
impl NoDwarf {
    /// Always true.
    pub fn knows(&self, _pc: u64) -> bool {
        true
    }
}

/// The words of a stack being walked: the interrupted thread's own ([`StackReader`]) or a copy.
pub trait StackWords {
    /// The word at `addr`, or `None` where the stack cannot be read.
    fn word(&self, addr: u64) -> Option<u64>;

    /// Whether the words at the kept reads' addresses (pairs of an address, with bit 0 set
    /// where that read failed, and the value read) would each read as they did: the same
    /// value, or `None` again where the read failed.
    fn same_words(&self, kept: &[[u64; 2]]) -> bool {
        same_words_by_word(self, kept)
    }
}

/// [`StackWords::same_words`], one word at a time.
fn same_words_by_word<S: StackWords + ?Sized>(stack: &S, kept: &[[u64; 2]]) -> bool {
    kept.iter().all(|&[address, value]| {
        let failed = address & 1 == 1;
        match stack.word(address & !1) {
            Some(now) => !failed && now == value,
            None => failed,
        }
    })
}

/// A copy of the top of a thread's stack, `bytes` from the stack pointer `sp` up.
#[cfg(target_os = "linux")]
pub struct CopiedStack<'a> {
    /// The stack pointer when the sample was taken.
    pub sp: u64,
    /// The bytes copied.
    pub bytes: &'a [u8],
}

#[cfg(target_os = "linux")]
impl StackWords for CopiedStack<'_> {
    fn word(&self, addr: u64) -> Option<u64> {
        let at = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let word = self.bytes.get(at..at.checked_add(8)?)?;
        Some(u64::from_ne_bytes(word.try_into().ok()?))
    }
}

impl StackWords for StackReader {
    fn word(&self, addr: u64) -> Option<u64> {
        self.read(addr)
    }

    fn same_words(&self, kept: &[[u64; 2]]) -> bool {
        StackReader::same_words(self, kept).unwrap_or_else(|| same_words_by_word(self, kept))
    }
}

/// Follows the frame-pointer chain: each frame record holds the caller's frame pointer and the
/// return address. Stops at a null or non-increasing frame pointer, outside the stack, or at
/// an address in no known object (`known` false, see `DwarfSet::knows`): the frame pointer
/// there may hold any value, so what it points to is no frame record. An interrupted pc there
/// is kept (it is where the thread was), a return address is not (it was read through a
/// frame pointer that may have held data).
pub fn frame_pointers(
    regs: &Regs,
    stack: Option<&StackReader>,
    known: &dyn Fn(u64) -> bool,
    out: &mut (impl Frames + ?Sized),
) {
    if !out.push(regs.pc) || !known(regs.pc) {
        return;
    }
    if let Some(stack) = stack {
        frame_chain(stack, regs.fp, known, out);
    }
}

/// Passes the return addresses of the frame-record chain starting at `fp` to `out`, until
/// `out` returns false, a record is outside the stack, the chain stops going up the stack, or
/// a return address is in no known object (not passed on).
pub fn frame_chain<S: StackWords + ?Sized>(
    stack: &S,
    mut fp: u64,
    known: &dyn Fn(u64) -> bool,
    out: &mut (impl Frames + ?Sized),
) {
    while let (Some(caller), Some(ret)) = (stack.word(fp), stack.word(fp.wrapping_add(8))) {
        if ret == 0 || !known(ret.wrapping_sub(1)) || !out.push(ret) || caller <= fp {
            return;
        }
        fp = caller;
    }
}

/// Unwinds with DWARF CFI, passing each frame's address to `out` until it wants no more. With
/// [`Reuse::Join`], copies the outer frames of the thread's previous stack where they provably
/// have not changed (see `frame_reuse.rs`). When DWARF knows nothing past the leaf, follows the
/// frame-pointer chain instead. Says whether anything was pushed (if not, the caller falls back
/// to frame pointers) and whether frames were reused.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn dwarf<S: StackWords + ?Sized>(
    regs: &Regs,
    stack: &S,
    dwarf: &dwarf::DwarfSet,
    state: &mut frame_reuse::State,
    tid: u32,
    reuse: Reuse,
    out: &mut (impl Frames + ?Sized),
) -> Unwound {
    use framehop::{FrameAddress, Unwinder};
    let frame_reuse::State {
        rules,
        bp_uses,
        last,
        next,
    } = state;
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bp_uses;
    let join = reuse == Reuse::Join;
    next.start(tid, dwarf.generation);
    let mut uregs = dwarf::start_regs(regs);
    let mut address = FrameAddress::from_instruction_pointer(regs.pc);
    let mut pushed = 0;
    let mut reused = false;
    // Frames unwound up to the join.
    let mut fresh = 0;
    // Whether `last` was updated in place to be the new stack (else `next` is, and they swap).
    let mut in_place = false;
    let mut cursor = 0;
    loop {
        let at = match address {
            FrameAddress::InstructionPointer(pc) => pc,
            FrameAddress::ReturnAddress(ret) => ret.get(),
        };
        // framehop unwinds an address in no module with frame pointers, whose register there
        // may hold anything: a library loaded since the last refresh gave garbage callers. So
        // the stack ends at such an address: an interrupted pc is kept (the thread was there),
        // a return address is not (no known code called from there).
        let known = dwarf.knows(if pushed == 0 { at } else { at.wrapping_sub(1) });
        if pushed > 0 && !known {
            break;
        }
        if !out.push(at) {
            next.cut();
            break;
        }
        pushed += 1;
        next.push_frame(at, &uregs);
        if !known {
            // Every unwind that reaches this frame ends here, whatever its bp.
            next.set_bp_use(frame_reuse::BpUse::Ends);
            break;
        }
        if join && pushed > 1 {
            let joined = last.join(tid, dwarf.generation, at, &uregs, &mut cursor, stack);
            if let Some(j) = joined {
                reused = true;
                fresh = pushed;
                let copied = last.addresses_after(j);
                pushed += copied.len();
                if !out.extend(copied) {
                    next.cut();
                }
                in_place = next.overwrite_prefix_of(last, j);
                if !in_place {
                    next.append_from(last, j);
                }
                break;
            }
        }
        #[cfg(target_arch = "x86_64")]
        let before = uregs;
        let mut read = |a: u64| {
            let value = stack.word(a);
            next.record(a, value);
            value.ok_or(())
        };
        let step = dwarf
            .unwinder
            .unwind_frame(address, &mut uregs, rules, &mut read);
        // What the step did with bp, for later joins (the first frame is never joined at). A
        // step that returned a caller does what its address's rule does, found once.
        #[cfg(target_arch = "x86_64")]
        if join && pushed > 1 {
            let gen = dwarf.generation;
            let completed = matches!(step, Ok(Some(_)));
            let used = match bp_uses.get(gen, at).filter(|_| completed) {
                Some(used) => used,
                None => {
                    let used = bp_use(dwarf, address, &before, &uregs, &step, stack, rules, next);
                    if completed {
                        bp_uses.put(gen, at, used);
                    }
                    used
                }
            };
            next.set_bp_use(used);
        }
        match step {
            Ok(Some(ret)) => match FrameAddress::from_return_address(ret) {
                Some(a) => address = a,
                None => break,
            },
            Ok(None) | Err(_) => break,
        }
    }
    let known = |pc| dwarf.knows(pc);
    if pushed <= 1 && known(regs.pc) && regs.fp > regs.sp && stack.word(regs.fp).is_some() {
        // DWARF knew nothing past the leaf (a module without unwind tables for it): try the
        // frame chain from the caller's record instead, without repeating the leaf.
        next.cut();
        frame_chain(stack, regs.fp, &known, out);
    }
    if !in_place && reuse != Reuse::Check {
        std::mem::swap(last, next);
    }
    Unwound {
        started: pushed > 0,
        reused,
        fresh: u32::try_from(fresh).unwrap_or(u32::MAX),
    }
}

/// What the unwinding step from `before` to `after` (its outcome `step`, its reads the last
/// ones `kept` holds) does with bp (see [`BpUse`](frame_reuse::BpUse)): found by running
/// it again from the same address and stack pointer with bp's top bit flipped, and comparing.
/// Whatever a step computes from bp (a frame record's address, a CFA, a test against 0 or the
/// stack pointer) differs for the two values, one of which is not a canonical address: another
/// word is read, another stack pointer results, or another error ends it. Reads the same words
/// again, through framehop's rule cache.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn bp_use<S: StackWords + ?Sized>(
    dwarf: &dwarf::DwarfSet,
    address: framehop::FrameAddress,
    before: &dwarf::UnwindRegs,
    after: &dwarf::UnwindRegs,
    step: &Result<Option<u64>, framehop::Error>,
    stack: &S,
    rules: &mut dwarf::Cache,
    kept: &frame_reuse::Stack,
) -> frame_reuse::BpUse {
    use frame_reuse::BpUse;
    use framehop::Unwinder;
    let bp = before.bp();
    let flipped = bp ^ (1 << 63);
    let mut alt = dwarf::UnwindRegs::new(before.ip(), before.sp(), flipped);
    let mut reads = kept.last_step_reads();
    let mut same_reads = true;
    let mut read = |a: u64| {
        let value = stack.word(a);
        same_reads &= reads.next() == Some((a, value));
        value.ok_or(())
    };
    let again = dwarf
        .unwinder
        .unwind_frame(address, &mut alt, rules, &mut read);
    if !same_reads || reads.next().is_some() {
        return BpUse::Uses;
    }
    match (step, again) {
        (Ok(Some(a)), Ok(Some(b))) if *a == b && after.sp() == alt.sp() => {
            if after.bp() == bp && alt.bp() == flipped {
                BpUse::Carries
            } else if after.bp() == alt.bp() {
                BpUse::Restores
            } else {
                BpUse::Uses
            }
        }
        (Ok(None), Ok(None)) => BpUse::Ends,
        (Err(a), Err(b)) if *a == b => BpUse::Ends,
        _ => BpUse::Uses,
    }
}

/// What [`dwarf()`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwound {
    /// It pushed at least the leaf (otherwise fall back to frame pointers).
    pub started: bool,
    /// It copied outer frames from the thread's previous stack.
    pub reused: bool,
    /// When it did, the frames it unwound up to the one it joined at (both included).
    pub fresh: u32,
}

/// Unwinds a copied stack (a perf ring sample's: `prof record`'s, or the sampler's own rings)
/// from `regs` into `out`, leaf first: DWARF CFI, falling back to frame pointers when it gives
/// nothing; at most `max_depth` frames. With [`Reuse::Join`], the outer frames of thread `tid`'s
/// previous stack in `state` are reused where they provably have not changed (see
/// `frame_reuse.rs`): the copy holds the same words there.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[allow(clippy::too_many_arguments)]
pub fn copied<S: StackWords + ?Sized>(
    regs: Regs,
    stack: &S,
    set: &dwarf::DwarfSet,
    state: &mut frame_reuse::State,
    tid: u32,
    reuse: Reuse,
    max_depth: usize,
    out: &mut Vec<u64>,
) {
    out.clear();
    let unwound = dwarf(&regs, stack, set, state, tid, reuse, &mut |a| {
        out.push(a);
        out.len() < max_depth
    });
    if !unwound.started {
        out.clear();
        out.push(regs.pc);
        frame_chain(stack, regs.fp, &|pc| set.knows(pc), &mut |a| {
            out.push(a);
            out.len() < max_depth
        });
    }
}
