//! Writers of the formats other tools read: folded stacks, flame graph SVG, speedscope, pprof,
//! Graphviz dot and source annotation. Each takes a session and any `impl Write`.

pub mod dot;
mod folded;
pub mod pprof;
pub mod source;
pub mod speedscope;
#[cfg(feature = "sampler")]
pub mod svg;

pub use folded::{write_folded, write_folded_diff, write_folded_tree};

#[cfg(test)]
pub(crate) mod fixture;
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
