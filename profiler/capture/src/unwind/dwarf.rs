//! DWARF CFI unwinding with `framehop`: the unwind sections (`.eh_frame`, `.eh_frame_hdr`) of
//! every loaded object (not their code) are read into memory by the collector, before sampling and again when
//! the loader's counters say something was loaded or unloaded. The handler then unwinds with
//! framehop's allocation-free policy and a preallocated cache.

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
    loaded: HashMap<ModuleKey, Option<SharedModule>>,
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
            let module = self.loaded.entry(key).or_insert_with_key(|(_, _, file)| {
                if object.exec.is_empty() {
                    return None;
                }
                let read = sections.get_or_read(file.as_ref(), object)?;
                module_of(object, &read)
            });
            if let Some(module) = module {
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
/// information, sorted: the initial locations of the search table of its `.eh_frame_hdr`.
/// Empty when the object has no such table or its file cannot be read.
pub fn function_entries(object: &LoadedObject) -> Vec<u64> {
    use addr2line::gimli::{BaseAddresses, EhFrameHdr, LittleEndian, Pointer};
    let entries = || -> Option<Vec<u64>> {
        let file = std::fs::File::open(path_of(object)).ok()?;
        let cache = object::ReadCache::new(file);
        let elf = object::File::parse(&cache).ok()?;
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
                Ok((Pointer::Direct(at), _)) => Some(at.wrapping_add(object.bias)),
                _ => None,
            })
            .collect();
        out.sort_unstable();
        Some(out)
    };
    entries().unwrap_or_default()
}

/// The unwind sections of one file, as framehop reads them: their addresses in the file and
/// their bytes, shared by every module made from them.
#[derive(Clone)]
pub struct Sections {
    text_svma: Option<std::ops::Range<u64>>,
    got_svma: Option<std::ops::Range<u64>>,
    eh_frame: (std::ops::Range<u64>, Arc<[u8]>),
    eh_frame_hdr: Option<(std::ops::Range<u64>, Arc<[u8]>)>,
}

impl Sections {
    /// The bytes held.
    fn bytes(&self) -> usize {
        self.eh_frame.1.len() + self.eh_frame_hdr.as_ref().map_or(0, |h| h.1.len())
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
    // framehop reads instruction bytes only for macOS's compact unwind info: for ELF's
    // `.eh_frame` the address of `.text` is all it needs, so its bytes (megabytes for a large
    // program) are not copied.
    Some(Sections {
        text_svma: svma(".text"),
        got_svma: svma(".got"),
        eh_frame: section(".eh_frame")?,
        eh_frame_hdr: section(".eh_frame_hdr"),
    })
}

/// The unwind module of one loaded object from its file's `sections`. `None` for an object
/// without executable segments.
fn module_of(object: &LoadedObject, sections: &Sections) -> Option<SharedModule> {
    let start = object.exec.iter().map(|r| r.start).min()?;
    let end = object.exec.iter().map(|r| r.end).max()?;
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
    Some(Module::new(name, start..end, object.bias, info))
}

#[cfg(test)]
mod tests {
    use super::*;

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
