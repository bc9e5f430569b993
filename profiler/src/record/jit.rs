//! JIT code: the anonymous executable mappings of each recorded process, named after the
//! recording from the process's `/tmp/perf-PID.map` when it wrote one (see
//! `symbolize::perf_map`), as perf and samply name them.

use crate::symbolize::{perf_map, LoadedObject};
use std::collections::HashMap;
use std::ops::Range;

/// Whether an MMAP2 record's file name is anonymous memory (where JITs put their code).
pub fn is_anonymous(filename: &str) -> bool {
    filename == "//anon" || filename.starts_with("[anon") || filename.starts_with("/memfd:")
}

/// The anonymous executable mappings of each process (by its index in the recorder's table),
/// with its pid.
#[derive(Default)]
pub struct JitCode {
    by_process: HashMap<usize, (u32, Vec<Range<u64>>)>,
}

impl JitCode {
    /// Process `process` (pid `pid`) mapped anonymous memory `range` executable.
    pub fn mapped(&mut self, process: usize, pid: u32, range: Range<u64>) {
        let (_, ranges) = self
            .by_process
            .entry(process)
            .or_insert_with(|| (pid, Vec::new()));
        if !ranges.contains(&range) {
            ranges.push(range);
        }
    }

    /// Process `process`'s anonymous executable mappings.
    pub fn ranges(&self, process: usize) -> &[Range<u64>] {
        self.by_process.get(&process).map_or(&[], |(_, r)| r)
    }

    /// The object naming process `process`'s JIT code: its map file over its anonymous
    /// executable mappings, when it has both.
    pub fn object(&self, process: usize) -> Option<LoadedObject> {
        let (pid, ranges) = self.by_process.get(&process)?;
        let path = perf_map::path(*pid);
        std::path::Path::new(&path).is_file().then(|| LoadedObject {
            name: path,
            bias: 0,
            exec: ranges.clone(),
        })
    }
}
