//! DWARF CFI unwinding with `framehop`: the unwind sections (`.eh_frame`, `.eh_frame_hdr`) of
//! every loaded object (not their code) are read into memory by the collector, before sampling and again when
//! the loader's counters say something was loaded or unloaded. The handler then unwinds with
//! framehop's allocation-free policy and a preallocated cache.
//!
//! Code that `.eh_frame` does not describe but `.debug_frame` does is unwound with the latter:
//! a C library built without unwind tables describes its functions only in `.debug_frame`, as
//! musl's `libc.a` does, which every static `x86_64-unknown-linux-musl` executable links (its
//! `syscall`, `__syscall_cp`, `__timedwait_cp`). framehop reads one of the two sections per
//! module (`.eh_frame` when there is one) and, at an address none of its entries covers, takes
//! the return address from the stack pointer (first frame) or follows the frame pointer: a
//! thread waiting in musl's `syscall` (every futex wait) could not be unwound past it. So such
//! an object is split into modules over its address ranges: those only `.debug_frame` describes
//! (see [`debug_frame_only`]), each with that section alone, and the rest with `.eh_frame`.

use crate::symbolize::LoadedObject;
use framehop::{ExplicitModuleSectionInfo, Module};
use object::{Object, ObjectSection};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[cfg(target_arch = "aarch64")]
use framehop::aarch64::{CacheAarch64 as CacheFor, UnwinderAarch64 as UnwinderFor};
#[cfg(target_arch = "x86_64")]
use framehop::x86_64::{CacheX86_64 as CacheFor, UnwinderX86_64 as UnwinderFor};

/// The unwinder the handler uses.
/// Its sections' bytes are shared (`Arc`) with the kept [`Modules`], so a refresh copies none.
pub type Dwarf = UnwinderFor<Arc<[u8]>, framehop::MustNotAllocateDuringUnwind>;

/// One object's unwind module, its sections' bytes shared with the unwinders made from it.
type SharedModule = Module<Arc<[u8]>>;

/// An unwinder with its generation: each refresh of the modules makes a new one, and stacks
/// kept from one (see `frame_reuse.rs`) are not reused with another.
pub struct DwarfSet {
    /// The unwinder.
    pub unwinder: Dwarf,
    /// Counts refreshes within a session.
    pub generation: u64,
    /// The executable ranges of every loaded object (with unwind tables or not), sorted by
    /// start: a pc outside all of them is in no known object.
    code: Box<[(u64, u64)]>,
}

impl DwarfSet {
    /// True when `pc` is in the code of an object loaded at the last refresh. A library opened
    /// since (until the collector's next look, up to 20 ms) or code outside any object (JIT
    /// code) is not: its frame-pointer register may hold anything, so the stack ends there.
    /// Allocation-free (a binary search): the handler calls it.
    pub fn knows(&self, pc: u64) -> bool {
        let i = self.code.partition_point(|&(start, _)| start <= pc);
        i > 0 && pc < self.code[i - 1].1
    }
}
/// Its per-handler scratch space.
pub type Cache = CacheFor<framehop::MustNotAllocateDuringUnwind>;

/// framehop's registers for this architecture.
#[cfg(target_arch = "x86_64")]
pub type UnwindRegs = framehop::x86_64::UnwindRegsX86_64;
/// framehop's registers for this architecture.
#[cfg(target_arch = "aarch64")]
pub type UnwindRegs = framehop::aarch64::UnwindRegsAarch64;

/// The stack pointer in framehop's registers.
pub fn sp_of(regs: &UnwindRegs) -> u64 {
    regs.sp()
}

/// What a kept frame (see `frame_reuse.rs`) holds of the unwinder's registers: every register a
/// later unwinding step can read. On x86_64 framehop's rules and its DWARF evaluation read only
/// the stack pointer and bp besides the frame's address, which is kept apart (the other
/// registers a rule pops are never read again), so 16 bytes stand for framehop's 136.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeptRegs {
    /// The stack pointer.
    pub sp: u64,
    /// The frame pointer register (bp), which optimized code may use for anything.
    pub fp: u64,
}

/// What a kept frame (see `frame_reuse.rs`) holds of the unwinder's registers: all of them
/// (lr, sp and fp) on aarch64.
#[cfg(target_arch = "aarch64")]
pub type KeptRegs = UnwindRegs;

/// The registers a kept frame holds (see [`KeptRegs`]).
#[cfg(target_arch = "x86_64")]
pub fn kept_regs(regs: &UnwindRegs) -> KeptRegs {
    KeptRegs {
        sp: regs.sp(),
        fp: regs.bp(),
    }
}

/// The registers a kept frame holds (see [`KeptRegs`]).
#[cfg(target_arch = "aarch64")]
pub fn kept_regs(regs: &UnwindRegs) -> KeptRegs {
    *regs
}

/// The stack pointer of a kept frame.
#[cfg(target_arch = "x86_64")]
pub fn kept_sp(regs: &KeptRegs) -> u64 {
    regs.sp
}

/// The stack pointer of a kept frame.
#[cfg(target_arch = "aarch64")]
pub fn kept_sp(regs: &KeptRegs) -> u64 {
    regs.sp()
}

/// The frame pointer in framehop's registers.
#[cfg(target_arch = "x86_64")]
pub fn fp_of(regs: &UnwindRegs) -> u64 {
    regs.bp()
}

/// The frame pointer in framehop's registers.
#[cfg(target_arch = "aarch64")]
pub fn fp_of(regs: &UnwindRegs) -> u64 {
    regs.fp()
}

/// Sets the frame pointer in framehop's registers.
#[cfg(target_arch = "x86_64")]
pub fn set_fp(regs: &mut UnwindRegs, fp: u64) {
    regs.set_bp(fp);
}

/// Sets the frame pointer in framehop's registers.
#[cfg(target_arch = "aarch64")]
pub fn set_fp(regs: &mut UnwindRegs, fp: u64) {
    regs.set_fp(fp);
}

/// framehop's registers from the interrupted ones.
#[cfg(target_arch = "x86_64")]
pub fn start_regs(regs: &crate::sys::Regs) -> framehop::x86_64::UnwindRegsX86_64 {
    framehop::x86_64::UnwindRegsX86_64::new(regs.pc, regs.sp, regs.fp)
}

/// framehop's registers from the interrupted ones.
#[cfg(target_arch = "aarch64")]
pub fn start_regs(regs: &crate::sys::Regs) -> framehop::aarch64::UnwindRegsAarch64 {
    framehop::aarch64::UnwindRegsAarch64::new(regs.lr, regs.sp, regs.fp)
}

/// The unwind modules of the loaded objects, kept between refreshes so that an object is read
/// from disk once, and between the sessions of a process as the symbol cache is (see
/// [`Modules::kept`]): a later session's start reads no file for the objects still loaded.
#[derive(Default)]
pub struct Modules {
    loaded: HashMap<ModuleKey, Vec<SharedModule>>,
    generation: u64,
}

/// Which module an object is: its name and bias as loaded, and the file it was read from (a
/// library replaced on disk and loaded again at the same address between two sessions is
/// another module), `None` for objects without a file (the vDSO).
type ModuleKey = (String, u64, Option<crate::symbolize::FileKey>);

/// The last generation of an unwinder made in this process.
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The modules of the last session that ended, for the next one.
static KEPT: Mutex<Option<Modules>> = Mutex::new(None);

impl Modules {
    /// The modules the last session of this process left (empty for the first session). The
    /// next refresh drops those of objects unloaded since; the generation keeps counting, so
    /// no stack kept under an earlier unwinder is reused with a new one.
    pub fn kept() -> Modules {
        KEPT.lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default()
    }

    /// Leaves these modules for the process's next session ([`Modules::kept`]).
    pub fn keep(self) {
        *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = Some(self);
    }
}

/// Drops the modules kept for the next session (`prof::clear_caches`).
pub fn clear_kept() {
    *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

impl Modules {
    /// Brings the set up to date with `objects`, reading newly loaded ones; returns an unwinder
    /// over them.
    pub fn refresh(&mut self, objects: &[LoadedObject]) -> DwarfSet {
        self.refresh_shared(objects, &mut SectionCache::default())
    }

    /// [`Modules::refresh`], with the unwind sections of files already read by another set
    /// taken from `sections` rather than read again (see [`SectionCache`]).
    pub fn refresh_shared(
        &mut self,
        objects: &[LoadedObject],
        sections: &mut SectionCache,
    ) -> DwarfSet {
        use framehop::Unwinder;
        let keys: Vec<ModuleKey> = objects
            .iter()
            .map(|o| {
                let file = crate::symbolize::FileKey::of(path_of(o));
                (o.name.clone(), o.bias, file)
            })
            .collect();
        self.loaded.retain(|k, _| keys.contains(k));
        let mut unwinder = Dwarf::new();
        for (key, object) in keys.into_iter().zip(objects) {
            let modules = self.loaded.entry(key).or_insert_with_key(|(_, _, file)| {
                if object.exec.is_empty() {
                    return Vec::new();
                }
                match sections.get_or_read(file.as_ref(), object) {
                    Some(read) => modules_of(object, &read),
                    None => Vec::new(),
                }
            });
            for module in modules.iter() {
                unwinder.add_module(module.clone());
            }
        }
        // Counted for the process, not the set: a set made after `clear_kept` never repeats a
        // generation that unwind states kept from an earlier session may hold.
        self.generation = GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let mut code: Vec<(u64, u64)> = objects
            .iter()
            .flat_map(|o| o.exec.iter().map(|r| (r.start, r.end)))
            .collect();
        code.sort_unstable();
        DwarfSet {
            unwinder,
            generation: self.generation,
            code: code.into(),
        }
    }
}

/// The file an object was loaded from (`/proc/self/exe` for the main program).
fn path_of(object: &LoadedObject) -> &str {
    if object.name.is_empty() {
        "/proc/self/exe"
    } else {
        object.name.as_str()
    }
}

/// The entry addresses (in memory) of the functions of one loaded object that have unwind
/// information, sorted: the initial locations of the search table of its `.eh_frame_hdr`, and
/// those of the entries of its `.debug_frame` for code `.eh_frame` does not describe (a static
/// musl executable's C library). Empty when the object has neither or its file cannot be read.
pub fn function_entries(object: &LoadedObject) -> Vec<u64> {
    let entries = || -> Option<Vec<u64>> {
        let file = std::fs::File::open(path_of(object)).ok()?;
        let cache = object::ReadCache::new(file);
        let elf = object::File::parse(&cache).ok()?;
        let eh = eh_frame_hdr_entries(&elf).unwrap_or_default();
        let mut out = eh.clone();
        if let Some(data) = debug_frame_of(&elf) {
            let more = debug_frame_entries(&data).into_iter();
            out.extend(more.filter(|&(s, e)| !covered(&eh, s, e)).map(|(s, _)| s));
            out.sort_unstable();
            out.dedup();
        }
        Some(
            out.into_iter()
                .map(|a| a.wrapping_add(object.bias))
                .collect(),
        )
    };
    entries().unwrap_or_default()
}

/// The initial locations (file addresses) of the search table of an ELF image's
/// `.eh_frame_hdr`, sorted; `None` when it has none.
fn eh_frame_hdr_entries<'data, R: object::ReadRef<'data>>(
    elf: &object::File<'data, R>,
) -> Option<Vec<u64>> {
    use addr2line::gimli::{BaseAddresses, EhFrameHdr, LittleEndian, Pointer};
    let hdr = elf.section_by_name(".eh_frame_hdr")?;
    let data = hdr.data().ok()?;
    let mut bases = BaseAddresses::default().set_eh_frame_hdr(hdr.address());
    if let Some(eh_frame) = elf.section_by_name(".eh_frame") {
        bases = bases.set_eh_frame(eh_frame.address());
    }
    let parsed = EhFrameHdr::new(data, LittleEndian).parse(&bases, 8).ok()?;
    let table = parsed.table()?;
    let mut out: Vec<u64> = table
        .iter(&bases)
        .filter_map(|row| match row {
            Ok((Pointer::Direct(at), _)) => Some(at),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    Some(out)
}

/// The bytes of an ELF image's `.debug_frame`, if it has one.
fn debug_frame_of<'data, R: object::ReadRef<'data>>(
    elf: &object::File<'data, R>,
) -> Option<Arc<[u8]>> {
    let section = elf.section_by_name(".debug_frame")?;
    Some(Arc::from(section.uncompressed_data().ok()?.as_ref()))
}

/// The code `(start, end)` (file addresses) of each entry of a `.debug_frame`, sorted. An
/// entry whose code the linker dropped (which starts at 0, or at an all-ones tombstone: beyond
/// the 4 GiB framehop's index holds) is left out.
fn debug_frame_entries(data: &[u8]) -> Vec<(u64, u64)> {
    use addr2line::gimli::{BaseAddresses, CieOrFde, DebugFrame, LittleEndian, UnwindSection};
    let mut section = DebugFrame::new(data, LittleEndian);
    section.set_address_size(8);
    let bases = BaseAddresses::default();
    let mut out = Vec::new();
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(DebugFrame::cie_from_offset) else {
            continue;
        };
        let start = fde.initial_address();
        if start != 0 && fde.len() > 0 && start.saturating_add(fde.len()) <= u64::from(u32::MAX) {
            out.push((start, start + fde.len()));
        }
    }
    out.sort_unstable();
    out
}

/// Whether `.eh_frame` (its entries' starts `eh`, sorted) describes code in `[start, end)`:
/// one of its functions starts there.
fn covered(eh: &[u64], start: u64, end: u64) -> bool {
    let i = eh.partition_point(|&x| x < start);
    eh.get(i).is_some_and(|&x| x < end)
}

/// The address ranges (file addresses, sorted, disjoint) that `.debug_frame` describes (its
/// entries `debug`) and `.eh_frame` (its entries' starts `eh`) does not: each entry no
/// `.eh_frame` function starts in, joined with the next one when none starts between them.
pub fn debug_frame_only(eh: &[u64], debug: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(start, end) in debug {
        if covered(eh, start, end) {
            continue;
        }
        match out.last_mut() {
            Some(last) if start <= last.1 || !covered(eh, last.1, start) => {
                last.1 = last.1.max(end);
            }
            _ => out.push((start, end)),
        }
    }
    out
}

/// The unwind sections of one file, as framehop reads them: their addresses in the file and
/// their bytes, shared by every module made from them.
#[derive(Clone)]
pub struct Sections {
    text_svma: Option<std::ops::Range<u64>>,
    got_svma: Option<std::ops::Range<u64>>,
    eh_frame: (std::ops::Range<u64>, Arc<[u8]>),
    eh_frame_hdr: Option<(std::ops::Range<u64>, Arc<[u8]>)>,
    /// `.debug_frame`, when it describes code `.eh_frame` does not, and the address ranges of
    /// that code (see [`debug_frame_only`]).
    debug_frame: Option<(Arc<[u8]>, Ranges)>,
}

/// Address ranges `(start, end)`, sorted.
type Ranges = Box<[(u64, u64)]>;

impl Sections {
    /// The bytes held.
    fn bytes(&self) -> usize {
        self.eh_frame.1.len()
            + self.eh_frame_hdr.as_ref().map_or(0, |h| h.1.len())
            + self.debug_frame.as_ref().map_or(0, |d| d.0.len())
    }
}

/// Unwind sections read from files, by file, for the unwinders of several address spaces
/// (`prof record`: every process that runs `cc1` in a build unwinds with one copy of its
/// `.eh_frame`, not one per process). Files no set uses any more are dropped once the kept
/// bytes pass [`SectionCache::BUDGET`].
#[derive(Default)]
pub struct SectionCache {
    files: HashMap<crate::symbolize::FileKey, Option<Arc<Sections>>>,
    bytes: usize,
}

impl SectionCache {
    /// The bytes of unwind sections kept for files no unwinder uses, at most.
    pub const BUDGET: usize = 64 << 20;

    /// The sections of `object`'s file (`file`: its key, `None` for an object without a file,
    /// which is read every time), read now unless kept. `None` when it has no `.eh_frame` or
    /// cannot be read.
    fn get_or_read(
        &mut self,
        file: Option<&crate::symbolize::FileKey>,
        object: &LoadedObject,
    ) -> Option<Arc<Sections>> {
        let Some(file) = file else {
            return read_sections(object).map(Arc::new);
        };
        if let Some(kept) = self.files.get(file) {
            return kept.clone();
        }
        let read = read_sections(object).map(Arc::new);
        self.bytes += read.as_ref().map_or(0, |s| s.bytes());
        self.files.insert(file.clone(), read.clone());
        if self.bytes > Self::BUDGET {
            // Only this cache holds them: no module of a live address space uses them.
            self.files.retain(|_, s| match s {
                Some(s) if Arc::strong_count(s) == 1 => {
                    self.bytes -= s.bytes();
                    false
                }
                _ => true,
            });
        }
        read
    }
}

/// Counts the objects whose unwind sections were read from their files (see [`modules_read`]).
static MODULES_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Objects whose unwind sections were read from their files so far in this process (the
/// sessions of a process share what they read: a later one reads only objects loaded since).
pub fn modules_read() -> u64 {
    MODULES_READ.load(std::sync::atomic::Ordering::Relaxed)
}

/// Reads the unwind sections of one loaded object's file. `None` for objects without a file
/// (the vDSO) or without `.eh_frame`.
fn read_sections(object: &LoadedObject) -> Option<Sections> {
    MODULES_READ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::fs::File::open(path_of(object)).ok()?;
    let cache = object::ReadCache::new(file);
    let elf = object::File::parse(&cache).ok()?;
    let section = |name: &str| {
        let s = elf.section_by_name(name)?;
        let data: Arc<[u8]> = Arc::from(s.data().ok()?);
        Some((s.address()..s.address() + s.size(), data))
    };
    let svma = |name: &str| {
        elf.section_by_name(name)
            .map(|s| s.address()..s.address() + s.size())
    };
    let debug_frame = debug_frame_of(&elf).and_then(|data| {
        let eh = eh_frame_hdr_entries(&elf)?;
        let only = debug_frame_only(&eh, &debug_frame_entries(&data));
        (!only.is_empty()).then(|| (data, only.into()))
    });
    // framehop reads instruction bytes only for macOS's compact unwind info: for ELF's
    // `.eh_frame` the address of `.text` is all it needs, so its bytes (megabytes for a large
    // program) are not copied.
    Some(Sections {
        text_svma: svma(".text"),
        got_svma: svma(".got"),
        eh_frame: section(".eh_frame")?,
        eh_frame_hdr: section(".eh_frame_hdr"),
        debug_frame,
    })
}

/// The unwind modules of one loaded object from its file's `sections`: one over all its code,
/// or, when `.debug_frame` describes code `.eh_frame` does not, one with `.debug_frame` alone
/// over each range of that code and one with `.eh_frame` over each range between them. None
/// for an object without executable segments.
fn modules_of(object: &LoadedObject, sections: &Sections) -> Vec<SharedModule> {
    let (Some(start), Some(end)) = (
        object.exec.iter().map(|r| r.start).min(),
        object.exec.iter().map(|r| r.end).max(),
    ) else {
        return Vec::new();
    };
    let (eh_frame_hdr_svma, eh_frame_hdr) = sections.eh_frame_hdr.clone().unzip();
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: sections.text_svma.clone(),
        got_svma: sections.got_svma.clone(),
        eh_frame_svma: Some(sections.eh_frame.0.clone()),
        eh_frame: Some(sections.eh_frame.1.clone()),
        eh_frame_hdr_svma,
        eh_frame_hdr,
        ..ExplicitModuleSectionInfo::default()
    };
    let name = if object.name.is_empty() {
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    } else {
        object.name.clone()
    };
    let bias = object.bias;
    let Some((debug_frame, only)) = &sections.debug_frame else {
        return vec![Module::new(name, start..end, bias, info)];
    };
    let debug_info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: sections.text_svma.clone(),
        got_svma: sections.got_svma.clone(),
        debug_frame: Some(debug_frame.clone()),
        ..ExplicitModuleSectionInfo::default()
    };
    let mut modules = Vec::new();
    let mut at = start;
    for &(s, e) in only.iter() {
        let (s, e) = (s.wrapping_add(bias).max(at), e.wrapping_add(bias).min(end));
        if s >= e {
            continue;
        }
        if at < s {
            modules.push(Module::new(name.clone(), at..s, bias, info.clone()));
        }
        modules.push(Module::new(name.clone(), s..e, bias, debug_info.clone()));
        at = e;
    }
    if at < end {
        modules.push(Module::new(name, at..end, bias, info));
    }
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A static musl executable's layout: the C library's functions, described only by
    /// `.debug_frame`, after the Rust code (its `.eh_frame` entries), with one Rust function
    /// among them and entries the linker dropped (at 0) left out before.
    #[test]
    fn the_code_only_debug_frame_describes_is_found_and_joined() {
        let eh = [0x1000, 0x1100, 0x1200, 0x2400, 0x3000];
        let debug = [
            (0x1100, 0x1180), // also in .eh_frame (a function both describe)
            (0x2000, 0x2040),
            (0x2040, 0x2080),
            (0x2090, 0x2100), // after padding: joined
            (0x2800, 0x2900), // after the Rust function at 0x2400: not joined
            (0x2900, 0x2950),
            (0x2940, 0x2948), // inside the last one
        ];
        assert_eq!(
            debug_frame_only(&eh, &debug),
            vec![(0x2000, 0x2100), (0x2800, 0x2950)]
        );
        assert_eq!(debug_frame_only(&eh, &[]), vec![]);
        assert_eq!(debug_frame_only(&[], &debug[1..3]), vec![(0x2000, 0x2080)]);
    }

    /// The kept tables: modules were keyed by name and bias, so a library
    /// replaced on disk and loaded again at the same address (between two sessions, now that
    /// the tables outlive one) kept the old file's unwind tables.
    #[test]
    fn a_file_replaced_on_disk_is_read_again() {
        let dir = std::env::temp_dir().join(format!("prof-dwarf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("libreplaced.so");
        std::fs::copy("/bin/true", &path).unwrap();
        let object = LoadedObject {
            name: path.to_str().unwrap().to_owned(),
            bias: 0x7000_0000,
            exec: std::iter::once(0x7000_1000..0x7000_9000).collect(),
        };
        let mut modules = Modules::default();
        modules.refresh(std::slice::from_ref(&object));
        let first: Vec<ModuleKey> = modules.loaded.keys().cloned().collect();
        modules.refresh(std::slice::from_ref(&object));
        let same: Vec<ModuleKey> = modules.loaded.keys().cloned().collect();
        assert_eq!(first, same, "an unchanged file keeps its module");
        // Another file at the same path (a new inode), loaded at the same bias.
        std::fs::remove_file(&path).unwrap();
        std::fs::copy("/bin/ls", &path).unwrap();
        modules.refresh(std::slice::from_ref(&object));
        let replaced: Vec<ModuleKey> = modules.loaded.keys().cloned().collect();
        assert_eq!(replaced.len(), 1);
        assert_ne!(replaced, first, "the replaced file is another module");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn processes_that_load_one_file_unwind_with_one_copy_of_its_sections() {
        let object = |bias: u64| LoadedObject {
            name: "/bin/true".into(),
            bias,
            exec: std::iter::once(bias + 0x1000..bias + 0x9000).collect(),
        };
        let key = crate::symbolize::FileKey::of("/bin/true");
        let mut cache = SectionCache::default();
        let first = cache
            .get_or_read(key.as_ref(), &object(0x7000_0000))
            .unwrap();
        let second = cache
            .get_or_read(key.as_ref(), &object(0x5000_0000))
            .unwrap();
        assert!(Arc::ptr_eq(&first, &second), "read once, shared");
        assert!(Arc::ptr_eq(&first.eh_frame.1, &second.eh_frame.1));
        // Two address spaces' modules made through the cache share the bytes too.
        let (mut a, mut b) = (Modules::default(), Modules::default());
        a.refresh_shared(&[object(0x7000_0000)], &mut cache);
        b.refresh_shared(&[object(0x5000_0000)], &mut cache);
        assert_eq!(cache.files.len(), 1);
        assert!(cache.bytes > 0 && cache.bytes == first.bytes());
    }
}
