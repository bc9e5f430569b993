//! How `prof record` names what it samples in C programs as distributions ship them: a stripped
//! program's functions by its file name and their address in the file, the same in every run
//! (so `prof diff` of two runs of one binary shows no change where there was none, in every
//! output: report, folded stacks, the session the viewer reads); C functions whose names read
//! as C++ types (`f`, `i`, `Sa`) by those names. Bounds are shares of CPU time, which the
//! machine's load does not move.

use prof::session::Session;
use prof_e2e::recorded::{build_c, share};
use prof_e2e::{prof_stdout, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The functions of `tests/data/record/names.c` and the least share of CPU time each takes
/// (about 3/5, 1/5 and 1/5).
const FUNCTIONS: [(&str, f64); 3] = [("f", 0.35), ("i", 0.08), ("Sa", 0.08)];

/// Records `exe` (running for 0.5 s of CPU) into `out` and returns the session.
fn record(exe: &Path, out: &Path) -> Session {
    let args = ["record", "-o", s(out), "--", s(exe), "0.5"];
    prof_stdout(&args);
    prof::session::load(out).unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The address of each function of `FUNCTIONS` in `exe`'s symbol table, as `nm` prints it.
fn addresses(exe: &Path) -> Vec<u64> {
    let out = Command::new("nm").arg(exe).output().expect("nm runs");
    let table = String::from_utf8(out.stdout).unwrap();
    FUNCTIONS
        .iter()
        .map(|(name, _)| {
            let line = table
                .lines()
                .find(|l| l.ends_with(&format!(" T {name}")))
                .unwrap_or_else(|| panic!("{name} in\n{table}"));
            u64::from_str_radix(line.split(' ').next().unwrap(), 16).unwrap()
        })
        .collect()
}

/// `names.c` built with `cc -O2`, and a stripped copy of it named `names-stripped`.
fn build(dir: &TempDir) -> (PathBuf, PathBuf) {
    let exe = build_c(dir.path(), "names");
    let stripped = dir.join("names-stripped");
    std::fs::copy(&exe, &stripped).unwrap();
    let status = Command::new("strip")
        .arg(&stripped)
        .status()
        .expect("strip runs");
    assert!(status.success());
    (exe, stripped)
}

/// The names of the frames of `session` whose module is `module`.
fn names_in(session: &Session, module: &str) -> Vec<String> {
    let mut names: Vec<String> = session
        .frames
        .iter()
        .filter(|f| f.module.is_some_and(|m| session.str(m) == module))
        .map(|f| session.str(f.name).to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The change column of each row of a `prof diff` table, by frame name.
fn changes(table: &str) -> Vec<(String, f64)> {
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            let [_, _, change, name] = cells[..] else {
                return None;
            };
            let change = change.strip_suffix('%')?.parse().ok()?;
            Some((name.to_owned(), change))
        })
        .collect()
}

#[test]
fn record_names_a_stripped_programs_functions_by_file_address_the_same_in_every_run() {
    let dir = TempDir::new("record_stripped");
    let (exe, stripped) = build(&dir);
    let expected: Vec<String> = addresses(&exe)
        .iter()
        .map(|a| format!("names-stripped+{a:#x}"))
        .collect();
    let runs = [dir.join("one.json.gz"), dir.join("two.json.gz")];
    for run in &runs {
        let session = record(&stripped, run);
        // Each function has one name, its start as `nm` gives it for the unstripped build
        // (found in the unwind table), however many of its instructions were sampled.
        for (name, (function, least)) in expected.iter().zip(FUNCTIONS) {
            let got = share(&session, name);
            assert!(
                got >= least,
                "{function} as {name}: {got:.3}; {:?}",
                names_in(&session, "names-stripped")
            );
        }
        // No frame of the program is named by the address it ran at.
        for name in names_in(&session, "names-stripped") {
            assert!(name.starts_with("names-stripped+0x"), "{name}");
        }
        // The report and the folded stacks say the same names.
        let report = prof_stdout(&["report", s(run)]);
        let folded = prof_stdout(&["convert", s(run), "--to", "folded", "-o", "-"]);
        for name in &expected {
            assert!(report.contains(&format!("  {name}\n")), "{name}:\n{report}");
            assert!(folded.contains(&format!(";{name} ")), "{name}:\n{folded}");
        }
    }
    // So the two runs differ only by the noise of sampling.
    let table = prof_stdout(&["diff", s(&runs[0]), s(&runs[1])]);
    let changes = changes(&table);
    let hot = changes.iter().find(|(name, _)| *name == expected[0]);
    assert!(hot.is_some(), "{}:\n{table}", expected[0]);
    for (name, change) in &changes {
        assert!(change.abs() < 15.0, "{name} changed by {change}%:\n{table}");
    }
}

#[test]
fn record_keeps_c_function_names_that_read_as_cpp_types() {
    let dir = TempDir::new("record_c_names");
    let (exe, _) = build(&dir);
    let session = record(&exe, &dir.join("out.json.gz"));
    let names = names_in(&session, "names");
    for (function, least) in FUNCTIONS {
        let got = share(&session, function);
        assert!(got >= least, "{function}: {got:.3}; {names:?}");
    }
    for cpp in ["float", "int", "std::allocator"] {
        assert!(!names.iter().any(|n| n == cpp), "{cpp} in {names:?}");
    }
}
