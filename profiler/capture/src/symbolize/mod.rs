//! Turning sampled addresses into functions, files, lines and inlined frames, after stop.
//!
//! Each distinct address is resolved once, from the file of the object that held it: every
//! object loaded while sampling is known (see the collector), including those unloaded before
//! stop, so the file on disk is read with `addr2line` (DWARF lines and inlined frames, the
//! symbol table where there is no DWARF, separate debug files) rather than the process's
//! memory. Only objects that hold a sampled address are opened, and their parsed debug info is
//! kept for the process's later sessions (see [`cache`]). The vDSO, which has no file, is named
//! from the symbol table of its image in memory; addresses in no known object are resolved in
//! memory with the `backtrace` crate. Return addresses are looked up one byte back so that a call at the end
//! of a function is attributed to the call site, not to what follows it.
//!
//! Names are demangled only where they are mangled (see `demangle.rs`), and made
//! distinct where the debug info does not qualify them (see [`names`]). Code that no symbol
//! names, in an object that lists only some of its functions (a stripped program or library),
//! is named by its object and file address (see [`unnamed`]); an address in no object, or
//! between the symbols of an object that lists them all, stays a hex address.

pub mod cache;
mod demangle;
pub mod kallsyms;
pub mod names;
mod object;
pub mod perf_map;
pub mod symtab;
pub mod unnamed;

pub(crate) use cache::FileKey;
pub use cache::{cache_stats, clear_cache, CacheStats, MAX_CACHED_OBJECTS};
pub(crate) use demangle::demangle;
pub use object::LoadedObject;

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use symtab::SymbolTable;

/// One frame of a resolved address: a function, possibly inlined into the next one out. Its
/// texts are shared: the addresses of one function, resolved from one object's debug info,
/// hold the same name (and file), which a caller can intern once by its pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Function name, demangled, without the hash suffix; `OBJECT+0x…` (see [`unnamed`]) or
    /// a hex address when no symbol names it.
    pub name: Arc<str>,
    /// Source file, when debug info names one.
    pub file: Option<Arc<str>>,
    /// Source line.
    pub line: Option<u32>,
    /// True when inlined into the previous (outer) symbol of the list.
    pub inlined: bool,
}

/// Resolves `address` in this process's memory: outermost function first, then the calls
/// inlined into it; a hex address when nothing names it. `is_return_address` is true for every
/// frame but the interrupted one.
pub fn resolve(address: u64, is_return_address: bool) -> Vec<Symbol> {
    resolve_in_memory(address, is_return_address).unwrap_or_else(|| vec![hex(address)])
}

/// [`resolve`], `None` when nothing names the address.
fn resolve_in_memory(address: u64, is_return_address: bool) -> Option<Vec<Symbol>> {
    // `backtrace::resolve` looks up one byte before what it is given (it expects return
    // addresses), so an interrupted instruction's address goes in one byte further.
    let lookup = if is_return_address {
        address
    } else {
        address.saturating_add(1)
    };
    let mut inner_first = Vec::new();
    backtrace::resolve(lookup as usize as *mut std::ffi::c_void, |sym| {
        let Some(name) = sym.name() else { return };
        let raw = String::from_utf8_lossy(name.as_bytes());
        inner_first.push(Symbol {
            name: demangle(&raw).into(),
            file: sym.filename().map(|f| f.display().to_string().into()),
            line: sym.lineno(),
            inlined: true,
        });
    });
    inner_first.reverse();
    inner_first.first_mut()?.inlined = false;
    Some(inner_first)
}

/// The symbol of an address nothing names, as a hex address.
fn hex(address: u64) -> Symbol {
    named(format!("{address:#x}"))
}

/// An outermost symbol with only a name.
fn named(name: String) -> Symbol {
    Symbol {
        name: name.into(),
        file: None,
        line: None,
        inlined: false,
    }
}

/// Whose addresses a [`Resolver`] resolves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressSpace {
    /// This process's: an address in no known object (or in one whose file cannot be read) is
    /// resolved in memory with the `backtrace` crate.
    Own,
    /// Another process's (`prof record`): only the objects' files name its addresses, as this
    /// process's memory says nothing of them.
    Other,
}

/// Resolves addresses, naming outermost frames with the full path from their module's symbol
/// table where the debug info gave only a short name (see [`symtab`]), and inlined frames as
/// [`names::qualify`] says. Objects' debug info comes from the process's [`cache`], opened only
/// for the objects that hold an address asked for, and stays there for later sessions with what
/// each address resolved to.
pub struct Resolver<'a> {
    objects: &'a [LoadedObject],
    /// Each object's path and cache key, by index in `objects`.
    files: HashMap<usize, Option<(String, FileKey)>>,
    cache: MutexGuard<'static, cache::Cache>,
    space: AddressSpace,
}

impl<'a> Resolver<'a> {
    /// A resolver for addresses in `objects` (every module loaded while sampling) of this
    /// process or another, as `space` says. Holds the process's debug info cache until dropped.
    pub fn new(objects: &'a [LoadedObject], space: AddressSpace) -> Self {
        let mut cache = cache::lock();
        cache.begin();
        Resolver {
            objects,
            files: HashMap::new(),
            cache,
            space,
        }
    }

    /// The symbols of `address` (outermost function first, then the calls inlined into it).
    /// `is_return_address` is true for every frame but the interrupted one. An address seen by
    /// an earlier call or session is shared from the cache, not resolved again; callers that
    /// ask for one address many times should keep what they make of it.
    pub fn symbols(&mut self, address: u64, is_return_address: bool) -> Arc<[Symbol]> {
        let lookup = if is_return_address {
            address.saturating_sub(1)
        } else {
            address
        };
        let index = object_index(self.objects, lookup);
        index
            .and_then(|i| self.resolve_in_object(i, address, lookup))
            .unwrap_or_else(|| {
                let in_memory = match self.space {
                    AddressSpace::Own => resolve_in_memory(address, is_return_address),
                    AddressSpace::Other => None,
                };
                let mut symbols = in_memory.unwrap_or_else(|| {
                    let object = index.map(|i| &self.objects[i]);
                    vec![unreadable(object, address, lookup)]
                });
                names::qualify(&mut symbols);
                symbols.into()
            })
    }

    /// `lookup` (`address`, or the byte before it for a return address) resolved from object
    /// `index`'s debug info, names qualified; `None` when the object's file cannot be read.
    fn resolve_in_object(
        &mut self,
        index: usize,
        address: u64,
        lookup: u64,
    ) -> Option<Arc<[Symbol]>> {
        let objects = self.objects;
        let object = &objects[index];
        // The path and cache key of the object's file (`[vdso]` for the vDSO), worked out once
        // per object: most calls find their address remembered and need nothing else.
        let (path, key) = self
            .files
            .entry(index)
            .or_insert_with(|| {
                if object.name.starts_with("linux-vdso") {
                    Some(("[vdso]".to_owned(), FileKey::vdso()))
                } else if object.name == kallsyms::KERNEL_OBJECT {
                    // Read for the addresses sampled (the object's ranges) only.
                    Some((object.name.clone(), FileKey::kernel().part(&object.exec)))
                } else {
                    let path = object_path(object)?;
                    let key = FileKey::of(&path)?;
                    // A perf map is read only where the object's ranges (the addresses asked
                    // for) lie: other ranges are another part of it.
                    let key = match perf_map::is_perf_map(&path) {
                        true => key.part(&object.exec),
                        false => key,
                    };
                    Some((path, key))
                }
            })
            .as_ref()?;
        let entry = self.cache.get_or_load(key, || {
            let none = unnamed::FunctionRanges::default;
            if *key == FileKey::vdso() {
                let image = vdso_image(&object.exec, self.space).unwrap_or_default();
                cache::Entry::from_symbols(
                    SymbolTable::parse(&image[..]),
                    unnamed::FunctionRanges::parse(&image[..]),
                )
            } else if object.name == kallsyms::KERNEL_OBJECT {
                cache::Entry::from_symbols(kallsyms::load(&object.exec), none())
            } else if perf_map::is_perf_map(path) {
                cache::Entry::from_symbols(perf_map::load(path, &object.exec), none())
            } else {
                cache::Entry::load(path)
            }
        });
        let probe = lookup.wrapping_sub(object.bias);
        if let Some(known) = entry.remembered(probe) {
            return Some(Arc::clone(known));
        }
        let dwarf = entry
            .loader
            .as_ref()
            .and_then(|l| from_dwarf(l, probe, &mut entry.texts));
        let mut symbols = match dwarf {
            Some(symbols) => symbols,
            None => {
                // The vDSO's symbols; a stripped library's own name only its exported
                // functions, its debug file's (by build ID) the others.
                let name = entry.symtab(path).function_at(probe);
                let name = name.or_else(|| entry.separate(path).function_at(probe));
                let vdso = *key == FileKey::vdso();
                let name = match name {
                    Some(name) => name,
                    // Between the symbols of an object that lists every function (a PLT
                    // stub): backtrace, which would parse the same file's DWARF a second time,
                    // would not name it either.
                    None if entry.has_every_symbol(path) && entry.readable => {
                        format!("{address:#x}")
                    }
                    None if entry.has_every_symbol(path) => return None,
                    // A function of a stripped file (or of the vDSO's image): by its place in
                    // the object, the same in every run.
                    None if entry.readable || vdso => {
                        let file_name = module_name(object)?;
                        unnamed::name(&file_name, probe, entry.functions(path))
                    }
                    // The kernel's and JIT code's own tables name what they can; an object
                    // whose file cannot be read is named from memory, or by its place.
                    None => return None,
                };
                vec![named(name)]
            }
        };
        // Only a short outermost name of Rust code from the DWARF needs the symbol table
        // (debug = "line-tables-only"); a name that came from the symbol table, a C function's
        // (`main`) or a qualified one does not, and then the table is never read.
        let rust = symbols[0]
            .file
            .as_deref()
            .is_some_and(|f| f.ends_with(".rs"));
        if rust && !names::is_qualified(&symbols[0].name) {
            let full = entry.symtab(path).function_at(probe);
            if let Some(name) = symtab::fuller_name(&symbols[0].name, full) {
                symbols[0].name = name.into();
            }
        }
        names::qualify(&mut symbols);
        let symbols: Arc<[Symbol]> = symbols.into();
        entry.remember(probe, &symbols);
        Some(symbols)
    }
}

impl Drop for Resolver<'_> {
    fn drop(&mut self) {
        self.cache.trim();
    }
}

/// `probe` (a file address) resolved with the object's `dwarf`, outermost first, names
/// demangled and texts shared through `texts`; `None` when it knows nothing of the address.
fn from_dwarf(dwarf: &cache::Dwarf, probe: u64, texts: &mut cache::Texts) -> Option<Vec<Symbol>> {
    let (mut inner_first, location) = match dwarf {
        cache::Dwarf::Loader(loader) => frames_of(loader.find_frames(probe), texts),
        cache::Dwarf::Small(context) => {
            frames_of(context.find_frames(probe).skip_all_loads(), texts)
        }
    };
    if inner_first.is_empty() {
        // No DWARF function here: the symbol table's name (the loader's; a small DWARF's
        // caller reads the object's own), with the line table's place.
        let cache::Dwarf::Loader(loader) = dwarf else {
            return None;
        };
        let (file, line) = location.unwrap_or_default();
        inner_first.push(Symbol {
            name: texts.name(loader.find_symbol(probe)?),
            file,
            line,
            inlined: true,
        });
    }
    inner_first.reverse();
    inner_first[0].inlined = false;
    Some(inner_first)
}

/// A frame's place: its source file and line, when known.
type Place = (Option<Arc<str>>, Option<u32>);

/// The functions of `frames` (innermost first, names demangled and texts shared through
/// `texts`), and the first frame's place whether or not a function is named.
fn frames_of<R: addr2line::gimli::Reader, E>(
    frames: Result<addr2line::FrameIter<'_, R>, E>,
    texts: &mut cache::Texts,
) -> (Vec<Symbol>, Option<Place>) {
    let mut inner_first = Vec::new();
    let mut location = None;
    if let Ok(mut frames) = frames {
        while let Ok(Some(frame)) = frames.next() {
            let here = frame
                .location
                .map(|l| (l.file.map(|f| texts.file(f)), l.line));
            if location.is_none() {
                location.clone_from(&here);
            }
            let Some(name) = frame.function.and_then(|f| texts.dwarf_name(&f.name)) else {
                continue;
            };
            let (file, line) = here.unwrap_or_default();
            inner_first.push(Symbol {
                name,
                file,
                line,
                inlined: true,
            });
        }
    }
    (inner_first, location)
}

/// The symbol of an address that no file named: in an object whose file cannot be read (a
/// program deleted since), `OBJECT+0x…` at the instruction's file address `lookup` (see
/// [`unnamed`]); in no object, the kernel or JIT code, `address` in hex.
fn unreadable(object: Option<&LoadedObject>, address: u64, lookup: u64) -> Symbol {
    let file =
        object.filter(|o| o.name != kallsyms::KERNEL_OBJECT && !perf_map::is_perf_map(&o.name));
    match file.and_then(|o| Some((module_name(o)?, o.bias))) {
        Some((file_name, bias)) => named(unnamed::name(
            &file_name,
            lookup.wrapping_sub(bias),
            &unnamed::FunctionRanges::default(),
        )),
        None => hex(address),
    }
}

/// The vDSO's image in this process's memory (read through `/proc/self/mem`, so a bad range is
/// an error, not a fault): the mapping named `[vdso]` that holds the object's executable
/// segment. Another process's vDSO (`space` is [`AddressSpace::Other`]) is the same image,
/// which the kernel maps into every process: this process's is read.
fn vdso_image(exec: &[std::ops::Range<u64>], space: AddressSpace) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let code = exec.first()?.start;
    let holds =
        |range: &std::ops::Range<u64>| space == AddressSpace::Other || range.contains(&code);
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let (start, end) = maps.lines().find_map(|line| {
        if !line.ends_with("[vdso]") {
            return None;
        }
        let (start, end) = line.split_whitespace().next()?.split_once('-')?;
        let range = (
            u64::from_str_radix(start, 16).ok()?,
            u64::from_str_radix(end, 16).ok()?,
        );
        holds(&(range.0..range.1)).then_some(range)
    })?;
    let mut image = vec![0; usize::try_from(end - start).ok()?];
    let mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.read_exact_at(&mut image, start).ok()?;
    Some(image)
}

/// The index of the object holding `address`. Objects are listed in the order they were first seen, so
/// when an address range was reused by a later load, the later object is taken.
pub fn object_index(objects: &[LoadedObject], address: u64) -> Option<usize> {
    objects
        .iter()
        .rposition(|o| o.exec.iter().any(|r| r.contains(&address)))
}

/// The path of a loaded object's file (the running executable for the main program).
fn object_path(object: &LoadedObject) -> Option<String> {
    if object.name.is_empty() {
        Some(std::env::current_exe().ok()?.display().to_string())
    } else {
        Some(object.name.clone())
    }
}

/// The file name of the object holding `address`, among `objects`.
pub fn module_of(objects: &[LoadedObject], address: u64) -> Option<String> {
    module_name(&objects[object_index(objects, address)?])
}

/// The file name of a loaded object (the running executable's for the main program).
pub fn module_name(object: &LoadedObject) -> Option<String> {
    let path = object_path(object)?;
    Some(path.rsplit('/').next().map(str::to_owned).unwrap_or(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_with_a_known_name() -> u64 {
        let here: fn() -> u64 = a_function_with_a_known_name;
        std::hint::black_box(here as usize as u64)
    }

    #[test]
    fn resolves_a_function_address_to_its_demangled_name() {
        let addr = a_function_with_a_known_name();
        let syms = resolve(addr, false);
        let outer = &syms[0];
        assert!(!outer.inlined);
        assert!(
            outer.name.ends_with("a_function_with_a_known_name"),
            "{}",
            outer.name
        );
        assert!(outer.file.as_deref().unwrap_or("").ends_with("mod.rs"));
    }

    #[test]
    fn code_of_a_file_gone_is_named_by_its_file_address_and_code_in_no_file_stays_hex() {
        let objects = [
            LoadedObject {
                name: "/nonexistent/libgone.so.1".into(),
                bias: 0x7e00_0000_0000,
                exec: std::iter::once(0x7e00_0000_1000..0x7e00_0000_9000).collect(),
            },
            LoadedObject {
                name: "/nonexistent/perf-1.map".into(),
                bias: 0,
                exec: std::iter::once(0x7d00_0000_0000..0x7d00_0000_1000).collect(),
            },
        ];
        for space in [AddressSpace::Own, AddressSpace::Other] {
            let mut resolver = Resolver::new(&objects, space);
            let mut name = |address, is_return| {
                let symbols = resolver.symbols(address, is_return);
                assert_eq!(symbols.len(), 1);
                symbols[0].name.to_string()
            };
            assert_eq!(name(0x7e00_0000_1234, false), "libgone.so.1+0x1234");
            // A return address is the call before it.
            assert_eq!(name(0x7e00_0000_1234, true), "libgone.so.1+0x1233");
            // JIT code (its map gone) and an address in no object are no file's.
            assert_eq!(name(0x7d00_0000_0010, false), "0x7d0000000010");
            assert_eq!(name(0x10, false), "0x10");
        }
    }

    #[test]
    fn an_unknown_address_becomes_hex() {
        let syms = resolve(0x10, false);
        assert_eq!(&*syms[0].name, "0x10");
    }

    #[test]
    fn names_demangled_once_per_place_are_those_demangled_each_time() {
        let exe = std::env::current_exe().unwrap();
        let loader = addr2line::Loader::new(&exe).unwrap();
        // Through the loader, and from the sections copied (as small DWARF is read).
        let dwarfs = [
            cache::Dwarf::Loader(Box::new(addr2line::Loader::new(&exe).unwrap())),
            cache::Dwarf::Small(cache::small_dwarf(exe.to_str().unwrap()).unwrap()),
        ];
        let table = SymbolTable::load(&exe);
        // Addresses inside many functions of this test binary (file addresses).
        let probes: Vec<u64> = table.starts().step_by(50).map(|a| a + 1).collect();
        assert!(probes.len() > 100, "{} functions", probes.len());
        let mut texts = cache::Texts::default();
        let mut resolved = 0;
        for &probe in &probes {
            let each_time: Option<Vec<String>> = loader.find_frames(probe).ok().map(|mut it| {
                let mut names = Vec::new();
                while let Ok(Some(frame)) = it.next() {
                    if let Some(f) = frame.function {
                        names.push(demangle(&f.raw_name().unwrap()));
                    }
                }
                names.reverse();
                names
            });
            let Some(each_time) = each_time.filter(|n| !n.is_empty()) else {
                continue;
            };
            for dwarf in dwarfs.iter().chain(&dwarfs) {
                let once = from_dwarf(dwarf, probe, &mut texts).unwrap();
                let names: Vec<&str> = once.iter().map(|s| &*s.name).collect();
                assert_eq!(names, each_time, "at {probe:#x}");
            }
            resolved += 1;
        }
        assert!(resolved > 100, "{resolved} addresses had DWARF functions");
    }
}
