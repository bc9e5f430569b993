//! JIT symbol files, `/tmp/perf-PID.map`: one line per compiled function, `START SIZE NAME`
//! with START and SIZE in hex (with or without `0x`) and a NAME that may hold spaces, as
//! `node --perf-basic-prof`, `python3 -X perf` and Java's perf-map-agent write them and perf
//! and samply read them. Addresses are absolute (the code lies in anonymous mappings); a later
//! line for the same start wins (the JIT reused the memory).

use super::symtab::SymbolTable;

/// The path of process `pid`'s map file.
pub fn path(pid: u32) -> String {
    format!("/tmp/perf-{pid}.map")
}

/// Whether `path` names a map file (`perf-DIGITS.map`, in any directory).
pub fn is_perf_map(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_prefix("perf-")
        .and_then(|n| n.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The functions of the map file at `path` (empty when it cannot be read).
pub fn load(path: &str) -> SymbolTable {
    let bytes = std::fs::read(path).unwrap_or_default();
    parse(&String::from_utf8_lossy(&bytes)).0
}

/// The functions of a map file's text, and how many of its lines were not `START SIZE NAME`
/// (skipped: a line cut by a JIT still writing, or not a map line at all).
pub fn parse(text: &str) -> (SymbolTable, usize) {
    let mut functions = Vec::new();
    let mut bad = 0;
    for line in text.lines() {
        match parse_line(line) {
            Some(f) => functions.push(f),
            None if line.trim().is_empty() => {}
            None => bad += 1,
        }
    }
    // The last line for a start is the JIT's latest code there: keep it, not the first.
    functions.reverse();
    (SymbolTable::from_functions(functions), bad)
}

/// One `START SIZE NAME` line; `None` when it is not one (or its range is empty or wraps).
fn parse_line(line: &str) -> Option<(u64, u64, String)> {
    let hex = |s: &str| {
        let digits = s.strip_prefix("0x").unwrap_or(s);
        u64::from_str_radix(digits, 16).ok()
    };
    let (start, rest) = line.trim_start().split_once(' ')?;
    let (size, name) = rest.trim_start().split_once(' ')?;
    let (start, size) = (hex(start)?, hex(size)?);
    let name = name.trim();
    if name.is_empty() || size == 0 {
        return None;
    }
    Some((start, start.checked_add(size)?, name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_addresses_from_good_lines_and_skips_bad_ones_without_panicking() {
        let text = "\
            7f00aa001000 40 LazyCompile:*hot /tmp/x.js:3:13\n\
            0x7f00aa002000 0x20 JS:~cold file with spaces.js:1\n\
            \n\
            7f00aa003000\n\
            7f00aa003000 zz not_hex\n\
            nothex 10 name\n\
            7f00aa004000 10\n\
            7f00aa005000 0 empty\n\
            ffffffffffffffff 10 wraps\n\
            7f00aa001000 40 LazyCompile:*hot_again /tmp/x.js:3:13\n\
            \u{1F600} \u{1F600} \u{1F600}\n\
            7f00aa006000 8 last line cut by a JIT still writ";
        let (table, bad) = parse(text);
        assert_eq!(bad, 7);
        // The later line for the same start wins.
        assert_eq!(
            table.function_at(0x7f00_aa00_1010).as_deref(),
            Some("LazyCompile:*hot_again /tmp/x.js:3:13")
        );
        assert_eq!(
            table.function_at(0x7f00_aa00_201f).as_deref(),
            Some("JS:~cold file with spaces.js:1")
        );
        assert_eq!(table.function_at(0x7f00_aa00_2020), None);
        assert_eq!(
            table.function_at(0x7f00_aa00_6000).as_deref(),
            Some("last line cut by a JIT still writ")
        );
    }

    #[test]
    fn recognizes_map_file_names() {
        assert!(is_perf_map("/tmp/perf-123.map"));
        assert!(is_perf_map(&path(7)));
        assert!(!is_perf_map("/tmp/perf-.map"));
        assert!(!is_perf_map("/tmp/perf-12a.map"));
        assert!(!is_perf_map("/usr/lib/libperf-1.so"));
    }
}
