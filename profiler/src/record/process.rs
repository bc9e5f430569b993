//! What prof knows of each recorded process: the objects it has mapped (from MMAP2 records,
//! their load bias read from the files' program headers), an unwinder over their unwind tables
//! (the sampler's `dwarf::Modules`, reading the files), and the stacks of its samples.

use object::{Object, ObjectSegment};
use prof_capture::symbolize::LoadedObject;
use prof_capture::sys::Regs;
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
    modules: Modules,
    unwinder: Option<DwarfSet>,
    state: Option<Box<State>>,
    /// Each distinct stack (addresses, leaf first) once.
    pub stacks: Vec<Box<[u64]>>,
    index: HashMap<Box<[u64]>, u32>,
}

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
        self.unwinder = None;
    }

    /// Starts from the mappings of the parent this process was forked from.
    pub fn inherit(&mut self, objects: Vec<LoadedObject>) {
        self.objects = objects;
        self.unwinder = None;
    }

    /// Drops what unwinding this address space needs (its unwinder, its modules, the kept
    /// stack): it has ended (its last thread exited, or it called `exec`). Its objects and
    /// stacks stay, for symbolization; a late sample would read its files again.
    pub fn release(&mut self) {
        self.modules = Modules::default();
        self.unwinder = None;
        self.state = None;
    }

    /// Unwinds a sample (registers as the kernel numbered them, see `super::regs_of`) with
    /// DWARF CFI, falling back to frame pointers, below its `kernel` frames (innermost first),
    /// and keeps its stack; returns its index. Frames past `max_depth` (from the leaf) are cut.
    /// Its objects' unwind sections come from `sections`, shared with the other processes.
    /// A leaf in `jit` code (which has no unwind tables) is unwound with frame pointers, which
    /// JITs keep, through JIT frames and back into the objects' code with DWARF.
    pub fn unwind(
        &mut self,
        sections: &mut SectionCache,
        kernel: &[u64],
        regs: Regs,
        stack: &CopiedStack<'_>,
        max_depth: usize,
        jit: &[std::ops::Range<u64>],
    ) -> u32 {
        let kept = kernel.len().min(max_depth);
        let max_depth = max_depth.saturating_sub(kept).max(1);
        let objects = &self.objects;
        let modules = &mut self.modules;
        let set = self
            .unwinder
            .get_or_insert_with(|| modules.refresh_shared(objects, sections));
        let state = self.state.get_or_insert_with(|| Box::new(State::new()));
        let mut user = Vec::with_capacity(32);
        unwind::copied(regs, stack, set, state, 0, Reuse::Off, max_depth, &mut user);
        let in_jit = |pc: u64| jit.iter().any(|r| r.contains(&pc));
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
        }
        let mut addresses = Vec::with_capacity(kept + user.len());
        addresses.extend_from_slice(&kernel[..kept]);
        addresses.extend(user);
        let stack: Box<[u64]> = addresses.into();
        if let Some(&i) = self.index.get(&stack) {
            return i;
        }
        let i = self.stacks.len() as u32;
        self.stacks.push(stack.clone());
        self.index.insert(stack, i);
        i
    }
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
