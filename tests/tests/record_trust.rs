//! What `prof record` guarantees a user who leaves it on: it never replaces what `-o` names (a
//! device stays a device, a link a link, a FIFO is written through to its reader), creates
//! nothing before the command runs, keeps the session when the disk is full, passes SIGTERM
//! and SIGHUP on to the command and saves, and reads pipes and endless devices once, bounded.
//! Device nodes, FIFOs and small file systems are made in each test's scratch directory, never
//! aimed at the system's own. Tests that need root (mknod, mount) say so and skip without it.

use prof_e2e::recorded::wait_for_cpu;
use prof_e2e::{prof, prof_with, TempDir};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Stdio};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// Makes the character device `major`, `minor` at `path` (root only: false otherwise).
fn mknod(path: &Path, major: u32, minor: u32) -> bool {
    if !is_root() {
        eprintln!("skipped: mknod needs root");
        return false;
    }
    let made = Command::new("mknod")
        .arg(path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .unwrap();
    assert!(made.success(), "mknod {path:?}");
    true
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {path:?}");
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn record_writes_through_a_character_device_and_leaves_it_a_device() {
    let dir = TempDir::new("trust_device");
    let null = dir.join("null");
    if !mknod(&null, 1, 3) {
        return;
    }
    let output = prof(&["record", "-o", null.to_str().unwrap(), "--", "echo", "x"]);
    assert!(output.status.success(), "{output:?}");
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(kind.is_char_device(), "{null:?} is now {kind:?}");
    // Nothing else was made beside it (no temporary left, none renamed over it).
    assert_eq!(names(dir.path()), ["null"]);
}

#[test]
fn record_through_a_symlink_writes_its_target_and_keeps_the_link() {
    let dir = TempDir::new("trust_link");
    let target = dir.join("real.json");
    std::fs::write(&target, "old").unwrap();
    let link = dir.join("latest.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let output = prof(&["record", "-o", link.to_str().unwrap(), "--", "true"]);
    assert!(output.status.success(), "{output:?}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    prof::session::load(&target).expect("the link's target holds the session");
    assert_eq!(names(dir.path()), ["latest.json", "real.json"]);
}

#[test]
fn record_to_a_name_that_is_not_a_session_file_is_refused_before_the_command_runs() {
    let dir = TempDir::new("trust_name");
    let ran = dir.join("ran");
    for name in ["x.txt", "x.gz", "x.svg"] {
        let out = dir.join(name);
        let output = prof(&[
            "record",
            "-o",
            out.to_str().unwrap(),
            "--",
            "touch",
            ran.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("saves a session, as NAME.json or NAME.json.gz"),
            "{stderr}"
        );
        assert!(!ran.exists(), "{name}: the command ran");
        assert!(!out.exists(), "{name} was written");
    }
    // The documented names, in either case.
    for name in ["x.json", "X.JSON.GZ"] {
        let out = dir.join(name);
        let output = prof(&["record", "-o", out.to_str().unwrap(), "--", "true"]);
        assert!(output.status.success(), "{name}: {output:?}");
        prof::session::load(&out).unwrap();
    }
}

#[test]
fn record_to_a_symlink_to_nothing_is_refused_before_the_command_runs() {
    let dir = TempDir::new("trust_dangling");
    let nowhere = dir.join("elsewhere.json");
    let link = dir.join("out.json");
    std::os::unix::fs::symlink(&nowhere, &link).unwrap();
    let ran = dir.join("ran");
    let output = prof(&[
        "record",
        "-o",
        link.to_str().unwrap(),
        "--",
        "touch",
        ran.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{output:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("a symbolic link to nothing"), "{stderr}");
    assert!(!ran.exists(), "the command ran");
    assert!(!nowhere.exists(), "the link's target was created");
}

#[test]
fn record_writes_through_a_fifo_to_its_reader_and_never_waits_on_one_without() {
    let dir = TempDir::new("trust_fifo");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    // With a reader: the session goes through the FIFO, which stays a FIFO. The reader has
    // the FIFO open before prof starts (a `cat` started beside prof may open it only after
    // prof looked for a reader, on a busy machine: prof then rightly saved elsewhere, and the
    // `cat` waited for a writer forever). Opened without blocking, a FIFO's read end reads
    // nothing until a writer comes, so the reader reads until prof has exited and the FIFO
    // is empty.
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut read_end = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let prof_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let prof_done = std::sync::Arc::clone(&prof_done);
        std::thread::spawn(move || {
            let (mut got, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
            loop {
                // Read after looking: once prof is done, an empty read means all is read.
                let done = prof_done.load(std::sync::atomic::Ordering::Acquire);
                match read_end.read(&mut buf) {
                    Ok(0) if done => return got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("reading the FIFO: {e}"),
                }
                if !done {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        })
    };
    let output = prof(&["record", "-o", fifo.to_str().unwrap(), "--", "true"]);
    prof_done.store(true, std::sync::atomic::Ordering::Release);
    assert!(output.status.success(), "{output:?}");
    let got = reader.join().unwrap();
    let got_file = dir.join("got.json");
    std::fs::write(&got_file, &got).unwrap();
    prof::session::load(&got_file).expect("the reader got the session");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // Without one: the command runs at once, and the session goes to a new file in the
    // temporary directory, named on standard error, rather than prof waiting forever.
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let output = prof_with(
        &[
            "record",
            "-o",
            fifo.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "exit 4",
        ],
        |c| {
            c.env("TMPDIR", &tmp);
        },
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("a FIFO that nothing reads"), "{stderr}");
    let saved = names(&tmp);
    assert_eq!(saved.len(), 1, "{saved:?} {stderr}");
    assert!(stderr.contains(&format!(
        "saved the session to {}",
        tmp.join(&saved[0]).display()
    )));
    prof::session::load(tmp.join(&saved[0])).unwrap();
}

/// Mounts a tmpfs of `kib` KiB at `dir` (root only: false otherwise); unmounted when dropped.
struct Tmpfs<'a>(&'a Path);

impl<'a> Tmpfs<'a> {
    fn mount(dir: &'a Path, kib: u32) -> Option<Tmpfs<'a>> {
        if !is_root() {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        if !mounted.success() {
            eprintln!("skipped: this machine refuses to mount a tmpfs");
            return None;
        }
        Some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn a_full_disk_keeps_the_session_in_the_temporary_directory_and_the_commands_status() {
    let dir = TempDir::new("trust_full");
    let small = dir.join("small");
    let Some(_mounted) = Tmpfs::mount(&small, 64) else {
        return;
    };
    // Filled to the last block after the check before the command: the save finds it full.
    let filler = small.join("filler");
    let out = small.join("out.json.gz");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let fill = format!(
        "dd if=/dev/zero of={} bs=4k 2>/dev/null; echo ran; exit 3",
        filler.display()
    );
    let output = prof_with(
        &[
            "record",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &fill,
        ],
        |c| {
            c.env("TMPDIR", &tmp);
        },
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ran\n");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let saved = names(&tmp);
    assert_eq!(saved.len(), 1, "{saved:?} {stderr}");
    prof::session::load(tmp.join(&saved[0])).expect("the session was kept");
    assert!(!out.exists(), "a partial file was left under the name");
}

#[test]
fn a_device_that_refuses_every_write_keeps_the_session_too() {
    let dir = TempDir::new("trust_dev_full");
    let full = dir.join("full");
    if !mknod(&full, 1, 7) {
        return;
    }
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let output = prof_with(
        &[
            "record",
            "-o",
            full.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "exit 5",
        ],
        |c| {
            c.env("TMPDIR", &tmp);
        },
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(std::fs::symlink_metadata(&full)
        .unwrap()
        .file_type()
        .is_char_device());
    let saved = names(&tmp);
    assert_eq!(saved.len(), 1, "{saved:?} {stderr}");
    prof::session::load(tmp.join(&saved[0])).unwrap();
}

/// Starts `prof record -o OUT --mode MODE -- sh -c 'trap "exit CODE" SIGNAL; busy loop'` in a
/// process group of its own, waits until the command has run, sends `signal` to prof alone, and
/// returns how prof ended and its standard error. Whatever still runs in the group then (a
/// command prof left orphaned) is killed, so a failure cannot hang the test.
fn signal_prof(
    out: &Path,
    mode: &str,
    signal: &str,
    code: u8,
) -> (std::process::ExitStatus, String) {
    use std::os::unix::process::CommandExt;
    let script = format!("trap 'exit {code}' {signal}; while :; do :; done");
    let errors = out.with_extension("stderr");
    let mut prof = Command::new(prof_e2e::prof_bin())
        .args(["record", "--mode", mode, "-o", out.to_str().unwrap()])
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&errors).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for_cpu(prof.id(), 30);
    let kill = Command::new("kill")
        .args([&format!("-{signal}"), &prof.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = prof.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", prof.id())])
        .stderr(Stdio::null())
        .status();
    let stderr = std::fs::read_to_string(errors).unwrap_or_default();
    let status = status.unwrap_or_else(|| {
        let _ = prof.wait();
        panic!("prof still ran 60 s after SIG{signal}: {stderr}")
    });
    (status, stderr)
}

/// Linux's numbers of the signals these tests send.
const SIGHUP: u32 = 1;
const SIGTERM: u32 = 15;

/// Whether `signal` (a number) is in the mask `field` (`SigIgn`, `SigCgt`) of
/// `/proc/PROCESS/status` (`PROCESS` a pid or `self`).
fn in_signal_mask(process: &str, field: &str, signal: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{process}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (signal - 1)) != 0)
}

#[test]
fn sigterm_and_sighup_reach_the_command_and_the_session_is_saved() {
    let dir = TempDir::new("trust_signals");
    for (mode, signal, code) in [("cpu", "TERM", 7), ("cpu", "HUP", 8), ("alloc", "TERM", 9)] {
        // Ignored when this test process started (as under `nohup`): a shell started with a
        // signal ignored cannot trap it (POSIX), and prof keeps what the command inherits.
        let number = if signal == "HUP" { SIGHUP } else { SIGTERM };
        if in_signal_mask("self", "SigIgn", number) {
            eprintln!("SIG{signal} is ignored by whoever started the tests (nohup?): not checked");
            continue;
        }
        let out = dir.join(&format!("{mode}-{signal}.json.gz"));
        let (status, stderr) = signal_prof(&out, mode, signal, code);
        // The command's trap ran: prof passed the signal on and exits as the command did.
        assert_eq!(
            status.code(),
            Some(i32::from(code)),
            "{mode} {signal}: {stderr}"
        );
        let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        if mode == "cpu" {
            assert!(session.sample_count() > 0, "{mode} {signal}: {stderr}");
        }
    }
}

#[test]
fn record_pid_saves_on_sighup() {
    let dir = TempDir::new("trust_pid_hup");
    let mut target = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let out = dir.join("hup.json.gz");
    let mut prof = Command::new(prof_e2e::prof_bin())
        .args(["record", "-o", out.to_str().unwrap(), "--pid"])
        .arg(target.id().to_string())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once prof catches SIGHUP (in its caught-signal mask), and has run a second.
    prof_e2e::page::eventually("prof catching SIGHUP", || {
        in_signal_mask(&prof.id().to_string(), "SigCgt", SIGHUP)
    });
    std::thread::sleep(std::time::Duration::from_secs(1));
    let kill = Command::new("kill")
        .args(["-HUP", &prof.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = prof.wait().unwrap();
    target.kill().unwrap();
    target.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(prof.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status:?} {stderr}");
    let session = prof::session::load(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(session.sample_count() > 0, "{stderr}");
}

#[test]
fn report_reads_a_session_through_a_pipe_once() {
    let dir = TempDir::new("trust_pipe");
    let out = dir.join("s.json.gz");
    let output = prof(&["record", "-o", out.to_str().unwrap(), "--", "true"]);
    assert!(output.status.success(), "{output:?}");
    // `/dev/stdin` a pipe, as `cat s.json.gz | prof report /dev/stdin` makes it.
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat {} | {} report /dev/stdin --top 3",
            out.display(),
            prof_e2e::prof_bin().display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(piped.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&piped.stdout).contains("TOTAL"),
        "{stderr}"
    );
}

#[test]
fn report_of_an_endless_device_stops_at_the_limit_with_one_line() {
    let dir = TempDir::new("trust_zero");
    let zero = dir.join("zero");
    if !mknod(&zero, 1, 5) {
        return;
    }
    let output = prof(&["report", zero.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("more than 256 MiB"), "{stderr}");
}

#[test]
fn a_profile_over_the_input_limit_is_refused_naming_it_and_max_input_lifts_it() {
    let dir = TempDir::new("trust_limit");
    // 2 MiB of folded stacks, each of its own function, over a 1 MiB limit.
    let folded = dir.join("big.folded");
    let long = "f".repeat(1000);
    let text: String = (0..2048).map(|i| format!("main;{long}{i} 1\n")).collect();
    std::fs::write(&folded, text).unwrap();
    let path = folded.to_str().unwrap();
    let output = prof(&["report", path, "--max-input", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "more than 1 MiB, the limit for reading a profile (`--max-input MIB` lifts it)"
        ),
        "{stderr}"
    );
    let output = prof(&["report", path, "--max-input", "3"]);
    assert!(output.status.success(), "{output:?}");
    // A session is held to the same limit, read and written.
    let session = dir.join("big.json");
    let output = prof(&[
        "convert",
        path,
        "-o",
        session.to_str().unwrap(),
        "--max-input",
        "3",
    ]);
    assert!(output.status.success(), "{output:?}");
    let output = prof(&["report", session.to_str().unwrap(), "--max-input", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("which `--max-input MIB` lifts"), "{stderr}");
}
