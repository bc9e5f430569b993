//! The local HTTP server behind `prof serve` and `Report::open_in_browser`, with the embedded
//! wasm viewer.

pub mod assets;
