//! Names that tell functions apart where the debug info does not.
//!
//! With `debug = "limited"` or more, DWARF gives every function, inlined ones included, its
//! linkage name, which demangles to the full path (`core::cmp::impls::<impl …>::lt`). With
//! `debug = "line-tables-only"` it gives inlined functions only their last path segment (`lt`,
//! `{closure#0}`), with no enclosing namespace to recover the rest from, so unrelated functions
//! would share a name and one row of the table. For those bare names this module does the best
//! it truthfully can:
//! - a closure inlined into a caller generic over closure types of that number
//!   (`map_fold::<…, app::demo::run::{closure_env#0}, …>` calling `{closure#0}`) takes the path
//!   of that type when there is one, or of the only one whose path holds the closure's source
//!   file's module (`…/src/demo.rs`: `demo`; `…/library/core/src/iter/traits/accum.rs`:
//!   `core::iter::traits::accum`; `examples/app.rs`: `app`): `app::demo::run::{closure#0}`;
//! - any other bare name of Rust code gets its source file: `lt (cmp.rs)`.

use super::Symbol;

/// Qualifies the bare names among `symbols` (outermost first, each the caller of the next).
pub fn qualify(symbols: &mut [Symbol]) {
    for i in 0..symbols.len() {
        if is_qualified(&symbols[i].name) {
            continue;
        }
        let from_caller = i.checked_sub(1).and_then(|c| {
            let file = symbols[i].file.as_deref().unwrap_or("");
            body_from_caller(&symbols[i].name, &symbols[c].name, file)
        });
        if let Some(name) = from_caller {
            symbols[i].name = name.into();
            continue;
        }
        let file = symbols[i].file.as_deref().filter(|f| f.ends_with(".rs"));
        if let Some(file) = file {
            let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
            symbols[i].name = format!("{} ({base})", symbols[i].name).into();
        }
    }
}

/// True when `name` has a path (`::` outside generic arguments), or is not a bare Rust name
/// at all (a hex address).
pub(super) fn is_qualified(name: &str) -> bool {
    if name.starts_with("0x") {
        return true;
    }
    let mut depth = 0i32;
    let bytes = name.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => return true,
            _ => {}
        }
    }
    false
}

/// The bodies the compiler names by a number rather than a name, and the types of their
/// environments: a closure `{closure#N}` (type `{closure_env#N}`), an async function's body
/// `{async_fn#N}` (`{async_fn_env#N}`), an async block `{async_block#N}`
/// (`{async_block_env#N}`).
pub(super) const UNNAMED_BODIES: [(&str, &str); 3] = [
    ("{closure#", "{closure_env#"),
    ("{async_fn#", "{async_fn_env#"),
    ("{async_block#", "{async_block_env#"),
];

/// `{closure#N}…` (or an async function's or block's body, [`UNNAMED_BODIES`]) named by the
/// path of the `…::{closure_env#N}` type in its caller's name: the only one, or the only one
/// that holds the module of `file`, the body's source file.
fn body_from_caller(name: &str, caller: &str, file: &str) -> Option<String> {
    let (rest, env) = UNNAMED_BODIES
        .iter()
        .find_map(|(body, env)| Some((name.strip_prefix(body)?, env)))?;
    let close = rest.find('}')?;
    let number = &rest[..close];
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let needle = format!("::{env}{number}}}");
    let mut candidates: Vec<&str> = Vec::new();
    for (at, _) in caller.match_indices(&needle) {
        let before = &caller[..at];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || "_:{}#".contains(c)))
            .map_or(0, |i| i + 1);
        let path = &before[start..];
        if path.is_empty() || path.starts_with(':') {
            return None;
        }
        if !candidates.contains(&path) {
            candidates.push(path);
        }
    }
    if candidates.len() > 1 {
        let module = module_of_file(file)?;
        candidates.retain(|path| holds_module(path, &module));
    }
    match candidates[..] {
        [path] => Some(format!("{path}::{name}")),
        _ => None,
    }
}

/// The module path a Rust source file suggests: the directories after the last `src` and the
/// file's stem, without `mod`, `lib` or `main`, after the crate name for the standard library
/// (`…/library/core/src/iter/traits/accum.rs`: `core::iter::traits::accum`); the stem alone
/// for a file outside any `src` (`examples/app.rs`: `app`).
fn module_of_file(file: &str) -> Option<String> {
    let file = file.strip_suffix(".rs")?;
    let parts: Vec<&str> = file.split(['/', '\\']).collect();
    let mut segments: Vec<&str> = match parts.iter().rposition(|&p| p == "src") {
        Some(src) => {
            let mut s = Vec::new();
            if src >= 2 && parts[src - 2] == "library" {
                s.push(parts[src - 1]);
            }
            s.extend(&parts[src + 1..]);
            s
        }
        None => vec![*parts.last()?],
    };
    if matches!(segments.last(), Some(&("mod" | "lib" | "main"))) {
        segments.pop();
    }
    (!segments.is_empty()).then(|| segments.join("::"))
}

/// True when `module` is a run of whole segments of `path`.
fn holds_module(path: &str, module: &str) -> bool {
    path == module
        || path.starts_with(&format!("{module}::"))
        || path.ends_with(&format!("::{module}"))
        || path.contains(&format!("::{module}::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(name: &str, file: Option<&str>) -> Symbol {
        Symbol {
            name: name.into(),
            file: file.map(Into::into),
            line: Some(1),
            inlined: true,
        }
    }

    #[test]
    fn closures_take_the_path_their_caller_names_them_by() {
        let caller = "{closure#0}<u64, u64, u64, app::demo::run::{closure_env#0}, \
                      app::demo::run::{closure_env#1}>";
        let here = "/src/app/src/demo.rs";
        assert_eq!(
            body_from_caller("{closure#1}", caller, here).as_deref(),
            Some("app::demo::run::{closure#1}")
        );
        assert_eq!(
            body_from_caller("{closure#0}<u64>", caller, "").as_deref(),
            Some("app::demo::run::{closure#0}<u64>")
        );
        assert_eq!(body_from_caller("{closure#2}", caller, here), None);
        assert_eq!(body_from_caller("lt", caller, here), None);
        // An async function's body, by its environment's type in the poll it is inlined into;
        // a closure of the same number is not it.
        let poll = "poll<app::nap::{async_fn_env#0}>";
        assert_eq!(
            body_from_caller("{async_fn#0}", poll, here).as_deref(),
            Some("app::nap::{async_fn#0}")
        );
        assert_eq!(body_from_caller("{closure#0}", poll, here), None);
        assert_eq!(
            body_from_caller("{async_block#1}", "poll<x::run::{async_block_env#1}>", "").as_deref(),
            Some("x::run::{async_block#1}")
        );
        // Two closure types of that number: the one of the closure's file's module.
        let two = "{closure#0}<u64, app::demo::run::{closure_env#0}, \
                   core::iter::traits::accum::{impl#40}::sum::{closure_env#0}<u64>>";
        assert_eq!(
            body_from_caller("{closure#0}", two, "/x/examples/app.rs").as_deref(),
            Some("app::demo::run::{closure#0}")
        );
        assert_eq!(
            body_from_caller(
                "{closure#0}<u64>",
                two,
                "/rustc/abc/library/core/src/iter/traits/accum.rs"
            )
            .as_deref(),
            Some("core::iter::traits::accum::{impl#40}::sum::{closure#0}<u64>")
        );
        let same_file = "fold<a::f::{closure_env#0}, a::g::{closure_env#0}>";
        assert_eq!(
            body_from_caller("{closure#0}", same_file, "/p/src/a.rs"),
            None,
            "ambiguous"
        );
    }

    #[test]
    fn bare_names_of_rust_code_get_their_file_and_qualified_ones_stay() {
        let mut symbols = vec![
            sym("app::main", Some("/src/main.rs")),
            sym(
                "call_once<app::workload::spin::{closure_env#0}>",
                Some("/x/function.rs"),
            ),
            sym("{closure#0}", Some("/src/workload.rs")),
            sym("lt", Some("/rustc/abc/library/core/src/cmp.rs")),
            sym("crc32_z", Some("crc32.c")),
            sym("<u64 as core::ops::Add>::add", None),
        ];
        qualify(&mut symbols);
        let names: Vec<&str> = symbols.iter().map(|s| &*s.name).collect();
        assert_eq!(
            names,
            [
                "app::main",
                "call_once<app::workload::spin::{closure_env#0}> (function.rs)",
                "app::workload::spin::{closure#0}",
                "lt (cmp.rs)",
                "crc32_z",
                "<u64 as core::ops::Add>::add",
            ]
        );
    }

    #[test]
    fn source_files_suggest_modules() {
        assert_eq!(
            module_of_file("/w/profiler/src/cli/demo.rs").as_deref(),
            Some("cli::demo")
        );
        assert_eq!(module_of_file("/w/src/cli/mod.rs").as_deref(), Some("cli"));
        assert_eq!(module_of_file("/w/src/lib.rs"), None);
        assert_eq!(
            module_of_file("/rustc/h/library/core/src/iter/adapters/map.rs").as_deref(),
            Some("core::iter::adapters::map")
        );
        assert_eq!(module_of_file("examples/app.rs").as_deref(), Some("app"));
        assert_eq!(module_of_file("crc32.c"), None);
        assert!(holds_module("prof::cli::demo::run", "cli::demo"));
        assert!(!holds_module("prof::cli::demos::run", "cli::demo"));
    }

    #[test]
    fn paths_are_seen_outside_generic_arguments_only() {
        assert!(is_qualified("core::cmp::PartialOrd::lt"));
        assert!(is_qualified("<T as a::B>::c"));
        assert!(!is_qualified("black_box<u64>"));
        assert!(!is_qualified("fold<a::b::c>"));
        assert!(is_qualified("0x1234"));
    }
}
