//! Golden files: every export of the [fixture](super::fixture) session, compared byte for byte
//! with the committed file under `src/export/golden/`. A change to an export's output fails here
//! until it is looked at and blessed: `PROF_BLESS=1 cargo test -p prof-session --lib
//! export::golden --all-features` rewrites the files, and `git diff` shows what changed.

use super::fixture;
use crate::aggregate::{DiffSide, DiffTree};
use crate::session::Session;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/export/golden")
}

/// Compares `got` with golden file `name` (see [`fixture::check_golden`]).
fn check(name: &str, got: &[u8]) {
    fixture::check_golden(
        &golden_dir().join(name),
        got,
        "PROF_BLESS=1 cargo test -p prof-session --lib export::golden",
    );
}

/// `session`'s export by `write`, as bytes.
fn export(write: impl FnOnce(&mut Vec<u8>) -> crate::error::Result<()>) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    out
}

/// The fixture with the worker's hot stack half as heavy and the idle stack gone: the `new` side
/// of the diff exports.
fn changed() -> Session {
    let mut session = fixture::session();
    for i in 0..session.samples.len() {
        if session.samples.weight[i] == 120 {
            session.samples.weight[i] = 60;
        }
        if session.samples.weight[i] == 50 {
            session.samples.weight[i] = 0;
        }
    }
    session
}

fn diff() -> DiffTree {
    let (base, new) = (fixture::session(), changed());
    DiffTree::between(
        DiffSide {
            label: "base.json",
            session: &base,
        },
        DiffSide {
            label: "new.json",
            session: &new,
        },
        false,
    )
    .unwrap()
}

/// The fixture's source file, as `write_source` reads it.
fn main_rs(file: &str) -> Option<String> {
    (file == "src/main.rs").then(|| {
        (1..=25)
            .map(|n| format!("// line {n} of main.rs\n"))
            .collect()
    })
}

#[test]
fn folded_matches_its_golden_file() {
    check(
        "fixture.folded",
        &export(|out| super::write_folded(&fixture::session(), out)),
    );
}

#[test]
fn folded_diff_matches_its_golden_file() {
    check(
        "fixture.diff.folded",
        &export(|out| super::write_folded_diff(&diff(), out)),
    );
}

#[test]
fn speedscope_matches_its_golden_file() {
    check(
        "fixture.speedscope.json",
        &export(|out| super::speedscope::write_speedscope(&fixture::session(), out)),
    );
}

#[test]
fn pprof_matches_its_golden_files() {
    let session = fixture::session();
    check(
        "fixture.pb.gz",
        &export(|out| super::pprof::write_pprof(&session, out)),
    );
    // The same profile decoded, so a change shows as a readable diff.
    let decoded = format!("{:#?}\n", super::pprof::to_profile(&session));
    check("fixture.pprof.txt", decoded.as_bytes());
}

#[test]
fn dot_matches_its_golden_file() {
    check(
        "fixture.dot",
        &export(|out| {
            super::dot::write_dot(&fixture::session(), &super::dot::DotOptions::default(), out)
        }),
    );
}

#[test]
fn source_annotation_matches_its_golden_file() {
    check(
        "fixture.source.txt",
        &export(|out| super::annotate::write_source(&fixture::session(), 10, main_rs, out)),
    );
}

#[cfg(feature = "svg")]
#[test]
fn svg_matches_its_golden_file() {
    check(
        "fixture.svg",
        &export(|out| super::svg::write_svg(&fixture::session(), out)),
    );
}

#[cfg(feature = "svg")]
#[test]
fn diff_svg_matches_its_golden_file() {
    let (base, new) = (fixture::session(), changed());
    let side = |label, session| DiffSide { label, session };
    check(
        "fixture.diff.svg",
        &export(|out| {
            super::svg::write_diff_svg(side("base.json", &base), side("new.json", &new), false, out)
        }),
    );
}
