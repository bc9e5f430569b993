//! JIT symbol files, `/tmp/perf-PID.map`: one line per compiled function, `START SIZE NAME`
//! with START and SIZE in hex (with or without `0x`) and a NAME that may hold spaces, as
//! `node --perf-basic-prof`, `python3 -X perf` and Java's perf-map-agent write them and perf
//! and samply read them. Addresses are absolute (the code lies in anonymous mappings); a later
//! line for the same start wins (the JIT reused the memory).

use super::symtab::SymbolTable;
use std::io::BufRead;
use std::ops::Range;

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

/// The longest line read: a longer one is skipped whole (as a bad line), so one line without
/// an end holds no more memory than this.
pub const MAX_LINE: usize = 64 * 1024;

/// The functions of the map file at `path` that cover an address of `covering` (sorted ranges
/// that do not overlap; empty when it cannot be read). The file is read line by line and only
/// those entries are kept, so a map of any size costs what its covering entries hold.
pub fn load(path: &str, covering: &[Range<u64>]) -> SymbolTable {
    match std::fs::File::open(path) {
        Ok(file) => read(std::io::BufReader::new(file), covering).0,
        Err(_) => SymbolTable::default(),
    }
}

/// The functions of a map file's lines that cover an address of `covering` (sorted ranges that
/// do not overlap), and how many of its lines were not `START SIZE NAME` (skipped: a line cut
/// by a JIT still writing, longer than [`MAX_LINE`], or not a map line at all). A read error
/// ends the file there.
pub fn read(mut reader: impl BufRead, covering: &[Range<u64>]) -> (SymbolTable, usize) {
    let mut functions = Vec::new();
    let mut bad = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        match next_line(&mut reader, &mut line) {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::TooLong) => bad += 1,
            Ok(Line::Read) => {
                let text = String::from_utf8_lossy(&line);
                match parse_line(&text) {
                    Some(f) if covers(covering, f.0..f.1) => functions.push(f),
                    Some(_) => {}
                    None if text.trim().is_empty() => {}
                    None => bad += 1,
                }
            }
        }
    }
    // The last line for a start is the JIT's latest code there: keep it, not the first.
    functions.reverse();
    (SymbolTable::from_functions(functions), bad)
}

/// What [`next_line`] read.
enum Line {
    Read,
    TooLong,
    End,
}

/// Reads the next line (without its newline) into `line`, keeping at most [`MAX_LINE`] bytes:
/// a longer line is read to its end and dropped.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        any = true;
        let (part, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], Some(at + 1)),
            None => (buf, None),
        };
        if line.len() + part.len() > MAX_LINE {
            too_long = true;
            line.clear();
        } else if !too_long {
            line.extend_from_slice(part);
        }
        let used = ends.unwrap_or(part.len());
        reader.consume(used);
        if ends.is_some() {
            break;
        }
    }
    Ok(match (any, too_long) {
        (false, _) => Line::End,
        (true, true) => Line::TooLong,
        (true, false) => Line::Read,
    })
}

/// Whether `function` holds an address of one of `covering` (sorted, not overlapping).
fn covers(covering: &[Range<u64>], function: Range<u64>) -> bool {
    let first_after = covering.partition_point(|r| r.end <= function.start);
    covering
        .get(first_after)
        .is_some_and(|r| r.start < function.end)
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

    /// Ranges that cover every address.
    const EVERYWHERE: Range<u64> = 0..u64::MAX;

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
        let (table, bad) = read(text.as_bytes(), std::slice::from_ref(&EVERYWHERE));
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
    fn only_entries_covering_sampled_addresses_are_kept() {
        // A map of 10,000 functions of which two hold a sampled address; a later line for one
        // of them (the JIT reused its memory) wins, as when every entry is kept.
        let mut text = String::new();
        for i in 0..10_000u64 {
            text += &format!("{:x} 40 fn_{i}\n", 0x1000_0000 + i * 0x40);
        }
        text += "10000080 40 fn_2_again\n";
        let sampled = [0x1000_0085, 0x1000_0fc0 + 0x3f];
        let covering: Vec<Range<u64>> = sampled.iter().map(|&a| a..a + 1).collect();
        let (table, bad) = read(text.as_bytes(), &covering);
        assert_eq!(bad, 0);
        assert_eq!(
            table.starts().count(),
            2,
            "{:?}",
            table.starts().collect::<Vec<_>>()
        );
        assert_eq!(
            table.function_at(0x1000_0085).as_deref(),
            Some("fn_2_again")
        );
        assert_eq!(table.function_at(0x1000_0fff).as_deref(), Some("fn_63"));
        assert_eq!(table.function_at(0x1000_0100), None);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_skipped_without_being_held() {
        let long = format!("1000 10 {}\n", "x".repeat(MAX_LINE * 3));
        let text = format!("{long}2000 10 after_it\n{long}");
        let mut reader = std::io::BufReader::with_capacity(4096, text.as_bytes());
        let (table, bad) = read(&mut reader, std::slice::from_ref(&EVERYWHERE));
        assert_eq!(bad, 2);
        assert_eq!(table.function_at(0x1000), None);
        assert_eq!(table.function_at(0x2008).as_deref(), Some("after_it"));
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
