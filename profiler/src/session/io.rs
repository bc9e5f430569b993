//! Reading and writing session files through any `Read` / `Write`, gzip included.
//!
//! Reading is defensive: gzip is recognised by its magic bytes, the (decompressed) input is capped
//! at [`ReadOptions::max_bytes`] so a gzip bomb cannot exhaust memory, and the JSON is parsed as a
//! stream, so a large file of garbage fails at its first bad byte instead of being read whole.

use super::decode::decode;
use super::format::{SessionFile, SessionFileOut};
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

/// Marks the error a [`Limited`] reader returns once the cap is passed.
#[derive(Debug)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "larger than {} MiB of JSON", self.0 >> 20)
    }
}

impl std::error::Error for TooLarge {}

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

fn io_error(e: io::Error) -> ReadError {
    if let Some(too_large) = e.get_ref().and_then(|i| i.downcast_ref::<TooLarge>()) {
        return ReadError::Invalid(format!("{too_large} (the limit for a session file)"));
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

/// Reads a session (JSON or gzipped JSON).
pub fn read_with(input: impl Read, options: ReadOptions) -> Result<Session, ReadError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let head = input.fill_buf().map_err(io_error)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        let gz = BufReader::with_capacity(1 << 16, MultiGzDecoder::new(input));
        read_json(gz, options)
    } else {
        read_json(input, options)
    }
}

fn read_json(mut input: impl BufRead, options: ReadOptions) -> Result<Session, ReadError> {
    let head = input.fill_buf().map_err(io_error)?;
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        None if head.is_empty() => return Err(ReadError::Invalid("empty file".to_owned())),
        Some(&b'{') | None => {}
        Some(&other) => {
            return Err(ReadError::Invalid(format!(
                "not a prof session: starts with byte 0x{other:02x}, expected JSON or gzip"
            )))
        }
    }
    let limited = Limited {
        inner: input,
        left: options.max_bytes,
        cap: options.max_bytes,
    };
    let file: SessionFile = serde_json::from_reader(limited).map_err(|e| {
        if e.is_io() {
            io_error(e.into())
        } else {
            ReadError::Invalid(e.to_string())
        }
    })?;
    decode(file).map_err(ReadError::Invalid)
}

/// Writes `session` as session-file JSON (uncompressed; wrap `output` in a gzip encoder for
/// `.json.gz`).
pub fn write(session: &Session, output: impl Write) -> io::Result<()> {
    let mut output = io::BufWriter::with_capacity(1 << 16, output);
    serde_json::to_writer(&mut output, &SessionFileOut::new(session))?;
    output.flush()
}
