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

/// The formats a profile is written in, as `prof convert --to` and [`Format::from_path`] name
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// A prof session file: JSON, gzipped when the name ends in `.gz` (what `prof serve`,
    /// `prof report` and the viewer open).
    Session,
    /// Folded stacks, `root;…;leaf weight` a line (flamegraph.pl, inferno).
    Folded,
    /// A flame graph SVG (inferno).
    Svg,
    /// speedscope's JSON.
    Speedscope,
    /// pprof's profile.proto, gzipped, as `go tool pprof` writes and reads it.
    Pprof,
    /// A Graphviz dot call graph.
    Dot,
    /// Source lines annotated with their weights (the source files named in the profile are
    /// read from disk).
    Source,
    /// One self-contained HTML file: the viewer and the profile, to open from disk offline.
    Html,
}

impl Format {
    /// Each format a file name implies, with the endings (compared without case) that imply it,
    /// longest first where one ends another (`.speedscope.json` before `.json`).
    pub const BY_NAME: [(Format, &'static [&'static str]); 7] = [
        (Format::Speedscope, &[".speedscope.json", ".speedscope"]),
        (Format::Folded, &[".folded", ".collapsed", ".folded.txt"]),
        (Format::Svg, &[".svg"]),
        (Format::Pprof, &[".pb.gz", ".pprof", ".pb"]),
        (Format::Dot, &[".dot", ".gv"]),
        (Format::Session, &[".json", ".json.gz"]),
        (Format::Html, &[".html", ".htm"]),
    ];

    /// The format the name of `path` implies (see [`Format::BY_NAME`]); `None` for a name that
    /// implies none (`out.txt`). [`Format::Source`] is never implied.
    ///
    /// ```
    /// use prof_session::export::Format;
    /// use std::path::Path;
    /// assert_eq!(Format::from_path(Path::new("cpu.pb.gz")), Some(Format::Pprof));
    /// assert_eq!(Format::from_path(Path::new("out.speedscope.json")), Some(Format::Speedscope));
    /// assert_eq!(Format::from_path(Path::new("profile.json.gz")), Some(Format::Session));
    /// assert_eq!(Format::from_path(Path::new("notes.txt")), None);
    /// ```
    pub fn from_path(path: &std::path::Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        Format::BY_NAME
            .iter()
            .find(|(_, endings)| endings.iter().any(|e| name.ends_with(e)))
            .map(|(format, _)| *format)
    }

    /// The endings that imply a format, for messages: `.json, .json.gz, .folded, …`.
    pub fn known_endings() -> String {
        let mut all: Vec<&str> = Format::BY_NAME
            .iter()
            .flat_map(|(_, endings)| endings.iter().copied())
            .collect();
        all.sort_by_key(|e| Format::BY_NAME.iter().position(|(_, es)| es.contains(e)));
        all.join(", ")
    }
}
