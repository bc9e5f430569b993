//! Names for code that no symbol names: the functions of a stripped program or library
//! (gzip's, liblzma's, the static functions of python3 or sqlite3).
//!
//! Such a frame is named by its object's file name and a file address, `gzip+0x4300`: the
//! address as the ELF file gives it (its virtual address, what `addr2line -e FILE`, `objdump`
//! and a debug file found later take), so the name is the same in every run wherever the
//! program was loaded, and `prof diff` of two runs shows no change where there was none. The
//! address is the start of the function that the object's unwind table (`.eh_frame`) says
//! holds the instruction, so that all the samples of one function share one name (perf names
//! each instruction, `0x4330`); where no entry of the table holds it, the instruction's own.

use addr2line::gimli;
use std::path::Path;

/// The functions an object's unwind table describes: their start and end (file addresses).
#[derive(Debug, Default)]
pub struct FunctionRanges {
    /// `(start, end)`, sorted by start.
    ranges: Vec<(u64, u64)>,
}

impl FunctionRanges {
    /// The functions of the `.eh_frame` of the ELF file at `path`, reading only its headers and
    /// that section; none when the file cannot be read or has no such section.
    pub fn load(path: &Path) -> FunctionRanges {
        let Ok(file) = std::fs::File::open(path) else {
            return FunctionRanges::default();
        };
        FunctionRanges::parse(&object::ReadCache::new(file))
    }

    /// The functions of the `.eh_frame` of an ELF image (in memory, or read as needed from a
    /// file). An entry that cannot be parsed is left out; one that cannot be stepped over ends
    /// the table there.
    pub fn parse<'data, R: object::ReadRef<'data>>(data: R) -> FunctionRanges {
        let mut ranges = fde_ranges(data).unwrap_or_default();
        ranges.sort_unstable();
        FunctionRanges { ranges }
    }

    /// The start of the function whose range holds `file_address`.
    pub fn start_of(&self, file_address: u64) -> Option<u64> {
        let i = self
            .ranges
            .partition_point(|&(start, _)| start <= file_address);
        let &(start, end) = self.ranges.get(i.checked_sub(1)?)?;
        (file_address < end).then_some(start)
    }

    /// The start of each function, in order.
    pub fn starts(&self) -> impl Iterator<Item = u64> + '_ {
        self.ranges.iter().map(|&(start, _)| start)
    }
}

/// The name of the code at `file_address` of the object whose file is named `object`:
/// `object+0x…`, the start of its function in `functions`, else `file_address` itself.
pub fn name(object: &str, file_address: u64, functions: &FunctionRanges) -> String {
    let at = functions.start_of(file_address).unwrap_or(file_address);
    format!("{object}+{at:#x}")
}

/// The `(start, end)` of each frame description entry of an ELF image's `.eh_frame`; `None`
/// when the image or the section cannot be read.
fn fde_ranges<'data, R: object::ReadRef<'data>>(data: R) -> Option<Vec<(u64, u64)>> {
    use gimli::UnwindSection;
    use object::{Object, ObjectSection};
    let file = object::File::parse(data).ok()?;
    let section = file.section_by_name(".eh_frame")?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let mut eh_frame = gimli::EhFrame::new(section.data().ok()?, endian);
    eh_frame.set_address_size(if file.is_64() { 8 } else { 4 });
    // Pointers in the table may be relative to these sections.
    let mut bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
    if let Some(text) = file.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    if let Some(got) = file.section_by_name(".got") {
        bases = bases.set_got(got.address());
    }
    // The few common entries the many function entries share, each parsed once.
    let mut cies = foldhash::HashMap::default();
    let mut ranges = Vec::new();
    let mut entries = eh_frame.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let gimli::CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let fde = partial.parse(|section, bases, offset| {
            if let Some(cie) = cies.get(&offset) {
                return Ok(Clone::clone(cie));
            }
            let cie = section.cie_from_offset(bases, offset)?;
            cies.insert(offset, cie.clone());
            Ok(cie)
        });
        if let Ok(fde) = fde {
            if fde.len() > 0 {
                ranges.push((fde.initial_address(), fde.end_address()));
            }
        }
    }
    Some(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(ranges: &[(u64, u64)]) -> FunctionRanges {
        FunctionRanges {
            ranges: ranges.to_vec(),
        }
    }

    #[test]
    fn an_address_is_named_by_the_start_of_its_function_else_by_itself() {
        let functions = ranges(&[(0x1000, 0x1040), (0x1040, 0x1100), (0x2000, 0x2010)]);
        assert_eq!(name("gzip", 0x1000, &functions), "gzip+0x1000");
        assert_eq!(name("gzip", 0x103f, &functions), "gzip+0x1000");
        assert_eq!(name("gzip", 0x1040, &functions), "gzip+0x1040");
        assert_eq!(name("gzip", 0x10ff, &functions), "gzip+0x1040");
        // Between two functions, before the first and after the last: the address itself.
        assert_eq!(name("gzip", 0x1100, &functions), "gzip+0x1100");
        assert_eq!(name("gzip", 0xfff, &functions), "gzip+0xfff");
        assert_eq!(name("gzip", 0x2010, &functions), "gzip+0x2010");
        let none = FunctionRanges::default();
        assert_eq!(name("liblzma.so.5", 0x15bf9, &none), "liblzma.so.5+0x15bf9");
    }

    #[test]
    fn the_unwind_table_gives_the_functions_the_symbol_table_gives() {
        // This test binary has both: every function the symbol table sizes starts an entry of
        // the unwind table that ends where the symbol ends.
        let exe = std::env::current_exe().unwrap();
        let functions = FunctionRanges::load(&exe);
        assert!(functions.ranges.len() > 1000, "{}", functions.ranges.len());
        let table = super::super::symtab::SymbolTable::load(&exe);
        let mut checked = 0;
        for (start, end) in table.ranges() {
            if let Some(at) = functions.start_of(start) {
                assert_eq!(at, start);
                assert_eq!(functions.start_of(end - 1), Some(start), "{start:#x}");
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked} functions checked");
        assert!(FunctionRanges::load(Path::new("/nonexistent"))
            .ranges
            .is_empty());
    }
}
