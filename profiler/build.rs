//! Builds the browser viewer (`viewer/`, compiled to wasm32 and bound with wasm-bindgen) so the
//! `prof` binary can embed it. The output lands in `$OUT_DIR/pkg`, which `serve::assets` embeds
//! with rust-embed; since this runs whenever the viewer's sources change, the embedded viewer is
//! never stale.
//!
//! Without the `serve` feature nothing is done: that spares library users the wasm tool chain.
//!
//! With the `cli` feature it also builds the allocation interposer (`preload/`, a `cdylib` that
//! `prof record --mode alloc` loads into the recorded program) into `$OUT_DIR`, which the binary
//! embeds; for another target than the host's (a cross build, or clippy for another platform)
//! it writes an empty file instead, and that binary's alloc mode says it lacks the interposer.
//!
//! A missing `wasm32-unknown-unknown` target is an error naming the command that installs it. Only
//! inside prof's own workspace, whose `.cargo/config.toml` sets `PROF_INSTALL_WASM_TARGET=1`, is it
//! installed with rustup: a crate that depends on prof never has its tool chain changed.

#[cfg(feature = "serve")]
use std::{
    env,
    path::{Path, PathBuf},
    process::{exit, Command},
};

#[cfg(feature = "serve")]
const WASM_TARGET: &str = "wasm32-unknown-unknown";

#[cfg(not(feature = "serve"))]
fn main() {}

#[cfg(feature = "serve")]
fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("profiler/ sits in the workspace");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));

    for path in [
        root.join("viewer/src"),
        root.join("viewer/Cargo.toml"),
        root.join("web"),
        root.join("Cargo.lock"),
        // The one crate of the workspace the viewer is built on.
        manifest_dir.join("session/src"),
        manifest_dir.join("session/Cargo.toml"),
    ] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-env-changed=PROF_VIEWER_PROFILE");
    println!("cargo:rerun-if-env-changed=PROF_INSTALL_WASM_TARGET");

    ensure_wasm_target();
    let wasm = build_viewer(root, &out_dir);
    bindgen(&wasm, &out_dir.join("pkg"));
    #[cfg(feature = "cli")]
    build_preload(root, &out_dir);
}

/// `cargo build --release --locked` of the workspace member whose manifest is `manifest`, in
/// `target_dir` (the outer build holds a lock on its own), without the outer build's flags
/// (coverage, sanitizers, target-cpu=native) or target.
#[cfg(feature = "serve")]
fn nested_build(root: &Path, manifest: &str, target_dir: &Path) -> Command {
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
/// `cargo build`, `cargo test` and `cargo doc` share one nested build instead of making one each.
#[cfg(feature = "serve")]
fn beside_profiles(out_dir: &Path, name: &str) -> PathBuf {
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(|target| target.join(name))
        .unwrap_or_else(|| out_dir.join(name))
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

/// Checks that the tool chain has the wasm32 target; when it lacks it, installs it with rustup
/// inside prof's own workspace (`PROF_INSTALL_WASM_TARGET=1`), and otherwise stops with one line
/// saying what to run.
#[cfg(feature = "serve")]
fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(sysroot) = sysroot {
        if sysroot.join("lib/rustlib").join(WASM_TARGET).exists() {
            return;
        }
    }
    if env::var_os("PROF_INSTALL_WASM_TARGET").is_none_or(|v| v != "1") {
        fail(&format!(
            "prof's `serve` feature builds the browser viewer for {WASM_TARGET}, which this tool chain lacks: run `rustup target add {WASM_TARGET}`"
        ));
    }
    println!(
        "cargo:warning=installing the {WASM_TARGET} target with rustup (needed for the viewer)"
    );
    let added = Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !added {
        fail(&format!(
            "the {WASM_TARGET} target is missing and `rustup target add {WASM_TARGET}` failed: run it yourself, then build again"
        ));
    }
}

/// Compiles `viewer/` for wasm32 in its own target directory (the outer build holds a lock on
/// the normal one) and returns the path of the `.wasm` file.
///
/// That directory sits beside the outer build's profiles (`target/wasm-viewer`), so `cargo check`,
/// `cargo build`, `cargo test` and `cargo doc` share one wasm build instead of making one each.
#[cfg(feature = "serve")]
fn build_viewer(root: &Path, out_dir: &Path) -> PathBuf {
    let target_dir = beside_profiles(out_dir, "wasm-viewer");
    let mut cmd = nested_build(root, "viewer/Cargo.toml", &target_dir);
    cmd.args(["--target", WASM_TARGET])
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_LTO", "true")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        // Optimized for size: 664 kB instead of 710 kB, and in node and Chromium (alternated
        // under the same load) reading the 1M-sample bench file was faster, not slower (a median
        // of 175 against 202 ms in node, 165 against 187 ms in Chromium); "z" made it 591 kB but
        // read 20% and drew the first views twice as slowly. Measured again at 97e06d2 (the
        // viewer bench's binaries alternated, 9 page loads each): "z" makes it 444.6 kB against
        // 501.9 kB, but decodes the 1M-sample session 1.6 times as slowly (medians 344 against
        // 214 ms), paints first at 699 against 541 ms, and zooms in 23 to 27 against 18 to 20 ms.
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "s")
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        // The page downloads the module: no symbol names in it.
        .env("CARGO_PROFILE_RELEASE_STRIP", "symbols");
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("could not run cargo to build the viewer: {e}")));
    if !status.success() {
        fail("building the viewer (viewer/) for wasm32 failed; the errors are above");
    }
    target_dir
        .join(WASM_TARGET)
        .join("release")
        .join("prof_viewer.wasm")
}

/// Generates the JS glue and the final `.wasm` (ES module form, loaded by `web/`) into `pkg`.
#[cfg(feature = "serve")]
fn bindgen(wasm: &Path, pkg: &Path) {
    let mut bindgen = wasm_bindgen_cli_support::Bindgen::new();
    bindgen
        .input_path(wasm)
        .web(true)
        .unwrap_or_else(|e| fail(&format!("wasm-bindgen: {e}")))
        .typescript(false)
        .out_name("prof_viewer");
    if let Err(e) = bindgen.generate(pkg) {
        fail(&format!("wasm-bindgen could not process the viewer: {e}"));
    }
}

#[cfg(feature = "serve")]
fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    exit(1);
}
