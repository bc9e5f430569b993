//! Function names from a module's ELF symbol table, to give the outermost frame of an address
//! its full path.
//!
//! Debug info built with `debug = "line-tables-only"` (a common release setting) names functions
//! without their module path (`digit_sum`), while the symbol table has the mangled full path
//! (`prof::cli::workload::digit_sum`). Without this, one profile shows some functions with paths
//! and others without.

use std::path::Path;

/// The function symbols of one file, sorted by start address (file addresses, before load bias).
#[derive(Debug, Default)]
pub struct SymbolTable {
    functions: Vec<Function>,
    /// Whether the table lists every function of its object, static ones included (an ELF
    /// file's `.symtab`, a listing such as the kernel's), not only the exported ones (`.dynsym`).
    complete: bool,
}

impl SymbolTable {
    /// Reads the static and dynamic function symbols of the ELF file at `path` (only the
    /// headers and symbol sections, not the whole file); an unreadable or unparsable file gives
    /// an empty table.
    pub fn load(path: &Path) -> SymbolTable {
        let Ok(file) = std::fs::File::open(path) else {
            return SymbolTable::default();
        };
        let cache = object::ReadCache::new(file);
        SymbolTable::parse(&cache)
    }

    /// The function symbols of an ELF image (in memory, or read as needed from a file).
    pub fn parse<'data, R: object::ReadRef<'data>>(data: R) -> SymbolTable {
        use object::elf::{FileHeader32, FileHeader64};
        use object::{Endianness, FileKind};
        let functions = match FileKind::parse(data) {
            Ok(FileKind::Elf64) => elf_functions::<FileHeader64<Endianness>, R>(data),
            Ok(FileKind::Elf32) => elf_functions::<FileHeader32<Endianness>, R>(data),
            _ => any_functions(data),
        };
        let (mut functions, complete) = functions.unwrap_or_default();
        functions.sort_unstable();
        functions.dedup_by_key(|f| f.0);
        SymbolTable {
            functions,
            complete,
        }
    }

    /// A table of `(start, end, raw name)` functions from elsewhere than an ELF file (the
    /// kernel's `/proc/kallsyms`, a JIT's `perf-PID.map`); where two start at one address, the
    /// first listed is kept.
    pub fn from_functions(mut functions: Vec<(u64, u64, String)>) -> SymbolTable {
        functions.sort_by_key(|f| f.0);
        functions.dedup_by_key(|f| f.0);
        SymbolTable {
            functions,
            complete: true,
        }
    }

    /// True when the table lists every function of its object, static ones included (the
    /// object was not stripped, or this is its debug file's table), not only those the object
    /// exports.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The start (file address) of each function, in order.
    #[cfg(test)]
    pub(crate) fn starts(&self) -> impl Iterator<Item = u64> + '_ {
        self.functions.iter().map(|f| f.0)
    }

    /// The start and end (file addresses) of each function, in order.
    #[cfg(test)]
    pub(crate) fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.functions.iter().map(|f| (f.0, f.1))
    }

    /// The name of the function whose symbol covers `file_address`, demangled (see
    /// `super::demangle`).
    pub fn function_at(&self, file_address: u64) -> Option<String> {
        let i = self
            .functions
            .partition_point(|&(start, _, _)| start <= file_address);
        let (start, end, raw) = self.functions.get(i.checked_sub(1)?)?;
        (*start..*end)
            .contains(&file_address)
            .then(|| super::demangle(raw))
    }
}

/// A function symbol: its start and end (file addresses) and raw name.
type Function = (u64, u64, String);

/// The function symbols (static, then dynamic) of an ELF image, each symbol table and its
/// strings read whole, and whether the static table (`.symtab`) named any. Through a file's
/// `ReadCache`, `object`'s own iterators read every name on its own, a system call each: some
/// 10,000 for libc's debug file, 6 ms of a first stop. `None` when the headers cannot be read.
fn elf_functions<'data, Elf, R>(data: R) -> Option<(Vec<Function>, bool)>
where
    Elf: object::read::elf::FileHeader<Endian = object::Endianness>,
    R: object::ReadRef<'data>,
{
    use object::read::elf::{SectionHeader, Sym};
    use object::{elf, SectionIndex, StringTable};
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let mut functions = Vec::new();
    let mut complete = false;
    for kind in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
        let Some(table) = sections.iter().find(|s| s.sh_type(endian) == kind) else {
            continue;
        };
        let Ok(symbols) = table.data_as_array::<Elf::Sym, R>(endian, data) else {
            continue;
        };
        let link = SectionIndex(table.sh_link(endian) as usize);
        let Ok(strings) = sections.section(link).and_then(|s| s.data(endian, data)) else {
            continue;
        };
        let strings = StringTable::new(strings, 0, strings.len() as u64);
        for symbol in symbols {
            let size: u64 = symbol.st_size(endian).into();
            if !matches!(symbol.st_type(), elf::STT_FUNC | elf::STT_GNU_IFUNC) || size == 0 {
                continue;
            }
            let Some(name) = symbol
                .name(endian, strings)
                .ok()
                .and_then(|n| std::str::from_utf8(n).ok())
            else {
                continue;
            };
            let start: u64 = symbol.st_value(endian).into();
            functions.push((start, start + size, name.to_owned()));
            complete |= kind == elf::SHT_SYMTAB;
        }
    }
    Some((functions, complete))
}

/// The function symbols of any image `object` reads (Mach-O on macOS), through its iterators,
/// and whether its own (not dynamic) symbols named any.
fn any_functions<'data, R: object::ReadRef<'data>>(data: R) -> Option<(Vec<Function>, bool)> {
    use object::Object;
    let file = object::File::parse(data).ok()?;
    let mut functions: Vec<Function> = file.symbols().filter_map(function).collect();
    let complete = !functions.is_empty();
    functions.extend(file.dynamic_symbols().filter_map(function));
    Some((functions, complete))
}

/// `symbol` as a function, if it is one (code, with a size).
fn function<'data>(symbol: impl object::ObjectSymbol<'data>) -> Option<Function> {
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
    // Legacy mangling spells every closure `{{closure}}`, the debug info `{closure#N}`.
    if let Some(path) = full.strip_suffix("::{{closure}}") {
        if from_debug_info.starts_with("{closure#") {
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
            let table = SymbolTable::parse(&cache);
            assert!(!table.functions.is_empty(), "{path:?}");
            assert_eq!(table.functions, expected, "{path:?}");
            assert_eq!(table.complete, complete, "{path:?}");
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
            .functions
            .iter()
            .find(|(_, _, raw)| {
                super::super::demangle(raw).ends_with(
                    "symtab::tests::this_test_binary_names_its_own_functions_with_their_paths",
                )
            })
            .expect("this test's own symbol is in the table");
        let name = table.function_at(start + (end - start) / 2).unwrap();
        assert!(
            name.starts_with("prof::symbolize::symtab::tests::"),
            "{name}"
        );
        assert_eq!(table.function_at(0), None);
    }
}
