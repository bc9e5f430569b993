//! Source annotation, like stackprof's source report: each source line that samples ran through,
//! with its weight, beside the source text when the file can be read.
//!
//! `total` counts a sample once for every distinct line on its stack, `self` only for the leaf's
//! line. The annotation itself is pure: the source text comes from a function the caller gives
//! ([`write_source`]); [`write_source_from_disk`] (native only) reads it from the file system.

use crate::aggregate::{format_percent, format_weight, Filter, StackWeights};
use crate::error::{Error, Result};
use crate::session::{SampleType, Session};
use std::collections::BTreeMap;
use std::io::Write;

pub use crate::aggregate::FileWeights;

/// How many lines of source are shown around each annotated line.
pub const CONTEXT_LINES: u32 = 2;

/// The per-line weights of every source file in `session`, heaviest file first (the core's
/// [`crate::aggregate::line_weights`] over every sample).
pub fn line_weights(session: &Session) -> Vec<FileWeights> {
    crate::aggregate::line_weights(session, &StackWeights::compute(session, &Filter::all()))
}

/// Writes the annotation of the `max_files` heaviest files. `source` returns a file's text, or
/// `None` when it cannot be read; then only the weighted line numbers are listed.
pub fn write_source(
    session: &Session,
    max_files: usize,
    source: impl FnMut(&str) -> Option<String>,
    out: impl Write,
) -> Result<()> {
    let files: Vec<FileWeights> = line_weights(session).into_iter().take(max_files).collect();
    write_annotation(
        &files,
        &session.meta.sample_type,
        session.total_weight(),
        source,
        out,
    )
}

/// Writes the annotation of `files` (from [`line_weights`] or
/// [`crate::aggregate::function_lines`]), weights in `sample_type`'s unit and percentages of
/// `all`. `source` returns a file's text, or `None` when it cannot be read; then only the
/// weighted line numbers are listed.
pub fn write_annotation(
    files: &[FileWeights],
    sample_type: &SampleType,
    all: u64,
    source: impl FnMut(&str) -> Option<String>,
    out: impl Write,
) -> Result<()> {
    annotation(files, sample_type, all, source, out).map_err(Error::Write)
}

fn annotation(
    files: &[FileWeights],
    sample_type: &SampleType,
    all: u64,
    mut source: impl FnMut(&str) -> Option<String>,
    mut out: impl Write,
) -> std::io::Result<()> {
    let pct = |w: u64| format_percent(w, all);
    let weight = |w: u64| format_weight(sample_type, w);
    for file in files {
        writeln!(
            out,
            "== {} ({}, {}) ==",
            file.file,
            weight(file.total),
            pct(file.total)
        )?;
        writeln!(out, "{:>22} {:>22} | line | source", "total", "self")?;
        let text = source(&file.file);
        let text_lines: Vec<&str> = text.as_deref().map_or(Vec::new(), |t| t.lines().collect());
        if text.is_none() {
            writeln!(out, "(source not readable: showing weighted lines only)")?;
        }
        let mut last_shown = 0u32;
        for line in lines_to_show(&file.lines, text_lines.len() as u32) {
            if last_shown != 0 && line > last_shown + 1 {
                writeln!(out, "{:>45} | {:>4} |", "", "...")?;
            }
            last_shown = line;
            let code = text_lines
                .get(line as usize - 1)
                .copied()
                .unwrap_or_default();
            let row = match file.lines.get(&line) {
                Some(&(own, total)) => format!(
                    "{:>13} ({:>6}) {:>13} ({:>6}) | {line:>4} | {code}",
                    weight(total),
                    pct(total),
                    weight(own),
                    pct(own)
                ),
                None => format!("{:>45} | {line:>4} | {code}", ""),
            };
            writeln!(out, "{}", row.trim_end())?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The line numbers to print: every weighted line, with [`CONTEXT_LINES`] around it when the
/// source has `len` lines (0: no source).
fn lines_to_show(weighted: &BTreeMap<u32, (u64, u64)>, len: u32) -> Vec<u32> {
    let mut shown = std::collections::BTreeSet::new();
    for &line in weighted.keys() {
        let from = line.saturating_sub(CONTEXT_LINES).max(1);
        let to = (line + CONTEXT_LINES).min(len);
        shown.extend(from..=to.max(from));
        shown.insert(line);
    }
    shown
        .into_iter()
        .filter(|&l| l <= len || weighted.contains_key(&l))
        .collect()
}

/// [`write_source`] with the source text read from the file system.
#[cfg(feature = "fs")]
pub fn write_source_from_disk(session: &Session, max_files: usize, out: impl Write) -> Result<()> {
    write_source(
        session,
        max_files,
        |file| std::fs::read_to_string(file).ok(),
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_counts_the_leaf_line_and_total_each_line_once_per_sample() {
        let files = line_weights(&crate::export::fixture::session());
        let main = &files[0];
        assert_eq!(main.file, "src/main.rs");
        // Every sample but idle (no file) passes through src/main.rs (main at line 3).
        assert_eq!(main.total, 300 + 120 + 80 + 50);
        assert_eq!(main.lines[&3], (0, 550));
        assert_eq!(main.lines[&20], (420, 420), "hash, the inlined leaf");
        assert_eq!(main.lines[&12], (0, 420));
        assert_eq!(main.lines[&13], (80, 80));
    }

    #[test]
    fn source_text_is_shown_beside_the_weights() {
        let session = crate::export::fixture::session();
        let text: String = (1..=30).map(|i| format!("code line {i}\n")).collect();
        let mut out = Vec::new();
        write_source(&session, 5, |_| Some(text.clone()), &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.starts_with("== src/main.rs (550 ns, 100.0%) =="),
            "{out}"
        );
        let line20 = out.lines().find(|l| l.contains("|   20 |")).unwrap();
        assert!(line20.ends_with("code line 20"), "{line20}");
        assert!(
            line20.trim_start().starts_with("420 ns ( 76.4%)"),
            "{line20}"
        );
        assert!(
            out.contains("|    1 | code line 1\n"),
            "context before line 3: {out}"
        );
        assert!(
            !out.contains("code line 30"),
            "far from every weighted line"
        );
        assert!(out.contains("..."));
    }

    /// Weighted rows were two columns narrower than the header, the context rows and the gaps,
    /// so their `|` separators did not line up.
    #[test]
    fn weighted_rows_line_up_with_the_header_and_the_context_rows() {
        let session = crate::export::fixture::session();
        let text: String = (1..=30).map(|i| format!("code line {i}\n")).collect();
        let mut out = Vec::new();
        write_source(&session, 5, |_| Some(text.clone()), &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let columns: std::collections::BTreeSet<usize> =
            out.lines().filter_map(|l| l.find(" | ")).collect();
        assert_eq!(columns.len(), 1, "separator columns {columns:?} in:\n{out}");
    }

    #[test]
    fn unreadable_source_still_lists_the_weighted_lines() {
        let session = crate::export::fixture::session();
        let mut out = Vec::new();
        write_source(&session, 5, |_| None, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("source not readable"), "{out}");
        let numbered = out
            .lines()
            .filter(|l| l.contains(" | ") && !l.contains("line"))
            .count();
        assert_eq!(
            numbered,
            4 + 2,
            "4 weighted lines (12 and 13 adjacent), 2 gaps: {out}"
        );
    }
}
