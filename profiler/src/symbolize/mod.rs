//! Turning sampled addresses into functions, files, lines and inlined frames, after stop.
//!
//! Each distinct address is resolved once with the `backtrace` crate (which reads the DWARF
//! debug info with `gimli`/`addr2line`). Return addresses are looked up one byte back so that a
//! call at the end of a function is attributed to the call site, not to what follows it.

use crate::sampler::LoadedObject;
use std::collections::HashMap;

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

/// Resolves each distinct address of `addresses` once.
#[derive(Default)]
pub struct Resolver {
    cache: HashMap<(u64, bool), Vec<Symbol>>,
}

impl Resolver {
    /// The symbols of `address` (see [`resolve`]), computed on first request.
    pub fn symbols(&mut self, address: u64, is_return_address: bool) -> &[Symbol] {
        self.cache
            .entry((address, is_return_address))
            .or_insert_with(|| resolve(address, is_return_address))
    }
}

/// The file name of the object holding `address`, among `objects`.
pub fn module_of(objects: &[LoadedObject], address: u64) -> Option<String> {
    let object = objects
        .iter()
        .find(|o| o.exec.iter().any(|r| r.contains(&address)))?;
    let path = if object.name.is_empty() {
        std::env::current_exe().ok()?.display().to_string()
    } else {
        object.name.clone()
    };
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
