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

use super::body::Payload;
use super::routes::{Reply, CACHE_NONE};
use bytes::Bytes;
use percent_encoding::percent_decode_str;
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest source file served: 4 MiB.
pub const MAX_SOURCE_BYTES: u64 = 4 << 20;

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

    /// The reply to the query string of a source request (`file=NAME`, percent-encoded).
    pub fn reply(&self, query: &str) -> Reply {
        let Some(name) = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("file="))
            .and_then(|value| percent_decode_str(value).decode_utf8().ok())
        else {
            return not_found("no file=NAME in the request".to_owned());
        };
        if !self.names.contains(name.as_ref()) {
            return not_found(format!(
                "{name}: not named by any frame of the loaded profiles"
            ));
        }
        match self.read(&name) {
            Ok(text) => {
                let mut reply = Reply::text(200, "");
                reply.body = Payload::Bytes(Bytes::from(text));
                reply.cache = Some(CACHE_NONE);
                reply
            }
            Err(why) => not_found(format!("{name}: {why}")),
        }
    }

    /// The text of the file a frame names `name`, or why it is not served.
    fn read(&self, name: &str) -> Result<String, String> {
        let root = self.root.as_ref().map_err(Clone::clone)?;
        let under = || format!("not found under the source root {}", root.display());
        let path = root.join(name); // an absolute `name` replaces the root
        let real = std::fs::canonicalize(&path).map_err(|_| under())?;
        if !real.starts_with(root) {
            return Err(format!("outside the source root {}", root.display()));
        }
        let file = std::fs::File::open(&real).map_err(|e| format!("cannot be read: {e}"))?;
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
        let too_big = || format!("larger than {} MiB", MAX_SOURCE_BYTES >> 20);
        if meta.len() > MAX_SOURCE_BYTES {
            return Err(too_big());
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_SOURCE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot be read: {e}"))?;
        if bytes.len() as u64 > MAX_SOURCE_BYTES {
            return Err(too_big());
        }
        match String::from_utf8(bytes) {
            Ok(text) if !text.contains('\0') => Ok(text),
            _ => Err("not UTF-8 text".to_owned()),
        }
    }
}

fn not_found(why: String) -> Reply {
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

    fn answer(sources: &Sources, query: &str) -> (u16, String) {
        let reply = sources.reply(query);
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
        assert_eq!(s.reply("file=src/lib.rs").cache, Some(CACHE_NONE));
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
}
