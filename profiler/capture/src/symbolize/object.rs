//! What symbolization needs to know of an object loaded in the process: its file, where it was
//! loaded and where its code is. The sampler's loader fills these in while sampling.

/// A loaded ELF object as the dynamic loader reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedObject {
    /// Path as the loader knows it; empty for the main program.
    pub name: String,
    /// Load bias: add to an address in the file to get the address in memory.
    pub bias: u64,
    /// Executable segments, in memory addresses.
    pub exec: Vec<std::ops::Range<u64>>,
}
