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
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The `prof` binary, built from the current sources.
///
/// `cargo test -p prof-e2e` does not rebuild the `prof` binary by itself (it is another
/// package's), so the first call asks cargo for it with the same profile as this test
/// executable, and every test drives what the sources say, never a stale binary.
///
/// It asks for the binary `cargo test --workspace` builds (the README's test command builds it
/// for `profiler/`'s own integration tests): `cargo build --workspace --bin prof --examples`
/// resolves features as that command does (the whole workspace, dev-dependencies included,
/// since examples are selected), so after it the request is a no-op and the binary is the one
/// that command left. A narrower request (`-p prof --features cli`) would rebuild `prof` and the
/// twenty crates whose features differ, and overwrite the workspace's binary with its own.
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
            "--workspace",
            "--bin",
            "prof",
            "--examples",
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

/// The `prof` command built static for [`MUSL_TARGET`] (`cargo build -p prof --features cli
/// --target x86_64-unknown-linux-musl`, as a user builds one to copy into a container), with
/// the same profile as this test executable, into this test's target directory (so the
/// build scripts and macros the host build made are reused). Built once per test process.
pub fn musl_prof_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test knows its own path");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("test executables live in target/<profile>/deps");
            let profile = profile_dir.file_name().expect("target/<profile>");
            let mut build = cargo();
            build
                .args(["build", "--quiet", "-p", "prof", "--features", "cli"])
                .args(["--bin", "prof", "--target", MUSL_TARGET, "--target-dir"])
                .arg(target_dir())
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            if profile == "release" {
                build.arg("--release");
            }
            let status = build.status().expect("cargo runs");
            assert!(
                status.success(),
                "cargo build -p prof --features cli --target {MUSL_TARGET} failed"
            );
            let bin = target_dir().join(MUSL_TARGET).join(profile).join("prof");
            assert!(bin.exists(), "{} was not built", bin.display());
            bin
        })
        .clone()
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
    ///
    /// Its name also has the process id and a count of this process's directories: the tests of
    /// one test binary share a process, and two of them may pass the same name.
    pub fn in_dir(parent: &Path, test: &str) -> Self {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("prof-e2e-{test}-{}-{n}", std::process::id()));
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

/// Runs `prof`'s example `name` built in release as the docs say to (`cargo run --release -p
/// prof --example NAME`: the library's default features, this workspace's release profile) and
/// returns its standard output; panics when it fails. The examples the tests run are binaries
/// of `tests/fixtures` too, from the same files, so they come from the fixtures' `limited`
/// build ([`release_fixture`]) rather than a build of prof's dev-dependencies in release.
pub fn run_release_example(name: &str) -> String {
    let example = release_fixture(ReleaseProfile::Limited, name);
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
/// with `profile`: built once per test process into `fixtures-tokio` under the target directory
/// (the flag changes every crate's build, so it keeps a directory of its own), with
/// `line-tables-only`; [`ReleaseProfile::Default`] is that build without its debug info
/// ([`release_fixture`] says why that is the default profile's build), and `limited` is not
/// built.
pub fn tokio_fixture_with(profile: ReleaseProfile, name: &str) -> PathBuf {
    assert_ne!(
        profile,
        ReleaseProfile::Limited,
        "the tokio fixtures are built with line-tables-only (and stripped for Default)"
    );
    fixture(profile, Fixtures::Tokio, name)
}

/// The path of the fixture program `name` (a binary of `tests/fixtures`) built in release with
/// `profile`. All fixtures are built once per test process and debug setting, each into a
/// target directory of its own (so the dependencies keep their builds): `limited` into the
/// test's own, `line-tables-only` into `fixtures-line-tables-only` under it.
///
/// [`ReleaseProfile::Default`] is not a third build but the `limited` one without its debug
/// info (`objcopy --strip-debug`, into `fixtures-stripped`): the same program a default release
/// profile builds, since `debug = false` makes cargo pass `-C strip=debuginfo`, which strips
/// the same sections at link time, and debug info does not change the code LLVM generates.
/// Checked on the fixtures: the `.text`, `.rodata`, `.eh_frame` and `.symtab` of each stripped
/// copy equal those of a `cargo build --release` with `CARGO_PROFILE_RELEASE_DEBUG=false`.
pub fn release_fixture(profile: ReleaseProfile, name: &str) -> PathBuf {
    fixture(profile, Fixtures::Plain, name)
}

/// The target of the static builds users copy into containers.
pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// The path of the fixture program `name` built in release with `line-tables-only` for
/// [`MUSL_TARGET`] (a static executable): built once per test process, all fixtures at once,
/// into `fixtures-musl` under the target directory. The musl target's own C runtime and libc
/// (rustup's `rust-std` for it) are all it needs: no musl-gcc.
pub fn musl_fixture(name: &str) -> PathBuf {
    fixture(ReleaseProfile::LineTablesOnly, Fixtures::Musl, name)
}

/// The target of the emulated tests: 64-bit Arm Linux with glibc, run under `qemu-aarch64`.
pub const AARCH64_TARGET: &str = "aarch64-unknown-linux-gnu";

/// Debian's aarch64 C library and loader (`libc6-dev-arm64-cross`), qemu's `-L` prefix.
pub const AARCH64_SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// The linker of [`AARCH64_TARGET`] builds (Debian's `gcc-aarch64-linux-gnu`), set for the
/// fixtures' build only (`CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER`).
pub const AARCH64_LINKER: &str = "aarch64-linux-gnu-gcc";

/// The fixtures the emulated tests run: built alone for [`AARCH64_TARGET`], as each binary
/// links (with a cross linker) in seconds of a CI budget.
const AARCH64_FIXTURES: [&str; 5] = [
    "alloc_split",
    "cpu_split",
    "frame_reuse",
    "stack_depth",
    "stack_reads",
];

/// The path of the fixture program `name` built in release with `line-tables-only` for
/// [`AARCH64_TARGET`], to run under [`qemu_aarch64`]: built once per test process, the
/// emulated tests' fixtures at once, into `fixtures-aarch64` under the target directory.
/// Panics with what to install (`.ci/install-tools` does) when the cross linker, the aarch64
/// C library or qemu is missing.
pub fn aarch64_fixture(name: &str) -> PathBuf {
    assert!(
        AARCH64_FIXTURES.contains(&name),
        "{name} is not among the aarch64 fixtures ({AARCH64_FIXTURES:?})"
    );
    fixture(ReleaseProfile::LineTablesOnly, Fixtures::Aarch64, name)
}

/// A command that runs the aarch64 program `exe` under qemu-user with Debian's aarch64 C
/// library (`qemu-aarch64 -L /usr/aarch64-linux-gnu EXE`).
pub fn qemu_aarch64(exe: &Path) -> Command {
    require_aarch64_tools();
    let mut command = Command::new("qemu-aarch64");
    command.arg("-L").arg(AARCH64_SYSROOT).arg(exe);
    command
}

/// Whether `tool` runs (`tool --version` succeeds): a tool on the `PATH`, or a path to one.
pub fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Fails, naming the Debian packages, when a tool of the emulated tests is missing: they must
/// not pass by running nothing.
fn require_aarch64_tools() {
    let mut missing = Vec::new();
    if !installed("qemu-aarch64") {
        missing.push("qemu-aarch64 (package qemu-user)");
    }
    if !installed(AARCH64_LINKER) {
        missing.push("aarch64-linux-gnu-gcc (package gcc-aarch64-linux-gnu)");
    }
    if !Path::new(AARCH64_SYSROOT)
        .join("lib/ld-linux-aarch64.so.1")
        .exists()
    {
        missing.push("/usr/aarch64-linux-gnu/lib (package libc6-dev-arm64-cross)");
    }
    assert!(
        missing.is_empty(),
        "the emulated aarch64 tests need {}: run `bash .ci/install-tools` (as root)",
        missing.join(", ")
    );
}

/// The two builds of the fixture programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Fixtures {
    /// Default features, built with `limited` and `line-tables-only`.
    Plain,
    /// The `tokio` feature, with `--cfg tokio_unstable` for every crate, built with
    /// `line-tables-only`.
    Tokio,
    /// Default features for [`MUSL_TARGET`], built with `line-tables-only`.
    Musl,
    /// Default features for [`AARCH64_TARGET`], built with `line-tables-only`.
    Aarch64,
}

impl Fixtures {
    /// The debug setting whose build [`ReleaseProfile::Default`] strips.
    fn stripped_from(self) -> ReleaseProfile {
        match self {
            Fixtures::Plain => ReleaseProfile::Limited,
            Fixtures::Tokio | Fixtures::Musl | Fixtures::Aarch64 => ReleaseProfile::LineTablesOnly,
        }
    }
}

/// The fixture program `name` from the build `fixtures` with `profile`, built (all fixtures at
/// once) the first time this test process asks for that build; for
/// [`ReleaseProfile::Default`], a copy without debug info, made the first time it is asked for.
fn fixture(profile: ReleaseProfile, fixtures: Fixtures, name: &str) -> PathBuf {
    if profile != ReleaseProfile::Default {
        return built_fixtures(profile, fixtures).join(name);
    }
    static STRIPPED: Mutex<Vec<(Fixtures, String, PathBuf)>> = Mutex::new(Vec::new());
    let mut stripped = STRIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, path)) = stripped
        .iter()
        .find(|(f, n, _)| *f == fixtures && n == name)
    {
        return path.clone();
    }
    let from = built_fixtures(fixtures.stripped_from(), fixtures).join(name);
    let dir = target_dir().join(match fixtures {
        Fixtures::Plain => "fixtures-stripped",
        Fixtures::Tokio => "fixtures-tokio-stripped",
        Fixtures::Musl => "fixtures-musl-stripped",
        Fixtures::Aarch64 => "fixtures-aarch64-stripped",
    });
    std::fs::create_dir_all(&dir).expect("the stripped fixtures' directory can be created");
    let path = dir.join(name);
    // Written beside and renamed, so no process ever runs a half-written copy.
    let partial = dir.join(format!("{name}.{}.partial", std::process::id()));
    let out = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&from)
        .arg(&partial)
        .output()
        .expect("objcopy (binutils) runs");
    assert!(
        out.status.success(),
        "objcopy --strip-debug {}: {}",
        from.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&partial, &path).expect("the stripped copy can be renamed");
    stripped.push((fixtures, name.to_owned(), path.clone()));
    path
}

/// The directory holding the fixture programs of the build `fixtures` with `profile` (not
/// [`ReleaseProfile::Default`]), built (all fixtures at once) the first time this test process
/// asks for it.
fn built_fixtures(profile: ReleaseProfile, fixtures: Fixtures) -> &'static Path {
    static BUILT: [[OnceLock<PathBuf>; 2]; 4] = [const { [const { OnceLock::new() }; 2] }; 4];
    let slot = match profile {
        ReleaseProfile::LineTablesOnly => 0,
        ReleaseProfile::Limited => 1,
        ReleaseProfile::Default => {
            unreachable!("the default profile's fixtures are stripped copies")
        }
    };
    BUILT[fixtures as usize][slot].get_or_init(|| {
        // `limited` is this workspace's own release profile: its plain builds share the target
        // directory (and the dependencies' builds) with the release examples'.
        let target = match (fixtures, profile) {
            (Fixtures::Plain, ReleaseProfile::Limited) => target_dir(),
            (Fixtures::Plain, _) => target_dir().join(format!("fixtures-{}", profile.debug())),
            (Fixtures::Tokio, ReleaseProfile::LineTablesOnly) => {
                target_dir().join("fixtures-tokio")
            }
            (Fixtures::Tokio, _) => {
                unreachable!("the tokio fixtures are built with line-tables-only alone")
            }
            (Fixtures::Musl, ReleaseProfile::LineTablesOnly) => target_dir().join("fixtures-musl"),
            (Fixtures::Musl, _) => {
                unreachable!("the musl fixtures are built with line-tables-only alone")
            }
            (Fixtures::Aarch64, ReleaseProfile::LineTablesOnly) => {
                target_dir().join("fixtures-aarch64")
            }
            (Fixtures::Aarch64, _) => {
                unreachable!("the aarch64 fixtures are built with line-tables-only alone")
            }
        };
        let mut build = cargo();
        build
            .args(["build", "--quiet", "--release", "-p", "prof-fixtures"])
            .arg("--target-dir")
            .arg(&target)
            // What the profile says, whatever the workspace's own [profile.release] says.
            .env("CARGO_PROFILE_RELEASE_DEBUG", profile.debug())
            .env_remove("CARGO_PROFILE_RELEASE_STRIP")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match fixtures {
            Fixtures::Plain => build.arg("--bins").env_remove("RUSTFLAGS"),
            Fixtures::Tokio => build
                .args(["--bins", "--features", "tokio"])
                .env("RUSTFLAGS", "--cfg tokio_unstable"),
            Fixtures::Musl => build
                .args(["--bins", "--target", MUSL_TARGET])
                .env_remove("RUSTFLAGS"),
            Fixtures::Aarch64 => {
                require_aarch64_tools();
                build.args(["--target", AARCH64_TARGET]);
                for name in AARCH64_FIXTURES {
                    build.args(["--bin", name]);
                }
                // The cross linker for this build alone, not a cargo configuration that would
                // change every build of the workspace.
                build
                    .env(
                        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
                        AARCH64_LINKER,
                    )
                    .env_remove("RUSTFLAGS")
            }
        };
        let status = build.status().unwrap();
        let options = match fixtures {
            Fixtures::Plain => String::new(),
            Fixtures::Tokio => " --features tokio".to_owned(),
            Fixtures::Musl => format!(" --target {MUSL_TARGET}"),
            Fixtures::Aarch64 => format!(" --target {AARCH64_TARGET}"),
        };
        assert!(
            status.success(),
            "cargo build --release -p prof-fixtures{options} ({profile:?})"
        );
        match fixtures {
            Fixtures::Musl => target.join(MUSL_TARGET).join("release"),
            Fixtures::Aarch64 => target.join(AARCH64_TARGET).join("release"),
            _ => target.join("release"),
        }
    })
}
