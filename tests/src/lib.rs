//! Helpers for the end-to-end tests: the built `prof` binary and a private temporary directory
//! per test.

pub mod page;
pub mod recorded;
pub mod served;
pub mod sessions;
pub mod webdriver;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The `prof` binary, built from the current sources.
///
/// `cargo test -p prof-e2e` does not rebuild the `prof` binary by itself, so the first call runs
/// `cargo build -p prof --bin prof` (a no-op when it is current) with the same profile as this
/// test executable, and every test drives what the sources say, never a stale binary.
pub fn prof_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_prof).clone()
}

fn build_prof() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test>-<hash>  ->  target/<profile>/prof
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executables live in target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let release = profile_dir
        .file_name()
        .is_some_and(|name| name == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args([
            "build",
            "--quiet",
            "-p",
            "prof",
            "--features",
            "cli",
            "--bin",
            "prof",
            "--target-dir",
        ])
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if release {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the prof binary failed");
    let bin = profile_dir.join(format!("prof{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}

/// The longest one `prof` command may run in a test before it counts as hung.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `prof` with `args` and returns its output. A run past [`COMMAND_TIMEOUT`] is killed and
/// fails the test, so a command that hangs (say, one that serves forever) cannot stall CI.
pub fn prof(args: &[&str]) -> Output {
    prof_with(args, |_| {})
}

/// Runs `prof` with `args`, expecting success, and returns its standard output (a failure
/// fails the test with prof's standard error).
pub fn prof_stdout(args: &[&str]) -> String {
    let out = prof(args);
    assert!(
        out.status.success(),
        "prof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("prof writes UTF-8")
}

/// [`prof()`], the command set up by `setup` first (its environment, or its standard input).
pub fn prof_with(args: &[&str], setup: impl FnOnce(&mut Command)) -> Output {
    let mut command = Command::new(prof_bin());
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    setup(&mut command);
    let mut child = command.spawn().expect("prof runs");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("prof can be waited for") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("prof {args:?} ran past {COMMAND_TIMEOUT:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout is drained"),
        stderr: stderr.join().expect("stderr is drained"),
    }
}

/// A directory of its own for one test, removed when dropped.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory named after the test.
    pub fn new(test: &str) -> Self {
        Self::in_dir(&std::env::temp_dir(), test)
    }

    /// A new empty directory named after the test, in `parent` (for what the temporary
    /// directory's file system cannot hold, such as a set-uid program on a `nosuid` mount).
    pub fn in_dir(parent: &Path, test: &str) -> Self {
        let dir = parent.join(format!("prof-e2e-{test}-{}", std::process::id()));
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

/// The target directory the running test was built in.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test>-<hash>  ->  target
    exe.ancestors()
        .nth(3)
        .expect("tests live in target/<profile>/deps")
        .to_path_buf()
}

/// The cargo that runs the tests.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Builds `prof`'s example `name` with `--release` (into the test's own target directory) and
/// runs it, returning its standard output; panics when either step fails.
pub fn run_release_example(name: &str) -> String {
    let target = target_dir();
    let status = cargo()
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "prof",
            "--features",
            "cli",
            "--example",
            name,
        ])
        .arg("--target-dir")
        .arg(&target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(status.success(), "cargo build --release --example {name}");
    let example = target.join("release/examples").join(name);
    let out = Command::new(&example).output().unwrap();
    assert!(out.status.success(), "{example:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A release profile as users build with: the default one (no debug info), or with
/// `debug = "line-tables-only"` or `"limited"` (this workspace's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseProfile {
    /// `cargo build --release` with no `[profile.release]` settings: no debug info.
    Default,
    /// `debug = "line-tables-only"`: line tables, no types, inlined functions by name.
    LineTablesOnly,
    /// `debug = "limited"`, this workspace's release profile.
    Limited,
}

impl ReleaseProfile {
    /// All three.
    pub const ALL: [ReleaseProfile; 3] = [
        ReleaseProfile::Default,
        ReleaseProfile::LineTablesOnly,
        ReleaseProfile::Limited,
    ];

    /// Cargo's name of its debug setting.
    pub fn debug(self) -> &'static str {
        match self {
            ReleaseProfile::Default => "false",
            ReleaseProfile::LineTablesOnly => "line-tables-only",
            ReleaseProfile::Limited => "limited",
        }
    }
}

/// The path of the fixture program `name` built with the fixtures' `tokio` feature (prof's
/// tokio task hooks), which needs `--cfg tokio_unstable`, in release with `line-tables-only`:
/// [`tokio_fixture_with`].
pub fn tokio_fixture(name: &str) -> PathBuf {
    tokio_fixture_with(ReleaseProfile::LineTablesOnly, name)
}

/// The path of the fixture program `name` built with the fixtures' `tokio` feature, in release
/// with `profile`: built once per test process and profile, into `fixtures-tokio` under the
/// target directory for `line-tables-only`, `fixtures-tokio-<debug setting>` for the others
/// (the flag changes every crate's build, so they keep directories of their own).
pub fn tokio_fixture_with(profile: ReleaseProfile, name: &str) -> PathBuf {
    fixture(profile, Fixtures::Tokio, name)
}

/// The path of the fixture program `name` (a binary of `tests/fixtures`) built in release with
/// `profile`; all fixtures are built once per test process and profile, each profile into a
/// target directory of its own (so the dependencies keep their builds): `limited` into the
/// test's own, the others into `fixtures-<debug setting>` under it.
pub fn release_fixture(profile: ReleaseProfile, name: &str) -> PathBuf {
    fixture(profile, Fixtures::Plain, name)
}

/// The two builds of the fixture programs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fixtures {
    /// Default features.
    Plain,
    /// The `tokio` feature, with `--cfg tokio_unstable` for every crate.
    Tokio,
}

/// The fixture program `name` from the build `fixtures` with `profile`, built (all fixtures at
/// once) the first time this test process asks for that build.
fn fixture(profile: ReleaseProfile, fixtures: Fixtures, name: &str) -> PathBuf {
    static BUILT: [[OnceLock<PathBuf>; 3]; 2] = [const { [const { OnceLock::new() }; 3] }; 2];
    let slot = ReleaseProfile::ALL
        .iter()
        .position(|p| *p == profile)
        .expect("a listed profile");
    let dir = BUILT[fixtures as usize][slot].get_or_init(|| {
        // `limited` is this workspace's own release profile: its plain builds share the target
        // directory (and the dependencies' builds) with the release examples'.
        let target = match (fixtures, profile) {
            (Fixtures::Plain, ReleaseProfile::Limited) => target_dir(),
            (Fixtures::Plain, _) => target_dir().join(format!("fixtures-{}", profile.debug())),
            (Fixtures::Tokio, ReleaseProfile::LineTablesOnly) => {
                target_dir().join("fixtures-tokio")
            }
            (Fixtures::Tokio, _) => {
                target_dir().join(format!("fixtures-tokio-{}", profile.debug()))
            }
        };
        let mut build = cargo();
        build
            .args([
                "build",
                "--quiet",
                "--release",
                "-p",
                "prof-fixtures",
                "--bins",
            ])
            .arg("--target-dir")
            .arg(&target)
            // What the profile says, whatever the workspace's own [profile.release] says.
            .env("CARGO_PROFILE_RELEASE_DEBUG", profile.debug())
            .env_remove("CARGO_PROFILE_RELEASE_STRIP")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match fixtures {
            Fixtures::Plain => build.env_remove("RUSTFLAGS"),
            Fixtures::Tokio => build
                .args(["--features", "tokio"])
                .env("RUSTFLAGS", "--cfg tokio_unstable"),
        };
        let status = build.status().unwrap();
        let features = if fixtures == Fixtures::Tokio {
            " --features tokio"
        } else {
            ""
        };
        assert!(
            status.success(),
            "cargo build --release -p prof-fixtures{features} ({profile:?})"
        );
        target.join("release")
    });
    dir.join(name)
}
