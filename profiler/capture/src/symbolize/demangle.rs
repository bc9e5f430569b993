//! The one place a symbol's raw name becomes the name a report shows: every name read from a
//! symbol table, DWARF, a JIT's perf map, the kernel's symbols or this process's memory goes
//! through [`demangle`].
//!
//! Only mangled names are demangled: C++ and legacy Rust names (`_Z…`, or `__Z…` as Mach-O
//! spells them; legacy Rust `_ZN…17h…E` loses its hash) and Rust v0 names (`_R…`, `__R…`).
//! Any other name is a C function's, or already readable (a JIT's `LazyCompile:*run`, a kernel
//! function), and stays as it is: a C++ demangler also reads a bare type, so given the C
//! function `f` it says `float`, `i` `int` and `Sa` `std::allocator`.

/// `raw` demangled when it is mangled (see [`is_mangled`]), else as it is.
pub(crate) fn demangle(raw: &str) -> String {
    if is_mangled(raw) {
        format!("{:#}", backtrace::SymbolName::new(raw.as_bytes()))
    } else {
        raw.to_owned()
    }
}

/// True when `raw` starts as a mangled C++ or Rust name does.
pub(crate) fn is_mangled(raw: &str) -> bool {
    ["_Z", "__Z", "_R", "__R"]
        .iter()
        .any(|prefix| raw.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_are_demangled() {
        // `prof record` of a C++ program once showed `_Z6crunchI3LcgEml` for `crunch<Lcg>`:
        // only Rust names were demangled.
        assert_eq!(
            demangle("_Z6crunchI3LcgEml"),
            "unsigned long crunch<Lcg>(long)"
        );
        assert_eq!(demangle("_ZN8XorShift4nextEv"), "XorShift::next()");
        assert_eq!(demangle("__ZN8XorShift4nextEv"), "XorShift::next()");
        assert_eq!(demangle("main"), "main");
    }

    #[test]
    fn rust_names_are_demangled_without_their_hash() {
        assert_eq!(
            demangle("_ZN3std2rt10lang_start17h540c897fe52ba9c5E"),
            "std::rt::lang_start"
        );
        assert_eq!(
            demangle("_ZN3app4work17h0123456789abcdefE.llvm.1234"),
            "app::work"
        );
        assert_eq!(demangle("_RNvCs1234_3app4work"), "app::work");
    }

    #[test]
    fn c_names_that_read_as_cpp_types_stay_as_they_are() {
        // A C++ demangler reads a bare name as a type: `f` as float, `Sa` as std::allocator.
        for name in [
            "f",
            "i",
            "Sa",
            "Ss",
            "d",
            "v",
            "St",
            "crc32_z",
            "deflate.cold",
            "memcpy@plt",
            "LazyCompile:*hot /tmp/x.js:3",
            "_start",
            "__libc_start_main",
        ] {
            assert_eq!(demangle(name), name);
        }
    }
}
