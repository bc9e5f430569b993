//! The end-to-end tests, one test binary: each file of `tests/tests` is a module here, so the
//! dependencies (prof with every feature, the viewer, hyper, tokio, clap) are linked once rather
//! than once per file, and tests share one build of the `prof` binary and of the release
//! fixtures (`prof_e2e::prof_bin`, `prof_e2e::release_fixture`). Run one file's tests with
//! `cargo test -p prof-e2e --test e2e FILE::` (one test: `FILE::NAME`).
//!
//! Two files are test binaries of their own (`[[test]]` in Cargo.toml), because their tests
//! profile this test process itself: the sampler signals and unwinds every thread of the
//! process, which the other tests' threads (waiting on child processes and sockets) should not
//! see, and one process holds one profiling session at a time:
//! - `push.rs`: the push agent profiles the whole process in windows;
//! - `convert.rs`: a recorded profile of the test process itself, opened in `go tool pprof`.
//!
//! A new file of tests needs a `mod` line here (or a `[[test]]` of its own):
//! `every_test_file_is_built` fails until it has one.

mod browser;
mod browser_assembly;
mod browser_diff;
mod browser_flame;
mod browser_frames;
mod browser_load_order;
mod browser_modules;
mod browser_narrow;
mod browser_processes;
mod browser_scope_bars;
mod browser_scopes;
mod browser_source;
mod browser_standalone;
mod browser_theme;
mod browser_time;
mod browser_transforms;
mod browser_trees;
mod browser_types;
mod cli;
mod debug_pprof;
mod diff;
mod memory;
mod open_in_browser;
mod readme;
mod record;
mod record_alloc;
mod record_calls;
mod record_children;
mod record_names;
mod record_programs;
mod record_trust;
mod record_wall;
mod release_fixtures;
mod release_names;
mod release_stacks;
mod report;
mod scopes;
mod serve;
mod serve_hostile;
mod serve_source;
mod tokio_hooks;

/// Every `.rs` file beside this one is a module of this binary or a test binary of its own:
/// with `autotests = false`, cargo would not build a file that is neither, and its tests would
/// silently never run.
#[test]
fn every_test_file_is_built() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
    )
    .unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        let built = module == "main"
            || main.lines().any(|l| l.trim() == format!("mod {module};"))
            || manifest
                .lines()
                .any(|l| l.trim() == format!("path = \"tests/{name}\""));
        if !built {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "tests/tests files that no test binary builds (add `mod NAME;` to tests/tests/main.rs): {missing:?}"
    );
}
