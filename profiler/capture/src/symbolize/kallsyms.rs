//! Kernel function names from `/proc/kallsyms` (`ADDRESS TYPE NAME [MODULE]` lines), for the
//! kernel frames `prof record` takes where `perf_event_paranoid` allows them. A function ends
//! where the next one starts. Without the privilege to see them the kernel lists every address
//! as 0: the table is then empty and kernel frames stay hex addresses.

use super::symtab::{Listing, SymbolTable};
use std::ops::Range;

/// The name of the object kernel addresses are put in, and the module their frames show.
pub const KERNEL_OBJECT: &str = "[kernel]";

/// The lowest kernel address: the kernel's half of the address space (x86_64 and aarch64).
pub const KERNEL_START: u64 = 1 << 63;

/// The kernel functions that hold the addresses in `wanted` (the sampled kernel addresses,
/// and the byte before each, as ranges), read now from `/proc/kallsyms` line by line (empty
/// when unreadable). The listing (some 120,000 functions, 8 MB as a table) is neither held whole
/// nor kept: one pass finds, for each address wanted, the last function that starts at or
/// before it and the first that starts after it (where it ends).
pub fn load(wanted: &[Range<u64>]) -> SymbolTable {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open("/proc/kallsyms") else {
        return SymbolTable::default();
    };
    parse_lines(
        std::io::BufReader::new(file)
            .split(b'\n')
            .map_while(Result::ok)
            .map(|line| String::from_utf8_lossy(&line).into_owned()),
        wanted,
    )
}

/// The function symbols (text: types `t`, `T`, `w`, `W`) of a `/proc/kallsyms` listing that
/// hold the addresses in `wanted`; a line that is not one is skipped. Module functions keep
/// their plain name; of functions that start at one address, the first listed is kept.
pub fn parse(text: &str, wanted: &[Range<u64>]) -> SymbolTable {
    parse_lines(text.lines(), wanted)
}

/// [`parse`] of the listing's lines.
fn parse_lines<L: AsRef<str>>(
    lines: impl Iterator<Item = L>,
    wanted: &[Range<u64>],
) -> SymbolTable {
    let mut points: Vec<u64> = wanted.iter().flat_map(Clone::clone).collect();
    points.sort_unstable();
    points.dedup();
    let n = points.len();
    // For each point, the latest start seen whose first point at or above it is this one (with
    // its name), and the earliest start whose last point below it is this one; the latest start
    // at or before a point is then the largest of its own and those of the points below it, and
    // the earliest after it the smallest of its own and those of the points above.
    let mut before: Vec<Option<(u64, String)>> = vec![None; n];
    let mut after: Vec<u64> = vec![u64::MAX; n];
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
        if address < KERNEL_START {
            continue;
        }
        let k = points.partition_point(|&p| p < address);
        if k < n && before[k].as_ref().is_none_or(|(start, _)| *start < address) {
            before[k] = Some((address, name.to_owned()));
        }
        if k > 0 {
            after[k - 1] = after[k - 1].min(address);
        }
    }
    for j in (0..n.saturating_sub(1)).rev() {
        after[j] = after[j].min(after[j + 1]);
    }
    let mut listing = Listing::default();
    let mut latest: Option<usize> = None;
    for j in 0..n {
        let here = before[j].as_ref().map(|b| b.0);
        let best = latest.and_then(|l| before[l].as_ref().map(|b| b.0));
        if here.is_some_and(|h| best.is_none_or(|b| h > b)) {
            latest = Some(j);
        }
        let Some((start, name)) = latest.and_then(|l| before[l].as_ref()) else {
            continue;
        };
        let end = match after[j] {
            u64::MAX => start.saturating_add(4096),
            end => end,
        };
        listing.push(*start, end, name);
    }
    listing.finish()
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
             ffffffffc0202000 t ext4_write [ext4]\n\
             0000000000000000 T hidden\n",
            &[
                0xffff_ffff_8100_0150..0xffff_ffff_8100_0151,
                0xffff_ffff_8100_01ef..0xffff_ffff_8100_01f1,
                0xffff_ffff_8100_0200..0xffff_ffff_8100_0201,
                0xffff_ffff_c020_1010..0xffff_ffff_c020_1011,
                0x10..0x11,
            ],
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
        // Only the functions that hold an address wanted are kept, each ending where the next
        // function of the listing starts.
        assert_eq!(
            table.function_at(0xffff_ffff_c020_1ff0).as_deref(),
            Some("ext4_read")
        );
        assert_eq!(table.function_at(0xffff_ffff_c020_2000), None);
        assert_eq!(table.function_at(0xffff_ffff_8100_0050), None);
    }

    #[test]
    fn a_listing_out_of_order_names_each_address_as_a_sorted_one_does() {
        let listing = "ffffffffc0201000 t mod_b [m]\n\
                       ffffffff81000200 T second\n\
                       ffffffff81000000 T first\n\
                       ffffffffc0200000 t mod_a [m]\n\
                       ffffffff81000300 T third\n";
        let wanted: Vec<_> = [
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0250,
            0xffff_ffff_c020_0800,
        ]
        .map(|a: u64| a..a + 1)
        .into();
        let table = parse(listing, &wanted);
        let names: Vec<_> = wanted.iter().map(|r| table.function_at(r.start)).collect();
        assert_eq!(
            names,
            [
                Some("first".into()),
                Some("second".into()),
                Some("mod_a".into())
            ]
        );
        assert_eq!(table.function_at(0xffff_ffff_8100_0310), None, "not wanted");
    }

    #[test]
    fn a_listing_without_addresses_gives_no_names() {
        let table = parse(
            "0000000000000000 T schedule\n0000000000000000 t do_nanosleep\n",
            &[0..1, 0xffff_ffff_8100_0000..0xffff_ffff_8100_0001],
        );
        assert_eq!(table.function_at(0), None);
        assert_eq!(table.function_at(0xffff_ffff_8100_0000), None);
    }
}
