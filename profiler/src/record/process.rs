//! What prof knows of each recorded process: the objects it has mapped (from MMAP2 records,
//! their load bias read from the files' program headers), an unwinder over their unwind tables
//! (the sampler's `dwarf::Modules`, reading the files), and the stacks of its samples.

use crate::sampler::dwarf::{DwarfSet, Modules};
use crate::sampler::frame_reuse::State;
use crate::sampler::sys::Regs;
use crate::sampler::unwind::{self, StackWords};
use crate::symbolize::LoadedObject;
use object::{Object, ObjectSegment};
use std::collections::HashMap;

/// A copy of the top of a thread's stack, `bytes` from the stack pointer `sp` up.
pub struct CopiedStack<'a> {
    /// The stack pointer when the sample was taken.
    pub sp: u64,
    /// The bytes copied.
    pub bytes: &'a [u8],
}

impl StackWords for CopiedStack<'_> {
    fn word(&self, addr: u64) -> Option<u64> {
        let at = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let word = self.bytes.get(at..at.checked_add(8)?)?;
        Some(u64::from_ne_bytes(word.try_into().ok()?))
    }
}

/// The `PT_LOAD` segments of an object's file: (file offset, file size, virtual address,
/// executable).
pub type Segments = Vec<(u64, u64, u64, bool)>;

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
            // The executable segment the mapping's file range overlaps. A segment need not
            // start on a page: the page-aligned mapping can begin before it, in the file's
            // bytes of the segment before (mapped again on their own, readable only).
            segs.as_ref().and_then(|segs| {
                let &(offset, _, vaddr, _) = segs.iter().find(|&&(off, size, _, exec)| {
                    exec && off < pgoff.saturating_add(len) && pgoff < off + size.max(1)
                })?;
                Some(addr.wrapping_sub(vaddr.wrapping_add(pgoff).wrapping_sub(offset)))
            })
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

    /// Unwinds a sample (registers as the kernel numbered them, see `super::regs_of`) with
    /// DWARF CFI, falling back to frame pointers, and keeps its stack; returns its index.
    /// Frames past `max_depth` (from the leaf) are cut.
    pub fn unwind(&mut self, regs: Regs, stack: &CopiedStack<'_>, max_depth: usize) -> u32 {
        let mut addresses = Vec::with_capacity(32);
        let objects = &self.objects;
        let modules = &mut self.modules;
        let set = self
            .unwinder
            .get_or_insert_with(|| modules.refresh(objects));
        let state = self.state.get_or_insert_with(|| Box::new(State::new()));
        let unwound = unwind::dwarf(&regs, stack, set, state, 0, false, &mut |a| {
            addresses.push(a);
            addresses.len() < max_depth
        });
        if !unwound.started {
            addresses.clear();
            addresses.push(regs.pc);
            unwind::frame_chain(stack, regs.fp, &|pc| set.knows(pc), &mut |a| {
                addresses.push(a);
                addresses.len() < max_depth
            });
        }
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

/// The `PT_LOAD` segments of the ELF file at `path`; `None` when it cannot be read.
fn read_segments(path: &str) -> Option<Segments> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let elf = object::File::parse(&cache).ok()?;
    Some(
        elf.segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                let exec = match s.flags() {
                    object::SegmentFlags::Elf { p_flags, .. } => {
                        p_flags.0 & object::elf::PF_X.0 != 0
                    }
                    _ => true,
                };
                (offset, size, s.address(), exec)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r21_a_code_segment_that_starts_mid_page_gets_its_own_bias() {
        // A Rust release binary's segments (cc-linked, no debug info): the code segment starts
        // 0x430 into a page whose first bytes end the read-only segment before it. Its mapping
        // begins at that page (file offset 0x6a000), which the read-only segment also covers:
        // its bias was once taken from that segment, off by a page, and every name was its
        // neighbour's.
        let segs = vec![
            (0, 0x6a428, 0, false),
            (0x6a430, 0x163d80, 0x6b430, true),
            (0x1ce1b0, 0x8558, 0x1d01b0, false),
        ];
        let mut segments = HashMap::from([("/bin/app".to_owned(), Some(segs))]);
        let base = 0x5555_5555_0000;
        let mut process = Process::default();
        process.map("/bin/app", base + 0x6b000, 0x164000, 0x6a000, &mut segments);
        assert_eq!(process.objects.len(), 1);
        assert_eq!(process.objects[0].bias, base);
    }
}
