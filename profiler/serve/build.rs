//! Builds the browser viewer (`viewer/`, compiled to wasm32 and bound with wasm-bindgen) so the
//! server can embed it. The output lands in `$OUT_DIR/pkg`, which `assets` embeds with
//! rust-embed; since this runs whenever the viewer's sources change (the viewer, the page, and
//! `prof-session`, the one crate of the workspace the viewer is built on), the embedded viewer is
//! never stale, and nothing else makes it run again.
//!
//! Without the `viewer` feature nothing is done: the `/debug/pprof` endpoint uses this crate's
//! HTTP side alone, and a library user who wants only that needs no wasm tool chain.
//!
//! A missing `wasm32-unknown-unknown` target is an error naming the command that installs it. Only
//! inside prof's own workspace, whose `.cargo/config.toml` sets `PROF_INSTALL_WASM_TARGET=1`, is it
//! installed with rustup: a crate that depends on prof never has its tool chain changed.

#[cfg(feature = "viewer")]
#[path = "../nested_build.rs"]
mod nested_build;

#[cfg(feature = "viewer")]
use nested_build::{beside_profiles, fail, nested_build};
#[cfg(feature = "viewer")]
use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

#[cfg(feature = "viewer")]
const WASM_TARGET: &str = "wasm32-unknown-unknown";

#[cfg(not(feature = "viewer"))]
fn main() {}

#[cfg(feature = "viewer")]
fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("profiler/serve/ sits in the workspace");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));

    for path in [
        root.join("viewer/src"),
        root.join("viewer/Cargo.toml"),
        root.join("web"),
        root.join("Cargo.lock"),
        // The one crate of the workspace the viewer is built on.
        root.join("profiler/session/src"),
        root.join("profiler/session/Cargo.toml"),
    ] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-env-changed=PROF_VIEWER_PROFILE");
    println!("cargo:rerun-if-env-changed=PROF_INSTALL_WASM_TARGET");

    ensure_wasm_target();
    let wasm = build_viewer(root, &out_dir);
    bindgen(&wasm, &out_dir.join("pkg"));
}

/// Checks that the tool chain has the wasm32 target; when it lacks it, installs it with rustup
/// inside prof's own workspace (`PROF_INSTALL_WASM_TARGET=1`), and otherwise stops with one line
/// saying what to run.
#[cfg(feature = "viewer")]
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
#[cfg(feature = "viewer")]
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
#[cfg(feature = "viewer")]
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
