//! The debug info of objects symbolized so far, kept across the sessions of one process.
//!
//! Parsing an object's DWARF (its units' address ranges, then the line tables of the units
//! looked up) is most of what symbolization costs, and a program that profiles stretches of code
//! again and again (or criterion profiling each benchmark) would pay it at every stop. So each
//! object's parsed debug info is kept here, keyed by its file's path and identity (device, inode,
//! size, modification time: a file rebuilt in place is a new key), and only objects that a sampled
//! address fell in are ever opened.
//!
//! Memory is bounded by count: after each symbolization the cache keeps the
//! [`MAX_CACHED_OBJECTS`] objects used most recently and drops the others. What one object holds
//! is its file mapped read-only (file-backed pages, resident only where read, which the kernel may
//! reclaim) and, on the heap, its units' address ranges, the line tables and inlined-function
//! trees of the units looked up, up to [`MAX_REMEMBERED_ADDRESSES`] resolved addresses, for
//! objects whose debug info names functions without their path the function symbols, and for a
//! stripped library whose own symbols could not name an address, the symbol table of its
//! separate debug file (found by build ID), and for an object whose symbols do not name every
//! function, the function ranges of its unwind table (see [`super::unnamed`]).
//! [`clear_cache`] releases everything.

use super::symtab::SymbolTable;
use super::unnamed::FunctionRanges;
use super::Symbol;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many objects' debug info is kept between sessions (the most recently used ones).
pub const MAX_CACHED_OBJECTS: usize = 8;

/// How many resolved addresses each object keeps (a later session finds them without looking
/// them up again); past it, addresses are resolved again each time.
pub const MAX_REMEMBERED_ADDRESSES: usize = 10_000;

/// The process's cache.
static CACHE: Mutex<Cache> = Mutex::new(Cache::new(MAX_CACHED_OBJECTS));

/// Locks the process's cache (a panic while it was held leaves it usable: entries are only
/// added whole).
pub(super) fn lock() -> MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the cache of this process holds and has done (see [`cache_stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Paths of the objects whose debug info is held now, most recently used last (`[vdso]` for
    /// the kernel's vDSO, read from memory).
    pub objects: Vec<String>,
    /// Objects opened and parsed so far.
    pub loads: u64,
    /// Symbolizations that found an object's debug info already parsed.
    pub reuses: u64,
    /// Objects dropped to stay within [`MAX_CACHED_OBJECTS`].
    pub evictions: u64,
}

/// What the debug info cache of this process holds and has done so far.
pub fn cache_stats() -> CacheStats {
    lock().stats()
}

/// Drops the debug info kept for later sessions; the next stop parses what it needs again.
/// `prof::clear_caches` drops the sampler's kept unwind tables too.
pub fn clear_cache() {
    lock().entries.clear();
}

/// Which file an object's debug info was read from: a file replaced on disk is another key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    path: String,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    /// Which part of the file was read, for a file read only in part (a perf map, read for
    /// the ranges sampled); 0 for a file read as a whole.
    part: u64,
}

impl FileKey {
    /// The key of the file at `path` as it is now; `None` when it cannot be read.
    pub(crate) fn of(path: &str) -> Option<FileKey> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileKey {
            path: path.to_owned(),
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            part: 0,
        })
    }

    /// The key of the part of this file that covers `ranges`.
    pub(crate) fn part(self, ranges: &[std::ops::Range<u64>]) -> FileKey {
        use std::hash::BuildHasher;
        FileKey {
            part: foldhash::fast::FixedState::with_seed(0).hash_one(ranges),
            ..self
        }
    }

    /// The key of the kernel's vDSO, which has no file and is the same for the process's life.
    pub(super) fn vdso() -> FileKey {
        FileKey::named("[vdso]")
    }

    /// The key of the kernel's own symbols (`/proc/kallsyms`), read once per process (a module
    /// loaded later is not named).
    pub(super) fn kernel() -> FileKey {
        FileKey::named("[kernel]")
    }

    /// A key for what has no file.
    fn named(path: &str) -> FileKey {
        FileKey {
            path: path.to_owned(),
            dev: 0,
            ino: 0,
            size: 0,
            mtime_ns: 0,
            part: 0,
        }
    }
}

/// One object's parsed debug info.
pub(super) struct Entry {
    /// DWARF through `addr2line`; `None` when the file has none (its symbol table is then
    /// read by [`Entry::symtab`] alone) or cannot be parsed, and for the vDSO.
    pub loader: Option<Dwarf>,
    /// Whether the object's file could be read as an object file.
    pub readable: bool,
    /// The function symbols of the separate debug file named by the object's build ID (a
    /// stripped system library's `/usr/lib/debug/.build-id/…`), read the first time the
    /// object's own file cannot name an address.
    separate: Option<SymbolTable>,
    /// Function symbols with their full paths, read on first need.
    symtab: Option<SymbolTable>,
    /// The functions of the object's unwind table, read the first time no symbol names an
    /// address.
    functions: Option<FunctionRanges>,
    /// Addresses resolved so far (file addresses), up to [`MAX_REMEMBERED_ADDRESSES`].
    remembered: foldhash::HashMap<u64, Arc<[Symbol]>>,
    /// The object's function names (demangled) and source files met so far.
    pub(super) texts: Texts,
    last_used: u64,
}

/// An object's texts: demangled function names and source files. Its functions are far fewer
/// than its addresses, and a long generic Rust name costs microseconds to check and demangle.
/// Each text is kept once and shared by the symbols that hold it.
#[derive(Default)]
pub(super) struct Texts {
    /// By where the raw name lies in the object's DWARF (gimli's offset id, the address of the
    /// name in the mapped or unpacked section, which the entry's loader keeps alive; and its
    /// length): found without reading the name.
    by_place: foldhash::HashMap<(u64, u64), Arc<str>>,
    /// By raw name, for names from the symbol table.
    by_name: foldhash::HashMap<Box<str>, Arc<str>>,
    /// Source files' paths.
    files: foldhash::HashSet<Arc<str>>,
}

impl Texts {
    /// `name` (a raw function name read from the entry's DWARF) demangled as
    /// [`super::demangle`] does, worked out once per place (up to [`MAX_REMEMBERED_ADDRESSES`]
    /// names; past it, each time). `None` when the name cannot be read.
    pub fn dwarf_name<R: addr2line::gimli::Reader>(&mut self, name: &R) -> Option<Arc<str>> {
        use addr2line::gimli::ReaderOffset;
        let place = (name.offset_id().0, name.len().into_u64());
        if let Some(known) = self.by_place.get(&place) {
            return Some(Arc::clone(known));
        }
        let demangled: Arc<str> = super::demangle(&name.to_string_lossy().ok()?).into();
        if self.by_place.len() < MAX_REMEMBERED_ADDRESSES {
            self.by_place.insert(place, Arc::clone(&demangled));
        }
        Some(demangled)
    }

    /// `raw` demangled as [`super::demangle`] does, worked out once (within the same bound).
    pub fn name(&mut self, raw: &str) -> Arc<str> {
        if let Some(name) = self.by_name.get(raw) {
            return Arc::clone(name);
        }
        let name: Arc<str> = super::demangle(raw).into();
        if self.by_name.len() < MAX_REMEMBERED_ADDRESSES {
            self.by_name.insert(raw.into(), Arc::clone(&name));
        }
        name
    }

    /// The shared copy of source file `path` (within the same bound).
    pub fn file(&mut self, path: &str) -> Arc<str> {
        if let Some(file) = self.files.get(path) {
            return Arc::clone(file);
        }
        let file: Arc<str> = path.into();
        if self.files.len() < MAX_REMEMBERED_ADDRESSES {
            self.files.insert(Arc::clone(&file));
        }
        file
    }
}

impl Entry {
    /// What `probe` was resolved to before, if it was.
    pub fn remembered(&self, probe: u64) -> Option<&Arc<[Symbol]>> {
        self.remembered.get(&probe)
    }

    /// Remembers what `probe` resolved to, while there is room.
    pub fn remember(&mut self, probe: u64, symbols: &Arc<[Symbol]>) {
        if self.remembered.len() < MAX_REMEMBERED_ADDRESSES {
            self.remembered.insert(probe, Arc::clone(symbols));
        }
    }

    /// The function symbols of the separate debug file of the object at `path`, found by its
    /// build ID under `/usr/lib/debug/.build-id/`, read on first use (empty when there is none).
    /// Only its symbol table is read: its DWARF, compressed, would take tens of MiB and tens of
    /// milliseconds to unpack (libc's), for the file and line of a library's internal functions.
    pub fn separate(&mut self, path: &str) -> &SymbolTable {
        self.separate.get_or_insert_with(|| {
            let debug = || {
                use object::Object;
                let file = std::fs::File::open(path).ok()?;
                let cache = object::ReadCache::new(file);
                let id = object::File::parse(&cache).ok()?.build_id().ok()??;
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                (hex.len() > 2)
                    .then(|| format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]))
            };
            debug().map_or_else(SymbolTable::default, |p| {
                SymbolTable::load(std::path::Path::new(&p))
            })
        })
    }

    /// The object's function symbols, read from its file (or given, for the vDSO) on first use.
    pub fn symtab(&mut self, path: &str) -> &SymbolTable {
        self.symtab
            .get_or_insert_with(|| SymbolTable::load(std::path::Path::new(path)))
    }

    /// True when the symbols of the object at `path` (its own, else its separate debug
    /// file's) list every function, not only the exported ones: it was not stripped.
    pub fn has_every_symbol(&mut self, path: &str) -> bool {
        self.symtab(path).is_complete() || self.separate(path).is_complete()
    }

    /// The functions of the unwind table of the object at `path`, read from its file (or
    /// given, for the vDSO) on first use.
    pub fn functions(&mut self, path: &str) -> &FunctionRanges {
        self.functions
            .get_or_insert_with(|| FunctionRanges::load(std::path::Path::new(path)))
    }
}

/// How much DWARF an object file has.
enum DwarfKind {
    /// None of its own.
    None,
    /// At most [`SMALL_DWARF`] bytes, in the file itself.
    Small,
    /// More, or linked to another file (supplementary DWARF), or not ELF (Mach-O keeps its
    /// DWARF apart, in a dSYM the loader finds).
    Large,
}

/// How much DWARF of its own the object file at `path` has (line tables or debug info, plain
/// or compressed); `None` when it cannot be read as an object file.
fn dwarf_of(path: &str) -> Option<DwarfKind> {
    use object::{Object, ObjectSection};
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let object = object::File::parse(&cache).ok()?;
    if object.format() != object::BinaryFormat::Elf
        || object.section_by_name(".gnu_debugaltlink").is_some()
    {
        return Some(DwarfKind::Large);
    }
    let (mut any, mut bytes) = (false, 0);
    for section in object.sections() {
        let Ok(name) = section.name() else { continue };
        let name = name.trim_start_matches(['.', '_', 'z']);
        if name.starts_with("debug_") && !UNREAD.contains(&name) {
            bytes += section.size();
            any |= name.starts_with("debug_info") || name.starts_with("debug_line");
        }
    }
    Some(match (any, bytes <= SMALL_DWARF) {
        (false, _) => DwarfKind::None,
        (true, true) => DwarfKind::Small,
        (true, false) => DwarfKind::Large,
    })
}

/// The DWARF sections `addr2line` never reads (variables' locations, macros, name indexes),
/// named without their leading `.` (or `.z` when compressed): a [`Dwarf::Small`] neither counts
/// nor copies them. Variables' locations are a fifth of a C library's DWARF (libpython's
/// `.debug_loclists`: 3.6 of 16.6 MB).
const UNREAD: [&str; 7] = [
    "debug_loc",
    "debug_loclists",
    "debug_macinfo",
    "debug_macro",
    "debug_names",
    "debug_pubnames",
    "debug_pubtypes",
];

/// The DWARF of the object file at `path`, the sections `addr2line` reads copied into memory
/// (uncompressed), each read from the file once, straight into its buffer.
pub(super) fn small_dwarf(
    path: &str,
) -> Option<addr2line::Context<addr2line::gimli::EndianArcSlice<addr2line::gimli::RunTimeEndian>>> {
    addr2line::Context::from_dwarf(dwarf_sections(path, u64::MAX)?).ok()
}

/// The DWARF sections of the object file at `path` that `addr2line` reads, copied into memory
/// (uncompressed), each read from the file once; `None` when a section is larger than `limit`
/// bytes or the file cannot be read.
pub(crate) fn dwarf_sections(
    path: &str,
    limit: u64,
) -> Option<
    addr2line::gimli::Dwarf<addr2line::gimli::EndianArcSlice<addr2line::gimli::RunTimeEndian>>,
> {
    use addr2line::gimli::{self, EndianArcSlice, RunTimeEndian};
    use object::{CompressionFormat, Object, ObjectSection};
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).ok()?;
    // The cache keeps every byte read through it until dropped: only the headers and the
    // symbol table go through it, not the sections.
    let cache = object::ReadCache::new(&file);
    let object = object::File::parse(&cache).ok()?;
    let endian = if object.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let too_big = std::cell::Cell::new(false);
    let read = |section: &object::Section<'_, '_, &object::ReadCache<&std::fs::File>>| {
        let range = section.compressed_file_range().ok()?;
        if range.uncompressed_size > limit {
            too_big.set(true);
            return None;
        }
        if range.format != CompressionFormat::None {
            return Some(section.uncompressed_data().ok()?.into_owned().into());
        }
        let mut bytes = vec![0; usize::try_from(range.uncompressed_size).ok()?];
        file.read_exact_at(&mut bytes, range.offset).ok()?;
        Some(bytes.into())
    };
    let load = |id: gimli::SectionId| -> Result<EndianArcSlice<RunTimeEndian>, gimli::Error> {
        let name = id.name();
        let wanted = !UNREAD.contains(&name.trim_start_matches('.'));
        let bytes: std::sync::Arc<[u8]> = object
            .section_by_name(name)
            .filter(|_| wanted)
            .and_then(|s| read(&s))
            .unwrap_or_else(|| std::sync::Arc::from(&[][..]));
        Ok(EndianArcSlice::new(bytes, endian))
    };
    let dwarf = gimli::Dwarf::load(load).ok()?;
    (!too_big.get()).then_some(dwarf)
}

/// Parsed debug info by file, with counters.
pub(super) struct Cache {
    /// A few entries (at most the capacity, plus the objects of the session being symbolized):
    /// searched in order.
    entries: Vec<(FileKey, Entry)>,
    capacity: usize,
    tick: u64,
    loads: u64,
    reuses: u64,
    evictions: u64,
}

impl Cache {
    const fn new(capacity: usize) -> Cache {
        Cache {
            entries: Vec::new(),
            capacity,
            tick: 0,
            loads: 0,
            reuses: 0,
            evictions: 0,
        }
    }

    /// Starts a symbolization: entries used from now on count as used by it.
    pub fn begin(&mut self) {
        self.tick += 1;
    }

    /// The entry of `key`, made with `load` when not held (counted as a load), else counted as
    /// a reuse the first time this symbolization asks for it.
    pub fn get_or_load(&mut self, key: &FileKey, load: impl FnOnce() -> Entry) -> &mut Entry {
        let tick = self.tick;
        let at = match self.entries.iter().position(|(k, _)| k == key) {
            Some(at) => {
                if self.entries[at].1.last_used != tick {
                    self.reuses += 1;
                }
                at
            }
            None => {
                self.loads += 1;
                self.entries.push((key.clone(), load()));
                self.entries.len() - 1
            }
        };
        let entry = &mut self.entries[at].1;
        entry.last_used = tick;
        entry
    }

    /// Drops the least recently used entries beyond the capacity.
    pub fn trim(&mut self) {
        if self.entries.len() > self.capacity {
            self.entries.sort_by_key(|(_, e)| e.last_used);
            let excess = self.entries.len() - self.capacity;
            self.entries.drain(..excess);
            self.evictions += excess as u64;
        }
    }

    fn stats(&self) -> CacheStats {
        let mut held: Vec<(u64, String)> = self
            .entries
            .iter()
            .map(|(k, e)| (e.last_used, k.path.clone()))
            .collect();
        held.sort();
        CacheStats {
            objects: held.into_iter().map(|(_, p)| p).collect(),
            loads: self.loads,
            reuses: self.reuses,
            evictions: self.evictions,
        }
    }
}

/// An object's DWARF, as `addr2line` reads it.
pub(super) enum Dwarf {
    /// Through `addr2line`'s loader, which maps the file (large DWARF, read where looked up),
    /// finds split and supplementary DWARF, and builds a table of the file's symbols.
    Loader(Box<addr2line::Loader>),
    /// Sections copied into memory: DWARF of at most [`SMALL_DWARF`] bytes in all (a C
    /// program built with a few files' debug info, as node is), where the loader's table of
    /// every symbol (4 MB, and 12 MB of node's file read to build it) would cost more than the
    /// DWARF. The symbol table is [`Entry::symtab`]'s.
    Small(addr2line::Context<addr2line::gimli::EndianArcSlice<addr2line::gimli::RunTimeEndian>>),
}

/// The most bytes of DWARF sections a [`Dwarf::Small`] copies.
const SMALL_DWARF: u64 = 16 << 20;

impl Entry {
    /// An entry for the file at `path`, its DWARF parsed (lazily: units' ranges now, line tables
    /// when looked up) when it has any.
    pub fn load(path: &str) -> Entry {
        let dwarf = dwarf_of(path);
        Entry {
            readable: dwarf.is_some(),
            loader: match dwarf {
                Some(DwarfKind::Small) => small_dwarf(path).map(Dwarf::Small),
                Some(DwarfKind::Large) => addr2line::Loader::new(path)
                    .ok()
                    .map(|l| Dwarf::Loader(Box::new(l))),
                Some(DwarfKind::None) | None => None,
            },
            separate: None,
            symtab: None,
            functions: None,
            remembered: foldhash::HashMap::default(),
            texts: Texts::default(),
            last_used: 0,
        }
    }

    /// An entry with only a symbol table (the kernel's, a JIT's perf map) and, for an image
    /// read from memory (the vDSO), its unwind table's functions.
    pub fn from_symbols(symtab: SymbolTable, functions: FunctionRanges) -> Entry {
        Entry {
            loader: None,
            readable: false,
            separate: Some(SymbolTable::default()),
            symtab: Some(symtab),
            functions: Some(functions),
            remembered: foldhash::HashMap::default(),
            texts: Texts::default(),
            last_used: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> FileKey {
        FileKey::of(path).expect("the file exists")
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used_objects_within_its_capacity() {
        let exe = std::env::current_exe().unwrap().display().to_string();
        let mut cache = Cache::new(2);
        let files = [exe.as_str(), "/proc/self/exe", "/bin/sh"];
        for (i, path) in files.iter().enumerate() {
            cache.begin();
            cache.get_or_load(&key(path), || {
                Entry::from_symbols(SymbolTable::default(), FunctionRanges::default())
            });
            cache.trim();
            assert!(
                cache.entries.len() <= 2,
                "after {i}: {}",
                cache.entries.len()
            );
        }
        let s = cache.stats();
        assert_eq!((s.loads, s.reuses, s.evictions), (3, 0, 1));
        assert_eq!(s.objects, ["/proc/self/exe", "/bin/sh"]);
        // Using the older one makes it the most recent: the next eviction takes the other.
        cache.begin();
        cache.get_or_load(&key("/proc/self/exe"), || unreachable!("held"));
        cache.get_or_load(&key("/proc/self/exe"), || unreachable!("held"));
        cache.begin();
        cache.get_or_load(&key(&exe), || {
            Entry::from_symbols(SymbolTable::default(), FunctionRanges::default())
        });
        cache.trim();
        let s = cache.stats();
        assert_eq!((s.loads, s.reuses, s.evictions), (4, 1, 2));
        assert_eq!(s.objects, ["/proc/self/exe", exe.as_str()]);
    }

    #[test]
    fn a_file_replaced_on_disk_is_a_new_key() {
        let dir = std::env::temp_dir().join(format!("prof-cache-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lib.so");
        std::fs::write(&path, b"one").unwrap();
        let path = path.display().to_string();
        let before = key(&path);
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"other").unwrap();
        assert_ne!(before, key(&path));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
