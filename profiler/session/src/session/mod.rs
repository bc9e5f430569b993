//! The session model: what a profile is, independent of how it was recorded.
//!
//! The sampler produces a [`Session`]; everything else (aggregation, exports, the viewer) consumes
//! one. This module knows nothing about the sampler. Sessions are stored as versioned JSON (see
//! `docs/session-format.md`): [`read()`] and [`write()`] work on any reader or writer, and with the
//! `fs` feature [`load()`] and [`save()`] work on files, gzipped when the name ends in `.gz`.
//!
//! ```
//! use prof_session::session::{FrameSpec, Metadata, SessionBuilder};
//!
//! let mut b = SessionBuilder::new(Metadata::default());
//! let main = b.intern_frame(&FrameSpec::named("main"));
//! let thread = b.thread(1, "main");
//! let stack = b.intern_stack_path(&[main]).unwrap();
//! b.push_sample(stack, thread, 0, 1_000_000);
//! let session = b.finish();
//!
//! let mut json = Vec::new();
//! prof_session::session::write(&session, &mut json)?;
//! assert_eq!(prof_session::session::read(&json[..])?, session);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod builder;
mod column;
mod date;
mod decode;
#[cfg(feature = "fs")]
mod file;
mod file_format;
mod file_reader;
#[cfg(test)]
pub(crate) mod file_tests;
mod ids;
mod io;
mod model;
mod named;
mod packed;
#[cfg(test)]
pub(crate) mod read_tests;
mod scopes;
mod scopes_file;
#[cfg(test)]
pub(crate) mod scopes_tests;
mod tables;

pub use builder::{FrameSpec, MappingSpec, SessionBuilder};
pub use date::{parse_rfc3339, rfc3339_utc};
#[cfg(feature = "fs")]
pub use file::{
    check_writable, is_gzip_path, load, load_bytes_with, load_with, save, save_within,
    write_atomically, write_file, write_file_with,
};
pub use file_format::{FORMAT_NAME, FORMAT_VERSION};
pub use ids::{FrameId, ProcessIdx, SiteIdx, SpanIdx, StackId, StrId, TaskIdx, ThreadIdx};
pub(crate) use io::gzip_bytes_size_hint;
#[cfg(feature = "fs")]
pub(crate) use io::gzip_size_hint;
pub use io::{
    read, read_bytes, read_bytes_with, read_json_bytes, read_with, write, ReadError, ReadOptions,
    DEFAULT_MAX_BYTES,
};
pub use model::{
    CountedFunction, Mapping, Metadata, Mode, Process, SampleState, SampleType, Samples,
    SamplingEnded, Session, StackNode, Thread, TimedCalls, Unit, UnknownSampleType,
    HEAP_TYPE_NAMES,
};
pub use scopes::{Field, Mark, Poll, Scopes, Site, SiteKind, Span, Task, Tasks};
pub use tables::{Frame, Frames, Strings};
