//! Helpers for the end-to-end tests: the built `prof` binary and a private temporary directory
//! per test.

pub mod served;
pub mod sessions;
pub mod webdriver;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `prof` binary that `cargo test --workspace` built beside this test executable.
pub fn prof_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test>-<hash>  ->  target/<profile>/prof
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executables live in target/<profile>/deps");
    let bin = profile_dir.join(format!("prof{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: run the tests with `cargo test --workspace` so the binary is built",
        bin.display()
    );
    bin
}

/// Runs `prof` with `args` and returns its output.
pub fn prof(args: &[&str]) -> Output {
    Command::new(prof_bin())
        .args(args)
        .output()
        .expect("prof runs")
}

/// A directory of its own for one test, removed when dropped.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory named after the test.
    pub fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("prof-e2e-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir can be created");
        TempDir(dir)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
