//! Reading and writing session files through any `Read` / `Write`, gzip included.
//!
//! Reading is defensive: gzip is recognised by its magic bytes, anything that is neither gzip nor
//! JSON is refused at its first byte, and the (decompressed) input is capped at
//! [`ReadOptions::max_bytes`] so a gzip bomb cannot exhaust memory or time.

use super::decode::decode;
use super::file_format::FileOut;
use super::file_reader::read_file;
use super::Session;
use flate2::read::MultiGzDecoder;
use std::io::{self, BufRead, BufReader, Read, Write};

/// The default cap on a session's size once decompressed: 256 MiB, about 16 million samples.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// How to read a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The most bytes of JSON read, after decompression ([`DEFAULT_MAX_BYTES`]).
    pub max_bytes: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl ReadOptions {
    /// Sets the most bytes of JSON read, after decompression.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// Why a session could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The content is not a valid session: the message says what is wrong, and where.
    #[error("{0}")]
    Invalid(String),
    /// Reading the underlying input failed.
    #[error("{0}")]
    Io(#[source] io::Error),
}

/// How a refusal by size names its limit: with the way to lift it where there is one (the
/// command line's `--max-input`, [`ReadOptions::max_bytes`] in code), not in the page, whose
/// limit is the browser's.
#[cfg(feature = "fs")]
const THE_LIMIT: &str = "the limit for a session file, which `--max-input MIB` lifts";
#[cfg(not(feature = "fs"))]
const THE_LIMIT: &str = "the limit for a session file";

impl ReadError {
    /// The error for a session of more than `max_bytes` bytes of JSON: what [`read_with`] says
    /// of one, for a reader that stops gathering a file at the limit.
    pub fn too_large(max_bytes: u64) -> ReadError {
        ReadError::Invalid(format!("{} ({THE_LIMIT})", TooLarge(max_bytes)))
    }

    /// The library error for this failure while reading `path` (what a user sees, with the name).
    pub fn at(self, path: &std::path::Path) -> crate::error::Error {
        match self {
            ReadError::Invalid(message) => crate::error::Error::BadInput {
                path: path.to_owned(),
                message,
            },
            ReadError::Io(source) => crate::error::Error::Io {
                path: path.to_owned(),
                source,
            },
        }
    }
}

/// Marks the error a [`Limited`] reader returns once the cap is passed.
#[derive(Debug)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "larger than {} MiB of JSON", self.0 >> 20)
    }
}

impl std::error::Error for TooLarge {}

/// The error for a file of `size` bytes, more than `max_bytes`, that starts with `head`: garbage
/// is called garbage, a session that is merely too large is called too large.
#[cfg(feature = "fs")]
pub(crate) fn too_large(head: &[u8], size: u64, max_bytes: u64) -> ReadError {
    sniff(head).err().unwrap_or_else(|| {
        ReadError::Invalid(format!(
            "the file is {} MiB, larger than {} MiB ({THE_LIMIT})",
            size >> 20,
            max_bytes >> 20
        ))
    })
}

/// A reader that fails (rather than ending quietly) once more than `left` bytes are read.
struct Limited<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.left + 1).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                TooLarge(self.cap),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn io_error(e: io::Error, kind: Kind) -> ReadError {
    if let Some(too_large) = e.get_ref().and_then(|i| i.downcast_ref::<TooLarge>()) {
        return ReadError::too_large(too_large.0);
    }
    if kind == Kind::Json {
        return ReadError::Io(e);
    }
    match e.kind() {
        // flate2 reports corrupt compressed data this way.
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
            ReadError::Invalid(format!("corrupt gzip data: {e}"))
        }
        io::ErrorKind::UnexpectedEof => ReadError::Invalid(format!("truncated gzip data: {e}")),
        _ => ReadError::Io(e),
    }
}

/// Reads a session (JSON or gzipped JSON) with the default [`ReadOptions`].
pub fn read(input: impl Read) -> Result<Session, ReadError> {
    read_with(input, ReadOptions::default())
}

/// What the first bytes of an input say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gzip,
    Json,
}

/// Tells gzip from JSON by the first bytes, refusing anything else at once.
fn sniff(head: &[u8]) -> Result<Kind, ReadError> {
    if head.starts_with(&[0x1f, 0x8b]) {
        return Ok(Kind::Gzip);
    }
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        None if head.is_empty() => Err(ReadError::Invalid("empty file".to_owned())),
        Some(&b'{') | None => Ok(Kind::Json),
        Some(&other) => Err(ReadError::Invalid(format!(
            "not a prof session: starts with byte 0x{other:02x}, expected JSON or gzip"
        ))),
    }
}

/// Reads a session (JSON or gzipped JSON).
///
/// The whole (decompressed) input is read into memory first, up to [`ReadOptions::max_bytes`],
/// then parsed; input that is neither JSON nor gzip is refused at its first bytes.
pub fn read_with(input: impl Read, options: ReadOptions) -> Result<Session, ReadError> {
    read_sized(input, options, 0)
}

/// The size gzip `bytes` say they decompress to: [`gzip_size_hint`] of their last four bytes.
pub(crate) fn gzip_bytes_size_hint(bytes: &[u8]) -> u64 {
    match bytes.len().checked_sub(4).map(|at| &bytes[at..]) {
        Some(trailer) if bytes.starts_with(&[0x1f, 0x8b]) => {
            gzip_size_hint(trailer.try_into().unwrap_or_default(), bytes.len() as u64)
        }
        _ => 0,
    }
}

/// The size a gzip file of `compressed_len` bytes that ends in `trailer` says it decompresses
/// to: its last member's ISIZE (the size modulo 2^32), a hint to reserve room by, never trusted
/// further, and never more than deflate can make of that many bytes (1032 to 1), so a forged
/// trailer cannot make a small file reserve much.
pub(crate) fn gzip_size_hint(trailer: [u8; 4], compressed_len: u64) -> u64 {
    u64::from(u32::from_le_bytes(trailer)).min(compressed_len.saturating_mul(1032))
}

/// [`read_with`], reserving room for `size_hint` bytes of JSON (at most `max_bytes`) at once:
/// a vector that grows by doubling has its spare room written (zeroed) by `read_to_end`, 22 MB
/// of resident memory for 42 MB of JSON.
pub(crate) fn read_sized(
    input: impl Read,
    options: ReadOptions,
    size_hint: u64,
) -> Result<Session, ReadError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let kind = sniff(input.fill_buf().map_err(ReadError::Io)?)?;
    let reserve = size_hint.min(options.max_bytes).saturating_add(1);
    let mut json = Vec::with_capacity(usize::try_from(reserve).unwrap_or(0));
    let limit = |inner| Limited {
        inner,
        left: options.max_bytes,
        cap: options.max_bytes,
    };
    match kind {
        Kind::Gzip => limit(Box::new(MultiGzDecoder::new(input)) as Box<dyn Read>),
        Kind::Json => limit(Box::new(input) as Box<dyn Read>),
    }
    .read_to_end(&mut json)
    .map_err(|e| io_error(e, kind))?;
    if kind == Kind::Gzip {
        sniff(&json)?;
    }
    parse(&json)
}

/// Reads a session (JSON or gzipped JSON) that is already in memory, with the default
/// [`ReadOptions`].
///
/// Unlike [`read`], uncompressed JSON is parsed where it lies: the session's packed columns are
/// decoded straight from `bytes` into the session, with no copy of the input, which is what lets
/// the viewer read a file of a hundred megabytes in a few times that much memory.
pub fn read_bytes(bytes: &[u8]) -> Result<Session, ReadError> {
    read_bytes_with(bytes, ReadOptions::default())
}

/// [`read_bytes`] with options: JSON larger than [`ReadOptions::max_bytes`] (after
/// decompression) is refused.
pub fn read_bytes_with(bytes: &[u8], options: ReadOptions) -> Result<Session, ReadError> {
    match sniff(bytes)? {
        Kind::Gzip => read_sized(bytes, options, gzip_bytes_size_hint(bytes)),
        Kind::Json => read_json_bytes(bytes, options),
    }
}

/// [`read_bytes_with`] for uncompressed JSON only: gzip is refused with an error that says to
/// decompress it first. A program that never inflates a session itself (the wasm viewer, whose
/// page decompresses with the browser's `DecompressionStream`) links no gzip decoder this way.
pub fn read_json_bytes(bytes: &[u8], options: ReadOptions) -> Result<Session, ReadError> {
    match sniff(bytes)? {
        Kind::Gzip => Err(ReadError::Invalid(
            "gzip-compressed: this reader takes the decompressed JSON".to_owned(),
        )),
        Kind::Json if bytes.len() as u64 > options.max_bytes => {
            Err(ReadError::too_large(options.max_bytes))
        }
        Kind::Json => parse(bytes),
    }
}

fn parse(json: &[u8]) -> Result<Session, ReadError> {
    let file = read_file(json).map_err(|message| ReadError::Invalid(one_line(&message)))?;
    decode(file).map_err(|message| ReadError::Invalid(one_line(&message)))
}

/// `message` on one line: a reader's error may quote the file (an unknown variant is named
/// as it was written), and a quoted line break or other control character would break the
/// one-line error every command prints. They are written as escapes instead.
fn one_line(message: &str) -> String {
    if !message.chars().any(char::is_control) {
        return message.to_owned();
    }
    message
        .chars()
        .map(|c| match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            c if c.is_control() => format!("\\u{{{:x}}}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

/// Writes `session` as session-file JSON (uncompressed; wrap `output` in a gzip encoder for
/// `.json.gz`).
pub fn write(session: &Session, output: impl Write) -> io::Result<()> {
    let mut output = io::BufWriter::with_capacity(1 << 16, output);
    serde_json::to_writer(&mut output, &FileOut::new(session))?;
    output.flush()
}
