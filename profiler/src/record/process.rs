//! What prof knows of each recorded process: the objects it has mapped (from MMAP2 records,
//! their load bias read from the files' program headers), an unwinder over their unwind tables
//! (the sampler's `dwarf::Modules`, reading the files), and the stacks of its samples.

use super::stitch::{self, Completed};
use object::{Object, ObjectSegment};
use prof_capture::assemble::StackIndex;
use prof_capture::symbolize::LoadedObject;
use prof_capture::sys::Regs;
use prof_capture::unwind::blocked::Blocked;
use prof_capture::unwind::dwarf::{DwarfSet, Modules, SectionCache};
use prof_capture::unwind::frame_reuse::State;
use prof_capture::unwind::{self, Reuse, StackWords};
use std::collections::HashMap;

pub use prof_capture::unwind::CopiedStack;

/// The `PT_LOAD` segments of an object's file: (file offset, file size, virtual address).
pub type Segments = Vec<(u64, u64, u64)>;

/// One process's address space, from its start or `exec` to its next `exec` or end.
#[derive(Default)]
pub struct Process {
    /// Its objects, in the order first mapped.
    pub objects: Vec<LoadedObject>,
    unwinding: Unwinding,
    /// Each distinct stack (addresses, leaf first) once.
    pub stacks: Vec<Box<[u64]>>,
    index: StackIndex,
    /// Scratch space of [`Process::unwind`], kept between samples.
    scratch: Scratch,
    /// Each thread's last complete stack, to complete a stack cut short by its copy.
    threads: stitch::Threads,
    /// The function entries of each object (by its name and bias), read when a completion or
    /// a blocked thread's unwinding needs them (see [`function_of`]).
    entries: HashMap<(String, u64), Vec<u64>>,
    /// Stacks of earlier samples completed since [`Process::take_later`]: thread, sample time,
    /// completed stack.
    later: Vec<(u32, u64, u32)>,
}

/// The buffers [`Process::unwind`] fills at each sample.
#[derive(Default)]
struct Scratch {
    user: Vec<u64>,
    frames: Vec<(u64, u64)>,
    addresses: Vec<u64>,
}

/// A sample's thread, for [`Process::unwind`].
#[derive(Clone, Copy, Debug)]
pub struct Sampled {
    /// Its thread.
    pub tid: u32,
    /// Its time.
    pub time: u64,
    /// Where its copy ends when the kernel copied all it was asked for: the stack may go on
    /// past it (a shorter copy reached the stack's end).
    pub copy_end: Option<u64>,
    /// Whether a stack cut short by its copy may be completed from another of its thread
    /// (see `stitch`).
    pub may_stitch: bool,
}

impl Sampled {
    /// A sample of thread `tid` whose stack is unwound as far as its copy goes, never
    /// completed.
    pub fn whole(tid: u32, time: u64) -> Sampled {
        Sampled {
            tid,
            time,
            copy_end: None,
            may_stitch: false,
        }
    }
}

/// A copied stack that notes whether a read went past its end, where the stack goes on.
struct Watched<'a, 'b> {
    copy: &'a CopiedStack<'b>,
    end: Option<u64>,
    ran_off: std::cell::Cell<bool>,
}

impl StackWords for Watched<'_, '_> {
    fn word(&self, addr: u64) -> Option<u64> {
        let word = self.copy.word(addr);
        // A read within a frame's reach past the end (not a wild one through a register that
        // held data) is one the copy was too short for.
        if word.is_none()
            && self
                .end
                .is_some_and(|end| addr.wrapping_sub(end) < MAX_FRAME)
        {
            self.ran_off.set(true);
        }
        word
    }
}

/// How far past the end of a copy a read counts as running off it (see [`Watched`]).
const MAX_FRAME: u64 = 64 * 1024;

impl Process {
    /// Adds the executable mapping of `path` at `addr` (`len` bytes, from file offset `pgoff`);
    /// `segments` reads (and keeps) the files' program headers.
    pub fn map(
        &mut self,
        path: &str,
        addr: u64,
        len: u64,
        pgoff: u64,
        segments: &mut HashMap<String, Option<Segments>>,
    ) {
        let bias = if path.starts_with('[') {
            // The vDSO (no file): its image is linked at 0 and mapped whole.
            Some(addr.wrapping_sub(pgoff))
        } else {
            let segs = segments
                .entry(path.to_owned())
                .or_insert_with(|| read_segments(path));
            segs.as_ref()
                .and_then(|segs| bias_of(segs, addr, len, pgoff))
        };
        let Some(bias) = bias else { return };
        // The vDSO under the name the dynamic loader gives it, which symbolization knows.
        let path = if path == "[vdso]" {
            "linux-vdso.so.1"
        } else {
            path
        };
        let range = addr..addr + len;
        // Objects mapped at an address range another object had (after an unmap) replace it:
        // symbolization takes the later one.
        match self
            .objects
            .iter_mut()
            .find(|o| o.name == path && o.bias == bias)
        {
            Some(o) => o.exec.push(range),
            None => self.objects.push(LoadedObject {
                name: path.to_owned(),
                bias,
                exec: vec![range],
            }),
        }
        self.unwinding.unwinder = None;
    }

    /// Starts from the mappings of the parent this process was forked from.
    pub fn inherit(&mut self, objects: Vec<LoadedObject>) {
        self.objects = objects;
        self.unwinding.unwinder = None;
    }

    /// Drops what unwinding this address space needs (its unwinder, its modules, the kept
    /// stack): it has ended (its last thread exited, or it called `exec`). Its objects and
    /// stacks stay, for symbolization; a late sample would read its files again.
    pub fn release(&mut self) {
        self.unwinding = Unwinding::default();
    }

    /// Unwinds a sample (registers as the kernel numbered them, see `super::regs_of`) with
    /// DWARF CFI, falling back to frame pointers, below its `kernel` frames (innermost first),
    /// and keeps its stack; returns its index. Frames past `max_depth` (from the leaf) are cut.
    /// A leaf in `jit` code (which has no unwind tables) is unwound with frame pointers, which
    /// JITs keep, through JIT frames and back into the objects' code with DWARF. A stack that
    /// runs off the end of its copy is completed from another stack of its thread where
    /// `thread.may_stitch` allows and a frame matches (see `stitch`); how is returned with it.
    /// Its objects' unwind sections come from `sections`, shared with the other processes.
    #[allow(clippy::too_many_arguments)]
    pub fn unwind(
        &mut self,
        sections: &mut SectionCache,
        kernel: &[u64],
        regs: Regs,
        stack: &CopiedStack<'_>,
        max_depth: usize,
        jit: &[std::ops::Range<u64>],
        thread: Sampled,
    ) -> (u32, Completed) {
        let kept = kernel.len().min(max_depth);
        let max_depth = max_depth.saturating_sub(kept).max(1);
        let objects = &self.objects;
        let (set, state) = self.unwinding.get(objects, sections);
        let Scratch {
            user,
            frames,
            addresses,
        } = &mut self.scratch;
        let watched = Watched {
            copy: stack,
            end: thread.copy_end,
            ran_off: std::cell::Cell::new(false),
        };
        unwind::copied(regs, &watched, set, state, 0, Reuse::Off, max_depth, user);
        let in_jit = |pc: u64| jit.iter().any(|r| r.contains(&pc));
        let mut completed = Completed::Unwound;
        if user.len() == 1 && in_jit(regs.pc) {
            let mut fp = regs.fp;
            while let (Some(caller), Some(ret)) = (stack.word(fp), stack.word(fp.wrapping_add(8))) {
                if ret == 0 || caller <= fp || user.len() >= max_depth {
                    break;
                }
                if in_jit(ret.wrapping_sub(1)) {
                    user.push(ret);
                    fp = caller;
                    continue;
                }
                if set.knows(ret.wrapping_sub(1)) {
                    // Back in an object's code: its caller's registers as the return left
                    // them, the frame record (saved frame pointer and return address, pushed
                    // on x86_64, stored with `stp fp, lr, [sp, #-16]!` on aarch64) popped.
                    let regs = Regs {
                        pc: ret,
                        sp: fp + 16,
                        fp: caller,
                        lr: 0,
                    };
                    unwind::dwarf(&regs, stack, set, state, 0, Reuse::Off, &mut |a| {
                        user.push(a);
                        user.len() < max_depth
                    });
                }
                break;
            }
        } else {
            // The unwinder's frames, when they are the stack's (not the frame chain's).
            frames.clear();
            frames.extend(state.last.frames());
            if frames.len() == user.len() && frames.iter().zip(&*user).all(|(f, &a)| f.0 == a) {
                let (objects, entries) = (&self.objects, &mut self.entries);
                let mut same_function = |a: u64, b: u64| {
                    let a = function_of(objects, entries, a.wrapping_sub(1));
                    a.is_some() && a == function_of(objects, entries, b.wrapping_sub(1))
                };
                completed = self.threads.complete(
                    thread.tid,
                    frames,
                    watched.ran_off.get(),
                    thread.may_stitch,
                    user,
                    max_depth,
                    &mut same_function,
                );
            }
        }
        addresses.clear();
        addresses.extend_from_slice(&kernel[..kept]);
        addresses.extend_from_slice(user);
        let full_depth = max_depth + kept;
        if let (Completed::Cut, true, [_, .., outer]) =
            (completed, thread.may_stitch, frames.as_slice())
        {
            let outer = *outer;
            self.threads
                .wait_for_next(thread.tid, thread.time, outer, addresses, full_depth);
        }
        for (tid, time, stack) in self.threads.take_later() {
            let i = self.index.intern(&mut self.stacks, &stack);
            self.later.push((tid, time, i));
        }
        (self.index.intern(&mut self.stacks, addresses), completed)
    }

    /// The samples whose cut stack a later one completed (see `stitch`), since the last call:
    /// each one's thread, time and completed stack.
    pub fn take_later(&mut self) -> std::vec::Drain<'_, (u32, u64, u32)> {
        self.later.drain(..)
    }

    /// The stack of a thread found blocked in a system call (`prof record --pid` in wall mode,
    /// at the start), read from its process's memory and unwound as in-process wall mode
    /// unwinds a blocked thread (`sampler::wall`); its index. User frames only: `/proc` gives no
    /// kernel call chain.
    pub fn blocked(
        &mut self,
        sections: &mut SectionCache,
        blocked: &Blocked<'_>,
        max_depth: usize,
    ) -> u32 {
        let objects = &self.objects;
        let (set, state) = self.unwinding.get(objects, sections);
        let mut stack = vec![blocked.pc];
        let mut buffer = Vec::new();
        blocked.unwind(
            &set.unwinder,
            &mut state.rules,
            objects,
            &mut self.entries,
            &mut buffer,
            max_depth,
            &mut stack,
        );
        self.index.intern(&mut self.stacks, &stack)
    }

    /// Forgets thread `tid`'s last stack (it has ended).
    pub fn thread_ended(&mut self, tid: u32) {
        self.threads.forget(tid);
    }
}

/// The unwinder of a process's objects and its unwinding state.
#[derive(Default)]
struct Unwinding {
    modules: Modules,
    /// Made again after a mapping changed the objects.
    unwinder: Option<DwarfSet>,
    state: Option<Box<State>>,
}

impl Unwinding {
    /// The unwinder over `objects` and the unwinding state, made on first use, the objects'
    /// unwind sections taken from `sections` (shared with the other processes).
    fn get(
        &mut self,
        objects: &[LoadedObject],
        sections: &mut SectionCache,
    ) -> (&DwarfSet, &mut State) {
        let modules = &mut self.modules;
        let set = self
            .unwinder
            .get_or_insert_with(|| modules.refresh_shared(objects, sections));
        let state = self.state.get_or_insert_with(|| Box::new(State::new()));
        (set, state)
    }
}

/// The entry of the function holding `pc` (the last function entry in its object's unwind
/// tables not above it), the object's entries read into `entries` the first time.
fn function_of(
    objects: &[LoadedObject],
    entries: &mut HashMap<(String, u64), Vec<u64>>,
    pc: u64,
) -> Option<u64> {
    let object = objects
        .iter()
        .find(|o| o.exec.iter().any(|r| r.contains(&pc)))?;
    let entries = entries
        .entry((object.name.clone(), object.bias))
        .or_insert_with(|| prof_capture::unwind::dwarf::function_entries(object));
    let at = entries.partition_point(|&e| e <= pc);
    at.checked_sub(1).map(|at| entries[at])
}

/// The load bias of the object whose file bytes from `pgoff` are mapped at `addr` (`len`
/// bytes): from the segment that most of the mapping holds. The mapping starts at the page
/// below the segment's offset, so with lld's layout (segments packed in the file, not page
/// aligned) the previous segment's tail shares that page: the segment that merely holds
/// `pgoff` is the wrong one, off by a page.
fn bias_of(segments: &[(u64, u64, u64)], addr: u64, len: u64, pgoff: u64) -> Option<u64> {
    let end = pgoff.saturating_add(len);
    let overlap = |&&(off, size, _): &&(u64, u64, u64)| {
        end.min(off.saturating_add(size.max(1)))
            .saturating_sub(pgoff.max(off))
    };
    let segment = segments
        .iter()
        .filter(|s| overlap(s) > 0)
        .max_by_key(overlap)?;
    let &(offset, _, vaddr) = segment;
    // `addr` holds file offset `pgoff`; the segment's `offset` is at `vaddr + bias`.
    Some(
        addr.wrapping_add(offset.wrapping_sub(pgoff))
            .wrapping_sub(vaddr),
    )
}

/// The `PT_LOAD` segments of the ELF file at `path`; `None` when it cannot be read.
fn read_segments(path: &str) -> Option<Segments> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let elf = object::File::parse(&cache).ok()?;
    Some(
        elf.segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, size, s.address())
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_segment_of_an_lld_linked_binary_gets_its_own_bias() {
        // Rust's release builds (linked by lld): the code segment starts mid-page in the file,
        // right after the read-only one, and at another page offset in memory. Its mapping
        // (from the page below) once took the read-only segment's bias, a page off: every
        // function was named after its neighbour.
        let segments = [
            (0x0, 0x6e538, 0x0),
            (0x6e540, 0x173800, 0x6f540),
            (0x1e1d40, 0x8d38, 0x1e3d40),
        ];
        let base = 0x5555_0000_0000;
        let bias = bias_of(&segments, base + 0x6f000, 0x174000, 0x6e000);
        assert_eq!(bias, Some(base));
        // GNU ld's page-aligned layout.
        let segments = [(0x0, 0x628, 0x0), (0x1000, 0x1b1, 0x1000)];
        assert_eq!(
            bias_of(&segments, base + 0x1000, 0x1000, 0x1000),
            Some(base)
        );
        // A mapping of no segment's bytes.
        assert_eq!(bias_of(&segments, base, 0x1000, 0x9000), None);
    }
}
