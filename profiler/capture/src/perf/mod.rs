//! The perf-event ring as the capture core reads it: the sample layout both samplers ask the
//! kernel for (the user registers and a copy of the top of the user stack, see [`REGS_MASK`] and
//! [`DEFAULT_STACK_BYTES`]), the rings' size and how often they are drained, and the records
//! parsed from their bytes ([`records`]). The in-process sampler's own rings
//! (`Timer::PerfRing`) and `prof record`'s rings on other processes are both read this way; the
//! system calls themselves are the OS module's (`sys::perf_event_ring`, `sys::PerfRing`).

pub mod records;

use crate::sys::{PerfRing, Regs};
use crate::{Error, Result};
use std::time::Duration;

/// Bytes of user stack the kernel copies with each sample by default. Measured on the
/// `-O2 -fomit-frame-pointer` C program of `tests/tests/record.rs` (see the docs): the same as
/// samply's, four times perf's 8,192 default, so deep stacks still reach `main`.
pub const DEFAULT_STACK_BYTES: u32 = 32_000;

/// How often prof's thread drains the rings (rings of 1,024 data pages; smaller ones more often).
pub const DRAIN_EVERY: Duration = Duration::from_millis(5);

/// Data pages of each CPU's ring (4 MiB with 4 KiB pages: over a hundred samples of 32 KB).
pub const RING_PAGES: usize = 1024;

/// Maps the ring of `fd`: [`RING_PAGES`] data pages, or fewer where the user may lock no more
/// (users without `CAP_IPC_LOCK` get `/proc/sys/kernel/perf_event_mlock_kb` per CPU, 516 KiB
/// by default, plus `RLIMIT_MEMLOCK`), down to 16.
pub fn map_ring(fd: std::os::fd::OwnedFd) -> Result<PerfRing> {
    let mut pages = RING_PAGES;
    loop {
        let copy = fd.try_clone().map_err(|source| Error::Os {
            call: "dup(perf event)",
            source,
        })?;
        match PerfRing::new(copy, pages) {
            Err(Error::Os { source, .. })
                if pages > 16 && source.raw_os_error() == Some(libc::EPERM) =>
            {
                pages /= 2;
            }
            ring => return ring,
        }
    }
}

/// The user registers each sample carries, in the kernel's numbering: x86_64's bp, sp, ip.
#[cfg(target_arch = "x86_64")]
pub const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// The user registers each sample carries, in the kernel's numbering: aarch64's x29, lr, sp, pc.
#[cfg(target_arch = "aarch64")]
pub const REGS_MASK: u64 = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32);

/// The sampler's registers from a sample's (ordered by register number, see [`REGS_MASK`]).
#[cfg(target_arch = "x86_64")]
pub fn regs_of(r: &[u64]) -> Option<Regs> {
    let [fp, sp, pc] = r.try_into().ok()?;
    Some(Regs { pc, sp, fp, lr: 0 })
}

/// The sampler's registers from a sample's (ordered by register number, see [`REGS_MASK`]).
#[cfg(target_arch = "aarch64")]
pub fn regs_of(r: &[u64]) -> Option<Regs> {
    let [fp, lr, sp, pc] = r.try_into().ok()?;
    Some(Regs { pc, sp, fp, lr })
}
