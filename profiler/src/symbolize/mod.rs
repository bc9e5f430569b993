//! Turning sampled addresses into functions, files, lines and inlined frames, after stop.
//!
//! Each distinct address is resolved once, from the file of the object that held it: every
//! object loaded while sampling is known (see the collector), including those unloaded before
//! stop, so the file on disk is read with `addr2line` (DWARF lines and inlined frames, the
//! symbol table where there is no DWARF, separate debug files) rather than the process's
//! memory. Addresses in no known object (the vDSO has no file) are resolved in memory with the
//! `backtrace` crate. Return addresses are looked up one byte back so that a call at the end
//! of a function is attributed to the call site, not to what follows it.
//!
//! Names are made distinct where the debug info does not qualify them (see [`names`]).

pub mod names;
mod object;
pub mod symtab;

pub use object::LoadedObject;
use std::collections::HashMap;
use symtab::SymbolTable;

/// One frame of a resolved address: a function, possibly inlined into the next one out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Demangled function name, without the hash suffix; a hex address when unknown.
    pub name: String,
    /// Source file, when debug info names one.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// True when inlined into the previous (outer) symbol of the list.
    pub inlined: bool,
}

/// Resolves `address`: outermost function first, then the calls inlined into it.
/// `is_return_address` is true for every frame but the interrupted one.
pub fn resolve(address: u64, is_return_address: bool) -> Vec<Symbol> {
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
        inner_first.push(Symbol {
            name: format!("{name:#}"),
            file: sym.filename().map(|f| f.display().to_string()),
            line: sym.lineno(),
            inlined: true,
        });
    });
    if inner_first.is_empty() {
        inner_first.push(Symbol {
            name: format!("{address:#x}"),
            file: None,
            line: None,
            inlined: true,
        });
    }
    inner_first.reverse();
    inner_first[0].inlined = false;
    inner_first
}

/// Resolves each distinct address once, naming outermost frames with the full path from their
/// module's symbol table where the debug info gave only a short name (see [`symtab`]), and
/// inlined frames as [`names::qualify`] says.
pub struct Resolver<'a> {
    objects: &'a [LoadedObject],
    cache: HashMap<(u64, bool), Vec<Symbol>>,
    tables: HashMap<usize, SymbolTable>,
    loaders: HashMap<usize, Option<addr2line::Loader>>,
}

impl<'a> Resolver<'a> {
    /// A resolver for addresses in `objects` (every module loaded while sampling).
    pub fn new(objects: &'a [LoadedObject]) -> Self {
        Resolver {
            objects,
            cache: HashMap::new(),
            tables: HashMap::new(),
            loaders: HashMap::new(),
        }
    }

    /// The symbols of `address` (outermost function first, then the calls inlined into it),
    /// computed on first request. `is_return_address` is true for every frame but the
    /// interrupted one.
    pub fn symbols(&mut self, address: u64, is_return_address: bool) -> &[Symbol] {
        let key = (address, is_return_address);
        if !self.cache.contains_key(&key) {
            let lookup = if is_return_address {
                address.saturating_sub(1)
            } else {
                address
            };
            let index = object_index(self.objects, lookup);
            let mut symbols = index
                .and_then(|i| self.resolve_in_file(i, lookup))
                .unwrap_or_else(|| resolve(address, is_return_address));
            if let Some(index) = index {
                let object = &self.objects[index];
                let table = self.tables.entry(index).or_insert_with(|| {
                    object_path(object).map_or_else(SymbolTable::default, |p| {
                        SymbolTable::load(std::path::Path::new(&p))
                    })
                });
                let full = table.function_at(lookup.wrapping_sub(object.bias));
                if let Some(name) = symtab::fuller_name(&symbols[0].name, full) {
                    symbols[0].name = name;
                }
            }
            names::qualify(&mut symbols);
            self.cache.insert(key, symbols);
        }
        &self.cache[&key]
    }

    /// `lookup` resolved from the file of object `index`, outermost first; `None` when the file
    /// cannot be read or knows nothing of the address.
    fn resolve_in_file(&mut self, index: usize, lookup: u64) -> Option<Vec<Symbol>> {
        let object = &self.objects[index];
        let loader = self
            .loaders
            .entry(index)
            .or_insert_with(|| addr2line::Loader::new(object_path(object)?).ok())
            .as_ref()?;
        let probe = lookup.wrapping_sub(object.bias);
        let mut inner_first = Vec::new();
        let mut location = None;
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                let here = frame.location.map(|l| (l.file.map(str::to_owned), l.line));
                if location.is_none() {
                    location.clone_from(&here);
                }
                let Some(name) = frame.function.and_then(|f| f.raw_name().ok().map(demangle))
                else {
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
        if inner_first.is_empty() {
            // No DWARF function here: the symbol table's name, with the line table's place.
            let (file, line) = location.unwrap_or_default();
            inner_first.push(Symbol {
                name: demangle(loader.find_symbol(probe)?),
                file,
                line,
                inlined: true,
            });
        }
        inner_first.reverse();
        inner_first[0].inlined = false;
        Some(inner_first)
    }
}

/// A symbol's name as the report shows it: demangled (Rust), without the hash suffix.
fn demangle(raw: impl AsRef<str>) -> String {
    format!("{:#}", backtrace::SymbolName::new(raw.as_ref().as_bytes()))
}

/// The object holding `address`. Objects are listed in the order they were first seen, so
/// when an address range was reused by a later load, the later object is taken.
fn object_index(objects: &[LoadedObject], address: u64) -> Option<usize> {
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
    let path = object_path(&objects[object_index(objects, address)?])?;
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
    fn an_unknown_address_becomes_hex() {
        let syms = resolve(0x10, false);
        assert_eq!(syms[0].name, "0x10");
    }
}
