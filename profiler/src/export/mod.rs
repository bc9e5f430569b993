//! Writers of the formats other tools read: folded stacks, flame graph SVG, speedscope, pprof,
//! Graphviz dot and source annotation. Each takes a session and any `impl Write`.

mod folded;

pub use folded::{write_folded, write_folded_tree};
