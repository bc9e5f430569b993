//! Sampler benchmark (filled in below).
fn main() {}
