//! JIT code: the anonymous executable mappings of each recorded process, named after the
//! recording from the process's `/tmp/perf-PID.map` when it wrote one (see
//! `symbolize::perf_map`), as perf and samply name them.

use prof_capture::symbolize::{perf_map, LoadedObject};
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

    /// The object naming process `process`'s JIT code where `stacks` sampled it: its map file
    /// over the addresses of `stacks` in its anonymous executable mappings (each with the byte
    /// before it, where a return address is looked up), so that only the map's entries that
    /// name a sampled address are read. `None` when it has no map file or no such address.
    pub fn object(&self, process: usize, stacks: &[Box<[u64]>]) -> Option<LoadedObject> {
        let (pid, ranges) = self.by_process.get(&process)?;
        let mut sampled: Vec<Range<u64>> = stacks
            .iter()
            .flat_map(|s| s.iter())
            .filter(|&&a| ranges.iter().any(|r| r.contains(&a)))
            .map(|&a| a.saturating_sub(1)..a.saturating_add(1))
            .collect();
        sampled.sort_unstable_by_key(|r| r.start);
        let mut exec: Vec<Range<u64>> = Vec::new();
        for r in sampled {
            match exec.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => exec.push(r),
            }
        }
        let path = perf_map::path(*pid);
        let readable = !exec.is_empty() && std::path::Path::new(&path).is_file();
        readable.then_some(LoadedObject {
            name: path,
            bias: 0,
            exec,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jit_object_covers_only_the_sampled_addresses_of_its_code() {
        let mut jit = JitCode::default();
        let pid = std::process::id();
        jit.mapped(0, pid, 0x1000..0x9000);
        let map = perf_map::path(pid);
        std::fs::write(&map, "1000 8000 all_of_it\n").unwrap();
        let stacks: Vec<Box<[u64]>> = vec![
            vec![0x2000, 0x2001, 0x50_0000].into(),
            vec![0x8fff, 0x9000].into(),
        ];
        let object = jit.object(0, &stacks);
        let none = jit.object(0, &[vec![0x50_0000u64].into()]);
        std::fs::remove_file(&map).unwrap();
        let object = object.expect("a map and sampled JIT code");
        assert_eq!(object.exec, [0x1fff..0x2002, 0x8ffe..0x9000]);
        assert_eq!(none, None);
    }
}
