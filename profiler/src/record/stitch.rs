//! Completing a context switch's stack beyond its copy. In wall mode every switch-out copies the
//! top of its thread's user stack, and at high switch rates those copies are what fills the
//! rings: the kernel reserves the whole requested size in the ring for each sample, however
//! little of it the stack fills. So a switch-out copies less than a task-clock sample
//! (`super::DEFAULT_SWITCH_STACK_BYTES`), enough for the frames a blocking call adds below the
//! code that called it, and an unwind that runs off the end of that copy is completed from the
//! thread's previous stack: when the outermost frame it reached is a frame of the thread's last
//! complete stack (the same function, at the same stack pointer), that stack's frames above it
//! are taken.
//!
//! Why that holds, and where it does not: a frame's return address says which function it is
//! in, and its stack pointer where that function's frame lies; the frames above are that
//! function's callers, the ones the previous stack had, unless the thread has returned out of
//! that function since and called it again, at the same depth, from other callers: a loop
//! calling `a()` and then `b()`, each calling the same blocking function, with frames of the
//! same size. (Where in the function the two stacks are, which call it made, does not matter:
//! those frames are below, unwound from the copy.) The words that would tell are past the copy,
//! so no check is possible: the stacks completed this way are counted
//! ([`Completed::Stitched`]) and shown with the recording, never passed off as unwound. The
//! first frame is never matched (any code can be at any stack pointer), and the frames unwound
//! from the copy are kept as they are.
//!
//! A thread's first wait can come before any complete stack of it (a program's main thread
//! that blocks before its first task-clock sample): a stack cut with nothing to complete it
//! from waits for the thread's next complete stack, which completes it the same way (the same
//! function at the same stack pointer, unless the thread returned out of it in between), and
//! the sample takes the completed stack then ([`Threads::take_later`]).

use std::collections::HashMap;

/// How an unwind ended, for [`Threads::complete`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completed {
    /// It did not run off its copy: unwound whole (or as far as the code allowed).
    Unwound,
    /// It ran off its copy and was completed from the thread's previous stack.
    Stitched,
    /// It ran off its copy and no frame of the thread's previous stack matched: it stops there,
    /// unless the thread's next complete stack matches ([`Threads::wait_for_next`]).
    Cut,
}

/// Stacks cut by their copy kept per thread for its next complete stack to complete (the
/// oldest stays cut past this).
const WAITING: usize = 16;

/// A stack cut by its copy, waiting for its thread's next complete stack.
struct Cut {
    /// Its sample's time (with the thread, which sample it is).
    time: u64,
    /// Its outermost frame: address and stack pointer.
    outer: (u64, u64),
    /// Its addresses as kept (kernel frames first), and the most it may have.
    addresses: Vec<u64>,
    max_depth: usize,
}

/// What prof knows of one thread's stacks.
#[derive(Default)]
struct Thread {
    /// Its last complete stack, as (address, stack pointer) per frame, leaf first.
    last: Vec<(u64, u64)>,
    /// Its stacks cut with nothing to complete them from yet.
    cut: Vec<Cut>,
}

/// Each thread's last complete stack, and its cut ones waiting for the next.
#[derive(Default)]
pub struct Threads {
    threads: HashMap<u32, Thread>,
    /// Cut stacks completed since [`Threads::take_later`]: thread, sample time, addresses.
    later: Vec<(u32, u64, Vec<u64>)>,
}

impl Threads {
    /// Takes the unwind of a sample of thread `tid`: its `frames` (address and stack pointer,
    /// leaf first, as unwound) and whether it `ran_off` the end of its copy. A stack that ran
    /// off is completed when `may_stitch` and its outermost frame (not the leaf) is one of the
    /// thread's last complete stack (at the same stack pointer, with the same return address or
    /// one that `same_function` says returns into the same function): the addresses of the
    /// frames above that one are appended to `addresses` (up to `max_depth` in all). A stack
    /// unwound whole, or completed, becomes the thread's last.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        tid: u32,
        frames: &[(u64, u64)],
        ran_off: bool,
        may_stitch: bool,
        addresses: &mut Vec<u64>,
        max_depth: usize,
        same_function: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Completed {
        let thread = self.threads.entry(tid).or_default();
        if !ran_off {
            thread.last.clear();
            thread.last.extend_from_slice(frames);
            thread.complete_cut(tid, same_function, &mut self.later);
            return Completed::Unwound;
        }
        let (Some(&outer), true) = (frames.last(), may_stitch && frames.len() > 1) else {
            return Completed::Cut;
        };
        let Some(j) = above(&thread.last, outer, same_function) else {
            return Completed::Cut;
        };
        let above = &thread.last[j + 1..];
        let room = max_depth.saturating_sub(addresses.len());
        addresses.extend(above.iter().take(room).map(|&(address, _)| address));
        // The completed stack is the thread's last now: its new frames, then the kept ones.
        let mut whole = Vec::with_capacity(frames.len() + above.len());
        whole.extend_from_slice(frames);
        whole.extend_from_slice(above);
        thread.last = whole;
        thread.complete_cut(tid, same_function, &mut self.later);
        Completed::Stitched
    }

    /// Keeps the stack of thread `tid`'s sample at `time`, [`Completed::Cut`] at its outermost
    /// frame `outer` (its `addresses` as kept, at most `max_depth` of them), for the thread's
    /// next complete stack to complete.
    pub fn wait_for_next(
        &mut self,
        tid: u32,
        time: u64,
        outer: (u64, u64),
        addresses: &[u64],
        max_depth: usize,
    ) {
        let cut = &mut self.threads.entry(tid).or_default().cut;
        if cut.len() == WAITING {
            cut.remove(0);
        }
        cut.push(Cut {
            time,
            outer,
            addresses: addresses.to_vec(),
            max_depth,
        });
    }

    /// The cut stacks completed since the last call: each one's thread, its sample's time and
    /// its completed addresses.
    pub fn take_later(&mut self) -> Vec<(u32, u64, Vec<u64>)> {
        std::mem::take(&mut self.later)
    }

    /// Forgets thread `tid` (it has ended: a new thread may get its id).
    pub fn forget(&mut self, tid: u32) {
        self.threads.remove(&tid);
    }
}

impl Thread {
    /// Completes the cut stacks whose outermost frame the thread's new last stack has, into
    /// `later`; the others wait on.
    fn complete_cut(
        &mut self,
        tid: u32,
        same_function: &mut dyn FnMut(u64, u64) -> bool,
        later: &mut Vec<(u32, u64, Vec<u64>)>,
    ) {
        let last = &self.last;
        self.cut.retain_mut(|cut| {
            let Some(j) = above(last, cut.outer, same_function) else {
                return true;
            };
            let mut addresses = std::mem::take(&mut cut.addresses);
            let room = cut.max_depth.saturating_sub(addresses.len());
            addresses.extend(last[j + 1..].iter().take(room).map(|&(a, _)| a));
            later.push((tid, cut.time, addresses));
            false
        });
    }
}

/// The index in `kept` (a complete stack, leaf first) of the frame that is `outer` (a return
/// address and stack pointer): the same stack pointer, and the same return address or one
/// that `same_function` says returns into the same function. Never the kept leaf.
fn above(
    kept: &[(u64, u64)],
    outer: (u64, u64),
    same_function: &mut dyn FnMut(u64, u64) -> bool,
) -> Option<usize> {
    let (address, sp) = outer;
    kept.iter()
        .skip(1)
        .position(|&(a, s)| s == sp && (a == address || same_function(a, address)))
        .map(|j| j + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Functions of 0x100 bytes: 0x20 and 0x28 are in one, 0x120 in another.
    fn by_0x100(a: u64, b: u64) -> bool {
        (a - 1) / 0x100 == (b - 1) / 0x100
    }

    #[test]
    fn a_stack_cut_by_its_copy_takes_the_frames_above_the_matching_one() {
        let mut t = Threads::default();
        let mut out = Vec::new();
        // A task-clock sample unwound whole: compute <- run <- main <- start.
        let whole = [(0x10, 0x100), (0x20, 0x180), (0x30, 0x200), (0x40, 0x280)];
        assert_eq!(
            t.complete(7, &whole, false, false, &mut out, 128, &mut by_0x100),
            Completed::Unwound
        );
        // A switch-out in read <- wait <- run, its copy ending in run's frame: run's caller
        // (main) and the frames above come from the last stack.
        let cut = [(0x50, 0x0f0), (0x60, 0x140), (0x20, 0x180)];
        let mut out = vec![0x50, 0x60, 0x20];
        assert_eq!(
            t.complete(7, &cut, true, true, &mut out, 128, &mut by_0x100),
            Completed::Stitched
        );
        assert_eq!(out, [0x50, 0x60, 0x20, 0x30, 0x40]);
        // The completed stack is the thread's last now.
        let deeper = [(0x70, 0x0e0), (0x60, 0x140)];
        let mut out = vec![0x70, 0x60];
        assert_eq!(
            t.complete(7, &deeper, true, true, &mut out, 4, &mut by_0x100),
            Completed::Stitched
        );
        assert_eq!(out, [0x70, 0x60, 0x20, 0x30], "cut at max_depth");
        // Another call site of the same function, at the same stack pointer: its callers are
        // the same.
        let other_call = [(0x90, 0x0e0), (0x28, 0x180)];
        let mut out = vec![0x90, 0x28];
        assert_eq!(
            t.complete(7, &other_call, true, true, &mut out, 128, &mut by_0x100),
            Completed::Stitched
        );
        assert_eq!(out, [0x90, 0x28, 0x30, 0x40]);
    }

    #[test]
    fn a_cut_stack_with_nothing_before_it_is_completed_by_the_threads_next_stack() {
        let mut t = Threads::default();
        let cut = [(0x50, 0x0f0), (0x60, 0x140), (0x20, 0x180)];
        let mut out = vec![0x50, 0x60, 0x20];
        assert_eq!(
            t.complete(7, &cut, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        // Kept with its kernel frames, as the sample's stack is.
        t.wait_for_next(7, 1_000, (0x20, 0x180), &[0xffff_0001, 0x50, 0x60, 0x20], 5);
        let elsewhere = [(0x10, 0x100), (0x120, 0x180), (0x30, 0x200)];
        t.complete(
            7,
            &elsewhere,
            false,
            false,
            &mut Vec::new(),
            128,
            &mut by_0x100,
        );
        assert!(t.take_later().is_empty(), "no frame of that function there");
        // Another thread's stack completes nothing of this one's.
        let next = [(0x10, 0x100), (0x28, 0x180), (0x30, 0x200), (0x40, 0x280)];
        t.complete(8, &next, false, false, &mut Vec::new(), 128, &mut by_0x100);
        assert!(t.take_later().is_empty());
        t.complete(7, &next, false, false, &mut Vec::new(), 128, &mut by_0x100);
        assert_eq!(
            t.take_later(),
            [(7, 1_000, vec![0xffff_0001, 0x50, 0x60, 0x20, 0x30])],
            "cut at its max_depth"
        );
        assert!(t.take_later().is_empty(), "taken once");
    }

    #[test]
    fn no_stack_is_completed_from_another_frame_thread_or_place() {
        let mut t = Threads::default();
        let whole = [(0x10, 0x100), (0x20, 0x180), (0x30, 0x200)];
        t.complete(7, &whole, false, false, &mut Vec::new(), 128, &mut by_0x100);
        let mut out = vec![0x50, 0x20];
        // The same return address at another stack pointer, or another function at the same
        // one: another frame.
        let other_function = [(0x50, 0x0f0), (0x120, 0x180)];
        assert_eq!(
            t.complete(7, &other_function, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        let elsewhere = [(0x50, 0x0f0), (0x20, 0x188)];
        assert_eq!(
            t.complete(7, &elsewhere, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        assert_eq!(out, [0x50, 0x20]);
        // Another thread's stack is not this one's.
        let cut = [(0x50, 0x0f0), (0x20, 0x180)];
        assert_eq!(
            t.complete(8, &cut, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        // The leaf alone is never matched, nor is the kept stack's leaf.
        let leaf = [(0x10, 0x100)];
        assert_eq!(
            t.complete(7, &leaf, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        let at_leaf = [(0x50, 0x0f0), (0x10, 0x100)];
        assert_eq!(
            t.complete(7, &at_leaf, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        // Not asked to stitch (a task-clock sample), or the thread ended: cut.
        assert_eq!(
            t.complete(7, &cut, true, false, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        t.forget(7);
        assert_eq!(
            t.complete(7, &cut, true, true, &mut out, 128, &mut by_0x100),
            Completed::Cut
        );
        assert_eq!(out, [0x50, 0x20]);
    }
}
