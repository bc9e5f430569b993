//! Opening a profile for a subcommand: every format through the library's one loader, with the
//! sample type the user chose, and the reader's warnings printed as one line each on stderr.

use prof::import::{load_any_with, LoadOptions};
use prof::session::Session;
use std::path::Path;

/// `--max-input`: the most a command reads of a profile, shared by every command that reads one.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct InputLimit {
    /// The most MiB of a profile read, once decompressed; a larger one is refused. It bounds
    /// the memory a gzip bomb or an endless device can take; `prof convert` also writes no
    /// session larger than this.
    #[arg(long = "max-input", value_name = "MIB", default_value_t = prof::import::MAX_DECOMPRESSED >> 20)]
    mib: u64,
}

impl InputLimit {
    /// The limit in bytes.
    pub fn bytes(self) -> u64 {
        self.mib.saturating_mul(1 << 20)
    }
}

/// How a command reads its profiles: what its `--type`, `--process-root` and `--max-input`
/// said.
#[derive(Clone, Debug)]
pub struct Reading {
    /// The sample type to show (by default the format's own choice).
    pub sample_type: Option<String>,
    /// The process name as root frame of a perf file's stacks.
    pub process_root: bool,
    /// The most read of each profile.
    pub limit: InputLimit,
}

/// Loads `path` as `reading` says, printing each warning (skipped lines, events left out,
/// stacks cut) as `prof: warning: FILE: ...`.
pub fn load(path: &Path, reading: &Reading) -> prof::Result<Session> {
    let mut options = LoadOptions::default();
    options.sample_type = reading.sample_type.clone();
    options.process_root = reading.process_root;
    options.max_bytes = reading.limit.bytes();
    let loaded = load_any_with(path, &options)?;
    for warning in &loaded.warnings {
        eprintln!("prof: warning: {}: {warning}", path.display());
    }
    Ok(loaded.session)
}
