//! Builds the allocation interposer (`preload/`, a `cdylib` that `prof record --mode alloc`
//! loads into the recorded program) into `$OUT_DIR`, which the `prof` binary embeds (the `cli`
//! feature); for another target than the host's (a cross build, or clippy for another platform)
//! it writes an empty file instead, and that binary's alloc mode says it lacks the interposer.
//! Without `cli` nothing is done. (The browser viewer's wasm build is `prof-serve`'s.)

#[cfg(feature = "cli")]
#[path = "nested_build.rs"]
mod nested_build;

#[cfg(feature = "cli")]
use nested_build::{beside_profiles, fail, nested_build};
#[cfg(feature = "cli")]
use std::{
    env,
    path::{Path, PathBuf},
};

#[cfg(not(feature = "cli"))]
fn main() {}

#[cfg(feature = "cli")]
fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("profiler/ sits in the workspace");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    build_preload(root, &out_dir);
}

/// Builds `preload/` (a `cdylib` depending on libc alone) and copies it to
/// `$OUT_DIR/libprof_preload.so`; an empty file there for another target than the host.
#[cfg(feature = "cli")]
fn build_preload(root: &Path, out_dir: &Path) {
    println!("cargo:rerun-if-changed={}", root.join("preload").display());
    let out = out_dir.join("libprof_preload.so");
    if env::var("TARGET").ok() != env::var("HOST").ok() {
        std::fs::write(&out, b"")
            .unwrap_or_else(|e| fail(&format!("writing {}: {e}", out.display())));
        return;
    }
    let target_dir = beside_profiles(out_dir, "preload");
    let mut cmd = nested_build(root, "preload/Cargo.toml", &target_dir);
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        // Its own symbols are not needed (prof cuts its frames by address); its unwind tables
        // (`.eh_frame`, which stripping keeps) are, to unwind through it.
        .env("CARGO_PROFILE_RELEASE_STRIP", "symbols");
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("could not run cargo to build preload/: {e}")));
    if !status.success() {
        fail("building the allocation interposer (preload/) failed; the errors are above");
    }
    let built = target_dir.join("release").join("libprof_preload.so");
    std::fs::copy(&built, &out)
        .unwrap_or_else(|e| fail(&format!("copying {}: {e}", built.display())));
}
