//! Golden files: every export of the [fixture](super::fixture) session, compared byte for byte
//! with the committed file under `src/export/golden/`. A change to an export's output fails here
//! until it is looked at and blessed: `PROF_BLESS=1 cargo test -p prof --lib export::golden`
//! (with `--features serve` for the single-file HTML) rewrites the files, and `git diff` shows
//! what changed.

use super::fixture;
use crate::aggregate::{DiffSide, DiffTree};
use crate::session::Session;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/export/golden")
}

/// Compares `got` with golden file `name`, or rewrites it under `PROF_BLESS`. A mismatch names
/// the file, the first differing line of both (or byte offset, for binary files) and how to bless.
fn check(name: &str, got: &[u8]) {
    let path = golden_dir().join(name);
    if std::env::var_os("PROF_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let bless =
        "PROF_BLESS=1 cargo test -p prof --lib export::golden rewrites it (review with git diff)";
    let want = match std::fs::read(&path) {
        Ok(want) => want,
        Err(e) => panic!("{}: {e}; {bless}", path.display()),
    };
    if want == got {
        return;
    }
    match (std::str::from_utf8(&want), std::str::from_utf8(got)) {
        (Ok(want), Ok(got)) => {
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(w, g)| w != g)
                .unwrap_or_else(|| want.lines().count().min(got.lines().count()));
            panic!(
                "{} differs from the export at line {}:\n- {}\n+ {}\n({} lines committed, {} written); {bless}",
                path.display(),
                line + 1,
                want.lines().nth(line).unwrap_or("(end of file)"),
                got.lines().nth(line).unwrap_or("(end of output)"),
                want.lines().count(),
                got.lines().count(),
            )
        }
        _ => {
            let at = want.iter().zip(got).take_while(|(w, g)| w == g).count();
            panic!(
                "{} differs from the export at byte {at} ({} bytes committed, {} written); {bless}",
                path.display(),
                want.len(),
                got.len()
            )
        }
    }
}

/// `session`'s export by `write`, as bytes.
fn export(write: impl FnOnce(&mut Vec<u8>) -> crate::Result<()>) -> Vec<u8> {
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

#[cfg(feature = "sampler")]
#[test]
fn svg_matches_its_golden_file() {
    check(
        "fixture.svg",
        &export(|out| super::svg::write_svg(&fixture::session(), out)),
    );
}

#[cfg(feature = "sampler")]
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

/// The single-file viewer's own parts: its `<title>`, the script elements it adds (their
/// attributes, and the session's payload in full; not the embedded page modules, wasm and start
/// script, which are the viewer's files and change with it).
#[cfg(feature = "serve")]
#[test]
fn standalone_html_matches_its_golden_file() {
    let html =
        export(|out| crate::serve::write_standalone_html(&fixture::session(), "demo.json", out));
    let html = String::from_utf8(html).unwrap();
    let title = html.lines().find(|l| l.contains("<title>")).unwrap();
    let mut own = format!("{}\n", title.trim());
    // Element by element, so a `<script` inside an embedded module is not taken for one.
    let mut rest = html.as_str();
    while let Some(at) = rest.find("<script") {
        let (open, after) = rest[at..].split_once('>').unwrap();
        let (body, after) = after.split_once("</script>").unwrap();
        let body = if open.contains("data-prof-session") {
            body
        } else {
            "(embedded)"
        };
        own.push_str(&format!("{open}>{body}</script>\n"));
        rest = after;
    }
    check("fixture.standalone.txt", own.as_bytes());
}
