//! In a release build (no frame pointers, optimized, inlined), at least 99% of the samples
//! unwind to `main`: builds the `stack_depth` example with `--release` and reads its verdict.

use std::path::Path;
use std::process::Command;

#[test]
fn a_release_build_without_frame_pointers_unwinds_to_main() {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test>-<hash>  ->  target
    let target = exe
        .ancestors()
        .nth(3)
        .expect("tests live in target/<profile>/deps");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "-p", "prof", "--example"])
        .arg("stack_depth")
        .arg("--target-dir")
        .arg(target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cargo build --release --example stack_depth"
    );
    let example = Path::new(target).join("release/examples/stack_depth");
    let out = Command::new(&example).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{example:?}: {out:?}");
    // "reached main: N of M samples (P%) on <timer>"
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let number = |i: usize| -> f64 { words[i].parse().unwrap_or(f64::NAN) };
    assert_eq!(words.get(..2), Some(&["reached", "main:"][..]), "{stdout}");
    let (reached, total) = (number(2), number(4));
    assert!(total >= 500.0, "{stdout}");
    assert!(reached / total >= 0.99, "{stdout}");
}
