//! In a release build (inlined, this workspace's debug setting), two different closures with
//! the same short name, `{closure#0}` of `demo::run` and of `workload::run`, are two frames
//! with their own qualified names, never one row (issue 10): builds the `inlined_names`
//! example with `--release` and reads its verdict.

use std::path::Path;
use std::process::Command;

#[test]
fn r10_inlined_closures_with_the_same_short_name_are_told_apart() {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test>-<hash>  ->  target
    let target = exe
        .ancestors()
        .nth(3)
        .expect("tests live in target/<profile>/deps");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "-p", "prof", "--example"])
        .arg("inlined_names")
        .arg("--target-dir")
        .arg(target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cargo build --release --example inlined_names"
    );
    let example = Path::new(target).join("release/examples/inlined_names");
    let out = Command::new(&example).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{example:?}: {out:?}");
    // "demo closure: P% (NAMES)" and "workload closure: P% (NAMES)": the share of the time
    // under each function's closure, as named with that function's path.
    let share = |module: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{module} closure: ")))
            .unwrap_or_else(|| panic!("no {module} line in {stdout}"));
        let pct = line.split_whitespace().nth(2).unwrap_or("");
        pct.trim_end_matches('%').parse().unwrap_or(f64::NAN)
    };
    assert!(share("demo") >= 25.0, "{stdout}");
    assert!(share("workload") >= 25.0, "{stdout}");
    // No row of the table is a bare closure name shared by both.
    assert!(
        !stdout
            .lines()
            .any(|l| l.trim_end().ends_with(" {closure#0}")),
        "{stdout}"
    );
}
