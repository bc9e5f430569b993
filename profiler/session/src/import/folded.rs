//! Folded stacks in: `root;...;leaf weight`, one line per stack, as flamegraph.pl and inferno
//! write them. Each line becomes one row on a single thread named `all`, standing for `weight`
//! samples.
//!
//! Lines starting with `#` are comments. A line that is not `frames weight` is skipped and
//! counted (the count is a warning); a fractional weight or a line with two counts (the
//! differential output of `difffolded.pl`) refuses the file with that reason. Stacks deeper than
//! [`MAX_STACK_DEPTH`] keep their leaf end. Bytes that are not UTF-8 become U+FFFD (�) in names.

use super::{cut_warning, unknown_type, LoadOptions, Loaded, Totals, MAX_STACK_DEPTH};
use crate::error::{Error, Result};
use crate::session::{FrameId, Metadata, SampleType, Session, SessionBuilder};
use std::io::BufRead;
use std::path::Path;

/// The `timer` metadata of a session imported from folded stacks.
pub const FOLDED_TIMER: &str = "import:folded";

/// Reads folded stacks from `input`; `path` only names the input in errors.
pub fn read_folded(input: impl BufRead, path: &Path) -> Result<Session> {
    read_folded_with(input, path, &LoadOptions::default()).map(|l| l.session)
}

/// Reads folded stacks from `input` with `options` (whose sample type, if given, must be
/// `samples`, the only one folded stacks have); `path` only names the input in errors.
pub fn read_folded_with(
    mut input: impl BufRead,
    path: &Path,
    options: &LoadOptions,
) -> Result<Loaded> {
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let sample_type = SampleType::samples();
    if let Some(wanted) = options.sample_type.as_deref() {
        if wanted != sample_type.name {
            return Err(bad(unknown_type(wanted, [sample_type.name.as_str()])));
        }
    }
    let mut b = SessionBuilder::new(Metadata {
        timer: FOLDED_TIMER.to_owned(),
        prof_version: crate::VERSION.to_owned(),
        sample_type,
        ..Metadata::default()
    });
    let thread = b.thread(0, "all");
    let mut frames: Vec<FrameId> = Vec::new();
    let mut totals = Totals::default();
    let (mut rows, mut skipped, mut cut) = (0u64, 0u64, 0u64);
    let mut first_skipped = None;
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        line.clear();
        let read = input
            .read_until(b'\n', &mut line)
            .map_err(|e| bad(format!("line {}: cannot read: {e}", n + 1)))?;
        if read == 0 {
            break;
        }
        n += 1;
        let text = line.trim_ascii();
        if text.is_empty() || text.starts_with(b"#") {
            continue;
        }
        let (stack, weight) = match parse_line(text) {
            Ok(parsed) => parsed,
            Err(Bad::Skip(why)) => {
                skipped += 1;
                first_skipped.get_or_insert_with(|| format!("line {n}: {why}"));
                continue;
            }
            Err(Bad::Refuse(why)) => return Err(bad(format!("line {n}: {why}"))),
        };
        // Leaf first from the end of the line, so a stack of millions of frames costs only the
        // frames kept.
        frames.clear();
        let mut names = stack.rsplit(|&c| c == b';').filter(|name| !name.is_empty());
        for name in names.by_ref().take(MAX_STACK_DEPTH) {
            let name = String::from_utf8_lossy(name);
            frames.push(b.intern_frame(&crate::session::FrameSpec::named(&name)));
        }
        if names.next().is_some() {
            cut += 1;
        }
        frames.reverse();
        let Some(leaf) = b.intern_stack_path(&frames) else {
            skipped += 1;
            first_skipped.get_or_insert_with(|| format!("line {n}: the stack has no frames"));
            continue;
        };
        totals
            .add(weight, weight)
            .map_err(|why| bad(format!("line {n}: {why}")))?;
        b.push_samples(leaf, thread, 0, weight, weight);
        rows += 1;
    }
    let skipped_note = first_skipped.map(|first| {
        format!(
            "skipped {skipped} line{} that {} not `frames weight` (first: {first})",
            if skipped == 1 { "" } else { "s" },
            if skipped == 1 { "is" } else { "are" },
        )
    });
    if rows == 0 {
        return Err(bad(match skipped_note {
            Some(note) => format!("no stacks found; {note}"),
            None => "no stacks found".into(),
        }));
    }
    let mut warnings: Vec<String> = skipped_note.into_iter().collect();
    warnings.extend(cut_warning(cut));
    Ok(Loaded {
        session: b.finish(),
        warnings,
    })
}

/// Why a line was not read: skipped and counted, or refusing the whole file.
enum Bad {
    Skip(String),
    Refuse(String),
}

/// `text` split at its last whitespace: (what comes before, the last word).
fn split(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = text.iter().rposition(|c| c.is_ascii_whitespace())?;
    Some((text[..at].trim_ascii_end(), &text[at + 1..]))
}

/// `frames weight` → (frames, weight).
fn parse_line(line: &[u8]) -> Result<(&[u8], u64), Bad> {
    let (stack, weight) =
        split(line).ok_or_else(|| Bad::Skip("expected `frames weight`".into()))?;
    let weight_text = String::from_utf8_lossy(weight);
    let weight: u64 = match weight_text.parse() {
        Ok(w) => w,
        Err(_) if weight_text.parse::<f64>().is_ok_and(f64::is_finite) && weight_text.contains('.') => {
            return Err(Bad::Refuse(format!(
                "weight `{weight_text}` is fractional: prof reads folded weights as whole numbers of samples"
            )))
        }
        Err(_) => {
            return Err(Bad::Skip(format!(
                "weight `{weight_text}` is not a whole number"
            )))
        }
    };
    if let Some((_, first)) = split(stack) {
        if !first.is_empty() && first.iter().all(u8::is_ascii_digit) {
            return Err(Bad::Refuse(format!(
                "two counts (`{} {weight}`): this is differential folded output (difffolded.pl); \
                 compare the two profiles with `prof diff BASE NEW`",
                String::from_utf8_lossy(first)
            )));
        }
    }
    Ok((stack, weight))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Session> {
        read_folded(text.as_bytes(), Path::new("in.folded"))
    }

    #[test]
    fn each_line_is_a_weighted_root_first_stack() {
        let s = read("main;work;hash 30\nmain;idle 5\n\nmain;work;hash 2\n").unwrap();
        assert_eq!(s.samples.len(), 3);
        // Folded weights are counts of samples: 37 samples in 3 lines.
        assert_eq!(s.sample_count(), 37);
        assert_eq!(s.total_weight(), 37);
        assert_eq!(s.meta.timer, FOLDED_TIMER);
        let leaf = s.samples.stack[0];
        let names: Vec<&str> = s.stack_frames(leaf).map(|f| s.frame_name(f)).collect();
        assert_eq!(names, ["hash", "work", "main"]);
        assert_eq!(s.samples.stack[0], s.samples.stack[2]);
        assert_eq!(s.threads.len(), 1);
    }

    #[test]
    fn frame_names_may_contain_spaces() {
        let s = read("main;<T as Trait>::call 4\n").unwrap();
        assert_eq!(
            s.frame_name(s.stack(s.samples.stack[0]).frame),
            "<T as Trait>::call"
        );
    }

    fn read_with_warnings(text: &[u8]) -> Result<Loaded> {
        read_folded_with(text, Path::new("in.folded"), &LoadOptions::default())
    }

    #[test]
    fn bad_lines_are_skipped_and_counted_not_the_end_of_reading() {
        let loaded = read_with_warnings(b"main 1\nmain;work x\nmain;a 2\nnoweight\n").unwrap();
        assert_eq!(loaded.session.sample_count(), 3);
        assert_eq!(
            loaded.warnings,
            ["skipped 2 lines that are not `frames weight` (first: line 2: weight `x` is not a whole number)"]
        );
        let err = read("justonefield\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "in.folded: no stacks found; skipped 1 line that is not `frames weight` \
             (first: line 1: expected `frames weight`)"
        );
        assert_eq!(
            read("").unwrap_err().to_string(),
            "in.folded: no stacks found"
        );
    }

    #[test]
    fn comment_lines_are_skipped() {
        let loaded = read_with_warnings(b"# austin: 3.3.0\n# mode: wall\nmain;work 3\n").unwrap();
        assert_eq!(loaded.session.sample_count(), 3);
        assert!(loaded.warnings.is_empty());
        assert_eq!(loaded.session.frames.len(), 2);
    }

    #[test]
    fn differential_folded_is_refused_pointing_to_prof_diff() {
        let err = read("main;work 3 5\nmain 1 2\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "in.folded: line 1: two counts (`3 5`): this is differential folded output \
             (difffolded.pl); compare the two profiles with `prof diff BASE NEW`"
        );
    }

    #[test]
    fn fractional_weights_are_refused_with_that_reason() {
        let err = read("main;work 31.5\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "in.folded: line 1: weight `31.5` is fractional: prof reads folded weights as whole \
             numbers of samples"
        );
    }

    #[test]
    fn totals_past_2_64_are_refused() {
        let err = read("main;a 18446744073709551615\nmain;b 18446744073709551615\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "in.folded: line 2: the weights add up to more than 2^64 - 1, more than prof can total"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_show_as_replacement_characters() {
        let s = read_with_warnings(b"main;w\xffork 3\n").unwrap().session;
        let leaf = s.stack(s.samples.stack[0]).frame;
        assert_eq!(s.frame_name(leaf), "w\u{fffd}ork");
    }

    #[test]
    fn a_stack_of_millions_of_frames_keeps_its_leaf_end() {
        let mut line = "f;".repeat(1_000_000);
        line.push_str("leaf 2\n");
        let loaded = read_with_warnings(line.as_bytes()).unwrap();
        let s = &loaded.session;
        let frames: Vec<&str> = s
            .stack_frames(s.samples.stack[0])
            .map(|f| s.frame_name(f))
            .collect();
        assert_eq!(frames.len(), MAX_STACK_DEPTH);
        assert_eq!(frames[0], "leaf");
        assert_eq!(
            loaded.warnings,
            [format!(
                "1 stack deeper than {MAX_STACK_DEPTH} frames was cut at the root end"
            )]
        );
    }

    #[test]
    fn a_sample_type_other_than_samples_is_refused_listing_samples() {
        let options = LoadOptions {
            sample_type: Some("cpu".into()),
            ..LoadOptions::default()
        };
        let err = read_folded_with(&b"main 1\n"[..], Path::new("in.folded"), &options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "in.folded: no sample type `cpu` (available: samples)"
        );
    }
}
