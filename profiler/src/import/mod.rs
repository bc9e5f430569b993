//! Readers that turn other tools' profiles (folded stacks, `perf script`, pprof) into sessions.
//!
//! [`sniff`] tells the formats apart from a file's first bytes, so one command accepts them all.

#[cfg(feature = "native")]
mod file;
pub mod folded;
#[cfg(feature = "native")]
pub mod perf;
pub mod pprof;

use crate::{Error, Result};
use std::io::Read;
use std::path::Path;

#[cfg(feature = "native")]
pub use file::load_any;
pub use folded::read_folded;
pub use pprof::read_pprof;

/// The most bytes a compressed input may expand to (256 MiB): a gzip bomb stops here.
pub const MAX_DECOMPRESSED: u64 = 256 << 20;

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

/// Which format `head`, the first bytes of a file (after decompression), is in: JSON is a
/// session, text with indented address lines is `perf script` output, other text is folded
/// stacks, and anything else is taken for pprof.
pub fn sniff(head: &[u8]) -> Format {
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A multi-byte character cut off at the end of the head is still text.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return Format::Pprof,
    };
    if text.contains('\0') || text.is_empty() && !head.is_empty() {
        return Format::Pprof;
    }
    if text.trim_start().starts_with('{') {
        return Format::Session;
    }
    let perf_frame = |line: &str| {
        let trimmed = line.trim_start();
        trimmed.len() < line.len()
            && trimmed
                .split_whitespace()
                .next()
                .is_some_and(|addr| addr.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    if text.lines().any(perf_frame) {
        Format::PerfScript
    } else {
        Format::Folded
    }
}

/// True when `bytes` start with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Decompresses gzip `bytes`, refusing output beyond [`MAX_DECOMPRESSED`].
pub(crate) fn gunzip(bytes: &[u8], path: &Path) -> Result<Vec<u8>> {
    read_limited(flate2::read::GzDecoder::new(bytes), path)
}

/// Reads all of `input` (e.g. a decompressing reader), refusing more than [`MAX_DECOMPRESSED`]
/// bytes so a gzip bomb fails fast with bounded memory.
pub(crate) fn read_limited(input: impl Read, path: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    input
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::BadInput {
            path: path.to_owned(),
            message: format!("cannot decompress: {e}"),
        })?;
    if out.len() as u64 > MAX_DECOMPRESSED {
        return Err(Error::BadInput {
            path: path.to_owned(),
            message: format!("decompresses to more than {} MiB", MAX_DECOMPRESSED >> 20),
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
    fn a_gzip_bomb_is_refused_with_bounded_output() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..(MAX_DECOMPRESSED >> 20) + 1 {
            std::io::Write::write_all(&mut gz, &zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        let err = gunzip(&bomb, Path::new("bomb.gz")).unwrap_err().to_string();
        assert_eq!(err, "bomb.gz: decompresses to more than 256 MiB");
    }
}
