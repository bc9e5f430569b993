//! `prof diff` and `prof convert --diff` end to end: two real files in different formats, the
//! table and the differential flame graph they give, and the one-line refusals.

use prof::session::{Metadata, Session, SessionBuilder};
use prof_e2e::{prof, prof_stdout, TempDir};
use std::path::{Path, PathBuf};

/// `main → work` and `main → parse`, weighing `work_ms` and `parse_ms` milliseconds of CPU.
fn profile(work_ms: u64, parse_ms: u64) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "/usr/bin/demo".into(),
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    for i in 0..10 {
        b.push_named(&["main", "work"], t, i, work_ms * 100_000);
        b.push_named(&["main", "parse"], t, i, parse_ms * 100_000);
    }
    b.finish()
}

/// The base profile as pprof (converted by `prof convert`) and the new one as a gzipped
/// session: work grows from 300 to 900 ms, parse stays at 100 ms.
fn files(dir: &TempDir) -> (PathBuf, PathBuf) {
    let base_json = dir.join("base.json");
    prof::session::save(&profile(300, 100), &base_json).unwrap();
    let base = dir.join("base.pb.gz");
    let out = prof(&["convert", s(&base_json), "-o", s(&base)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = dir.join("new.json.gz");
    prof::session::save(&profile(900, 100), &new).unwrap();
    (base, new)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The whitespace-separated cells of the table row for `name`.
fn row(table: &str, name: &str) -> Vec<String> {
    let line = table.lines().find(|l| l.ends_with(&format!("  {name}")));
    let line = line.unwrap_or_else(|| panic!("no row {name} in\n{table}"));
    line.split_whitespace().map(str::to_owned).collect()
}

/// Runs `prof args`, expecting exit code 2 and one line on standard error; returns the line.
fn refused(args: &[&str]) -> String {
    let out = prof(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "prof {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn prof_diff_ranks_functions_by_change_in_shares_of_each_total() {
    let dir = TempDir::new("diff-table");
    let (base, new) = files(&dir);
    let table = prof_stdout(&["diff", s(&base), s(&new)]);
    assert!(table.starts_with("diff of cpu (nanoseconds), self weight, each side as a share of its own total; top 2 by change\n"), "{table}");
    assert!(table.contains("base  "), "{table}");
    // work: 75% of 400 ms, then 90% of 1 s; parse: 25%, then 10%.
    assert_eq!(row(&table, "work"), ["75.0%", "90.0%", "+15.0%", "work"]);
    assert_eq!(row(&table, "parse"), ["25.0%", "10.0%", "-15.0%", "parse"]);

    let table = prof_stdout(&["diff", s(&base), s(&new), "--absolute", "--top", "1"]);
    assert_eq!(
        row(&table, "work"),
        ["300", "ms", "900", "ms", "+600", "ms", "work"]
    );
    assert!(!table.contains("parse"), "--top 1: {table}");

    let table = prof_stdout(&["diff", s(&new), s(&new), "--sort", "total"]);
    for name in ["main", "work", "parse"] {
        assert_eq!(row(&table, name)[2], "0.0%", "{table}");
    }
}

#[test]
fn prof_diff_refuses_different_units_and_bad_files_in_one_line() {
    let dir = TempDir::new("diff-refused");
    let (base, _) = files(&dir);
    let folded = dir.join("counts.folded");
    std::fs::write(&folded, "main;work 3\nmain;parse 1\n").unwrap();
    let err = refused(&["diff", s(&base), s(&folded)]);
    assert!(
        err.contains("counts.folded measures samples (count) but")
            && err.contains("base.pb.gz measures cpu (nanoseconds)"),
        "{err}"
    );
    let bad = dir.join("bad.folded");
    std::fs::write(&bad, "main;work twelve\n").unwrap();
    let err = refused(&["diff", s(&bad), s(&base)]);
    assert!(err.contains("bad.folded"), "{err}");
    let out = prof(&["diff", s(&base), s(&dir.join("missing.json"))]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("missing.json"), "{err}");
}

/// The fill of the frame whose tooltip starts with `name (`, as `(r, g, b)`.
fn fill(svg: &str, name: &str) -> (u8, u8, u8) {
    let at = svg.find(&format!("<title>{name} (")).expect(name);
    let rest = &svg[at..];
    let rgb = &rest[rest.find("fill=\"rgb(").expect("a fill") + 10..];
    let rgb = &rgb[..rgb.find(')').unwrap()];
    let v: Vec<u8> = rgb.split(',').map(|c| c.trim().parse().unwrap()).collect();
    (v[0], v[1], v[2])
}

#[test]
fn convert_diff_draws_growth_red_and_shrinkage_blue() {
    let dir = TempDir::new("diff-svg");
    let (base, new) = files(&dir);
    let svg_path = dir.join("diff.svg");
    prof_stdout(&["convert", s(&new), "--diff", s(&base), "-o", s(&svg_path)]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not XML: {e}"),
        }
    }
    let (r, g, b) = fill(&svg, "work");
    assert!(r == 255 && g < 250 && b < 250, "work grew: {:?}", (r, g, b));
    let (r, g, b) = fill(&svg, "parse");
    assert!(
        b == 255 && r < 250 && g < 250,
        "parse shrank: {:?}",
        (r, g, b)
    );

    // The differential folded stacks behind it: base scaled to the new total (1 s).
    let folded = prof_stdout(&[
        "convert",
        s(&new),
        "--diff",
        s(&base),
        "--to",
        "folded",
        "-o",
        "-",
    ]);
    let mut lines: Vec<&str> = folded.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "main;parse 250000000 100000000",
            "main;work 750000000 900000000"
        ]
    );
}

#[test]
fn convert_diff_refuses_other_formats_and_units_in_one_line() {
    let dir = TempDir::new("diff-convert-refused");
    let (base, new) = files(&dir);
    let out_path = dir.join("diff.pb.gz");
    let err = refused(&["convert", s(&new), "--diff", s(&base), "-o", s(&out_path)]);
    assert!(err.contains("--to svg or --to folded"), "{err}");
    let folded = dir.join("counts.folded");
    std::fs::write(&folded, "main;work 3\n").unwrap();
    let svg_path = dir.join("diff.svg");
    let err = refused(&["convert", s(&new), "--diff", s(&folded), "-o", s(&svg_path)]);
    assert!(err.contains("a diff needs both in one unit"), "{err}");
    assert!(!out_path.exists() && !svg_path.exists());
}
