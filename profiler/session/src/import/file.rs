//! Loading a profile file of any format `prof` reads (native only): the format is told from the
//! content ([`sniff`]), not the name, and gzip is undone first.

use super::{is_gzip, read_import, read_limited, sniff, Format, LoadOptions, Loaded};
use crate::error::{Error, Result};
use crate::session::{ReadOptions, Session};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How many bytes (after decompression) [`load_any`] looks at to tell the format.
const SNIFF_BYTES: u64 = 64 << 10;

/// Loads a session file, folded stacks, `perf script` output or a pprof profile (each possibly
/// gzipped) from `path`. A name ending in `.json` or `.json.gz` is taken for a session file (so a
/// broken one gets the session reader's precise error); any other file's format is told from its
/// content. Errors are one line naming the file. Warnings are dropped: see [`load_any_with`].
pub fn load_any(path: impl AsRef<Path>) -> Result<Session> {
    load_any_with(path, &LoadOptions::default()).map(|loaded| loaded.session)
}

/// True for the names every command reads as a prof session: `.json`, `.json.gz` (in any case).
pub fn is_session_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// Loads a profile of any format as [`load_any`] does, with `options` (the sample type to
/// show), and returns it with the reader's warnings (lines skipped, events left out, stacks cut).
pub fn load_any_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Loaded> {
    let path = path.as_ref();
    let select = |mut session: Session| {
        if let Some(wanted) = options.sample_type.as_deref() {
            session
                .select_sample_type(wanted)
                .map_err(|e| Error::BadInput {
                    path: path.to_owned(),
                    message: e.to_string(),
                })?;
        }
        Ok(Loaded::new(session))
    };
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let mut file = File::open(path).map_err(io_err)?;
    // A pipe, a terminal or a device (`<(cat s.json.gz)`, `/dev/stdin`, `/dev/zero`) is read
    // once, and no further than the limit: its size says nothing (0), and opening it again
    // would find what was read gone. A regular file may be measured and read again.
    let regular = file.metadata().map_err(io_err)?.is_file();
    let session_name = path
        .file_name()
        .is_some_and(|n| is_session_name(&n.to_string_lossy()));
    let limit = ReadOptions::default().max_bytes(options.max_bytes);
    if regular && session_name {
        return select(crate::session::load_with(path, limit)?);
    }
    let mut head = Vec::new();
    (&mut file)
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(io_err)?;
    if head.is_empty() {
        return Err(bad("empty file".into()));
    }
    let gzipped = is_gzip(&head);
    let format = if gzipped {
        // Decompress only as much as the sniffer needs; a cut-off stream is fine here.
        let mut plain = Vec::new();
        let _ = flate2::read::GzDecoder::new(&head[..])
            .take(SNIFF_BYTES)
            .read_to_end(&mut plain);
        sniff(&plain)
    } else {
        sniff(&head)
    };
    if format == Format::Session || session_name {
        if regular {
            return select(crate::session::load_with(path, limit)?);
        }
        let read = crate::session::read_with(head.chain(file), limit);
        return select(read.map_err(|e| e.at(path))?);
    }
    let size = if regular {
        file.metadata().map_err(io_err)?.len()
    } else {
        0
    };
    let max = options.max_bytes;
    let too_large = || bad(super::over_limit(max));
    if size > max {
        return Err(too_large());
    }
    let bytes = if gzipped {
        // Decompressed as it is read: the gzipped bytes are never held whole beside the
        // decompressed ones (12.5 MB of a pprof file, kept while its session was built).
        // The gzip trailer says how much room the decompressed bytes take.
        let mut trailer = [0; 4];
        if size >= 18 {
            file.seek(SeekFrom::End(-4)).map_err(io_err)?;
            file.read_exact(&mut trailer).map_err(io_err)?;
            file.seek(SeekFrom::Start(head.len() as u64))
                .map_err(io_err)?;
        }
        let hint = crate::session::gzip_size_hint(trailer, size);
        read_limited(
            flate2::read::GzDecoder::new(head.chain(file)),
            hint,
            path,
            max,
        )?
    } else {
        // Bounded by what is read, not by what the size said: a file that grows, or a device
        // that never ends, stops one byte past the limit.
        let mut bytes = head;
        let left = max.saturating_add(1).saturating_sub(bytes.len() as u64);
        file.take(left).read_to_end(&mut bytes).map_err(io_err)?;
        if bytes.len() as u64 > max {
            return Err(too_large());
        }
        bytes
    };
    read_import(format, &bytes, path, options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prof-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, bytes).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn every_format_loads_plain_or_gzipped() {
        let session = crate::export::fixture::session();
        let mut pprof = Vec::new();
        crate::export::pprof::write_pprof(&session, &mut pprof).unwrap();
        let mut json = Vec::new();
        crate::session::write(&session, &mut json).unwrap();
        let folded = b"main;work 3\nmain 1\n".to_vec();
        let cases = [
            ("a.pb.gz", pprof, "import:pprof"),
            ("a.folded.gz", gz(&folded), "import:folded"),
            ("a.folded", folded, "import:folded"),
            ("a.json.gz", gz(&json), "test"),
            ("sniffed-session.gz", gz(&json), "test"),
        ];
        for (name, bytes, timer) in cases {
            let loaded = load_any(temp(name, &bytes)).unwrap();
            assert_eq!(loaded.meta.timer, timer, "{name}");
            assert!(loaded.total_weight() > 0, "{name}");
        }
    }

    #[test]
    fn a_sample_type_a_session_file_does_not_have_is_refused_listing_its_own() {
        let mut json = Vec::new();
        crate::session::write(&crate::export::fixture::session(), &mut json).unwrap();
        let path = temp("typed.json", &json);
        let mut options = LoadOptions {
            sample_type: Some("cpu".into()),
            ..LoadOptions::default()
        };
        assert!(load_any_with(&path, &options).is_ok());
        options.sample_type = Some("alloc_space".into());
        let err = load_any_with(&path, &options).unwrap_err().to_string();
        assert!(
            err.ends_with("typed.json: no sample type `alloc_space` (available: cpu)"),
            "{err}"
        );
    }

    #[test]
    fn errors_name_the_file() {
        let err = load_any(temp("empty.txt", b"")).unwrap_err().to_string();
        assert!(err.ends_with("empty.txt: empty file"), "{err}");
        let err = load_any(temp("junk.bin", &[0xff, 0xfe, 0x00, 0x17, 0x99])).unwrap_err();
        assert!(
            err.to_string().contains("junk.bin: not a pprof profile"),
            "{err}"
        );
        let err = load_any("/nonexistent/x.folded").unwrap_err().to_string();
        assert!(err.starts_with("/nonexistent/x.folded: "), "{err}");
    }

    /// A FIFO in a fresh scratch directory, and a thread writing `fill`'s bytes into it
    /// (ignoring the error a reader that stopped early gives).
    fn fifo(name: &str, fill: impl FnOnce(&mut File) + Send + 'static) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prof-import-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success(), "mkfifo {path:?}");
        let writer = path.clone();
        std::thread::spawn(move || {
            if let Ok(mut file) = std::fs::OpenOptions::new().write(true).open(writer) {
                fill(&mut file);
            }
        });
        path
    }

    #[test]
    fn a_session_through_a_pipe_is_read_once() {
        let mut json = Vec::new();
        crate::session::write(&crate::export::fixture::session(), &mut json).unwrap();
        let bytes = gz(&json);
        // What `<(cat s.json.gz)` gives: a name that says nothing, content read once.
        let path = fifo("63", move |f| {
            let _ = std::io::Write::write_all(f, &bytes);
        });
        let loaded = load_any(&path).unwrap();
        assert_eq!(loaded, crate::export::fixture::session());
    }

    #[test]
    fn an_endless_input_is_read_no_further_than_the_limit() {
        // As `/dev/zero` does, this never says its size: 300 MiB of zeros, past the limit.
        let path = fifo("zeros", |f| {
            let block = vec![0u8; 1 << 20];
            for _ in 0..300 {
                if std::io::Write::write_all(f, &block).is_err() {
                    return;
                }
            }
        });
        let err = load_any(&path).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "zeros: more than 256 MiB, the limit for reading a profile (`--max-input MIB` \
                 lifts it)"
            ),
            "{err}"
        );
    }
}
