//! Writers of the formats other tools read: folded stacks, flame graph SVG, speedscope, pprof,
//! Graphviz dot and source annotation. Each takes a session and any `impl Write`.
//!
//! ```
//! use prof_session::session::{FrameSpec, Metadata, SessionBuilder};
//!
//! // Two samples of `main;parse` and one of `main;work`, on one thread.
//! let mut b = SessionBuilder::new(Metadata::default());
//! let main = b.intern_frame(&FrameSpec::named("main"));
//! let parse = b.intern_frame(&FrameSpec::named("parse"));
//! let work = b.intern_frame(&FrameSpec::named("work"));
//! let thread = b.thread(1, "main");
//! let parsing = b.intern_stack_path(&[main, parse]).unwrap();
//! let working = b.intern_stack_path(&[main, work]).unwrap();
//! b.push_sample(parsing, thread, 0, 1_000_000);
//! b.push_sample(parsing, thread, 1_000_000, 1_000_000);
//! b.push_sample(working, thread, 2_000_000, 1_000_000);
//! let session = b.finish();
//! let mut folded = Vec::new();
//! prof_session::export::write_folded(&session, &mut folded)?;
//! assert_eq!(String::from_utf8(folded).unwrap(), "main;parse 2000000\nmain;work 1000000\n");
//!
//! let mut speedscope = Vec::new();
//! prof_session::export::speedscope::write_speedscope(&session, &mut speedscope)?;
//! let mut pprof = Vec::new(); // gzipped profile.proto, as `go tool pprof` reads it
//! prof_session::export::pprof::write_pprof(&session, &mut pprof)?;
//! # #[cfg(feature = "svg")]
//! # {
//! let mut svg = Vec::new(); // an interactive flame graph (inferno)
//! prof_session::export::svg::write_svg(&session, &mut svg)?;
//! # }
//! # Ok::<(), prof_session::Error>(())
//! ```

pub mod annotate;
pub mod dot;
mod folded;
pub mod pprof;
pub mod speedscope;
#[cfg(feature = "svg")]
pub mod svg;

pub use folded::{write_folded, write_folded_diff, write_folded_tree};

#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
#[cfg(test)]
mod golden_tests;

use crate::session::Session;

/// A one-line title for a session: the program's file name and its arguments, or `profile` when
/// the session does not name its program.
pub fn title(session: &Session) -> String {
    let meta = &session.meta;
    let program = meta.program.rsplit(['/', '\\']).next().unwrap_or_default();
    if program.is_empty() {
        return "profile".to_owned();
    }
    std::iter::once(program)
        .chain(meta.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}
