//! Reusing the outer frames of a thread's previous stack. Consecutive samples of a thread mostly
//! share their outer frames (`main`, the runtime, the long-running callers), and DWARF
//! unwinding costs tens of nanoseconds a frame. So each thread's last unwound stack is kept with
//! the registers at every frame and every stack word each unwinding step read. When a new
//! unwind reaches a frame with the same address and registers as a frame of the last stack, and
//! every word the last stack's remaining steps read still holds the same value, those steps
//! would compute exactly the same frames again (an unwinding step is a function of the address,
//! the registers, the unwind tables and the words it reads), so they are copied instead.
//!
//! Optimized x86_64 code uses bp as an ordinary register, and a step that neither saves nor
//! restores it passes it on unchanged: the leaf's value of the moment, different at every
//! sample, rides up through every caller until a frame restores bp from the stack. Compared
//! whole, the registers then never matched below that frame (in the samplers' bench, 38 frames
//! of 60 unwound again at every sample). So each step of a kept stack says what it does with bp
//! ([`BpUse`]), and a frame joins whatever its bp when no step from there reads bp before one
//! restores it from a word the join checks.

use super::dwarf::{KeptRegs, UnwindRegs};
use crate::sys::TryCell;

/// Frames kept per stack; deeper stacks are not reused.
pub const MAX_FRAMES: usize = 128;
/// Stack words kept per stack (two or three per frame in practice).
const MAX_READS: usize = 4 * MAX_FRAMES;

/// What the step that unwinds a frame does with the frame pointer register (bp), on x86_64,
/// where a step reads no register but the stack pointer and bp (see `dwarf::KeptRegs`). Found
/// by running the step a second time with bp's top bit flipped (see `unwind::bp_use`): every
/// way framehop's rules and DWARF evaluation use bp (a frame record at it, a CFA or expression
/// from it, a test of it against 0 or the stack pointer) reads other words, computes another
/// stack pointer or ends otherwise with either value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Steps are classified on x86_64 only (aarch64 compares its three registers whole).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub enum BpUse {
    /// The step's outcome may depend on bp (or was not examined: the first frame, aarch64).
    Uses,
    /// It passes bp on unchanged and depends on it nowhere else.
    Carries,
    /// It sets bp from a stack word it read, and depends on the old value nowhere else.
    Restores,
    /// It ended the stack (or was never run: the stack ended at this frame for another reason)
    /// without depending on bp.
    Ends,
}

/// One frame of a kept stack, but for its address and its step's [`BpUse`], which are kept
/// apart (see [`Stack`]).
#[derive(Clone, Copy)]
struct Frame {
    /// The registers the unwinder had at this frame, as far as a step reads them.
    regs: KeptRegs,
    /// End (exclusive) in `reads` of the words read by the step that unwound this frame.
    reads_end: u16,
}

/// A read of a stack word: its address, with bit 0 set when the read failed (addresses read
/// are 8-aligned, so the bit is free), and the value read (as `StackWords::same_words` takes
/// them).
type Read = [u64; 2];

/// A thread's last unwound stack, as kept for reuse. A join copies the frames' addresses and
/// scans their steps' [`BpUse`]s from the join frame to the end, so each is an array of its
/// own: at 1 kHz the handler finds little of this in the CPU's caches, and the 60 addresses of
/// a deep stack are 8 cache lines this way, 30 inside the frames.
pub struct Stack {
    tid: u32,
    /// The unwinder generation it was unwound with (a new set of modules unwinds differently).
    generation: u64,
    /// True when the unwinding ran to its own end with every frame and read kept.
    complete: bool,
    frames: Box<[Frame]>,
    /// Each frame's address (instruction pointer for the first, return addresses after).
    addresses: Box<[u64]>,
    /// What the step that unwound each frame does with bp.
    bps: Box<[BpUse]>,
    len: usize,
    reads: Box<[Read]>,
    reads_len: usize,
}

impl Default for Stack {
    fn default() -> Self {
        Stack::new()
    }
}

impl Stack {
    /// An empty stack, reused by no one.
    pub fn new() -> Stack {
        let frame = Frame {
            regs: super::dwarf::kept_regs(&super::dwarf::start_regs(&crate::sys::Regs::default())),
            reads_end: 0,
        };
        Stack {
            tid: 0,
            generation: 0,
            complete: false,
            frames: vec![frame; MAX_FRAMES].into_boxed_slice(),
            addresses: vec![0; MAX_FRAMES].into_boxed_slice(),
            bps: vec![BpUse::Uses; MAX_FRAMES].into_boxed_slice(),
            len: 0,
            reads: vec![[0, 0]; MAX_READS].into_boxed_slice(),
            reads_len: 0,
        }
    }

    /// Starts recording a new stack of thread `tid`.
    pub fn start(&mut self, tid: u32, generation: u64) {
        self.tid = tid;
        self.generation = generation;
        self.complete = true;
        self.len = 0;
        self.reads_len = 0;
    }

    /// Records the next frame, before the step that unwinds it (which, until
    /// [`Stack::set_bp_use`] says otherwise, may read bp).
    pub fn push_frame(&mut self, address: u64, regs: &UnwindRegs) {
        if self.len == self.frames.len() {
            self.complete = false;
            return;
        }
        self.frames[self.len] = Frame {
            regs: super::dwarf::kept_regs(regs),
            reads_end: self.reads_len as u16,
        };
        self.addresses[self.len] = address;
        self.bps[self.len] = BpUse::Uses;
        self.len += 1;
    }

    /// Says what the step unwinding the last frame pushed did with bp.
    pub fn set_bp_use(&mut self, bp: BpUse) {
        if let Some(slot) = self.len.checked_sub(1).and_then(|i| self.bps.get_mut(i)) {
            *slot = bp;
        }
    }

    /// The words the step unwinding the last frame pushed read so far, as (address, value or
    /// `None` where the read failed); empty when the stack stopped keeping reads.
    #[cfg(target_arch = "x86_64")]
    pub fn last_step_reads(&self) -> impl Iterator<Item = (u64, Option<u64>)> + '_ {
        let from = self
            .len
            .checked_sub(2)
            .map_or(0, |i| usize::from(self.frames[i].reads_end));
        let reads = if self.complete {
            self.reads.get(from..self.reads_len).unwrap_or_default()
        } else {
            &[]
        };
        reads
            .iter()
            .map(|&[address, value]| (address & !1, (address & 1 == 0).then_some(value)))
    }

    /// Records a word read by the step unwinding the last frame pushed.
    pub fn record(&mut self, address: u64, value: Option<u64>) {
        let (Some(slot), Some(frame)) = (
            self.reads.get_mut(self.reads_len),
            self.len.checked_sub(1).and_then(|i| self.frames.get_mut(i)),
        ) else {
            self.complete = false;
            return;
        };
        if !self.complete {
            return;
        }
        *slot = [address | u64::from(value.is_none()), value.unwrap_or(0)];
        self.reads_len += 1;
        frame.reads_end = self.reads_len as u16;
    }

    /// Marks the stack as not reusable (cut short by the output's depth, or unwound another way).
    pub fn cut(&mut self) {
        self.complete = false;
    }

    /// Where the new stack's frame (at `address` with `regs`, not the first frame) joins this
    /// one: the index of the same frame here, if its remaining steps would read the same words
    /// again. `from` is a cursor the caller keeps between calls of one unwind (frames only move
    /// outwards, to higher stack pointers).
    pub fn join(
        &self,
        tid: u32,
        generation: u64,
        address: u64,
        regs: &UnwindRegs,
        from: &mut usize,
        stack: &(impl super::StackWords + ?Sized),
    ) -> Option<usize> {
        if !self.complete || self.tid != tid || self.generation != generation {
            return None;
        }
        let regs = super::dwarf::kept_regs(regs);
        let sp = super::dwarf::kept_sp(&regs);
        let mut j = (*from).max(1);
        while j < self.len && super::dwarf::kept_sp(&self.frames[j].regs) < sp {
            j += 1;
        }
        *from = j;
        if j >= self.len || self.addresses[j] != address || !self.same_regs_from(j, &regs) {
            return None;
        }
        let first_read = usize::from(self.frames[j - 1].reads_end);
        let reads = self.reads.get(first_read..self.reads_len)?;
        stack.same_words(reads).then_some(j)
    }

    /// Whether the steps from frame `j` on, run from `regs` (the new stack's at that frame),
    /// read the registers they read at `j`: the same stack pointer, and on x86_64 the same bp
    /// unless no step reads bp before one restores it from the stack (or the stack ends).
    #[cfg(target_arch = "x86_64")]
    fn same_regs_from(&self, j: usize, regs: &KeptRegs) -> bool {
        let kept = &self.frames[j].regs;
        kept.sp == regs.sp
            && (kept.fp == regs.fp || {
                let steps = self.bps.get(j..self.len).unwrap_or_default();
                let first_not_carrying = steps.iter().find(|&&bp| bp != BpUse::Carries);
                first_not_carrying.is_none_or(|bp| matches!(bp, BpUse::Restores | BpUse::Ends))
            })
    }

    /// Whether the steps from frame `j` on, run from `regs` (the new stack's at that frame),
    /// read the registers they read at `j`: all of them the same (lr, sp and fp).
    #[cfg(target_arch = "aarch64")]
    fn same_regs_from(&self, j: usize, regs: &KeptRegs) -> bool {
        self.frames[j].regs == *regs
    }

    /// Each kept frame's address and the stack pointer the unwinder had there, leaf first.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn frames(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let frames = self.frames.get(..self.len).unwrap_or_default();
        self.addresses
            .iter()
            .zip(frames)
            .map(|(&address, f)| (address, super::dwarf::kept_sp(&f.regs)))
    }

    /// The addresses of the frames after `j`.
    pub fn addresses_after(&self, j: usize) -> &[u64] {
        self.addresses.get(j + 1..self.len).unwrap_or_default()
    }

    /// The common case of a join, without copying the outer frames: when this stack (ending at
    /// the join frame, `j` here and in `other`) read as many words before the join as `other`
    /// did, writes its frames and reads before the join over `other`'s, which then is the new
    /// stack. Returns false, changing nothing, when they differ in shape.
    pub fn overwrite_prefix_of(&self, other: &mut Stack, j: usize) -> bool {
        let reads = self.reads_len;
        if self.len != j + 1
            || !self.complete
            || other.frames.get(j - 1).map(|f| usize::from(f.reads_end)) != Some(reads)
        {
            return false;
        }
        other.frames[..j].copy_from_slice(&self.frames[..j]);
        other.addresses[..j].copy_from_slice(&self.addresses[..j]);
        other.bps[..j].copy_from_slice(&self.bps[..j]);
        other.reads[..reads].copy_from_slice(&self.reads[..reads]);
        true
    }

    /// Appends `other`'s frames from `j` on (the join frame itself already pushed here, as
    /// this stack's last frame), with their reads, so this stack is complete again.
    pub fn append_from(&mut self, other: &Stack, j: usize) {
        let first_read = usize::from(other.frames[j - 1].reads_end);
        let (Some(reads), Some(frames)) = (
            other.reads.get(first_read..other.reads_len),
            other.frames.get(j + 1..other.len),
        ) else {
            self.complete = false;
            return;
        };
        if self.len == 0
            || self.len + frames.len() > self.frames.len()
            || self.reads_len + reads.len() > self.reads.len()
        {
            self.complete = false;
            return;
        }
        // The join frame's step reads what the other stack's step j read.
        self.reads[self.reads_len..self.reads_len + reads.len()].copy_from_slice(reads);
        let shift = self.reads_len as isize - first_read as isize;
        self.reads_len += reads.len();
        let join = &mut self.frames[self.len - 1];
        join.reads_end = (other.frames[j].reads_end as isize + shift) as u16;
        // Its step is the other stack's step j, run from the same address and stack pointer.
        self.bps[self.len - 1] = other.bps[j];
        for (slot, frame) in self.frames[self.len..].iter_mut().zip(frames) {
            *slot = Frame {
                reads_end: (frame.reads_end as isize + shift) as u16,
                ..*frame
            };
        }
        let (from, to) = (j + 1..other.len, self.len..self.len + frames.len());
        self.addresses[to.clone()].copy_from_slice(&other.addresses[from.clone()]);
        self.bps[to].copy_from_slice(&other.bps[from]);
        self.len += frames.len();
        self.complete &= other.complete;
    }
}

/// What completed steps did with bp, by the return address they unwound from, under one
/// generation of the unwinder. A step that returns a caller follows the rule its address has
/// in the unwind tables, so what it does with bp is the same at every sample and is found once
/// (by running it twice, see `unwind::bp_use`), not at every sample. Direct-mapped. x86_64's
/// (see [`BpUse`]).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub struct BpUses {
    generation: u64,
    slots: Box<[(u64, BpUse)]>,
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl Default for BpUses {
    fn default() -> Self {
        BpUses::new()
    }
}

impl BpUses {
    /// Entries kept (a power of two).
    const SLOTS: usize = 256;

    /// An empty cache.
    pub fn new() -> BpUses {
        BpUses {
            generation: 0,
            slots: vec![(0, BpUse::Uses); Self::SLOTS].into_boxed_slice(),
        }
    }

    fn slot(address: u64) -> usize {
        // Return addresses differ in their low bits; fold in the next ones for functions
        // whose call sites share them.
        ((address ^ (address >> 8)) as usize) & (Self::SLOTS - 1)
    }

    /// What the completed step from return address `address` does with bp, if known under
    /// `generation`.
    pub fn get(&self, generation: u64, address: u64) -> Option<BpUse> {
        let (at, bp) = self.slots[Self::slot(address)];
        (self.generation == generation && at == address && address != 0).then_some(bp)
    }

    /// Keeps what the completed step from `address` does with bp, under `generation` (which
    /// forgets the other generations' entries).
    pub fn put(&mut self, generation: u64, address: u64, bp: BpUse) {
        if self.generation != generation {
            self.slots.fill((0, BpUse::Uses));
            self.generation = generation;
        }
        self.slots[Self::slot(address)] = (address, bp);
    }
}

/// A thread's unwinding scratch space: framehop's rule cache, the last stack and room for the
/// next one.
pub struct State {
    /// framehop's cache of unwind rules by address.
    pub rules: super::dwarf::Cache,
    /// What steps do with bp, by address.
    pub bp_uses: BpUses,
    /// The last stack unwound through this state.
    pub last: Stack,
    /// The stack being unwound.
    pub next: Stack,
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}

impl State {
    /// Fresh scratch space.
    pub fn new() -> State {
        State {
            rules: super::dwarf::Cache::default(),
            bp_uses: BpUses::new(),
            last: Stack::new(),
            next: Stack::new(),
        }
    }
}

/// Unwind states of the last session that ended, for the next one: a session's start then
/// allocates and fills none (16 states, each with two stacks of 128 frames and a rule cache).
/// Their stacks are never reused under another generation of unwinder, and generations are
/// counted for the process (see `dwarf::Modules::refresh`).
static KEPT: std::sync::Mutex<Option<Box<[TryCell<State>]>>> = std::sync::Mutex::new(None);

/// `count` unwind states: those the last session left when there are as many, else new ones.
pub fn states(count: usize) -> Box<[TryCell<State>]> {
    let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner()).take();
    match kept {
        Some(states) if states.len() == count => states,
        _ => (0..count).map(|_| TryCell::new(State::new())).collect(),
    }
}

/// Keeps a finished session's unwind states for the next one (no handler uses them any more).
pub fn keep_states(states: Box<[TryCell<State>]>) {
    if !states.is_empty() {
        *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = Some(states);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bp_uses_are_kept_by_address_under_one_generation() {
        let mut cache = BpUses::new();
        assert_eq!(cache.get(1, 0x1000), None);
        cache.put(1, 0x1000, BpUse::Carries);
        cache.put(1, 0x2008, BpUse::Restores);
        assert_eq!(cache.get(1, 0x1000), Some(BpUse::Carries));
        assert_eq!(cache.get(1, 0x2008), Some(BpUse::Restores));
        // Another address in the same slot is not taken for this one.
        let other = (1..u64::MAX)
            .map(|i| 0x1000 + i)
            .find(|&a| BpUses::slot(a) == BpUses::slot(0x1000))
            .unwrap();
        assert_eq!(cache.get(1, other), None);
        cache.put(1, other, BpUse::Uses);
        assert_eq!(cache.get(1, 0x1000), None);
        assert_eq!(cache.get(1, other), Some(BpUse::Uses));
        // A new unwinder (other modules) knows none of the old entries.
        assert_eq!(cache.get(2, 0x2008), None);
        cache.put(2, 0x3000, BpUse::Ends);
        assert_eq!(cache.get(2, 0x2008), None);
        assert_eq!(cache.get(1, 0x3000), None);
        // Address 0 is never a return address an unwind passes on: an empty slot.
        assert_eq!(BpUses::new().get(0, 0), None);
    }
}
