//! In a release build (inlined, this workspace's debug setting), two different closures with
//! the same short name, `{closure#0}` of `demo::run` and of `workload::run`, are two frames
//! with their own qualified names, never one row: builds the `inlined_names`
//! example with `--release` and reads its verdict.

#[test]
fn inlined_closures_with_the_same_short_name_are_told_apart() {
    let stdout = prof_e2e::run_release_example("inlined_names");
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
