//! Turning sampled addresses into functions, files, lines and inlined frames, after stop.
//!
//! Each distinct address is resolved once with the `backtrace` crate (which reads the DWARF
//! debug info with `gimli`/`addr2line`). Return addresses are looked up one byte back so that a
//! call at the end of a function is attributed to the call site, not to what follows it.

pub mod symtab;

use crate::sampler::LoadedObject;
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
/// module's symbol table where the debug info gave only a short name (see [`symtab`]).
pub struct Resolver<'a> {
    objects: &'a [LoadedObject],
    cache: HashMap<(u64, bool), Vec<Symbol>>,
    tables: HashMap<usize, SymbolTable>,
}

impl<'a> Resolver<'a> {
    /// A resolver for addresses in `objects` (the modules loaded while sampling).
    pub fn new(objects: &'a [LoadedObject]) -> Self {
        Resolver {
            objects,
            cache: HashMap::new(),
            tables: HashMap::new(),
        }
    }

    /// The symbols of `address` (see [`resolve`]), computed on first request.
    pub fn symbols(&mut self, address: u64, is_return_address: bool) -> &[Symbol] {
        let key = (address, is_return_address);
        if !self.cache.contains_key(&key) {
            let mut symbols = resolve(address, is_return_address);
            if let Some(index) = object_index(self.objects, address) {
                let object = &self.objects[index];
                let table = self.tables.entry(index).or_insert_with(|| {
                    object_path(object).map_or_else(SymbolTable::default, |p| {
                        SymbolTable::load(std::path::Path::new(&p))
                    })
                });
                let lookup = if is_return_address {
                    address - 1
                } else {
                    address
                };
                let full = table.function_at(lookup.wrapping_sub(object.bias));
                if let Some(name) = symtab::fuller_name(&symbols[0].name, full) {
                    symbols[0].name = name;
                }
            }
            self.cache.insert(key, symbols);
        }
        &self.cache[&key]
    }
}

fn object_index(objects: &[LoadedObject], address: u64) -> Option<usize> {
    objects
        .iter()
        .position(|o| o.exec.iter().any(|r| r.contains(&address)))
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
