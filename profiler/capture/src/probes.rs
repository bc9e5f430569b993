//! Where to put a uprobe: the functions of an ELF file whose names a pattern wants, at their
//! offsets in the file, and the shared libraries an executable links (the files whose
//! functions it can call before any of its code runs).
//!
//! Names are those frames get (see [`crate::symbolize::symtab::SymbolTable::functions`]), so
//! a counted function and its sampled frames agree. A probe goes on a function's first byte,
//! at the file offset the kernel wants (`probe_offset`): its address less its segment's, plus
//! the segment's place in the file. Indirect functions (`STT_GNU_IFUNC`, as glibc's `memcpy`)
//! are left out: their symbol is the resolver, which runs once, not the function.

use crate::symbolize::symtab::SymbolTable;
use object::{Object, ObjectSegment, ObjectSymbol, SymbolFlags};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A function to count: its name and where its entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePoint {
    /// Its name, demangled, as the frames of a session name it.
    pub name: String,
    /// Its first instruction's address in the file (before any load bias).
    pub address: u64,
    /// The byte of the file that instruction is at.
    pub offset: u64,
}

/// The functions of the ELF file at `path` whose names `wanted` says yes to, in order of
/// address; none when the file cannot be read or is not ELF. Only the headers, the symbol
/// tables and the names asked for are read.
pub fn functions_matching(path: &Path, wanted: &dyn Fn(&str) -> bool) -> Vec<ProbePoint> {
    let table = SymbolTable::load(path);
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let cache = object::ReadCache::new(file);
    let Ok(elf) = object::File::parse(&cache) else {
        return Vec::new();
    };
    let segments: Vec<(u64, u64, u64)> = elf
        .segments()
        .filter_map(|s| {
            let (offset, size) = s.file_range();
            (size > 0).then_some((s.address(), size, offset))
        })
        .collect();
    let indirect: HashSet<u64> = elf
        .symbols()
        .chain(elf.dynamic_symbols())
        .filter(|s| {
            matches!(s.flags(), SymbolFlags::Elf { st_info, .. } if st_info.st_type() == object::elf::STT_GNU_IFUNC)
        })
        .map(|s| s.address())
        .collect();
    table
        .functions()
        .filter(|(address, name)| !indirect.contains(address) && wanted(name))
        .filter_map(|(address, name)| {
            let offset = segments.iter().find_map(|&(start, size, offset)| {
                let within = address.checked_sub(start)?;
                (within < size).then_some(offset + within)
            })?;
            Some(ProbePoint {
                name,
                address,
                offset,
            })
        })
        .collect()
}

/// The largest DWARF section [`inlined_functions`] reads: past it, a file's inlined functions
/// are not looked for (a large program's `.debug_info` is hundreds of megabytes).
pub const MAX_DWARF_SECTION: u64 = 256 << 20;

/// The names (as frames name them) of the functions the compiler inlined somewhere in the file
/// at `path`, from its DWARF (`DW_TAG_inlined_subroutine`): their inlined copies are not
/// entries a probe sees. `None` when the file has no DWARF to tell (no debug info, or a
/// section past [`MAX_DWARF_SECTION`]).
pub fn inlined_functions(path: &Path) -> Option<HashSet<String>> {
    use addr2line::gimli::{self, AttributeValue};
    let dwarf = crate::symbolize::cache::dwarf_sections(path.to_str()?, MAX_DWARF_SECTION)?;
    let mut raw: HashSet<Vec<u8>> = HashSet::new();
    let mut units = dwarf.units();
    let mut any = false;
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        any = true;
        let mut entries = unit.entries();
        while let Ok(Some(entry)) = entries.next_dfs() {
            if entry.tag() != gimli::DW_TAG_inlined_subroutine {
                continue;
            }
            let Some(AttributeValue::UnitRef(origin)) =
                entry.attr_value(gimli::DW_AT_abstract_origin)
            else {
                continue;
            };
            if let Some(name) = subprogram_name(&dwarf, &unit, origin) {
                raw.insert(name);
            }
        }
    }
    any.then(|| {
        raw.into_iter()
            .map(|n| crate::symbolize::demangle(&String::from_utf8_lossy(&n)))
            .collect()
    })
}

/// The raw name of the subprogram at `at` in `unit`: its linkage name, else its name, looking
/// through `DW_AT_specification` (a method's declaration) once.
fn subprogram_name<R: addr2line::gimli::Reader>(
    dwarf: &addr2line::gimli::Dwarf<R>,
    unit: &addr2line::gimli::Unit<R>,
    at: addr2line::gimli::UnitOffset<R::Offset>,
) -> Option<Vec<u8>> {
    use addr2line::gimli::{self, AttributeValue};
    let mut at = at;
    for _ in 0..2 {
        let entry = unit.entry(at).ok()?;
        for attr in [
            gimli::DW_AT_linkage_name,
            gimli::DW_AT_MIPS_linkage_name,
            gimli::DW_AT_name,
        ] {
            if let Some(value) = entry.attr_value(attr) {
                if let Ok(name) = dwarf.attr_string(unit, value) {
                    return name.to_slice().ok().map(|s| s.into_owned());
                }
            }
        }
        match entry.attr_value(gimli::DW_AT_specification) {
            Some(AttributeValue::UnitRef(next)) => at = next,
            _ => return None,
        }
    }
    None
}

/// The shared libraries the executable at `exe` links, and those they link, found where the
/// dynamic loader looks: `DT_RPATH` (of a file without `DT_RUNPATH`), `ld_library_path`, the
/// file's `DT_RUNPATH`, the directories of `/etc/ld.so.conf`, then the system's default
/// directories. Each is listed once, in the order found; a library not found is left out (the
/// loader would refuse to start the program). Libraries opened later (`dlopen`) are not here.
pub fn needed_libraries(exe: &Path, ld_library_path: Option<&OsStr>) -> Vec<PathBuf> {
    let configured = configured_dirs();
    let env_dirs: Vec<PathBuf> = ld_library_path
        .map(|p| {
            std::env::split_paths(p)
                .filter(|d| !d.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut found: Vec<PathBuf> = Vec::new();
    let mut seen_names = HashSet::new();
    let mut queue = vec![exe.to_path_buf()];
    let mut next = 0;
    // At most a thousand files: a loop in the links, or a file made to look like one, ends.
    while next < queue.len() && next < 1000 {
        let file = queue[next].clone();
        next += 1;
        let Some(links) = dynamic_links(&file) else {
            continue;
        };
        let origin = file.parent().unwrap_or(Path::new("/"));
        let expand = |list: &[String]| -> Vec<PathBuf> {
            list.iter()
                .flat_map(|l| l.split(':'))
                .filter(|d| !d.is_empty())
                .map(|d| {
                    PathBuf::from(
                        d.replace("${ORIGIN}", &origin.to_string_lossy())
                            .replace("$ORIGIN", &origin.to_string_lossy()),
                    )
                })
                .collect()
        };
        let mut dirs = Vec::new();
        if links.runpath.is_empty() {
            dirs.extend(expand(&links.rpath));
        }
        dirs.extend(env_dirs.iter().cloned());
        dirs.extend(expand(&links.runpath));
        dirs.extend(configured.iter().cloned());
        dirs.extend(DEFAULT_DIRS.iter().map(PathBuf::from));
        for name in links.needed {
            if !seen_names.insert(name.clone()) {
                continue;
            }
            let path = if name.contains('/') {
                Some(PathBuf::from(&name))
            } else {
                dirs.iter()
                    .map(|d| d.join(&name))
                    .find(|p| links.machine == machine(p))
            };
            if let Some(path) = path {
                if !found.contains(&path) {
                    found.push(path.clone());
                    queue.push(path);
                }
            }
        }
    }
    found
}

/// The loader's own directories, after those configured.
const DEFAULT_DIRS: &[&str] = &["/lib64", "/usr/lib64", "/lib", "/usr/lib"];

/// What an ELF file's dynamic section says about its links.
#[derive(Default)]
struct Links {
    needed: Vec<String>,
    rpath: Vec<String>,
    runpath: Vec<String>,
    machine: Option<object::elf::Machine>,
}

/// The file's `e_machine`, when it is a 64-bit ELF file.
fn machine(path: &Path) -> Option<object::elf::Machine> {
    use object::read::elf::FileHeader;
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&cache).ok()?;
    let endian = header.endian().ok()?;
    Some(header.e_machine(endian))
}

/// The `DT_NEEDED`, `DT_RPATH` and `DT_RUNPATH` entries of a 64-bit ELF file; `None` when it is
/// not one or cannot be read.
fn dynamic_links(path: &Path) -> Option<Links> {
    use object::elf;
    use object::read::elf::{Dyn, FileHeader};
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let data = &cache;
    let header = elf::FileHeader64::<object::Endianness>::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let mut links = Links {
        machine: Some(header.e_machine(endian)),
        ..Links::default()
    };
    let Some((entries, link)) = sections.dynamic(endian, data).ok()? else {
        return Some(links);
    };
    let strings = sections.strings(endian, data, link).ok()?;
    for entry in entries {
        let list = match entry.tag(endian) {
            elf::DT_NEEDED => &mut links.needed,
            elf::DT_RPATH => &mut links.rpath,
            elf::DT_RUNPATH => &mut links.runpath,
            elf::DT_NULL => break,
            _ => continue,
        };
        if let Ok(text) = entry.string(endian, strings) {
            list.push(String::from_utf8_lossy(text).into_owned());
        }
    }
    Some(links)
}

/// The directories `/etc/ld.so.conf` lists, following its `include` lines (at most 100 files
/// read, each at most 1 MiB).
fn configured_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut files = vec![PathBuf::from("/etc/ld.so.conf")];
    let mut read = 0;
    while let Some(file) = files.pop() {
        read += 1;
        if read > 100 {
            break;
        }
        let Ok(text) = read_small(&file) else {
            continue;
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if let Some(pattern) = line.strip_prefix("include") {
                files.extend(matching_files(pattern.trim(), file.parent()));
            } else if line.starts_with('/') {
                dirs.push(PathBuf::from(line));
            }
        }
    }
    dirs
}

/// A text file of at most 1 MiB.
fn read_small(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(1 << 20)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// The files an `include` pattern of `ld.so.conf` names: a path whose last part may have one
/// `*` (`/etc/ld.so.conf.d/*.conf`), relative ones under `base`; in name order.
fn matching_files(pattern: &str, base: Option<&Path>) -> Vec<PathBuf> {
    let pattern = match base {
        Some(base) if !pattern.starts_with('/') => base.join(pattern),
        _ => PathBuf::from(pattern),
    };
    let (Some(dir), Some(last)) = (pattern.parent(), pattern.file_name()) else {
        return Vec::new();
    };
    let last = last.to_string_lossy();
    let Some((prefix, suffix)) = last.split_once('*') else {
        return vec![pattern.clone()];
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.len() >= prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary: a 64-bit ELF executable with symbols, linking the C library.
    fn this_program() -> PathBuf {
        std::env::current_exe().unwrap()
    }

    #[inline(never)]
    fn probe_target(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3))
    }

    #[test]
    fn a_function_is_found_by_name_at_the_file_offset_its_bytes_are_at() {
        std::hint::black_box(probe_target(1));
        let exe = this_program();
        let found = functions_matching(&exe, &|name| name.ends_with("probes::tests::probe_target"));
        assert_eq!(found.len(), 1, "{found:?}");
        // The file's bytes at the offset are the running function's first bytes.
        let bytes = std::fs::read(&exe).unwrap();
        let at = found[0].offset as usize;
        let running = code_bytes(probe_target as *const () as usize, 16);
        assert_eq!(&bytes[at..at + 16], &running[..]);
    }

    /// `n` bytes of this process's code at `address`, read through `/proc/self/mem`.
    fn code_bytes(address: usize, n: usize) -> Vec<u8> {
        use std::os::unix::fs::FileExt;
        let mem = std::fs::File::open("/proc/self/mem").unwrap();
        let mut bytes = vec![0u8; n];
        mem.read_exact_at(&mut bytes, address as u64).unwrap();
        bytes
    }

    #[inline(always)]
    fn always_inlined(x: u64) -> u64 {
        x.rotate_left(7) ^ 0x55
    }

    #[test]
    fn the_functions_inlined_somewhere_are_named_from_the_debug_info() {
        std::hint::black_box(always_inlined(std::hint::black_box(3)));
        let inlined = inlined_functions(&this_program()).expect("the test binary has DWARF");
        assert!(
            inlined
                .iter()
                .any(|n| n.ends_with("probes::tests::always_inlined")),
            "{} names",
            inlined.len()
        );
        assert!(!inlined
            .iter()
            .any(|n| n.ends_with("probes::tests::probe_target")));
        // A file without debug info cannot tell.
        let dir = std::env::temp_dir().join(format!("prof-probes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stripped = dir.join("not-elf");
        std::fs::write(&stripped, b"not an ELF file").unwrap();
        assert_eq!(inlined_functions(&stripped), None);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_c_library_is_among_the_libraries_a_program_links_and_each_is_listed_once() {
        let libraries = needed_libraries(&this_program(), None);
        assert!(
            libraries.iter().any(|l| l
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("libc.so")),
            "{libraries:?}"
        );
        let mut sorted = libraries.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), libraries.len(), "{libraries:?}");
        assert!(libraries.iter().all(|l| l.exists()), "{libraries:?}");
    }

    #[test]
    #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
    fn indirect_functions_are_not_probed_their_resolver_runs_once() {
        let libc = needed_libraries(&this_program(), None)
            .into_iter()
            .find(|l| {
                l.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("libc.so")
            })
            .expect("libc");
        // glibc's strcpy is an indirect function on x86_64; its implementations are not.
        let found = functions_matching(&libc, &|name| name == "strcpy");
        assert!(found.is_empty(), "{found:?}");
        let found = functions_matching(&libc, &|name| name == "qsort");
        assert_eq!(found.len(), 1, "{found:?}");
    }
}
