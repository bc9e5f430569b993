//! Readers that turn other tools' profiles (folded stacks, `perf script`, pprof) into sessions.
//!
//! [`sniff`] tells the formats apart from a file's first bytes by their structure, so one command
//! accepts them all. Every reader takes [`LoadOptions`] (which sample type to show) and returns a
//! [`Loaded`]: the session and one-line warnings about what it skipped, which only the command
//! line prints. No input makes a reader panic (`fuzz_tests.rs`), and none yields a session whose
//! file the session reader would refuse: totals past 2^64 are refused here.
//!
//! ```
//! use std::path::Path;
//!
//! let folded = "main;parse 3\nmain;work 1\n";
//! let session = prof_session::import::folded::read_folded(folded.as_bytes(), Path::new("app.folded"))?;
//! assert_eq!(session.total_weight(), 4);
//! // Any file, whatever its format: `prof_session::import::load_any(path)` (the `fs` feature).
//! # Ok::<(), prof_session::Error>(())
//! ```

#[cfg(feature = "fs")]
mod file;
pub mod folded;
#[cfg(test)]
mod fuzz_tests;
pub mod perf;
mod perf_names;
pub mod pprof;
mod pprof_wire;

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

#[cfg(feature = "fs")]
pub use file::{is_session_name, load_any, load_any_with};
pub use folded::{read_folded, read_folded_with};
pub use perf::{read_perf_script, read_perf_script_with};
pub use pprof::{read_pprof, read_pprof_with};

use crate::session::Session;

/// The most bytes of a profile read by default, once decompressed (256 MiB): a gzip bomb or an
/// endless device stops here. The same limit as a session file's
/// ([`crate::session::DEFAULT_MAX_BYTES`]); [`LoadOptions::max_bytes`] lifts it.
pub const MAX_DECOMPRESSED: u64 = crate::session::DEFAULT_MAX_BYTES;

/// The deepest stack an importer keeps: deeper stacks are cut at the root end (their outermost
/// frames are dropped, the leaf and its callers kept) and the cut is reported in
/// [`Loaded::warnings`]. It bounds the memory one long line of folded stacks can take.
pub const MAX_STACK_DEPTH: usize = 4096;

/// Choices a user makes when importing a profile.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The sample type to show, by name (`inuse_space`, `cycles`, `samples`, ...): a pprof
    /// profile's value column or a `perf script` file's event. `None` takes the format's
    /// default (pprof's `default_sample_type`, else its last type; perf's first event).
    pub sample_type: Option<String>,
    /// Start each stack of a `perf script` file with the name of its process (perf's `comm`,
    /// spaces as `_`), as `stackcollapse-perf.pl` and inferno's `collapse-perf` do by default.
    /// Other formats name no process and ignore it. Off by default: the thread is a column of
    /// its own in a session.
    pub process_root: bool,
    /// The most bytes of the profile read, once decompressed ([`MAX_DECOMPRESSED`] by
    /// default): larger input is refused, saying this limit.
    pub max_bytes: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            sample_type: None,
            process_root: false,
            max_bytes: MAX_DECOMPRESSED,
        }
    }
}

/// An imported session and what the reader noticed while reading it.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Loaded {
    /// The session.
    pub session: Session,
    /// One line each: input that was skipped or cut (bad lines, other events, deep stacks), for
    /// the command line to print as warnings. The library prints nothing.
    pub warnings: Vec<String>,
}

impl Loaded {
    /// A session with no warnings.
    pub fn new(session: Session) -> Self {
        Loaded {
            session,
            warnings: Vec::new(),
        }
    }
}

/// `"no sample type `NAME` (available: a, b)"`: the error for a `--type` that is not in a file.
pub(crate) fn unknown_type<'a>(name: &str, available: impl IntoIterator<Item = &'a str>) -> String {
    let available: Vec<&str> = available.into_iter().collect();
    format!(
        "no sample type `{name}` (available: {})",
        available.join(", ")
    )
}

/// Sums weights and sample counts as rows are added, so an import whose totals pass 2^64 is
/// refused with a clear message rather than saved as a file the session reader refuses.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Totals {
    weight: u64,
    count: u64,
}

impl Totals {
    /// Adds a row of `weight` standing for `count` samples, or says why the totals overflow.
    pub(crate) fn add(&mut self, weight: u64, count: u64) -> std::result::Result<(), String> {
        self.weight = self.weight.checked_add(weight).ok_or_else(|| {
            "the weights add up to more than 2^64 - 1, more than prof can total".to_owned()
        })?;
        self.count = self.count.checked_add(count).ok_or_else(|| {
            "the sample counts add up to more than 2^64 - 1, more than prof can total".to_owned()
        })?;
        Ok(())
    }
}

/// The warning for `cut` stacks cut to [`MAX_STACK_DEPTH`], if any.
pub(crate) fn cut_warning(cut: u64) -> Option<String> {
    (cut > 0).then(|| {
        let (s, were) = if cut == 1 { ("", "was") } else { ("s", "were") };
        format!("{cut} stack{s} deeper than {MAX_STACK_DEPTH} frames {were} cut at the root end")
    })
}

/// The formats `prof` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// A `prof` session file (JSON).
    Session,
    /// Folded stacks.
    Folded,
    /// `perf script` text.
    PerfScript,
    /// pprof `profile.proto`.
    Pprof,
}

/// Which format `head`, the first bytes of a file (after decompression), is in, told by
/// structure: bytes that are not text (a NUL, or more than one control character in 32) are
/// taken for pprof; text opening with `{` is a session; text with a `perf script` event line
/// (`comm tid ... event:`) or an indented `address symbol` frame line is `perf script` output;
/// other text is folded stacks. Bytes that are not UTF-8 do not make text binary: perf and
/// folded names may hold any bytes.
pub fn sniff(head: &[u8]) -> Format {
    if looks_binary(head) {
        return Format::Pprof;
    }
    let text = String::from_utf8_lossy(head);
    if text.trim_start().starts_with('{') {
        return Format::Session;
    }
    if text.lines().any(perf::is_perf_line) {
        Format::PerfScript
    } else {
        Format::Folded
    }
}

/// Reads `bytes` (decompressed, except pprof which may stay gzipped) in `format`, one of the
/// imported formats; a `Session` is read as pprof. What `load_any_with` does once it knows.
#[cfg(any(feature = "fs", test))]
pub(crate) fn read_import(
    format: Format,
    bytes: &[u8],
    path: &Path,
    options: &LoadOptions,
) -> Result<Loaded> {
    match format {
        Format::Folded => read_folded_with(bytes, path, options),
        Format::PerfScript => read_perf_script_with(bytes, path, options),
        _ => read_pprof_with(bytes, path, options),
    }
}

/// True when `head` holds a NUL byte or more control characters (other than tab, line feed,
/// vertical tab, form feed, carriage return and escape) than one byte in 32: protobuf, not text.
fn looks_binary(head: &[u8]) -> bool {
    let controls = head
        .iter()
        .filter(|&&b| {
            (b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1b)) || b == 0x7f
        })
        .count();
    head.contains(&0) || controls * 32 > head.len()
}

/// True when `bytes` start with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Decompresses gzip `bytes`, refusing output beyond `limit` bytes.
pub(crate) fn gunzip(bytes: &[u8], path: &Path, limit: u64) -> Result<Vec<u8>> {
    let hint = crate::session::gzip_bytes_size_hint(bytes);
    read_limited(flate2::read::GzDecoder::new(bytes), hint, path, limit)
}

/// What a refusal of a profile past `limit` bytes says: the limit, and how to lift it.
pub(crate) fn over_limit(limit: u64) -> String {
    format!(
        "more than {} MiB, the limit for reading a profile (`--max-input MIB` lifts it)",
        limit >> 20
    )
}

/// Reads all of `input` (e.g. a decompressing reader), refusing more than `limit` bytes so a
/// gzip bomb fails fast with bounded memory. Room for `size_hint` bytes (at most the limit) is
/// reserved at once: a vector that grows by doubling has its spare room zeroed by
/// `read_to_end`, resident memory the data never uses.
pub(crate) fn read_limited(
    input: impl Read,
    size_hint: u64,
    path: &Path,
    limit: u64,
) -> Result<Vec<u8>> {
    let reserve = size_hint.min(limit).saturating_add(1);
    let mut out = Vec::with_capacity(usize::try_from(reserve).unwrap_or(0));
    input
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| Error::BadInput {
            path: path.to_owned(),
            message: format!("cannot decompress: {e}"),
        })?;
    if out.len() as u64 > limit {
        return Err(Error::BadInput {
            path: path.to_owned(),
            message: format!("decompresses to {}", over_limit(limit)),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_their_first_bytes() {
        assert_eq!(sniff(b"  {\"format\": \"prof-session\"}"), Format::Session);
        assert_eq!(sniff(b"main;work 3\nmain 1\n"), Format::Folded);
        let perf = b"demo 1/1 [000] 1.0: 1 cpu-clock:\n\t  55aa01 hash+0x10 (/bin/x)\n\n";
        assert_eq!(sniff(perf), Format::PerfScript);
        assert_eq!(
            sniff(&[0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0xff]),
            Format::Pprof
        );
        // A UTF-8 character cut at the end of the head does not make text binary.
        assert_eq!(
            sniff("main;caf\u{e9}".as_bytes().split_last().unwrap().1),
            Format::Folded
        );
    }

    #[test]
    fn text_with_bytes_that_are_not_utf8_is_still_text() {
        assert_eq!(sniff(b"main;w\xffork 3\n"), Format::Folded);
        let perf =
            b"burn 1  7992.386479:    1001001 cpu-clock:pppH: \n\t  141d ma\xffin+0x39 (/b)\n";
        assert_eq!(sniff(perf), Format::PerfScript);
    }

    #[test]
    fn every_perf_script_layout_is_told_by_its_structure() {
        let real = [
            &include_bytes!("../../../../tests/data/import/perf-task-clock-callchains.perf")[..],
            include_bytes!("../../../../tests/data/import/perf-cpu-clock-no-callchain.perf"),
            include_bytes!("../../../../tests/data/import/perf-no-period.perf"),
            include_bytes!("../../../../tests/data/import/perf-mixed-events.perf"),
        ];
        for text in real {
            assert_eq!(sniff(text), Format::PerfScript);
        }
        // Without -g: the frame on the event line, and no indented line at all.
        let no_callchain = b"burn 26036  7992.386479:    1001001 cpu-clock:pppH:      1226 hot70+0x55 (/opt/app/burn)\n";
        assert_eq!(sniff(no_callchain), Format::PerfScript);
        // The older layout: no time, unindented frames.
        let old =
            b"java 19983 cycles:\nffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n";
        assert_eq!(sniff(old), Format::PerfScript);
        // Folded lines whose frames hold numbers and colons stay folded.
        assert_eq!(
            sniff(b"main;std::thread::sleep 10\nmain;a 1 2\n"),
            Format::Folded
        );
    }

    #[test]
    fn a_gzip_bomb_is_refused_with_bounded_output() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..(MAX_DECOMPRESSED >> 20) + 1 {
            std::io::Write::write_all(&mut gz, &zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        let err = gunzip(&bomb, Path::new("bomb.gz"), MAX_DECOMPRESSED)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "bomb.gz: decompresses to more than 256 MiB, the limit for reading a profile \
             (`--max-input MIB` lifts it)"
        );
    }
}
