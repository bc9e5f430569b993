//! Reusing the outer frames of a thread's previous stack. Consecutive samples of a thread mostly
//! share their outer frames (`main`, the runtime, the long-running callers), and DWARF
//! unwinding costs tens of nanoseconds a frame. So each thread's last unwound stack is kept with
//! the registers at every frame and every stack word each unwinding step read. When a new
//! unwind reaches a frame with the same address and registers as a frame of the last stack, and
//! every word the last stack's remaining steps read still holds the same value, those steps
//! would compute exactly the same frames again (an unwinding step is a function of the address,
//! the registers, the unwind tables and the words it reads), so they are copied instead.

use super::dwarf::UnwindRegs;
use super::sys::TryCell;

/// Frames kept per stack; deeper stacks are not reused.
pub const MAX_FRAMES: usize = 128;
/// Stack words kept per stack (two or three per frame in practice).
const MAX_READS: usize = 4 * MAX_FRAMES;

/// One frame of a kept stack.
#[derive(Clone, Copy)]
struct Frame {
    /// The frame's address (instruction pointer for the first, return addresses after).
    address: u64,
    /// The registers the unwinder had at this frame.
    regs: UnwindRegs,
    /// End (exclusive) in `reads` of the words read by the step that unwound this frame.
    reads_end: u16,
}

/// A read of a stack word: its address, with bit 0 set when the read failed (addresses read
/// are 8-aligned, so the bit is free), and the value read.
#[derive(Clone, Copy, Default)]
struct Read {
    address: u64,
    value: u64,
}

/// A thread's last unwound stack, as kept for reuse.
pub struct Stack {
    tid: u32,
    /// The unwinder generation it was unwound with (a new set of modules unwinds differently).
    generation: u64,
    /// True when the unwinding ran to its own end with every frame and read kept.
    complete: bool,
    frames: Box<[Frame]>,
    len: usize,
    reads: Box<[Read]>,
    reads_len: usize,
}

impl Stack {
    /// An empty stack, reused by no one.
    pub fn new() -> Stack {
        let frame = Frame {
            address: 0,
            regs: super::dwarf::start_regs(&super::sys::Regs::default()),
            reads_end: 0,
        };
        Stack {
            tid: 0,
            generation: 0,
            complete: false,
            frames: vec![frame; MAX_FRAMES].into_boxed_slice(),
            len: 0,
            reads: vec![Read::default(); MAX_READS].into_boxed_slice(),
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

    /// Records the next frame, before the step that unwinds it.
    pub fn push_frame(&mut self, address: u64, regs: UnwindRegs) {
        if self.len == self.frames.len() {
            self.complete = false;
            return;
        }
        self.frames[self.len] = Frame {
            address,
            regs,
            reads_end: self.reads_len as u16,
        };
        self.len += 1;
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
        *slot = Read {
            address: address | u64::from(value.is_none()),
            value: value.unwrap_or(0),
        };
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
        read: impl Fn(u64) -> Option<u64>,
    ) -> Option<usize> {
        if !self.complete || self.tid != tid || self.generation != generation {
            return None;
        }
        let sp = super::dwarf::sp_of(regs);
        let mut j = (*from).max(1);
        while j < self.len && super::dwarf::sp_of(&self.frames[j].regs) < sp {
            j += 1;
        }
        *from = j;
        let frame = self.frames.get(j).filter(|_| j < self.len)?;
        if frame.address != address || frame.regs != *regs {
            return None;
        }
        let first_read = usize::from(self.frames[j - 1].reads_end);
        let reads = self.reads.get(first_read..self.reads_len)?;
        let unchanged = reads.iter().all(|r| {
            let failed = r.address & 1 == 1;
            match read(r.address & !1) {
                Some(value) => !failed && value == r.value,
                None => failed,
            }
        });
        unchanged.then_some(j)
    }

    /// The addresses of the frames after `j`.
    pub fn addresses_after(&self, j: usize) -> impl Iterator<Item = u64> + '_ {
        self.frames
            .get(j + 1..self.len)
            .unwrap_or_default()
            .iter()
            .map(|f| f.address)
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
        self.frames[self.len - 1].reads_end = (other.frames[j].reads_end as isize + shift) as u16;
        for (slot, frame) in self.frames[self.len..].iter_mut().zip(frames) {
            *slot = Frame {
                reads_end: (frame.reads_end as isize + shift) as u16,
                ..*frame
            };
        }
        self.len += frames.len();
        self.complete &= other.complete;
    }
}

/// A thread's unwinding scratch space: framehop's rule cache, the last stack and room for the
/// next one.
pub struct State {
    /// framehop's cache of unwind rules by address.
    pub rules: super::dwarf::Cache,
    /// The last stack unwound through this state.
    pub last: Stack,
    /// The stack being unwound.
    pub next: Stack,
}

impl State {
    /// Fresh scratch space.
    pub fn new() -> State {
        State {
            rules: super::dwarf::Cache::default(),
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
