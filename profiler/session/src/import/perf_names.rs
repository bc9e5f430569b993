//! How a `perf script` frame line is named: as the reference collapsers name it in their default
//! settings (FlameGraph's `stackcollapse-perf.pl`, and inferno's `collapse-perf`, which follows
//! it), so `prof convert --to folded` of a perf file gives the stacks they give.
//!
//! The rules, applied in this order to the symbol (its `+0x...` offset already dropped):
//! - a symbol in parentheses (a process name perf put in the chain) is no frame at all;
//! - a legacy Rust symbol perf left half demangled (`_$LT$a..B$u20$as$u20$C$GT$::f::h0123...`)
//!   is finished (`<a::B as C>::f`): the `::h` hash dropped, `..` read as `::`, `$LT$`-style
//!   escapes and `$uNN$` code points decoded;
//! - `a->b->c` (a Java agent's unfolded inlining) is three frames, the caller first, the callees
//!   named with an `_[i]` suffix and marked inlined;
//! - an unknown symbol is `[object file name]`, or `[unknown]` when the object is unknown too;
//! - `;` becomes `:` (it separates frames in folded stacks), and an argument list is cut: from
//!   the first `(` outside `<>`, `{}` and `[]`, unless it follows a `.` (a Go method,
//!   `net/http.(*Client).Do`) or opens `(anonymous namespace)`;
//! - in a process whose name starts with `java`, a JVM class signature loses its `L`
//!   (`Lorg/mozilla/Foo;.call` is `org/mozilla/Foo:.call`).
//!
//! Unlike `stackcollapse-perf.pl`, quotes are kept (as inferno keeps them): Rust lifetimes
//! (`Split<'a, P>`) stay readable.

use std::borrow::Cow;

/// A name of a frame a line stands for, and whether it is a callee inlined into the name before.
pub(super) struct Named {
    pub name: String,
    pub inlined: bool,
}

/// Appends to `out` the frames of a frame line, caller first: `symbol` (`None` when perf did not
/// know it, blank when it printed none before the object) in object `dso` (`None` when
/// unknown), in process `comm`.
pub(super) fn frame_names(
    symbol: Option<&str>,
    dso: Option<&str>,
    comm: &str,
    out: &mut Vec<Named>,
) {
    let Some(symbol) = symbol else {
        out.push(Named {
            name: tidy(&unknown(dso), comm),
            inlined: false,
        });
        return;
    };
    if symbol.starts_with('(') {
        return;
    }
    if symbol.is_empty() {
        // What stackcollapse-perf.pl makes of `address  (object)`, and inferno after it.
        out.push(Named {
            name: " ".to_owned(),
            inlined: false,
        });
        return;
    }
    let symbol = finish_rust_legacy(symbol);
    for (i, part) in symbol.split("->").enumerate() {
        let mut name = if part == "[unknown]" {
            tidy(&unknown(dso), comm)
        } else {
            tidy(part, comm)
        };
        if i > 0 && !name.contains("_[i]") {
            name.push_str("_[i]");
        }
        out.push(Named {
            name,
            inlined: i > 0,
        });
    }
}

/// `[file name of dso]`, or `[unknown]`.
fn unknown(dso: Option<&str>) -> String {
    match dso {
        Some(dso) if dso != "[unknown]" => format!("[{}]", dso.rsplit('/').next().unwrap_or(dso)),
        _ => "[unknown]".to_owned(),
    }
}

/// `;` as `:`, the argument list cut, and a JVM class's `L` dropped in a `java` process.
fn tidy(name: &str, comm: &str) -> String {
    let name = name.replace(';', ":");
    let mut depth = 0i32;
    let mut after_dot = None;
    let mut end = name.len();
    for (i, c) in name.char_indices() {
        match c {
            '<' | '{' | '[' => depth += 1,
            '>' | '}' | ']' | ')' => depth -= 1,
            '(' => {
                let go_method = after_dot == Some(i);
                if depth == 0 && !go_method && !name[i..].starts_with("(anonymous namespace)") {
                    end = i;
                    break;
                }
                depth += 1;
            }
            '.' => after_dot = Some(i + 1),
            _ => {}
        }
    }
    let name = &name[..end];
    let java = comm.starts_with("java");
    match name.strip_prefix('L') {
        Some(rest) if java && name.contains('/') => rest.to_owned(),
        _ => name.to_owned(),
    }
}

/// The length of a legacy Rust hash: `h` and 16 hex digits.
const RUST_HASH_LEN: usize = 17;

/// A legacy Rust symbol that perf demangled only in part, finished; other names unchanged.
fn finish_rust_legacy(symbol: &str) -> Cow<'_, str> {
    let Some(body) = symbol
        .len()
        .checked_sub(RUST_HASH_LEN)
        .filter(|&at| symbol.is_char_boundary(at))
        .map(|at| symbol.split_at(at))
        .filter(|(_, hash)| {
            hash.strip_prefix('h')
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .map(|(body, _)| body)
    else {
        return Cow::Borrowed(symbol);
    };
    let body = body.strip_suffix("::").unwrap_or(body);
    let mut rest = body.strip_prefix("_$").map_or(body, |_| &body[1..]);
    let mut out = String::with_capacity(rest.len());
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            out.push_str("::");
            rest = after;
        } else if rest.starts_with('$') {
            match rest[1..]
                .find('$')
                .and_then(|end| Some((escape(&rest[1..=end])?, end)))
            {
                Some((c, end)) => {
                    out.push(c);
                    rest = &rest[end + 2..];
                }
                None => {
                    out.push_str(rest);
                    break;
                }
            }
        } else {
            let next = rest
                .char_indices()
                .skip(1)
                .find(|&(_, c)| c == '$' || c == '.')
                .map_or(rest.len(), |(i, _)| i);
            out.push_str(&rest[..next]);
            rest = &rest[next..];
        }
    }
    Cow::Owned(out)
}

/// The character of a legacy Rust mangling escape (the text between the `$`s).
fn escape(code: &str) -> Option<char> {
    Some(match code {
        "SP" => '@',
        "BP" => '*',
        "RF" => '&',
        "LT" => '<',
        "GT" => '>',
        "LP" => '(',
        "RP" => ')',
        "C" => ',',
        _ => char::from_u32(u32::from_str_radix(code.strip_prefix('u')?, 16).ok()?)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(symbol: Option<&str>, dso: Option<&str>, comm: &str) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        frame_names(symbol, dso, comm, &mut out);
        out.into_iter().map(|n| (n.name, n.inlined)).collect()
    }

    fn one(symbol: &str, comm: &str) -> String {
        let mut all = names(Some(symbol), Some("/bin/x"), comm);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0).0
    }

    #[test]
    fn unknown_frames_are_named_after_their_object_or_unknown_in_single_brackets() {
        assert_eq!(names(None, None, "a"), [("[unknown]".to_owned(), false)]);
        assert_eq!(names(None, Some("[unknown]"), "a")[0].0, "[unknown]");
        assert_eq!(
            names(None, Some("/usr/lib/libc.so.6"), "a")[0].0,
            "[libc.so.6]"
        );
        assert_eq!(names(None, Some("[vdso]"), "a")[0].0, "[[vdso]]");
    }

    #[test]
    fn java_class_signatures_lose_their_l_in_java_processes_only() {
        let sig = "Lorg/mozilla/javascript/ContextFactory;.call(Lorg/mozilla/javascript/ContextAction;)Ljava/lang/Object;";
        assert_eq!(
            one(sig, "java"),
            "org/mozilla/javascript/ContextFactory:.call"
        );
        assert_eq!(
            one(sig, "java-worker"),
            "org/mozilla/javascript/ContextFactory:.call"
        );
        assert_eq!(
            one(sig, "node"),
            "Lorg/mozilla/javascript/ContextFactory:.call"
        );
        assert_eq!(one("Lock::take", "java"), "Lock::take");
    }

    #[test]
    fn argument_lists_are_cut_except_go_methods_and_anonymous_namespaces() {
        assert_eq!(one("java_start(Thread*)", "a"), "java_start");
        assert_eq!(one("net/http.(*Client).Do", "a"), "net/http.(*Client).Do");
        assert_eq!(
            one("ns::(anonymous namespace)::run(int)", "a"),
            "ns::(anonymous namespace)::run"
        );
        assert_eq!(
            one(
                "std::function<int (int, int)>::operator()(int, int) const",
                "a"
            ),
            "std::function<int (int, int)>::operator"
        );
        assert_eq!(one("a;b", "a"), "a:b");
        // Quotes stay (stackcollapse-perf.pl drops them, inferno keeps them).
        assert_eq!(one("Split<'a, P>::next", "a"), "Split<'a, P>::next");
    }

    #[test]
    fn process_names_in_the_chain_are_no_frame() {
        assert!(names(Some("(java)"), Some("/bin/x"), "a").is_empty());
    }

    #[test]
    fn unfolded_java_inlining_is_callers_first_with_inlined_callees() {
        assert_eq!(
            names(Some("a->b->[unknown]"), Some("/tmp/perf-1.map"), "node"),
            [
                ("a".to_owned(), false),
                ("b_[i]".to_owned(), true),
                ("[perf-1.map]_[i]".to_owned(), true)
            ]
        );
    }

    #[test]
    fn half_demangled_rust_symbols_are_finished() {
        let cases = [
            (
                "_$LT$std..fs..ReadDir$u20$as$u20$core..iter..Iterator$GT$::next::hc14f1750ca79129b",
                "<std::fs::ReadDir as core::iter::Iterator>::next",
            ),
            (
                "rg::main::_$u7b$$u7b$closure$u7d$$u7d$::h6e849b55a66fcd85",
                "rg::main::_{{closure}}",
            ),
            ("std::fs::File::open::hb90e1c1c787080f0", "std::fs::File::open"),
            // Not a hash: unchanged.
            ("_ZN3std2rt19lang_start17h540c897fe52ba9c5E", "_ZN3std2rt19lang_start17h540c897fe52ba9c5E"),
            ("a$LT$b::hzzzzzzzzzzzzzzzz", "a$LT$b::hzzzzzzzzzzzzzzzz"),
        ];
        for (symbol, want) in cases {
            assert_eq!(finish_rust_legacy(symbol), want, "{symbol}");
        }
        // An unknown escape is left as it is, never a panic.
        assert_eq!(finish_rust_legacy("a$XX$b::h0123456789abcdef"), "a$XX$b");
        assert_eq!(finish_rust_legacy("é$::h0123456789abcdef"), "é$");
    }
}
