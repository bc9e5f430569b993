//! Opening a profile for a subcommand: every format through the library's one loader, with the
//! sample type the user chose, and the reader's warnings printed as one line each on stderr.

use prof::import::{load_any_with, LoadOptions};
use prof::session::Session;
use std::path::Path;

/// Loads `path` showing `sample_type` (by default the format's own choice), printing each
/// warning (skipped lines, events left out, stacks cut) as `prof: warning: FILE: ...`.
pub fn load(path: &Path, sample_type: Option<String>) -> prof::Result<Session> {
    let mut options = LoadOptions::default();
    options.sample_type = sample_type;
    let loaded = load_any_with(path, &options)?;
    for warning in &loaded.warnings {
        eprintln!("prof: warning: {}: {warning}", path.display());
    }
    Ok(loaded.session)
}
