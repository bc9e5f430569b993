//! Loading a profile file of any format `prof` reads (native only): the format is told from the
//! content ([`sniff`]), not the name, and gzip is undone first.

use super::{
    is_gzip, read_import, read_limited, sniff, Format, LoadOptions, Loaded, MAX_DECOMPRESSED,
};
use crate::session::Session;
use crate::{Error, Result};
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
pub(crate) fn is_session_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// Loads a profile of any format as [`load_any`] does, with `options` (the sample type to
/// show), and returns it with the reader's warnings (lines skipped, events left out, stacks cut).
pub fn load_any_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Loaded> {
    let path = path.as_ref();
    let session_file = |path: &Path| {
        let mut session = crate::session::load(path)?;
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
    if path
        .file_name()
        .is_some_and(|n| is_session_name(&n.to_string_lossy()))
    {
        return session_file(path);
    }
    let io_err = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let mut file = File::open(path).map_err(io_err)?;
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
    if format == Format::Session {
        return session_file(path);
    }
    let size = file.metadata().map_err(io_err)?.len();
    if size > MAX_DECOMPRESSED {
        return Err(bad(format!(
            "larger than {} MiB, the limit for an imported profile",
            MAX_DECOMPRESSED >> 20
        )));
    }
    let bytes = if gzipped {
        // Decompressed as it is read: the gzipped bytes are never held whole beside the
        // decompressed ones (issue 20: 12.5 MB of a pprof file, kept while its session was built).
        // The gzip trailer says how much room the decompressed bytes take.
        let mut trailer = [0; 4];
        if size >= 18 {
            file.seek(SeekFrom::End(-4)).map_err(io_err)?;
            file.read_exact(&mut trailer).map_err(io_err)?;
            file.seek(SeekFrom::Start(head.len() as u64))
                .map_err(io_err)?;
        }
        let hint = crate::session::gzip_size_hint(trailer, size);
        read_limited(flate2::read::GzDecoder::new(head.chain(file)), hint, path)?
    } else {
        let mut bytes = head;
        file.read_to_end(&mut bytes).map_err(io_err)?;
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
}
