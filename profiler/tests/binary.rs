//! Makes `cargo test` build the `prof` binary (the end-to-end tests in `tests/` run it) and checks
//! it starts.

#[test]
fn the_binary_prints_its_version() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_prof"))
        .arg("--version")
        .output()
        .expect("prof runs");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("prof "));
}
