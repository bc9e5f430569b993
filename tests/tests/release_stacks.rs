//! In a release build (no frame pointers, optimized, inlined), at least 99% of the samples
//! unwind to `main`: builds the `stack_depth` example with `--release` and reads its verdict.

#[test]
fn a_release_build_without_frame_pointers_unwinds_to_main() {
    let stdout = prof_e2e::run_release_example("stack_depth");
    // "reached main: N of M samples (P%) on <timer>"
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let number = |i: usize| -> f64 { words[i].parse().unwrap_or(f64::NAN) };
    assert_eq!(words.get(..2), Some(&["reached", "main:"][..]), "{stdout}");
    let (reached, total) = (number(2), number(4));
    assert!(total >= 500.0, "{stdout}");
    assert!(reached / total >= 0.99, "{stdout}");
}
