//! Where stacks may be read: a snapshot of the process's readable mappings from
//! `/proc/self/maps`, published by the collector through a sequence lock built from atomics so the
//! handler can look up the mapping that holds a stack pointer without locking or allocating.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

/// The published snapshot.
pub struct StackMap {
    seq: AtomicU64,
    len: AtomicUsize,
    lo: Box<[AtomicU64]>,
    hi: Box<[AtomicU64]>,
}

/// One readable mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// First address.
    pub lo: u64,
    /// One past the last address.
    pub hi: u64,
}

impl StackMap {
    /// An empty map with room for `capacity` mappings.
    pub fn new(capacity: usize) -> StackMap {
        StackMap {
            seq: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            lo: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            hi: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Replaces the snapshot with `ranges` (sorted, non-overlapping). Only one thread (the
    /// collector) may publish.
    pub fn publish(&self, ranges: &[Range]) {
        let n = ranges.len().min(self.lo.len());
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        for (i, r) in ranges[..n].iter().enumerate() {
            self.lo[i].store(r.lo, Ordering::Relaxed);
            self.hi[i].store(r.hi, Ordering::Relaxed);
        }
        self.len.store(n, Ordering::Relaxed);
        self.seq.store(s + 2, Ordering::Release);
    }

    /// The mapping that contains `addr`. Async-signal-safe; gives up (None) if the snapshot
    /// keeps changing under it.
    pub fn find(&self, addr: u64) -> Option<Range> {
        for _ in 0..4 {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 % 2 == 1 {
                continue;
            }
            let found = self.search(addr);
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return found;
            }
        }
        None
    }

    fn search(&self, addr: u64) -> Option<Range> {
        let n = self.len.load(Ordering::Relaxed).min(self.lo.len());
        let (mut a, mut b) = (0, n);
        while a < b {
            let mid = (a + b) / 2;
            if self.hi[mid].load(Ordering::Relaxed) <= addr {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        if a == n {
            return None;
        }
        let r = Range {
            lo: self.lo[a].load(Ordering::Relaxed),
            hi: self.hi[a].load(Ordering::Relaxed),
        };
        (r.lo <= addr && addr < r.hi).then_some(r)
    }
}

/// The readable mappings of this process, sorted. The main thread's `[stack]` grows down, so its
/// start is moved down to the end of the mapping below it, or to where the stack size limit
/// stops it if that is higher (a stack pointer in between is still in the stack, only addresses
/// above the stack pointer are ever read, and the handler takes the room left below its own
/// frame from the start).
pub fn read_maps() -> Vec<Range> {
    let stack_limit = stack_size_limit().unwrap_or(1 << 30);
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let mut out: Vec<Range> = Vec::new();
    let mut prev_end = 0;
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        let is_stack = line.ends_with("[stack]");
        if perms.starts_with('r') {
            let lo = if is_stack {
                prev_end.max(hi.saturating_sub(stack_limit)).min(lo)
            } else {
                lo
            };
            out.push(Range { lo, hi });
        }
        prev_end = hi;
    }
    out
}

/// The soft limit on the main thread's stack size (`ulimit -s`) in bytes, from
/// `/proc/self/limits`; `None` when unlimited or unknown.
fn stack_size_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max stack size"))?;
    line["Max stack size".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_mapping_of_a_local_variable() {
        let map = StackMap::new(4096);
        map.publish(&read_maps());
        let local = 5u64;
        let addr = &local as *const u64 as u64;
        let r = map.find(addr).expect("the stack is mapped");
        assert!(r.lo <= addr && addr < r.hi);
        assert_eq!(map.find(8), None);
    }

    #[test]
    fn the_main_stack_reaches_down_to_its_size_limit_at_most() {
        let Some(limit) = stack_size_limit() else {
            return; // `ulimit -s unlimited`: nothing to check
        };
        let stack = std::fs::read_to_string("/proc/self/maps").unwrap();
        let line = stack.lines().find(|l| l.ends_with("[stack]")).unwrap();
        let hi = u64::from_str_radix(line.split(['-', ' ']).nth(1).unwrap(), 16).unwrap();
        let r = read_maps().into_iter().find(|r| r.hi == hi).unwrap();
        assert!(r.lo >= hi - limit, "{r:?} limit {limit}");
    }

    #[test]
    fn lookups_use_the_latest_snapshot() {
        let map = StackMap::new(4);
        map.publish(&[Range { lo: 10, hi: 20 }, Range { lo: 30, hi: 40 }]);
        assert_eq!(map.find(35), Some(Range { lo: 30, hi: 40 }));
        assert_eq!(map.find(25), None);
        map.publish(&[Range { lo: 0, hi: 5 }]);
        assert_eq!(map.find(35), None);
        assert_eq!(map.find(3), Some(Range { lo: 0, hi: 5 }));
    }
}
