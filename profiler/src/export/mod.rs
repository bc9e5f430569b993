//! Writers of the formats other tools read: folded stacks, flame graph SVG, speedscope, pprof,
//! Graphviz dot and source annotation. Each takes a session and any `impl Write`.
