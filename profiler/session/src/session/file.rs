//! Session files on disk (native only): `.json` or `.json.gz` by extension, written atomically.

use super::io::{gzip_size_hint, read_bytes_with, read_sized, too_large, write, ReadOptions};
use super::Session;
use crate::error::{Error, Result};
use flate2::write::GzEncoder;
use flate2::Compression;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// True when `path` names a gzipped file (ends in `.gz`).
pub fn is_gzip_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Loads a session from `path` (JSON or gzipped JSON, recognised by content).
pub fn load(path: impl AsRef<Path>) -> Result<Session> {
    load_with(path, ReadOptions::default())
}

/// Loads a session from `path` with explicit [`ReadOptions`].
pub fn load_with(path: impl AsRef<Path>, options: ReadOptions) -> Result<Session> {
    let path = path.as_ref();
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = open_within(path, options)?;
    let size = file.metadata().map_err(io_err)?.len();
    // A gzipped file is decompressed as it is read: its bytes are not held beside its JSON
    // (7 MB of gzip for a million names); only `prof serve` keeps them
    // (`load_bytes_with`). Its trailer tells how much room the JSON takes.
    let mut head = [0; 2];
    let gzipped = size >= 18 && {
        file.read_exact(&mut head).map_err(io_err)?;
        head == [0x1f, 0x8b]
    };
    if !gzipped {
        return load_bytes_with(path, options).map(|(_, session)| session);
    }
    let mut trailer = [0; 4];
    file.seek(SeekFrom::End(-4)).map_err(io_err)?;
    file.read_exact(&mut trailer).map_err(io_err)?;
    file.rewind().map_err(io_err)?;
    let hint = gzip_size_hint(trailer, size);
    read_sized(file.take(options.max_bytes + 1), options, hint).map_err(|e| e.at(path))
}

/// `path` opened for reading, or an error saying why it is refused when it is larger than
/// [`ReadOptions::max_bytes`] (told from its first bytes).
fn open_within(path: &Path, options: ReadOptions) -> Result<File> {
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let size = file.metadata().map_err(io_err)?.len();
    if size > options.max_bytes {
        // Too large to be read whole: say whether it is garbage or a session, from its start.
        let mut head = Vec::with_capacity(4096);
        (&mut file)
            .take(4096)
            .read_to_end(&mut head)
            .map_err(io_err)?;
        return Err(too_large(&head, size, options.max_bytes).at(path));
    }
    Ok(file)
}

/// Loads a session from `path` as [`load_with`] does, and returns it with the file's bytes as
/// they are on disk (compressed if they were), for a caller that hands the file on as it was
/// written (`prof serve`). A file larger than [`ReadOptions::max_bytes`] is refused by its size,
/// from its first bytes, before the rest is read.
pub fn load_bytes_with(path: &Path, options: ReadOptions) -> Result<(Vec<u8>, Session)> {
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let file = open_within(path, options)?;
    let size = file.metadata().map_err(io_err)?.len();
    // A file that grew since it was measured is still read no further than the cap (and one
    // byte, so the reader refuses it).
    let mut raw = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(options.max_bytes + 1)
        .read_to_end(&mut raw)
        .map_err(io_err)?;
    let session = read_bytes_with(&raw, options).map_err(|e| e.at(path))?;
    Ok((raw, session))
}

/// Saves `session` to `path`, gzipped when the name ends in `.gz`, as [`write_file`] writes:
/// a regular file or a new name atomically, a character device or a FIFO through.
///
/// The data goes to a temporary file in the same directory, which is synced and then renamed over
/// `path`: a crash or a full disk never leaves a truncated file under the final name. The
/// temporary is named `.NAME.HOST.PID-….tmp`; one left by a writer that was killed is removed by
/// the next save of the same name on the same host (see [`write_atomically`]).
pub fn save(session: &Session, path: impl AsRef<Path>) -> Result<()> {
    save_within(session, path, u64::MAX)
}

/// [`save`], refusing a session of more than `max_bytes` bytes of JSON, which a reader with that
/// limit ([`ReadOptions::max_bytes`]) would refuse: nothing is left under the name, and the error
/// says which limit it was. For writers whose input stays where it was (a conversion); a
/// recording is saved whatever its size.
pub fn save_within(session: &Session, path: impl AsRef<Path>, max_bytes: u64) -> Result<()> {
    let path = path.as_ref();
    let saved = write_file(path, |file| {
        if is_gzip_path(path) {
            // Level 1: the packed columns are dense already, so level 6 saves 2% of the size
            // for 8x the time (see the session benchmark).
            let mut gz = GzEncoder::new(file, Compression::fast());
            write(session, &mut Capped::new(&mut gz, max_bytes))?;
            gz.finish()?;
            Ok(())
        } else {
            write(session, &mut Capped::new(file, max_bytes))
        }
    });
    match saved {
        Err(Error::Io { source, .. }) if cap_passed(&source) => Err(Error::BadInput {
            path: path.to_owned(),
            message: format!(
                "the session is more than {} MiB of JSON, the most prof reads back as a session \
                 (the limit for a session file, which `--max-input MIB` lifts): nothing was \
                 written",
                max_bytes >> 20
            ),
        }),
        other => other,
    }
}

/// A writer that fails once more than `left` bytes were written through it.
struct Capped<W> {
    inner: W,
    left: u64,
}

/// Marks the error of a [`Capped`] writer past its cap.
#[derive(Debug)]
struct CapPassed;

impl std::fmt::Display for CapPassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("larger than the limit for a session file")
    }
}

impl std::error::Error for CapPassed {}

impl<W: Write> Capped<W> {
    fn new(inner: W, left: u64) -> Self {
        Capped { inner, left }
    }
}

/// True for the error a [`Capped`] writer gives past its cap.
fn cap_passed(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|e| e.is::<CapPassed>())
}

impl<W: Write> Write for Capped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() as u64 > self.left {
            return Err(io::Error::other(CapPassed));
        }
        let n = self.inner.write(buf)?;
        self.left -= n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Where a write to a name goes, found before writing.
#[derive(Debug, PartialEq, Eq)]
enum Output {
    /// A regular file or a new name (a symbolic link's target, resolved): written to a
    /// temporary beside it and renamed over it.
    File(PathBuf),
    /// A character device or a FIFO (`/dev/null`, `/dev/stdout`, a named pipe): written
    /// through, never replaced.
    Stream {
        /// A FIFO, whose `open` waits for a reader.
        fifo: bool,
    },
}

/// What writing to `path` means: refused (one line saying why) for a directory, a block
/// device, a socket, or a symbolic link to nothing (prof follows links but creates nothing
/// through them).
fn output(path: &Path) -> io::Result<Output> {
    use std::os::unix::fs::FileTypeExt;
    let link = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Output::File(path.to_owned())),
        Err(e) => return Err(e),
        Ok(meta) => meta.file_type().is_symlink(),
    };
    let kind =
        match fs::metadata(path) {
            Ok(meta) => meta.file_type(),
            Err(e) if link && e.kind() == io::ErrorKind::NotFound => return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "a symbolic link to nothing (prof writes through a link to a file, and creates \
                 nothing through one)",
            )),
            Err(e) => return Err(e),
        };
    if kind.is_file() {
        // The link stays a link: its target is replaced.
        let path = if link {
            fs::canonicalize(path)?
        } else {
            path.to_owned()
        };
        return Ok(Output::File(path));
    }
    if kind.is_char_device() || kind.is_fifo() {
        return Ok(Output::Stream {
            fifo: kind.is_fifo(),
        });
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}: prof writes to a regular file, a new name, a character device or a FIFO"),
    ))
}

/// Writes `path` as prof writes every output: a regular file or a new name atomically (see
/// [`write_atomically`]), a character device (`/dev/null`) or a FIFO through, so that the name
/// stays what it was; a symbolic link is followed, never replaced. Anything else is refused.
/// A FIFO nobody reads is refused rather than waited on.
pub fn write_file(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> Result<()> {
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    match output(path).map_err(io_err)? {
        Output::File(target) => write_atomically(&target, fill),
        Output::Stream { fifo } => {
            let mut file = open_stream(path, fifo).map_err(io_err)?;
            fill(&mut file).and_then(|()| file.flush()).map_err(io_err)
        }
    }
}

/// [`write_file`] for a writer that fails with this crate's errors (an export that can refuse
/// its session): `render` writes through a buffer; its own error is returned as it is (the file
/// left as it was), and an error of writing names `path`.
pub fn write_file_with(
    path: &Path,
    render: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    // An error of the renderer's own (not of writing) is kept to be returned as it is.
    let mut failed = None;
    let written = write_file(path, |file| {
        let mut out = io::BufWriter::new(file);
        match render(&mut out) {
            Ok(()) => out.flush(),
            Err(Error::Write(source)) => Err(source),
            Err(other) => {
                failed = Some(other);
                Err(io::Error::other("the export failed"))
            }
        }
    });
    match failed {
        Some(err) => Err(err),
        None => written,
    }
}

/// `path`, a character device or a FIFO, opened for writing without creating or truncating
/// anything. A FIFO is opened only when a reader has it open: first without waiting (which
/// fails at once when there is none), then, with that descriptor held, for blocking writes.
fn open_stream(path: &Path, fifo: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = OpenOptions::new();
    options.write(true);
    if fifo {
        let probe = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENXIO) => io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "a FIFO that nothing reads (start its reader first)",
                ),
                _ => e,
            })?;
        let file = options.open(path);
        drop(probe);
        return file;
    }
    options.open(path)
}

/// Fails when `path` cannot be written as [`write_file`] writes it, touching nothing under
/// that name: for a command that runs long before its output is written. A regular file or a
/// new name needs its directory to take a temporary file (made and removed at once); a
/// character device or a FIFO is not opened (a FIFO would wait for its reader).
pub fn check_writable(path: &Path) -> Result<()> {
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    match output(path).map_err(io_err)? {
        Output::File(target) => {
            let (tmp, file) = create_temp_beside(&target).map_err(io_err)?;
            drop(file);
            fs::remove_file(tmp).map_err(io_err)
        }
        Output::Stream { .. } => Ok(()),
    }
}

/// Creates `path` atomically: `fill` writes the content into a temporary sibling file, which
/// replaces `path` only when everything was written and synced. Then removes the temporary
/// files of earlier writes of `path` whose writer no longer runs (killed mid-write).
pub fn write_atomically(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> Result<()> {
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let (tmp_path, mut file) = create_temp_beside(path).map_err(io_err)?;
    let result = fill(&mut file)
        .and_then(|()| file.flush())
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            fs::rename(&tmp_path, path)
        });
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp_path);
        return Err(io_err(e));
    }
    if let (Some(dir), Some(name)) = (tmp_path.parent(), path.file_name()) {
        remove_stale_temps(dir, name);
    }
    Ok(())
}

/// This host's name as it appears in temporary file names (letters, digits and `-` only).
fn host_tag() -> String {
    let host = fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let tag: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if tag.is_empty() {
        "host".to_owned()
    } else {
        tag
    }
}

/// Whether process `pid` exists, from `/proc`; `None` where there is no `/proc` to tell.
fn process_exists(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    if !proc.join(std::process::id().to_string()).exists() {
        return None;
    }
    Some(proc.join(pid.to_string()).exists())
}

/// Removes from `dir` the temporary files of writes of `name` that provably no one will finish:
/// made on this host by a process that no longer exists. Never one of this process (another of
/// its threads may be writing it), of a live process, or of another host (whose processes
/// cannot be seen from here, on a shared file system). Processes in another PID namespace of
/// the same host name writing into the same directory would look alike: that is the one case
/// this cannot tell apart.
fn remove_stale_temps(dir: &Path, name: &std::ffi::OsStr) {
    let Some(name) = name.to_str() else {
        return;
    };
    let prefix = format!(".{name}.{}.", host_tag());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|f| f.strip_suffix(".tmp"))
        else {
            continue;
        };
        let parts: Vec<&str> = rest.split('-').collect();
        let [pid, stamp, attempt] = parts[..] else {
            continue;
        };
        let (Ok(pid), Ok(_), Ok(_)) = (
            pid.parse::<u32>(),
            stamp.parse::<u32>(),
            attempt.parse::<u32>(),
        ) else {
            continue;
        };
        if pid != std::process::id() && process_exists(pid) == Some(false) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn create_temp_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0..100u32 {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(
            ".{}.{}-{stamp}-{attempt}.tmp",
            host_tag(),
            std::process::id()
        ));
        let tmp = dir.join(tmp_name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "could not create a temporary file beside it",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{FrameSpec, SessionBuilder};

    fn sample_session() -> Session {
        let mut b = SessionBuilder::default();
        let main = b.intern_frame(&FrameSpec::named("main"));
        let work = b.intern_frame(&FrameSpec {
            file: Some("src/work.rs"),
            line: Some(12),
            ..FrameSpec::named("work")
        });
        let stack = b.intern_stack_path(&[main, work]).unwrap();
        let t = b.thread(42, "main");
        b.push_sample(stack, t, 1_000, 250);
        b.finish()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prof-file-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn json_and_gz_files_round_trip_and_gz_is_compressed() {
        let dir = temp_dir("roundtrip");
        let session = sample_session();
        for name in ["a.json", "a.json.gz"] {
            let path = dir.join(name);
            save(&session, &path).unwrap();
            assert_eq!(load(&path).unwrap(), session);
            let bytes = fs::read(&path).unwrap();
            assert_eq!(bytes.starts_with(&[0x1f, 0x8b]), is_gzip_path(&path));
        }
        // Only the two files: no temporary file is left behind.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_leaves_no_temporary() {
        let dir = temp_dir("atomic");
        let path = dir.join("keep.json");
        fs::write(&path, "old").unwrap();
        let err = write_atomically(&path, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_save_removes_the_temporaries_of_killed_writers_only() {
        use std::process::Command;
        let dir = temp_dir("stale");
        let path = dir.join("p.json");
        let mut gone = Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let mut live = Command::new("sleep").arg("30").spawn().unwrap();
        let host = host_tag();
        let temp =
            |name: &str, host: &str, pid: u32| dir.join(format!(".{name}.{host}.{pid}-1-0.tmp"));
        let stale = temp("p.json", &host, dead);
        let kept = [
            temp("p.json", &host, live.id()),
            temp("p.json", &host, std::process::id()),
            temp("p.json", "another-host", dead),
            temp("q.json", &host, dead),
        ];
        for file in kept.iter().chain([&stale]) {
            fs::write(file, "half written").unwrap();
        }
        save(&sample_session(), &path).unwrap();
        let _ = live.kill();
        let _ = live.wait();
        assert!(!stale.exists(), "{stale:?}");
        for file in &kept {
            assert!(file.exists(), "{file:?}");
        }
        assert_eq!(load(&path).unwrap(), sample_session());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_over_the_limit_is_refused_by_its_size_before_reading() {
        let dir = temp_dir("large");
        let path = dir.join("large.json");
        // A 3 MiB file (sparse after `head`) read with a 1 MiB limit.
        let load_large = |head: &str| {
            fs::write(&path, head).unwrap();
            let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(3 << 20).unwrap();
            load_with(&path, ReadOptions::default().max_bytes(1 << 20)).unwrap_err()
        };
        let err = load_large("{\"format\":");
        assert!(matches!(err, Error::BadInput { .. }));
        let expected = "the file is 3 MiB, larger than 1 MiB (the limit for a session file, which \
                        `--max-input MIB` lifts)";
        assert!(err.to_string().ends_with(expected), "{err}");
        let err = load_large("garbage");
        assert!(err.to_string().contains("not a prof session"), "{err}");
        fs::remove_dir_all(dir).unwrap();
    }

    /// `prof serve` hands a session file on as it was written: the bytes come back as they are
    /// on disk (still compressed), beside the session they hold, and the size cap is the same.
    #[test]
    fn load_bytes_gives_the_file_as_written_beside_its_session() {
        let dir = temp_dir("bytes");
        let path = dir.join("p.json.gz");
        save(&sample_session(), &path).unwrap();
        let (raw, session) = load_bytes_with(&path, ReadOptions::default()).unwrap();
        assert_eq!(raw, fs::read(&path).unwrap());
        assert!(raw.starts_with(&[0x1f, 0x8b]));
        assert_eq!(session, sample_session());
        let err = load_bytes_with(&path, ReadOptions::default().max_bytes(16)).unwrap_err();
        assert!(err.to_string().contains("larger than"), "{err}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_session_larger_than_the_read_limit_is_not_written_and_the_error_says_which_limit_was_passed(
    ) {
        let dir = temp_dir("within");
        let session = sample_session();
        let mut json = Vec::new();
        write(&session, &mut json).unwrap();
        for name in ["s.json", "s.json.gz"] {
            let path = dir.join(name);
            // A limit below its size: refused as a reader with that limit would refuse it.
            let limit = json.len() as u64 - 1;
            let err = save_within(&session, &path, limit).unwrap_err();
            assert!(matches!(err, Error::BadInput { .. }), "{err:?}");
            assert!(
                err.to_string().contains("the limit for a session file"),
                "{err}"
            );
            let read = load_with(&path, ReadOptions::default().max_bytes(limit));
            assert!(read.is_err());
            // Nothing under the name, no temporary beside it.
            assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "{name}");
            save_within(&session, &path, json.len() as u64).unwrap();
            let read = load_with(&path, ReadOptions::default().max_bytes(json.len() as u64));
            assert_eq!(read.unwrap(), session);
            fs::remove_file(&path).unwrap();
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_it() {
        let err = load("/nonexistent/prof.json").unwrap_err();
        assert!(matches!(err, Error::Io { .. }));
        assert!(
            err.to_string().starts_with("/nonexistent/prof.json: "),
            "{err}"
        );
    }
}
