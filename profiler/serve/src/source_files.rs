//! Source files for the viewer's Source view: `GET /<secret>/source?file=NAME`.
//!
//! The session stays self-contained (it holds no source text), so the text comes from the
//! serving machine, under a source root (`prof serve --source-root DIR`, by default the current
//! directory). Only a file that some frame of a loaded profile names is served, and only when it
//! lies under the root: a relative name is joined to the root, an absolute one is taken as it
//! is, and either way the path is canonicalized (every `..` and symbolic link resolved) and must
//! then start with the canonical root; on Linux the opened file's own path is checked again, so a
//! link swapped in between does not lead out. Regular files of UTF-8 text up to [`MAX_SOURCE_BYTES`]
//! are served, read-only; everything else is a 404 whose one-line body says why, which the page
//! shows.
//!
//! No file operation blocks the server's one thread: each runs on tokio's blocking pool, with a
//! time limit ([`SOURCE_OPEN_TIMEOUT`], then a limit per read), the file is opened with
//! `O_NONBLOCK` (a FIFO does not wait for a writer) and must be a regular file before anything
//! is read, and its text is sent a chunk at a time as the client reads it, so a connection holds
//! a chunk, not the file.

use super::body::{read_chunk, Payload, FILE_CHUNK};
use super::reply::{Reply, CACHE_NONE};
use bytes::Bytes;
use percent_encoding::percent_decode_str;
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The largest source file served: 4 MiB.
pub const MAX_SOURCE_BYTES: u64 = 4 << 20;
/// How long finding, opening and checking a source file may take before the request is
/// answered without it (a file on a hung network file system).
pub const SOURCE_OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// The source files a server may hand out: the names its profiles' frames give, under one root.
#[derive(Debug)]
pub(crate) struct Sources {
    /// The canonical root, or why it cannot be used.
    root: Result<PathBuf, String>,
    /// Every file name a frame of a loaded profile gives.
    names: HashSet<String>,
}

impl Sources {
    /// Files named in `names`, under `root` (the current directory when `None`).
    pub fn new(root: Option<&Path>, names: HashSet<String>) -> Sources {
        let root = match root {
            Some(root) => Ok(root.to_path_buf()),
            None => std::env::current_dir()
                .map_err(|e| format!("the current directory cannot be read: {e}")),
        };
        let root = root.and_then(|root| {
            std::fs::canonicalize(&root)
                .map_err(|e| format!("the source root {} cannot be read: {e}", root.display()))
        });
        Sources { root, names }
    }

    /// The file name the query string of a source request (`file=NAME`, percent-encoded) asks
    /// for when a frame of the loaded profiles names it, or why it is refused.
    pub fn requested(&self, query: &str) -> Result<String, String> {
        let Some(name) = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("file="))
            .and_then(|value| percent_decode_str(value).decode_utf8().ok())
        else {
            return Err("no file=NAME in the request".to_owned());
        };
        if !self.names.contains(name.as_ref()) {
            return Err(format!(
                "{name}: not named by any frame of the loaded profiles"
            ));
        }
        Ok(name.into_owned())
    }

    /// The reply to a request for `name` (one [`Sources::requested`] accepted). Every file
    /// operation runs on tokio's blocking pool, never on the server's thread, and what does not
    /// end within [`SOURCE_OPEN_TIMEOUT`] is answered with that; the text is then read a chunk
    /// at a time as the client takes it.
    pub async fn reply(&self, name: String) -> Reply {
        let root = match &self.root {
            Ok(root) => root.clone(),
            Err(why) => return not_found(format!("{name}: {why}")),
        };
        let opening = {
            let name = name.clone();
            tokio::task::spawn_blocking(move || open_text(&root, &name))
        };
        // On a timeout the task stays behind on its pool thread, and what it opened is closed
        // when it ends.
        match tokio::time::timeout(SOURCE_OPEN_TIMEOUT, opening).await {
            Ok(Ok(Ok((file, len)))) => {
                let mut reply = Reply::text(200, "");
                reply.body = Payload::File {
                    file: Arc::new(file),
                    len,
                };
                reply.cache = Some(CACHE_NONE);
                reply
            }
            Ok(Ok(Err(why))) => not_found(format!("{name}: {why}")),
            Ok(Err(failed)) => not_found(format!("{name}: cannot be read: {failed}")),
            Err(_) => not_found(format!(
                "{name}: could not be read within {} s",
                SOURCE_OPEN_TIMEOUT.as_secs()
            )),
        }
    }
}

/// Opens the file a frame names `name` under the canonical `root` and checks that it may be
/// served: a regular file under the root, of UTF-8 text without NUL up to
/// [`MAX_SOURCE_BYTES`]. Returns it with its length, or why it is not served. It may block (a
/// slow disk, a hung network file system), so it runs off the server's thread.
fn open_text(root: &Path, name: &str) -> Result<(File, u64), String> {
    let under = || format!("not found under the source root {}", root.display());
    let path = root.join(name); // an absolute `name` replaces the root
    let real = std::fs::canonicalize(&path).map_err(|_| under())?;
    if !real.starts_with(root) {
        return Err(format!("outside the source root {}", root.display()));
    }
    // Without O_NONBLOCK, opening a FIFO waits for a writer (which hung the whole server before
    // the reads moved off its thread), and opening some devices waits too. With it the open
    // returns at once, and anything but a regular file is refused below, before any read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&real)
        .map_err(|e| format!("cannot be read: {e}"))?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if !opened.is_ok_and(|p| p.starts_with(root)) {
            return Err(format!("outside the source root {}", root.display()));
        }
    }
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_SOURCE_BYTES {
        return Err(too_big());
    }
    let len = text_length(&file)?;
    Ok((file, len))
}

fn too_big() -> String {
    format!("larger than {} MiB", MAX_SOURCE_BYTES >> 20)
}

/// The length of `file` when it holds UTF-8 text without NUL and at most [`MAX_SOURCE_BYTES`],
/// read a chunk at a time (a character may span two chunks), or why it is not served.
fn text_length(file: &File) -> Result<u64, String> {
    let mut carried: Vec<u8> = Vec::new();
    let mut len = 0u64;
    loop {
        let chunk =
            read_chunk(file, len, FILE_CHUNK).map_err(|e| format!("cannot be read: {e}"))?;
        if chunk.is_empty() {
            break;
        }
        len += chunk.len() as u64;
        if len > MAX_SOURCE_BYTES {
            return Err(too_big());
        }
        carried.extend_from_slice(&chunk);
        match std::str::from_utf8(&carried) {
            Ok(_) => carried.clear(),
            // A character cut at the chunk's end: its first bytes go with the next chunk.
            Err(e) if e.error_len().is_none() => {
                carried.drain(..e.valid_up_to());
            }
            Err(_) => return Err(not_text()),
        }
        if chunk.contains(&0) {
            return Err(not_text());
        }
    }
    if !carried.is_empty() {
        return Err(not_text());
    }
    Ok(len)
}

fn not_text() -> String {
    "not UTF-8 text".to_owned()
}

/// A 404 whose body is `why`, one line.
pub(crate) fn not_found(why: String) -> Reply {
    let mut reply = Reply::text(404, "");
    reply.body = Payload::Bytes(Bytes::from(why));
    reply.cache = Some(CACHE_NONE);
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test: `root/` holding `src/lib.rs`, and `outside.rs` beside it.
    fn tree(test: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("prof-source-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn f() {}\n").unwrap();
        std::fs::write(dir.join("outside.rs"), "secret\n").unwrap();
        (dir, root)
    }

    fn sources(root: &Path, names: &[&str]) -> Sources {
        Sources::new(Some(root), names.iter().map(|n| n.to_string()).collect())
    }

    /// The reply to a source request with `query`.
    fn ask(sources: &Sources, query: &str) -> Reply {
        match sources.requested(query) {
            Err(why) => not_found(why),
            Ok(name) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(sources.reply(name)),
        }
    }

    fn answer(sources: &Sources, query: &str) -> (u16, String) {
        let reply = ask(sources, query);
        (
            reply.status,
            String::from_utf8(reply.body.to_vec()).unwrap(),
        )
    }

    #[test]
    fn a_named_file_under_the_root_is_served_by_its_relative_or_absolute_name() {
        let (_dir, root) = tree("served");
        let absolute = root.join("src/lib.rs").display().to_string();
        let s = sources(&root, &["src/lib.rs", &absolute]);
        assert_eq!(answer(&s, "file=src/lib.rs"), (200, "fn f() {}\n".into()));
        assert_eq!(answer(&s, "file=src%2Flib.rs"), (200, "fn f() {}\n".into()));
        let query = format!("x=1&file={}", absolute.replace('/', "%2F"));
        assert_eq!(answer(&s, &query).0, 200);
        assert_eq!(ask(&s, "file=src/lib.rs").cache, Some(CACHE_NONE));
    }

    #[test]
    fn a_file_no_frame_names_is_not_served_even_under_the_root() {
        let (_dir, root) = tree("unnamed");
        let s = sources(&root, &["src/main.rs"]);
        let (status, why) = answer(&s, "file=src/lib.rs");
        assert_eq!(status, 404);
        assert!(why.contains("not named by any frame"), "{why}");
        assert_eq!(answer(&s, "").0, 404);
        assert_eq!(answer(&s, "file=%FF").0, 404, "not UTF-8");
    }

    #[test]
    fn named_files_outside_the_root_are_refused() {
        let (dir, root) = tree("outside");
        let absolute = dir.join("outside.rs").display().to_string();
        std::os::unix::fs::symlink(dir.join("outside.rs"), root.join("link.rs")).unwrap();
        std::os::unix::fs::symlink(&dir, root.join("up")).unwrap();
        let names = [
            "../outside.rs",
            "src/../../outside.rs",
            &absolute,
            "link.rs",
            "up/outside.rs",
        ];
        let s = sources(&root, &names);
        for name in names {
            let (status, why) = answer(&s, &format!("file={name}"));
            assert_eq!(status, 404, "{name}");
            assert!(why.contains("outside the source root"), "{name}: {why}");
            assert!(!why.contains("secret"));
        }
        let encoded = answer(&s, "file=%2E%2E%2Foutside.rs");
        assert!(encoded.1.contains("outside the source root"), "{encoded:?}");
    }

    #[test]
    fn missing_directories_binary_and_huge_files_say_why() {
        let (_dir, root) = tree("kinds");
        std::fs::write(root.join("bin.rs"), b"\x00\x01\xff").unwrap();
        let huge = std::fs::File::create(root.join("huge.rs")).unwrap();
        huge.set_len(MAX_SOURCE_BYTES + 1).unwrap();
        let s = sources(&root, &["gone.rs", "src", "bin.rs", "huge.rs"]);
        let cases = [
            ("gone.rs", "not found under the source root"),
            ("src", "not a regular file"),
            ("bin.rs", "not UTF-8 text"),
            ("huge.rs", "larger than 4 MiB"),
        ];
        for (name, why) in cases {
            let (status, said) = answer(&s, &format!("file={name}"));
            assert_eq!(status, 404, "{name}");
            assert!(said.starts_with(&format!("{name}: {why}")), "{said}");
        }
    }

    #[test]
    fn an_unusable_root_is_the_reason_given() {
        let s = Sources::new(
            Some(Path::new("/nonexistent/prof-root")),
            ["a.rs".to_owned()].into(),
        );
        let (status, why) = answer(&s, "file=a.rs");
        assert_eq!(status, 404);
        assert!(why.contains("/nonexistent/prof-root"), "{why}");
    }

    /// A FIFO under the source root hung the whole server, whose thread waited in
    /// `open` for a writer that never came.
    #[test]
    fn a_fifo_is_refused_at_once_without_waiting_for_a_writer() {
        let (_dir, root) = tree("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("fifo.rs"))
            .status()
            .unwrap();
        assert!(made.success());
        let s = sources(&root, &["fifo.rs"]);
        let (status, why) = answer(&s, "file=fifo.rs");
        assert_eq!((status, &*why), (404, "fifo.rs: not a regular file"));
    }

    #[test]
    fn text_is_checked_across_chunk_boundaries() {
        let (_dir, root) = tree("chunks");
        // A three-byte character across the first chunk boundary is text.
        let mut text = vec![b'a'; FILE_CHUNK - 1];
        text.extend_from_slice("€ end\n".as_bytes());
        std::fs::write(root.join("long.rs"), &text).unwrap();
        // A NUL, or a character cut by the end of the file, is not.
        let mut nul = vec![b'a'; FILE_CHUNK + 10];
        nul[FILE_CHUNK + 5] = 0;
        std::fs::write(root.join("nul.rs"), &nul).unwrap();
        std::fs::write(root.join("cut.rs"), &"€".as_bytes()[..2]).unwrap();
        let s = sources(&root, &["long.rs", "nul.rs", "cut.rs"]);
        assert_eq!(
            answer(&s, "file=long.rs"),
            (200, String::from_utf8(text).unwrap())
        );
        assert_eq!(
            answer(&s, "file=nul.rs"),
            (404, "nul.rs: not UTF-8 text".into())
        );
        assert_eq!(
            answer(&s, "file=cut.rs"),
            (404, "cut.rs: not UTF-8 text".into())
        );
    }
}
