//! What both build scripts of this workspace that build another member share (`profiler/build.rs`
//! builds the allocation interposer, `profiler/serve/build.rs` the wasm viewer): a nested
//! `cargo build` isolated from the outer one, its target directory, and failing with one line.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

/// `cargo build --release --locked` of the workspace member whose manifest is `manifest`, in
/// `target_dir` (the outer build holds a lock on its own), without the outer build's flags
/// (coverage, sanitizers, target-cpu=native) or target.
pub fn nested_build(root: &Path, manifest: &str, target_dir: &Path) -> Command {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--release", "--locked"])
        .arg("--manifest-path")
        .arg(root.join(manifest))
        .arg("--target-dir")
        .arg(target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET");
    cmd
}

/// A directory named `name` beside the outer build's profiles (`target/NAME`), so `cargo check`,
/// `cargo build`, `cargo test` and `cargo doc` share one nested build instead of making one each,
/// and so do the builds for other targets (`target/TRIPLE/` holds a `CACHEDIR.TAG` of its own:
/// the outermost one is taken, since what is built here does not depend on the outer target).
pub fn beside_profiles(out_dir: &Path, name: &str) -> PathBuf {
    out_dir
        .ancestors()
        .filter(|dir| dir.join("CACHEDIR.TAG").is_file())
        .last()
        .map(|target| target.join(name))
        .unwrap_or_else(|| out_dir.join(name))
}

/// Stops the build script with one line saying what went wrong.
pub fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    exit(1);
}
