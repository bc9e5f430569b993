//! What prof knows of each recorded process: the objects it has mapped (from MMAP2 records,
//! their load bias read from the files' program headers), an unwinder over their unwind tables
//! (the sampler's `dwarf::Modules`, reading the files), and the stacks of its samples.

use crate::sampler::dwarf::{DwarfSet, Modules};
use crate::sampler::frame_reuse::State;
use crate::sampler::sys::Regs;
use crate::sampler::unwind;
use crate::symbolize::LoadedObject;
use object::{Object, ObjectSegment};
use std::collections::HashMap;

pub use crate::sampler::unwind::CopiedStack;

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
            segs.as_ref().and_then(|segs| {
                let &(offset, _, vaddr) = segs
                    .iter()
                    .find(|&&(off, size, _)| off <= pgoff && pgoff < off + size.max(1))?;
                Some(addr.wrapping_sub(vaddr + (pgoff - offset)))
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
        let objects = &self.objects;
        let modules = &mut self.modules;
        let set = self
            .unwinder
            .get_or_insert_with(|| modules.refresh(objects));
        let state = self.state.get_or_insert_with(|| Box::new(State::new()));
        let mut addresses = Vec::with_capacity(32);
        unwind::copied(regs, stack, set, state, 0, false, max_depth, &mut addresses);
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
                (offset, size, s.address())
            })
            .collect(),
    )
}
