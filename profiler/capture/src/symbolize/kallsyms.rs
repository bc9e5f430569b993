//! Kernel function names from `/proc/kallsyms` (`ADDRESS TYPE NAME [MODULE]` lines), for the
//! kernel frames `prof record` takes where `perf_event_paranoid` allows them. A function ends
//! where the next one starts. Without the privilege to see them the kernel lists every address
//! as 0: the table is then empty and kernel frames stay hex addresses.

use super::symtab::{Listing, SymbolTable};

/// The name of the object kernel addresses are put in, and the module their frames show.
pub const KERNEL_OBJECT: &str = "[kernel]";

/// The lowest kernel address: the kernel's half of the address space (x86_64 and aarch64).
pub const KERNEL_START: u64 = 1 << 63;

/// The kernel's function symbols, read now from `/proc/kallsyms` line by line (empty when
/// unreadable): the listing (some 200,000 lines) is never held whole.
pub fn load() -> SymbolTable {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open("/proc/kallsyms") else {
        return SymbolTable::default();
    };
    parse_lines(
        std::io::BufReader::new(file)
            .split(b'\n')
            .map_while(Result::ok)
            .map(|line| String::from_utf8_lossy(&line).into_owned()),
    )
}

/// The function symbols (text: types `t`, `T`, `w`, `W`) of a `/proc/kallsyms` listing; a line
/// that is not one is skipped. Module functions keep their plain name.
pub fn parse(text: &str) -> SymbolTable {
    parse_lines(text.lines())
}

/// [`parse`] of the listing's lines.
fn parse_lines<L: AsRef<str>>(lines: impl Iterator<Item = L>) -> SymbolTable {
    let mut listing = Listing::default();
    for line in lines {
        let mut fields = line.as_ref().split_whitespace();
        let (Some(address), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if !matches!(kind, "t" | "T" | "w" | "W") {
            continue;
        }
        let Ok(address) = u64::from_str_radix(address, 16) else {
            continue;
        };
        if address >= KERNEL_START {
            listing.push(address, address, name);
        }
    }
    listing.finish_at_next_start(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_address_from_the_function_that_starts_at_or_before_it() {
        let table = parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t do_nanosleep\n\
             ffffffff81000100 T do_nanosleep_alias\n\
             ffffffff81000180 D some_data\n\
             ffffffff81000200 W schedule\n\
             garbage\n\
             zzzz T bad_address\n\
             ffffffffc0201000 t ext4_read [ext4]\n\
             0000000000000000 T hidden\n",
        );
        assert_eq!(
            table.function_at(0xffff_ffff_8100_0150).as_deref(),
            Some("do_nanosleep")
        );
        // Data symbols do not end a function.
        assert_eq!(
            table.function_at(0xffff_ffff_8100_01f0).as_deref(),
            Some("do_nanosleep")
        );
        assert_eq!(
            table.function_at(0xffff_ffff_8100_0200).as_deref(),
            Some("schedule")
        );
        assert_eq!(
            table.function_at(0xffff_ffff_c020_1010).as_deref(),
            Some("ext4_read")
        );
        assert_eq!(table.function_at(0x10), None);
    }

    #[test]
    fn a_listing_without_addresses_gives_no_names() {
        let table = parse("0000000000000000 T schedule\n0000000000000000 t do_nanosleep\n");
        assert_eq!(table.function_at(0), None);
        assert_eq!(table.function_at(0xffff_ffff_8100_0000), None);
    }
}
