//! Reading the files `prof serve` is asked to show.

use super::SessionFile;
use crate::{Error, Result};
use flate2::read::GzDecoder;
use std::io::Read;
use std::path::Path;

/// Reads a session file for serving: gzip is undone, and the JSON is checked with the session
/// reader. A file that cannot be read is an error; a file that reads but does not parse is still
/// served (the page shows the same error) and the problem is returned beside it.
pub fn load_for_serving(path: &Path) -> Result<(SessionFile, Option<Error>)> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let json = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut json = Vec::new();
        GzDecoder::new(&bytes[..])
            .read_to_end(&mut json)
            .map_err(|e| Error::BadInput {
                path: path.to_owned(),
                message: format!("not a valid gzip file: {e}"),
            })?;
        json
    } else {
        bytes
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let problem = check(path, &json);
    Ok((SessionFile { name, json }, problem))
}

/// The reason `json` is not a readable session, if it is not: the session reader's own message,
/// which the page shows too.
fn check(path: &Path, json: &[u8]) -> Option<Error> {
    crate::session::read(json).err().map(|e| Error::BadInput {
        path: path.to_owned(),
        message: e.to_string(),
    })
}
