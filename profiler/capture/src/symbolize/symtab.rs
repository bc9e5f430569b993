//! Function names from a module's ELF symbol table, to give the outermost frame of an address
//! its full path.
//!
//! Debug info built with `debug = "line-tables-only"` (a common release setting) names functions
//! without their module path (`digit_sum`), while the symbol table has the mangled full path
//! (`prof::cli::workload::digit_sum`). Without this, one profile shows some functions with paths
//! and others without.

use std::path::Path;

/// The function symbols of one file, sorted by start address (file addresses, before load bias).
///
/// A large program lists a hundred thousand functions (node: 74,000, with 7.5 MB of names) of
/// which a profile names a few hundred, so a table keeps each function's start, size and where
/// its name is, 16 bytes, and reads a name only when it is asked for: from the file for a table
/// loaded from one, from one buffer of all names otherwise.
#[derive(Debug, Default)]
pub struct SymbolTable {
    functions: Vec<Function>,
    names: Names,
    /// Whether the table lists every function of its object, static ones included (an ELF
    /// file's `.symtab`, a listing such as the kernel's), not only the exported ones (`.dynsym`).
    complete: bool,
}

/// A function symbol: its start and size (file addresses) and where its raw name starts in the
/// table's [`Names`] (ended by a NUL byte): 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Function {
    start: u64,
    size: u32,
    /// In a file, the string table (the top bit: the first or the second) and the offset in it;
    /// in a buffer, the offset.
    name: u32,
}

/// The top bit of [`Function::name`]: the name is in the second string table of the file.
const SECOND_TABLE: u32 = 1 << 31;

impl Function {
    fn end(&self) -> u64 {
        self.start.saturating_add(u64::from(self.size))
    }
}

/// Where a table's names are.
#[derive(Debug)]
enum Names {
    /// In the file the table was read from, in its string tables, which start at these file
    /// offsets.
    File(std::fs::File, [u64; 2]),
    /// In this buffer, each ended by a NUL byte.
    Buffer(Vec<u8>),
}

impl Default for Names {
    fn default() -> Self {
        Names::Buffer(Vec::new())
    }
}

/// The longest name read from a file: a longer one is cut there.
const MAX_NAME: usize = 64 << 10;

impl Names {
    /// The raw name `name` (see [`Function::name`]), up to its NUL byte (or [`MAX_NAME`]
    /// bytes, or the end).
    fn raw(&self, name: u32) -> Option<Vec<u8>> {
        match self {
            Names::File(file, tables) => {
                let at = in_tables(tables, name);
                use std::os::unix::fs::FileExt;
                let mut name = Vec::new();
                let mut chunk = [0u8; 256];
                while name.len() < MAX_NAME {
                    let offset = at.checked_add(name.len() as u64)?;
                    let n = file.read_at(&mut chunk, offset).ok()?;
                    if n == 0 {
                        break;
                    }
                    match chunk[..n].iter().position(|&b| b == 0) {
                        Some(end) => {
                            name.extend_from_slice(&chunk[..end]);
                            return Some(name);
                        }
                        None => name.extend_from_slice(&chunk[..n]),
                    }
                }
                name.truncate(MAX_NAME);
                Some(name)
            }
            Names::Buffer(buffer) => {
                let rest = buffer.get(usize::try_from(name).ok()?..)?;
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                Some(rest[..end].to_vec())
            }
        }
    }
}

/// The file offset of `name` in the string tables starting at `tables`.
fn in_tables(tables: &[u64; 2], name: u32) -> u64 {
    let table = usize::from(name & SECOND_TABLE != 0);
    tables[table] + u64::from(name & !SECOND_TABLE)
}

impl SymbolTable {
    /// Reads the static and dynamic function symbols of the ELF file at `path` (only the
    /// headers and symbol sections, not the whole file, and no name until one is asked for);
    /// an unreadable or unparsable file gives an empty table.
    pub fn load(path: &Path) -> SymbolTable {
        let Ok(file) = std::fs::File::open(path) else {
            return SymbolTable::default();
        };
        let Ok(names) = file.try_clone() else {
            return SymbolTable::default();
        };
        let cache = object::ReadCache::new(file);
        match elf(&cache) {
            Some((functions, complete, tables)) => SymbolTable::sorted(
                functions,
                Names::File(names, tables),
                complete,
                Aliases::ByName,
            ),
            None => SymbolTable::parse(&cache),
        }
    }

    /// The function symbols of an ELF image (in memory, or read as needed from a file), their
    /// names copied.
    pub fn parse<'data, R: object::ReadRef<'data>>(data: R) -> SymbolTable {
        let functions = match elf(data) {
            Some((functions, complete, tables)) => {
                // The names, copied out of the image into one buffer.
                let mut buffer = Vec::new();
                let len = data.len().unwrap_or(0);
                let functions = functions
                    .into_iter()
                    .filter_map(|f| {
                        let at = in_tables(&tables, f.name);
                        let raw = data.read_bytes_at_until(at..len, 0).ok()?;
                        let name = u32::try_from(buffer.len()).ok()?;
                        buffer.extend_from_slice(raw);
                        buffer.push(0);
                        Some(Function { name, ..f })
                    })
                    .collect();
                Some((functions, complete, buffer))
            }
            None => any_functions(data).map(|(functions, complete)| {
                let (functions, buffer) = with_buffer(functions);
                (functions, complete, buffer)
            }),
        };
        let (functions, complete, buffer) = functions.unwrap_or_default();
        SymbolTable::sorted(functions, Names::Buffer(buffer), complete, Aliases::ByName)
    }

    /// A table of `(start, end, raw name)` functions from elsewhere than an ELF file (a JIT's
    /// `perf-PID.map`); where two start at one address, the first listed is kept.
    pub fn from_functions(functions: Vec<(u64, u64, String)>) -> SymbolTable {
        let mut listing = Listing::default();
        for (start, end, name) in &functions {
            listing.push(*start, *end, name);
        }
        listing.finish()
    }

    /// The table of `functions` sorted by start, one function kept of those that start at
    /// one address as `aliases` says.
    fn sorted(
        mut functions: Vec<Function>,
        names: Names,
        complete: bool,
        aliases: Aliases,
    ) -> SymbolTable {
        // Stable: of the functions at one address, the first listed stays first.
        functions.sort_by_key(|f| f.start);
        if aliases == Aliases::ByName {
            // The shortest, then the first by name (`__libc_malloc` before `malloc`), reading
            // the names of those that share a start only.
            let mut run = 0;
            while run < functions.len() {
                let start = functions[run].start;
                let end = run + functions[run..].partition_point(|f| f.start == start);
                if end - run > 1 {
                    functions[run..end].sort_by_cached_key(|f| (f.size, names.raw(f.name)));
                }
                run = end;
            }
        }
        functions.dedup_by_key(|f| f.start);
        functions.shrink_to_fit();
        SymbolTable {
            functions,
            names,
            complete,
        }
    }

    /// True when the table lists every function of its object, static ones included (the
    /// object was not stripped, or this is its debug file's table), not only those the object
    /// exports.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Every function as its start (file address) and name, demangled as
    /// [`SymbolTable::function_at`] gives it, in order of start: of functions that start at one
    /// address, the one whose name frames are given.
    pub fn functions(&self) -> impl Iterator<Item = (u64, String)> + '_ {
        self.functions.iter().filter_map(|f| {
            let raw = self.names.raw(f.name)?;
            Some((f.start, super::demangle(&String::from_utf8_lossy(&raw))))
        })
    }

    /// The start (file address) of each function, in order.
    #[cfg(test)]
    pub(crate) fn starts(&self) -> impl Iterator<Item = u64> + '_ {
        self.functions.iter().map(|f| f.start)
    }

    /// The start and end (file addresses) of each function, in order.
    #[cfg(test)]
    pub(crate) fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.functions.iter().map(|f| (f.start, f.end()))
    }

    /// Every function as `(start, end, raw name)`, in order.
    #[cfg(test)]
    fn listed(&self) -> Vec<(u64, u64, String)> {
        self.functions
            .iter()
            .map(|f| {
                let raw = self.names.raw(f.name).unwrap_or_default();
                (f.start, f.end(), String::from_utf8_lossy(&raw).into_owned())
            })
            .collect()
    }

    /// The name of the function whose symbol covers `file_address`, demangled (see
    /// `super::demangle`).
    pub fn function_at(&self, file_address: u64) -> Option<String> {
        let i = self.functions.partition_point(|f| f.start <= file_address);
        let function = self.functions.get(i.checked_sub(1)?)?;
        if !(function.start..function.end()).contains(&file_address) {
            return None;
        }
        let raw = self.names.raw(function.name)?;
        Some(super::demangle(&String::from_utf8_lossy(&raw)))
    }
}

/// A function with its name: start, end (file addresses) and raw name.
type Named = (u64, u64, String);

/// Which of the functions that start at one address a table keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Aliases {
    /// The shortest, then the first by name.
    ByName,
    /// The first listed.
    FirstListed,
}

/// Functions listed one by one (a JIT's perf map, the kernel's `/proc/kallsyms`), their names
/// kept in one buffer, for a table where of the functions that start at one address the first
/// listed is kept.
#[derive(Default)]
pub struct Listing {
    functions: Vec<Function>,
    buffer: Vec<u8>,
}

impl Listing {
    /// Adds the function `name` from `start` to `end` (file addresses).
    pub fn push(&mut self, start: u64, end: u64, name: &str) {
        // Names past 2 GiB of them are not kept.
        let Ok(at) = u32::try_from(self.buffer.len()) else {
            return;
        };
        if at & SECOND_TABLE != 0 {
            return;
        }
        self.buffer.extend_from_slice(name.as_bytes());
        self.buffer.push(0);
        self.functions.push(Function {
            start,
            name: at,
            size: size_of_range(start, end),
        });
    }

    /// The table of the functions listed.
    pub fn finish(self) -> SymbolTable {
        SymbolTable::sorted(
            self.functions,
            Names::Buffer(self.buffer),
            true,
            Aliases::FirstListed,
        )
    }

    /// The table of the functions listed, each ending where the next one starts, and the last
    /// `last_size` bytes after its start (the ends given to [`Listing::push`] are not used).
    pub fn finish_at_next_start(self, last_size: u64) -> SymbolTable {
        let mut table = self.finish();
        let starts: Vec<u64> = table.functions.iter().map(|f| f.start).collect();
        for (i, f) in table.functions.iter_mut().enumerate() {
            let end = starts
                .get(i + 1)
                .copied()
                .unwrap_or(f.start.saturating_add(last_size));
            f.size = size_of_range(f.start, end).max(1);
        }
        table
    }
}

/// The size of a function from `start` to `end`, within what a table holds.
fn size_of_range(start: u64, end: u64) -> u32 {
    u32::try_from(end.saturating_sub(start)).unwrap_or(u32::MAX)
}

/// `(start, end, raw name)` functions as a table's, their names in one buffer.
fn with_buffer(functions: Vec<(u64, u64, String)>) -> (Vec<Function>, Vec<u8>) {
    let mut listing = Listing::default();
    for (start, end, name) in &functions {
        listing.push(*start, *end, name);
    }
    (listing.functions, listing.buffer)
}

/// The function symbols of an ELF image, their names as offsets in the image, and whether the
/// static table (`.symtab`) named any; `None` when it is not ELF.
fn elf<'data, R: object::ReadRef<'data>>(data: R) -> Option<(Vec<Function>, bool, [u64; 2])> {
    use object::elf::{FileHeader32, FileHeader64};
    use object::{Endianness, FileKind};
    match FileKind::parse(data) {
        Ok(FileKind::Elf64) => elf_functions::<FileHeader64<Endianness>, R>(data),
        Ok(FileKind::Elf32) => elf_functions::<FileHeader32<Endianness>, R>(data),
        _ => None,
    }
}

/// The function symbols (static, then dynamic) of an ELF image, each symbol table read whole
/// but no name (a name's place is its string table's offset in the image plus its own), and
/// whether the static table (`.symtab`) named any. `None` when the headers cannot be read.
fn elf_functions<'data, Elf, R>(data: R) -> Option<(Vec<Function>, bool, [u64; 2])>
where
    Elf: object::read::elf::FileHeader<Endian = object::Endianness>,
    R: object::ReadRef<'data>,
{
    use object::elf;
    use object::read::elf::{SectionHeader, Sym};
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let mut functions = Vec::new();
    let mut complete = false;
    let mut tables = [0; 2];
    for (index, kind) in [elf::SHT_SYMTAB, elf::SHT_DYNSYM].into_iter().enumerate() {
        let Some(table) = sections.iter().find(|s| s.sh_type(endian) == kind) else {
            continue;
        };
        let Ok(symbols) = table.data_as_array::<Elf::Sym, R>(endian, data) else {
            continue;
        };
        let link = object::SectionIndex(table.sh_link(endian) as usize);
        let Ok(strings) = sections.section(link) else {
            continue;
        };
        let (strings_at, strings_size) = strings.file_range(endian).unwrap_or_default();
        tables[index] = strings_at;
        let second = if index == 1 { SECOND_TABLE } else { 0 };
        // At most one function a symbol: no doubling of a vector of 100,000 on the way.
        functions.reserve(symbols.len());
        for symbol in symbols {
            let size: u64 = symbol.st_size(endian).into();
            let name = u64::from(symbol.st_name(endian));
            if !matches!(symbol.st_type(), elf::STT_FUNC | elf::STT_GNU_IFUNC)
                || size == 0
                || name == 0
                || name >= strings_size
                || name >= u64::from(SECOND_TABLE)
            {
                continue;
            }
            functions.push(Function {
                start: symbol.st_value(endian).into(),
                name: name as u32 | second,
                size: size_of_range(0, size),
            });
            complete |= kind == elf::SHT_SYMTAB;
        }
    }
    Some((functions, complete, tables))
}

/// The function symbols of any image `object` reads (Mach-O on macOS), through its iterators,
/// and whether its own (not dynamic) symbols named any.
fn any_functions<'data, R: object::ReadRef<'data>>(data: R) -> Option<(Vec<Named>, bool)> {
    use object::Object;
    let file = object::File::parse(data).ok()?;
    let mut functions: Vec<_> = file.symbols().filter_map(function).collect();
    let complete = !functions.is_empty();
    functions.extend(file.dynamic_symbols().filter_map(function));
    Some((functions, complete))
}

/// `symbol` as a function, if it is one (code, with a size).
fn function<'data>(symbol: impl object::ObjectSymbol<'data>) -> Option<Named> {
    let name = symbol.name().ok()?;
    let (start, size) = (symbol.address(), symbol.size());
    (symbol.kind() == object::SymbolKind::Text && size > 0)
        .then(|| (start, start + size, name.to_owned()))
}

/// The better of two names for the same outermost frame: the symbol table's when it is the full
/// path of what the debug info called it (`a::b::f` for `f`), the debug info's otherwise (it
/// knows generic arguments and closures the symbol table may spell differently).
pub fn fuller_name(from_debug_info: &str, from_symbol_table: Option<String>) -> Option<String> {
    let full = from_symbol_table?;
    // Legacy mangling spells every closure and every async function's or block's body
    // `{{closure}}`, the debug info `{closure#N}`, `{async_fn#N}`, `{async_block#N}`.
    if let Some(path) = full.strip_suffix("::{{closure}}") {
        let unnamed = super::names::UNNAMED_BODIES;
        if unnamed
            .iter()
            .any(|(body, _)| from_debug_info.starts_with(body))
        {
            return Some(format!("{path}::{from_debug_info}"));
        }
    }
    let qualified = full.len() > from_debug_info.len()
        && full.ends_with(from_debug_info)
        && full[..full.len() - from_debug_info.len()].ends_with("::");
    qualified.then_some(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_path_replaces_only_a_short_name_of_the_same_function() {
        let full = || Some("prof::cli::workload::digit_sum".to_owned());
        assert_eq!(
            fuller_name("digit_sum", full()).as_deref(),
            Some("prof::cli::workload::digit_sum")
        );
        assert_eq!(fuller_name("sum", full()), None, "not a whole path segment");
        assert_eq!(fuller_name("prof::cli::workload::digit_sum", full()), None);
        assert_eq!(fuller_name("black_box<u64>", full()), None);
        assert_eq!(fuller_name("digit_sum", None), None);
        assert_eq!(
            fuller_name("{closure#1}", Some("app::run::{{closure}}".to_owned())).as_deref(),
            Some("app::run::{closure#1}")
        );
        assert_eq!(
            fuller_name("{async_fn#0}", Some("app::nap::{{closure}}".to_owned())).as_deref(),
            Some("app::nap::{async_fn#0}")
        );
    }

    #[test]
    fn symbol_tables_read_whole_name_the_functions_objects_iterators_name() {
        // This test binary and every shared object mapped into it (libc, the loader, ...).
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut paths: Vec<std::path::PathBuf> = maps
            .lines()
            .filter_map(|line| line.split_whitespace().nth(5))
            .filter(|path| path.starts_with('/') && path.contains(".so"))
            .map(Into::into)
            .collect();
        paths.sort();
        paths.dedup();
        assert!(!paths.is_empty(), "no shared object mapped");
        paths.push(std::env::current_exe().unwrap());
        for path in paths {
            let cache = object::ReadCache::new(std::fs::File::open(&path).unwrap());
            let (mut expected, complete) = any_functions(&cache).unwrap();
            expected.sort_unstable();
            expected.dedup_by_key(|f| f.0);
            // Read from the file, names read when asked for, and from the image, names copied.
            for table in [SymbolTable::load(&path), SymbolTable::parse(&cache)] {
                assert!(!table.functions.is_empty(), "{path:?}");
                assert_eq!(table.listed(), expected, "{path:?}");
                assert_eq!(table.complete, complete, "{path:?}");
            }
        }
    }

    #[test]
    fn this_test_binary_names_its_own_functions_with_their_paths() {
        let exe = std::env::current_exe().unwrap();
        let table = SymbolTable::load(&exe);
        assert!(!table.functions.is_empty());
        // A position-independent test binary is loaded at a bias; find this function's symbol
        // by name and check the lookup inside it round-trips.
        let (start, end, _) = table
            .listed()
            .into_iter()
            .find(|(_, _, raw)| {
                super::super::demangle(raw).ends_with(
                    "symtab::tests::this_test_binary_names_its_own_functions_with_their_paths",
                )
            })
            .expect("this test's own symbol is in the table");
        let name = table.function_at(start + (end - start) / 2).unwrap();
        assert!(
            name.starts_with("prof_capture::symbolize::symtab::tests::"),
            "{name}"
        );
        assert_eq!(table.function_at(0), None);
    }
}
