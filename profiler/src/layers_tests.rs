//! The layering inside this crate that the compiler does not check. Below it, the crates are
//! the check: `prof-session` and `prof-capture` cannot name `prof`. Inside it, scopes and tasks
//! sit under the sampler (the sampler drives the scope recorder, never the reverse), and the
//! recorder (`prof record`) stands beside the sampler on the capture core: neither names the
//! other. These tests read the sources and fail on a path that crosses those lines.

use std::path::{Path, PathBuf};

/// The `.rs` files under `src/DIR`.
fn sources(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(!files.is_empty(), "no sources under {}", root.display());
    files
}

/// Every line of code (comments left out) under `src/DIR` that names one of `paths`, as
/// `file:line: text`.
fn naming(dir: &str, paths: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in sources(dir) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if paths.iter().any(|p| code.contains(p)) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

/// What lies above scopes and tasks, or beside them.
const ABOVE_SCOPES: &[&str] = &[
    "crate::sampler",
    "crate::record",
    "crate::profiler",
    "crate::profiler::Profiler",
    "crate::profile(",
    "crate::serve",
    "crate::debug",
    "crate::push",
    "crate::criterion",
    "crate::cli",
];

#[test]
fn scopes_and_tasks_name_nothing_of_the_sampler_or_above() {
    for dir in ["scope", "task"] {
        let found = naming(dir, ABOVE_SCOPES);
        assert!(found.is_empty(), "{dir}/ reaches up:\n{}", found.join("\n"));
    }
}

#[test]
fn the_recorder_and_the_sampler_name_nothing_of_each_other() {
    let found = naming(
        "record",
        &[
            "crate::sampler",
            "crate::profiler",
            "crate::profiler::Profiler",
        ],
    );
    assert!(
        found.is_empty(),
        "record/ names the sampler:\n{}",
        found.join("\n")
    );
    let found = naming("sampler", &["crate::record"]);
    assert!(
        found.is_empty(),
        "sampler/ names the recorder:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_wrong_way_path() {
    // `sampler/` does name the scope recorder, which the sampler may: a path that is there.
    assert!(!naming("sampler", &["crate::scope::"]).is_empty());
}
