//! Reading the files `prof serve` is asked to show, through the loader every command uses.

use super::SessionFile;
use prof_session::import::LoadOptions;
use prof_session::session::{ReadOptions, Session};
use prof_session::{Error, Result};
use std::path::Path;

/// Loads a profile of any format `prof` reads for serving, through [`prof_session::import::load_any`],
/// the loader `prof report` and `prof convert` use: gzip is undone, the format is told from the
/// content, input over 256 MiB once decompressed is refused, and an imported profile (folded
/// stacks, `perf script`, pprof) becomes session JSON, which is what the page reads.
///
/// A file that cannot be read (missing, unreadable) is an error. A file whose content is bad,
/// or a directory, is still listed, with that error for the page to show, and the error is
/// returned beside it.
pub fn load_for_serving(path: &Path) -> Result<(SessionFile, Option<Error>)> {
    load_for_serving_with(path, &LoadOptions::default())
}

/// [`load_for_serving`] with import options: the sample type shown first, and whether a
/// `perf script` file's stacks start with their process name
/// ([`LoadOptions::process_root`], `prof serve --process-root`).
pub fn load_for_serving_with(
    path: &Path,
    options: &LoadOptions,
) -> Result<(SessionFile, Option<Error>)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let loaded = if path.is_dir() {
        Err(Error::BadInput {
            path: path.to_owned(),
            message: "a directory, not a profile file".to_owned(),
        })
    } else if options.sample_type.is_none() && prof_session::import::is_session_name(&name) {
        as_written(path, &name, options.max_bytes)
    } else {
        prof_session::import::load_any_with(path, options)
            .and_then(|loaded| SessionFile::from_session(name.clone(), &loaded.session))
    };
    match loaded {
        Ok(file) => Ok((file, None)),
        Err(Error::BadInput { path, message }) => Ok((
            // The page names the file by its name alone, not the path it was given as.
            SessionFile::unreadable(&name, format!("{name}: {message}")),
            Some(Error::BadInput { path, message }),
        )),
        Err(e) => Err(e),
    }
}

/// A session file served as it was written: read and checked by the session loader every
/// command uses (which refuses a file over the cap by its size, before reading it), its source
/// files listed, and its bytes handed on, not written out and compressed again. A one-member
/// gzip stream (what prof writes) is sent as it is; anything else is sent as its JSON.
fn as_written(path: &Path, name: &str, max_bytes: u64) -> Result<SessionFile> {
    use std::io::Read;
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let options = ReadOptions::default().max_bytes(max_bytes);
    let (raw, session) = prof_session::session::load_bytes_with(path, options)?;
    let source_files = source_files(&session);
    let binaries = super::disasm::Binaries::of(&session);
    drop(session);
    let mut file = if raw.starts_with(&[0x1f, 0x8b]) {
        // The reader accepted it, so it decompresses within the limit. `bufread` takes from the
        // slice only what the first member uses (`read::GzDecoder` reads 32 KiB ahead and drops
        // that on `into_inner`), so what is left says whether more members follow; counting
        // the first member's JSON into a sink holds none of it.
        let mut first = flate2::bufread::GzDecoder::new(&raw[..]);
        let len = std::io::copy(&mut first, &mut std::io::sink())
            .map_err(|e| bad(format!("gzip: {e}")))?;
        if first.into_inner().is_empty() {
            let mut file = SessionFile::new(name, Vec::new());
            file.gzip = Some((raw, len));
            file
        } else {
            // Several members (concatenated gzip files): the JSON is all of them, which a
            // client undoing one gzip member would cut short, so it is sent decoded.
            let mut json = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..])
                .read_to_end(&mut json)
                .map_err(|e| bad(format!("gzip: {e}")))?;
            SessionFile::new(name, json)
        }
    } else {
        SessionFile::new(name, raw)
    };
    file.source_files = source_files;
    file.binaries = binaries;
    Ok(file)
}

/// The source file names `session`'s frames give, each once, sorted: the only files the Source
/// view may read.
fn source_files(session: &Session) -> Vec<String> {
    let mut files: Vec<_> = session.frames.iter().filter_map(|f| f.file).collect();
    files.sort_unstable();
    files.dedup();
    files.iter().map(|&f| session.str(f).to_owned()).collect()
}

impl SessionFile {
    /// `session` as a profile named `name`, written as session JSON, with the source files its
    /// frames name.
    pub fn from_session(name: impl Into<String>, session: &Session) -> Result<SessionFile> {
        let mut json = Vec::new();
        prof_session::session::write(session, &mut json).map_err(Error::Write)?;
        let mut file = SessionFile::new(name, json);
        file.source_files = source_files(session);
        file.binaries = super::disasm::Binaries::of(session);
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prof-serve-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// `prof serve` refused folded, perf and pprof files that `prof report` reads.
    #[test]
    fn imported_formats_are_served_as_sessions() {
        let (file, problem) =
            load_for_serving(&temp("a.folded", b"main;work 3\nmain 1\n")).unwrap();
        assert!(problem.is_none(), "{problem:?}");
        assert_eq!(file.name, "a.folded");
        let session = prof_session::session::read(&file.json[..]).unwrap();
        assert_eq!(session.meta.timer, "import:folded");
        assert_eq!(session.total_weight(), 4);
    }

    /// A session file was parsed, written out as JSON again and compressed again
    /// before the page parsed it once more. Now a `.json.gz` prof wrote is sent byte for byte,
    /// a `.json` as its JSON, and a bad one is still listed with its error.
    #[test]
    fn session_files_are_served_as_written() {
        let session = prof_session::export::fixture::session();
        let gz = temp("as-written.json.gz", b"");
        prof_session::session::save(&session, &gz).unwrap();
        let written = std::fs::read(&gz).unwrap();
        let (file, problem) = load_for_serving(&gz).unwrap();
        assert!(problem.is_none(), "{problem:?}");
        let (bytes, len) = file.gzip.clone().expect("sent as it was written");
        assert_eq!(bytes, written);
        assert!(file.json.is_empty());
        assert_eq!(prof_session::session::read_bytes(&bytes).unwrap(), session);
        let mut json = Vec::new();
        prof_session::session::write(&session, &mut json).unwrap();
        assert_eq!(len, json.len() as u64);
        assert!(!file.source_files.is_empty(), "its frames name files");

        // Two gzip members (concatenated `.gz` files, which every reader of prof's takes): the
        // whole JSON is served, not the first member's.
        let half = json.len() / 2;
        let mut two = Vec::new();
        for part in [&json[..half], &json[half..]] {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut gz, part).unwrap();
            two.extend(gz.finish().unwrap());
        }
        let two = temp("two-members.json.gz", &two);
        let (file, problem) = load_for_serving(&two).unwrap();
        assert!(problem.is_none(), "{problem:?}");
        assert_eq!((&file.json, &file.gzip), (&json, &None));

        let plain = temp("as-written.json", &json);
        let (file, _) = load_for_serving(&plain).unwrap();
        assert_eq!((file.json, file.gzip), (json, None));

        let bad = temp("bad.json", b"{\"format\": \"prof-session\"}");
        let (file, problem) = load_for_serving(&bad).unwrap();
        assert!(problem.is_some() && file.problem.unwrap().starts_with("bad.json: "));
    }

    /// `prof serve` decompressed any file whole (a 1 MB gzip bomb took it to 1.6 GB)
    /// while `prof report` refused more than 256 MiB.
    #[test]
    fn a_gzip_bomb_is_refused_by_the_shared_cap() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut json = b"{\"format\": \"prof-session\", \"pad\": \"".to_vec();
        json.resize(1 << 20, b' ');
        std::io::Write::write_all(&mut gz, &json).unwrap();
        let spaces = vec![b' '; 1 << 20];
        for _ in 0..(prof_session::import::MAX_DECOMPRESSED >> 20) {
            std::io::Write::write_all(&mut gz, &spaces).unwrap();
        }
        let path = temp("bomb.json.gz", &gz.finish().unwrap());
        let (file, problem) = load_for_serving(&path).unwrap();
        let problem = problem.expect("the bomb is refused").to_string();
        assert!(problem.contains("larger than 256 MiB"), "{problem}");
        assert!(file.json.is_empty());
        let shown = file.problem.unwrap();
        assert!(
            shown.starts_with("bomb.json.gz: ") && shown.contains("256 MiB"),
            "{shown}"
        );
    }

    /// A directory among the files stopped `prof serve` (reading it failed with
    /// EISDIR, an I/O error), while corrupt and oversized files were listed with their error.
    #[test]
    fn a_directory_is_listed_with_its_one_line_error() {
        let dir = temp("x.folded", b"main 1\n").with_file_name("profiles.d");
        std::fs::create_dir_all(&dir).unwrap();
        let (file, problem) = load_for_serving(&dir).unwrap();
        assert_eq!(file.name, "profiles.d");
        assert!(file.json.is_empty());
        assert_eq!(
            file.problem.as_deref(),
            Some("profiles.d: a directory, not a profile file")
        );
        let problem = problem.expect("the problem is returned").to_string();
        assert!(
            problem.ends_with("profiles.d: a directory, not a profile file"),
            "{problem}"
        );
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let err = load_for_serving(Path::new("/nonexistent/a.json")).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
    }
}
