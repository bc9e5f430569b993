//! Opening a profile for a subcommand: every format through the library's one loader, with the
//! sample type the user chose, and the reader's warnings printed as one line each on stderr.

use prof::import::{load_any_with, LoadOptions};
use prof::session::Session;
use std::path::Path;

/// Loads `path` showing `sample_type` (by default the format's own choice), with the process
/// name as root frame of a perf file's stacks when `process_root`, printing each warning
/// (skipped lines, events left out, stacks cut) as `prof: warning: FILE: ...`.
pub fn load(path: &Path, sample_type: Option<String>, process_root: bool) -> prof::Result<Session> {
    let mut options = LoadOptions::default();
    options.sample_type = sample_type;
    options.process_root = process_root;
    let loaded = load_any_with(path, &options)?;
    for warning in &loaded.warnings {
        eprintln!("prof: warning: {}: {warning}", path.display());
    }
    Ok(loaded.session)
}
