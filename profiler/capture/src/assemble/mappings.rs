//! The loaded objects as the session's mappings: for each executable segment of each object with
//! a file, its address range, file offset, path and GNU build ID, so a pprof export lets
//! `go tool pprof` find the binaries and disassemble them.
//!
//! The ranges are the segments' own (`p_vaddr` plus the load bias, `p_memsz` long, at
//! `p_offset`), not widened to pages as `/proc/self/maps` shows them: the `go tool pprof` that
//! ships with Go takes a mapping's start for the executable segment's first byte and ignores the
//! offset, while upstream pprof computes the same base from either form.

use crate::session::{MappingSpec, SessionBuilder};
use crate::symbolize::LoadedObject;
use object::{Object, ObjectSegment};

/// Adds the executable segments of `objects` to the session's mappings. Objects whose file cannot
/// be read (the vDSO) are left out: their offsets are unknown.
pub fn add_mappings(builder: &mut SessionBuilder, objects: &[LoadedObject]) {
    for object in objects {
        let (path, file) = if object.name.is_empty() {
            let exe = std::env::current_exe().map(|p| p.display().to_string());
            (exe.unwrap_or_default(), "/proc/self/exe")
        } else {
            (object.name.clone(), object.name.as_str())
        };
        let Ok(data) = std::fs::File::open(file) else {
            continue;
        };
        let cache = object::ReadCache::new(data);
        let Ok(elf) = object::File::parse(&cache) else {
            continue;
        };
        let build_id = match elf.build_id() {
            Ok(Some(id)) if !id.is_empty() => Some(hex(id)),
            _ => None,
        };
        for range in &object.exec {
            let segment = elf
                .segments()
                .find(|s| object.bias.wrapping_add(s.address()) == range.start);
            let Some(segment) = segment else {
                continue;
            };
            let (offset, _) = segment.file_range();
            builder.push_mapping(&MappingSpec {
                start: range.start,
                limit: range.end,
                offset,
                path: &path,
                build_id: build_id.as_deref(),
            });
        }
    }
}

/// Lowercase hex, as `go tool pprof` and `readelf -n` print build IDs.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    #[test]
    fn the_running_code_is_where_its_mapping_says_in_the_file() {
        let (objects, _) = crate::sys::loaded_objects();
        let this: fn() = the_running_code_is_where_its_mapping_says_in_the_file;
        let here = this as usize as u64;
        let mut b = SessionBuilder::default();
        add_mappings(&mut b, &objects);
        let s = b.finish();
        let m = s
            .mapping_at(here)
            .expect("the code running is in a mapping");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(s.str(m.path), exe.display().to_string());
        // The bytes the process runs at `here` are the file's at `offset + (here - start)`.
        let mut running = [0u8; 64];
        let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
        mem.seek(SeekFrom::Start(here)).unwrap();
        mem.read_exact(&mut running).unwrap();
        let file = std::fs::read(&exe).unwrap();
        let at = (m.offset + (here - m.start)) as usize;
        assert_eq!(&file[at..at + 64], &running[..]);
        // The linker's GNU build ID note, as `readelf -n` prints it.
        let id = m
            .build_id
            .as_deref()
            .expect("the test binary has a build ID");
        let readelf = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&exe)
            .output();
        if let Ok(out) = readelf {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(&format!("Build ID: {id}")),
                "{id} not in {text}"
            );
        }
    }
}
