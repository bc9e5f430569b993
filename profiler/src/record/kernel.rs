//! Kernel frames: the addresses of a sample's kernel call chain sit at the top of its stack,
//! in the kernel's half of the address space, and are named from `/proc/kallsyms` as one
//! object, [`KERNEL_OBJECT`], which is their frames' module.

use prof_capture::symbolize::kallsyms::{KERNEL_OBJECT, KERNEL_START};
use prof_capture::symbolize::LoadedObject;
use std::borrow::Cow;
use std::ops::Range;

/// The kernel's ranges of addresses sampled in `stacks` (of every process: one set, so
/// `/proc/kallsyms` is read once for all): each kernel address and the byte before it (where a
/// return address is looked up).
pub fn kernel_ranges<'a>(stacks: impl Iterator<Item = &'a [u64]>) -> Vec<Range<u64>> {
    let mut addresses: Vec<u64> = stacks
        .flat_map(|s| s.iter().copied())
        .filter(|&a| a >= KERNEL_START)
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for a in addresses {
        match ranges.last_mut() {
            Some(last) if last.end >= a - 1 => last.end = a + 1,
            _ => ranges.push(a - 1..a.saturating_add(1)),
        }
    }
    ranges
}

/// `objects`, plus the kernel's (covering `kernel`, see [`kernel_ranges`]) when one of
/// `stacks` holds a kernel address, plus `jit` (the process's JIT code, named from its map
/// file; last, so it names its ranges). The kernel's comes first, so the objects' addresses
/// are found before its ranges are searched.
pub fn with_kernel<'a>(
    objects: &'a [LoadedObject],
    stacks: &[Box<[u64]>],
    kernel: &[Range<u64>],
    jit: Option<LoadedObject>,
) -> Cow<'a, [LoadedObject]> {
    let sampled = stacks
        .iter()
        .any(|s| s.first().is_some_and(|&a| a >= KERNEL_START));
    if !sampled && jit.is_none() {
        return Cow::Borrowed(objects);
    }
    let mut all = Vec::with_capacity(objects.len() + 2);
    if sampled {
        all.push(LoadedObject {
            name: KERNEL_OBJECT.to_owned(),
            bias: 0,
            exec: kernel.to_vec(),
        });
    }
    all.extend_from_slice(objects);
    all.extend(jit);
    Cow::Owned(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_ranges_hold_each_address_and_the_byte_before_it() {
        let k = KERNEL_START + 0x1000;
        let stacks: [&[u64]; 2] = [&[k, 0x4000, k + 1], &[k + 10, k]];
        assert_eq!(
            kernel_ranges(stacks.into_iter()),
            vec![k - 1..k + 2, k + 9..k + 11]
        );
    }
}
