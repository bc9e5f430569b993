//! The in-use table: the sampled blocks still allocated, keyed by address, so that a free can
//! tell whether its block was sampled. Open addressing over atomics, bounded: a key lives in one
//! of [`WINDOW`] slots from its home slot, a lookup reads all of them (so removal empties a slot
//! outright, with no tombstones), and an insert that finds the window full fails (the caller
//! drops the sample and counts it).
//!
//! Keys are unique while listed: a block is inserted by the thread allocating it before the
//! allocation returns, and removed by the thread freeing it before its memory goes back to the
//! allocator, so an insert and the removal of the same address never race.
//!
//! In front of the table sits [`Filter`], one counter per address bucket in a small static
//! array: a free whose bucket counts zero (nearly every free) skips the table.

/// This file's path as the compiler was given it (see `is_sampling_frame`).
pub(super) const SOURCE: &str = file!();

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

/// Slots a key may occupy from its home slot.
pub const WINDOW: usize = 32;

/// The sampled blocks still allocated.
pub struct InUse {
    keys: Box<[AtomicU64]>,
    ids: Box<[AtomicU32]>,
    shift: u32,
}

/// Where `addr`'s window starts in a table of `1 << (64 - shift)` slots (Fibonacci hashing of
/// the address without its alignment bits).
fn home(addr: u64, shift: u32) -> usize {
    ((addr >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl InUse {
    /// A table of `1 << log2_slots` slots (12 bytes each).
    pub fn new(log2_slots: u32) -> InUse {
        let n = 1usize << log2_slots;
        InUse {
            keys: (0..n).map(|_| AtomicU64::new(0)).collect(),
            ids: (0..n).map(|_| AtomicU32::new(0)).collect(),
            shift: 64 - log2_slots,
        }
    }

    fn slots(&self, addr: u64) -> impl Iterator<Item = usize> {
        let mask = self.keys.len() - 1;
        let start = home(addr, self.shift);
        (0..WINDOW.min(self.keys.len())).map(move |i| (start + i) & mask)
    }

    /// Lists block `addr` (not 0) as sample `id`; false when its window is full.
    pub fn insert(&self, addr: u64, id: u32) -> bool {
        for s in self.slots(addr) {
            if self.keys[s].load(Ordering::Relaxed) == 0
                && self.keys[s]
                    .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                self.ids[s].store(id, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// Unlists block `addr`; false when it was not listed.
    pub fn remove(&self, addr: u64) -> bool {
        for s in self.slots(addr) {
            if self.keys[s].load(Ordering::Acquire) == addr {
                self.keys[s].store(0, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// The sample ids of the blocks listed. Exact once no insert or removal is under way.
    pub fn live_ids(&self) -> Vec<u32> {
        self.keys
            .iter()
            .zip(self.ids.iter())
            .filter(|(k, _)| k.load(Ordering::Acquire) != 0)
            .map(|(_, id)| id.load(Ordering::Acquire))
            .collect()
    }
}

/// Buckets of the free path's filter.
const BUCKETS: usize = 4096;

/// How many listed blocks fall in each address bucket. Each bucket counts at most the table's
/// slots, which [`MAX_LOG2_SLOTS`] keeps within a `u16`.
pub struct Filter {
    counts: [AtomicU16; BUCKETS],
}

/// The largest table the filter can count for.
pub const MAX_LOG2_SLOTS: u32 = 15;

impl Filter {
    /// All buckets at zero.
    pub const fn new() -> Filter {
        Filter {
            counts: [const { AtomicU16::new(0) }; BUCKETS],
        }
    }

    #[inline(always)]
    fn bucket(&self, addr: u64) -> &AtomicU16 {
        &self.counts[((addr >> 4) ^ (addr >> 17)) as usize % BUCKETS]
    }

    /// True when a block at `addr` may be listed (false: it certainly is not).
    #[inline(always)]
    pub fn may_hold(&self, addr: u64) -> bool {
        self.bucket(addr).load(Ordering::Relaxed) != 0
    }

    /// Counts a block about to be listed.
    pub fn add(&self, addr: u64) {
        self.bucket(addr).fetch_add(1, Ordering::Relaxed);
    }

    /// Uncounts a block unlisted (or whose listing failed).
    pub fn sub(&self, addr: u64) {
        self.bucket(addr).fetch_sub(1, Ordering::Relaxed);
    }

    /// Sets every bucket to zero; only while nothing is listed or being listed.
    pub fn clear(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn inserted_blocks_are_found_once_and_removed() {
        let t = InUse::new(8);
        assert!(t.insert(0x1000, 7));
        assert!(t.insert(0x2000, 8));
        assert!(!t.remove(0x3000), "a block never listed is not found");
        let mut ids = t.live_ids();
        ids.sort();
        assert_eq!(ids, [7, 8]);
        assert!(t.remove(0x1000));
        assert!(!t.remove(0x1000), "removed once");
        assert_eq!(t.live_ids(), [8]);
    }

    #[test]
    fn a_full_window_refuses_and_removal_makes_room_without_tombstones() {
        let t = InUse::new(6);
        // Addresses that all share one home slot fill its window, then are refused.
        let same_home: Vec<u64> = (1..100_000u64)
            .map(|i| i << 4)
            .filter(|&a| home(a, t.shift) == home(16, t.shift))
            .take(WINDOW + 1)
            .collect();
        for (i, &a) in same_home[..WINDOW].iter().enumerate() {
            assert!(t.insert(a, i as u32));
        }
        assert!(!t.insert(same_home[WINDOW], 99));
        assert!(t.remove(same_home[3]));
        assert!(t.insert(same_home[WINDOW], 99));
        assert!(t.remove(same_home[WINDOW]) && t.remove(same_home[WINDOW - 1]));
    }

    #[test]
    fn concurrent_threads_each_find_their_own_blocks() {
        let t = Arc::new(InUse::new(12));
        let threads: Vec<_> = (0..4u64)
            .map(|k| {
                let t = Arc::clone(&t);
                std::thread::spawn(move || {
                    for round in 0..200u64 {
                        let addrs: Vec<u64> = (0..50)
                            .map(|i| (k << 40) | (round << 20) | (i << 4))
                            .collect();
                        for (i, &a) in addrs.iter().enumerate() {
                            assert!(t.insert(a, i as u32));
                        }
                        for &a in &addrs {
                            assert!(t.remove(a));
                        }
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert!(t.live_ids().is_empty());
    }

    #[test]
    fn the_filter_counts_per_bucket() {
        let f = Filter::new();
        assert!(!f.may_hold(0x1230));
        f.add(0x1230);
        assert!(f.may_hold(0x1230));
        f.sub(0x1230);
        assert!(!f.may_hold(0x1230));
        f.add(0x40);
        f.clear();
        assert!(!f.may_hold(0x40));
    }
}
