//! Kernel frames: the addresses of a sample's kernel call chain sit at the top of its stack,
//! in the kernel's half of the address space, and are named from `/proc/kallsyms` as one
//! object, [`KERNEL_OBJECT`], which is their frames' module.

use prof_capture::symbolize::kallsyms::{KERNEL_OBJECT, KERNEL_START};
use prof_capture::symbolize::LoadedObject;
use std::borrow::Cow;

/// `objects`, plus the kernel's when one of `stacks` holds a kernel address, plus `jit` (the
/// process's JIT code, named from its map file; last, so it names its ranges).
pub fn with_kernel<'a>(
    objects: &'a [LoadedObject],
    stacks: &[Box<[u64]>],
    jit: Option<LoadedObject>,
) -> Cow<'a, [LoadedObject]> {
    let kernel = stacks
        .iter()
        .any(|s| s.first().is_some_and(|&a| a >= KERNEL_START));
    if !kernel && jit.is_none() {
        return Cow::Borrowed(objects);
    }
    let mut all = objects.to_vec();
    if kernel {
        all.push(LoadedObject {
            name: KERNEL_OBJECT.to_owned(),
            bias: 0,
            exec: std::iter::once(KERNEL_START..u64::MAX).collect(),
        });
    }
    all.extend(jit);
    Cow::Owned(all)
}
