//! A bounded, preallocated, lock-free queue of raw samples of variable length: many signal
//! handlers write, the collector thread reads. Every word is an atomic, so no `unsafe` is needed.
//!
//! The queue is one array of words used as a circle, with a writers' `head` and the reader's
//! `tail`, both word positions that only grow (the array index is the position modulo its
//! power-of-two length). A writer does not know its stack's depth before it unwinds, so it
//! claims room for the deepest record (`HEADER + max_depth` words) by advancing `head` with a
//! compare-and-swap, writes its addresses, and at publish gives back what it did not use: when
//! `head` still ends at its claim (no writer claimed after it, the usual case) one more
//! compare-and-swap moves it back to the record's actual end; otherwise the record keeps its full
//! claim and the reader skips the unused words. Publishing stores the record's tag (its position
//! plus one) last, with release ordering. The reader takes records in position order: a record
//! whose tag is not there yet is not published yet, and the reader waits for it.
//!
//! Every word the reader takes it sets back to zero before it moves `tail` past it, so the only
//! non-zero words in the array are those of records claimed and not yet taken: a stale word can
//! never pass for a tag (tags are never zero). A writer writes only words below `tail` plus the
//! array's length, all set back to zero by then.
//!
//! A full queue makes the writer drop the sample (the caller counts it); nothing ever waits.

use std::sync::atomic::{AtomicU64, Ordering};

/// Words before the addresses in each record: tag, tid/depth/length, time, weight.
pub const HEADER: usize = 4;
/// The longest record (header and addresses), in words: lengths are kept in 16 bits.
const MAX_RECORD: usize = u16::MAX as usize;

/// What the collector drains, per second, at most: the longest it sleeps (20 ms), with a margin
/// of five for a collector that is scheduled late on a busy machine.
const WINDOW_S: f64 = 0.1;
/// Words of an average record when sizing the ring: the header and 60 frames.
const TYPICAL_RECORD_WORDS: usize = HEADER + 60;
/// The smallest ring, in words (64 KiB).
const MIN_WORDS: usize = 8 << 10;
/// The largest ring sized for the rate, in words (4 MiB): the collector sleeps less instead.
const MAX_WORDS: usize = 512 << 10;
/// The fewest deepest records the ring holds, so that concurrent handlers rarely find it full.
const MIN_DEEPEST: usize = 16;

/// The number of words for a ring that samples of every CPU at `interval_ns` each (the most a
/// CPU-time or wall timer can raise: a thread off the CPU raises none) fill over
/// [`WINDOW_S`], at [`TYPICAL_RECORD_WORDS`] each; a power of two, at least [`MIN_WORDS`] and
/// [`MIN_DEEPEST`] records of `max_depth` addresses, at most [`MAX_WORDS`] unless those need
/// more. 2 CPUs at 10 kHz: 1 MiB; at 1 kHz: 128 KiB.
pub fn words_for_rate(interval_ns: u64, max_depth: usize, cpus: usize) -> usize {
    let per_second = cpus as f64 * 1e9 / interval_ns.max(1) as f64;
    let wanted = (per_second * WINDOW_S) as usize * TYPICAL_RECORD_WORDS;
    let deepest = MIN_DEEPEST * (HEADER + max_depth);
    wanted
        .clamp(MIN_WORDS, MAX_WORDS)
        .max(deepest)
        .next_power_of_two()
}

/// How long a ring of `capacity` words takes to fill when every one of `cpus` CPUs raises a
/// sample every `interval_ns` at [`TYPICAL_RECORD_WORDS`] each (the most CPU-time and wall
/// timers raise): 0.13 s for 2 CPUs at 1 kHz ([`words_for_rate`]'s ring), 0.64 s at 100 Hz
/// (its smallest ring).
pub fn fill_time(capacity: usize, interval_ns: u64, cpus: usize) -> std::time::Duration {
    let words_per_second =
        cpus.max(1) as f64 * 1e9 / interval_ns.max(1) as f64 * TYPICAL_RECORD_WORDS as f64;
    std::time::Duration::from_secs_f64(capacity as f64 / words_per_second)
}

/// One raw sample as the collector reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawSample {
    /// Kernel thread id.
    pub tid: u32,
    /// Nanoseconds since the session started.
    pub time_ns: u64,
    /// CPU nanoseconds this sample stands for.
    pub weight: u64,
}

/// The queue.
pub struct Ring {
    words: Box<[AtomicU64]>,
    /// The array's length minus one (a power of two minus one).
    mask: u64,
    max_depth: usize,
    head: AtomicU64,
    tail: AtomicU64,
}

/// A claimed record being written; publish it with [`Ring::publish`].
pub struct Claim<'a> {
    ring: &'a Ring,
    pos: u64,
    depth: usize,
}

impl Ring {
    /// A queue of `words` words (rounded up to a power of two, and to room for two records of
    /// `max_depth`) for records of up to `max_depth` addresses each (at most 65,531).
    pub fn new(words: usize, max_depth: usize) -> Ring {
        let max_depth = max_depth.min(MAX_RECORD - HEADER);
        let words = words.max(2 * (HEADER + max_depth)).next_power_of_two();
        Ring {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            mask: words as u64 - 1,
            max_depth,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
        }
    }

    /// How many words the ring holds.
    pub fn capacity(&self) -> usize {
        self.words.len()
    }

    /// Whether records (and claims) take a quarter of the ring or more. Lock-free;
    /// async-signal-safe.
    pub fn past_quarter(&self) -> bool {
        let used = self
            .head
            .load(Ordering::Relaxed)
            .saturating_sub(self.tail.load(Ordering::Relaxed));
        used >= self.words.len() as u64 / 4
    }

    fn word(&self, pos: u64) -> &AtomicU64 {
        &self.words[(pos & self.mask) as usize]
    }

    /// Words a claim reserves: the deepest record.
    fn reserve(&self) -> u64 {
        (HEADER + self.max_depth) as u64
    }

    /// Claims room for a record of up to the ring's depth, or `None` when the queue is too
    /// full. Lock-free; async-signal-safe.
    pub fn claim(&self) -> Option<Claim<'_>> {
        let need = self.reserve();
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Acquire: the reader zeroed every word below `tail` (see the module's
            // documentation) before it stored `tail`, and this writer's stores come after.
            let tail = self.tail.load(Ordering::Acquire);
            if head.saturating_sub(tail) + need > self.words.len() as u64 {
                // `head` may be stale (older than `tail`); a fresh one decides.
                let now = self.head.load(Ordering::Relaxed);
                if now == head {
                    return None;
                }
                head = now;
                continue;
            }
            match self.head.compare_exchange_weak(
                head,
                head + need,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Claim {
                        ring: self,
                        pos: head,
                        depth: 0,
                    })
                }
                Err(now) => head = now,
            }
        }
    }

    /// Gives back the unused part of the claim when no writer claimed after it, and makes the
    /// record visible to the reader.
    pub fn publish(&self, claim: Claim<'_>, sample: &RawSample) {
        let used = (HEADER + claim.depth) as u64;
        let end = claim.pos + self.reserve();
        // Head never comes back to `end` once another writer claimed after this one: a claim
        // only grows it, and a give-back only shrinks the last claim, to more than its start.
        let len = match self.head.compare_exchange(
            end,
            claim.pos + used,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => used,
            Err(_) => self.reserve(),
        };
        let info = u64::from(sample.tid) | (claim.depth as u64) << 32 | len << 48;
        self.word(claim.pos + 1).store(info, Ordering::Relaxed);
        self.word(claim.pos + 2)
            .store(sample.time_ns, Ordering::Relaxed);
        self.word(claim.pos + 3)
            .store(sample.weight, Ordering::Relaxed);
        self.word(claim.pos).store(claim.pos + 1, Ordering::Release);
    }

    /// Takes the oldest record, handing its sample and addresses (leaf first) to `f`. Only the
    /// collector thread calls this. Returns the record's length in words (a measure of how
    /// full the ring was), 0 when nothing is ready.
    pub fn pop(&self, f: impl FnOnce(RawSample, &mut dyn Iterator<Item = u64>)) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        if self.word(tail).load(Ordering::Acquire) != tail + 1 {
            return 0;
        }
        let info = self.word(tail + 1).load(Ordering::Relaxed);
        let len = (info >> 48).clamp(HEADER as u64, self.reserve());
        let depth = ((info >> 32) & 0xffff).min(len - HEADER as u64);
        let sample = RawSample {
            tid: info as u32,
            time_ns: self.word(tail + 2).load(Ordering::Relaxed),
            weight: self.word(tail + 3).load(Ordering::Relaxed),
        };
        let first = tail + HEADER as u64;
        f(
            sample,
            &mut (first..first + depth).map(|p| self.word(p).load(Ordering::Relaxed)),
        );
        for p in tail..tail + len {
            self.word(p).store(0, Ordering::Relaxed);
        }
        // Release: writers that see this tail see the zeros.
        self.tail.store(tail + len, Ordering::Release);
        len as usize
    }
}

impl Claim<'_> {
    /// Appends an address (leaf first); returns false when the record is full.
    pub fn push(&mut self, address: u64) -> bool {
        if self.depth >= self.ring.max_depth {
            return false;
        }
        let pos = self.pos + (HEADER + self.depth) as u64;
        self.ring.word(pos).store(address, Ordering::Relaxed);
        self.depth += 1;
        true
    }

    /// Appends `addresses` in order, as many as fit; says whether all did (as [`Claim::push`]
    /// of each would have).
    pub fn extend(&mut self, addresses: &[u64]) -> bool {
        let room = self.ring.max_depth.saturating_sub(self.depth);
        let taken = &addresses[..addresses.len().min(room)];
        let pos = self.pos + (HEADER + self.depth) as u64;
        for (i, &address) in taken.iter().enumerate() {
            self.ring
                .word(pos + i as u64)
                .store(address, Ordering::Relaxed);
        }
        self.depth += taken.len();
        taken.len() == addresses.len()
    }
}

/// The capture core's unwinders write a sample's frames straight into its ring record.
impl prof_capture::unwind::Frames for Claim<'_> {
    fn push(&mut self, address: u64) -> bool {
        Claim::push(self, address)
    }

    fn extend(&mut self, addresses: &[u64]) -> bool {
        Claim::extend(self, addresses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn collect(ring: &Ring) -> Vec<(RawSample, Vec<u64>)> {
        let mut out = Vec::new();
        while ring.pop(|s, a| out.push((s, a.collect()))) > 0 {}
        out
    }

    fn write(ring: &Ring, tid: u32, addresses: &[u64]) -> bool {
        let Some(mut c) = ring.claim() else {
            return false;
        };
        for &a in addresses {
            c.push(a);
        }
        let s = RawSample {
            tid,
            time_ns: u64::from(tid) * 3,
            weight: u64::MAX - u64::from(tid),
        };
        ring.publish(c, &s);
        true
    }

    #[test]
    fn records_come_out_in_order_with_their_addresses() {
        let ring = Ring::new(64, 3);
        for i in 0..3u64 {
            let mut c = ring.claim().unwrap();
            for a in 0..=i {
                c.push(100 + a);
            }
            assert!(!(c.push(1) && c.push(2) && c.push(3)));
            let s = RawSample {
                tid: i as u32,
                time_ns: i,
                weight: 10 * i,
            };
            ring.publish(c, &s);
        }
        let got = collect(&ring);
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].0.weight, 10);
        assert_eq!(got[0].1, vec![100, 1, 2]);
        assert_eq!(got[2].1, vec![100, 101, 102]);
    }

    #[test]
    fn extend_takes_what_pushes_would_across_the_ring_s_end() {
        // Records of up to 5 addresses in a ring of 32 words, taken out one by one: the
        // fourth wraps around its end, and so on.
        let ring = Ring::new(16, 5);
        assert_eq!(ring.capacity(), 32);
        let sample = RawSample {
            tid: 1,
            time_ns: 2,
            weight: 3,
        };
        let mut expected = Vec::new();
        let cases = [
            (&[1][..], &[2, 3][..]),
            (&[4, 5], &[6, 7, 8, 9]),
            (&[], &[10]),
        ];
        for (leaf, rest) in cases.into_iter().cycle().take(12) {
            let mut c = ring.claim().unwrap();
            assert!(leaf.iter().all(|&a| c.push(a)));
            let all = leaf.len() + rest.len() <= 5;
            assert_eq!(c.extend(rest), all);
            let mut want: Vec<u64> = leaf.iter().chain(rest).copied().collect();
            want.truncate(5);
            expected.push(want);
            ring.publish(c, &sample);
            let got = collect(&ring);
            assert_eq!(got.len(), 1);
            assert_eq!(Some(&got[0].1), expected.last());
        }
        // A full record refuses even an empty slice's successor.
        let mut c = ring.claim().unwrap();
        assert!(c.extend(&[1, 2, 3, 4, 5]));
        assert!(c.extend(&[]));
        assert!(!c.extend(&[6]));
    }

    #[test]
    fn records_take_their_depth_not_the_deepest() {
        // A fixed stride of the deepest record (100 frames: 104 words) would hold 9 records in
        // 1024 words. Records of 4 frames take 8 words each: a claim reserves the deepest record,
        // so claims fit while at most 920 words are used (920 + 104 = 1024), and 116 records do.
        let ring = Ring::new(1024, 100);
        assert_eq!(ring.capacity(), 1024);
        let mut written = 0;
        while write(&ring, written, &[1, 2, 3, 4]) {
            written += 1;
        }
        assert_eq!(written, 116);
        assert_eq!(ring.head.load(Ordering::Relaxed), 928);
        let got = collect(&ring);
        assert_eq!(got.len(), 116);
        assert!(got.iter().all(|(_, a)| a == &[1, 2, 3, 4]));
        assert!(ring.words.iter().all(|w| w.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn a_record_claimed_before_another_keeps_its_claim_and_is_skipped_whole() {
        let ring = Ring::new(256, 10);
        let mut first = ring.claim().unwrap();
        let mut second = ring.claim().unwrap();
        first.push(1);
        second.push(2);
        second.push(3);
        // The first cannot give back its unused words: the second claimed after it.
        ring.publish(first, &RawSample::default());
        ring.publish(
            second,
            &RawSample {
                tid: 7,
                time_ns: 8,
                weight: 9,
            },
        );
        assert_eq!(ring.head.load(Ordering::Relaxed), 14 + 6);
        let got = collect(&ring);
        assert_eq!(got[0].1, vec![1]);
        assert_eq!(got[1].0.tid, 7);
        assert_eq!(got[1].1, vec![2, 3]);
        assert_eq!(ring.tail.load(Ordering::Relaxed), 20);
    }

    #[test]
    fn a_full_ring_refuses_and_frees_up_after_a_pop() {
        let ring = Ring::new(16, 4);
        assert!(write(&ring, 1, &[1, 2, 3, 4]));
        assert!(write(&ring, 2, &[1, 2, 3, 4]));
        assert!(ring.claim().is_none());
        assert_eq!(ring.pop(|_, _| {}), 8);
        assert!(ring.claim().is_some());
    }

    #[test]
    fn records_wrap_around_the_end_of_the_array() {
        let ring = Ring::new(32, 6);
        for lap in 0..50u32 {
            let addresses: Vec<u64> = (0..u64::from(lap % 7)).map(|a| a + 1000).collect();
            assert!(write(&ring, lap, &addresses));
            let got = collect(&ring);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].0.tid, lap);
            assert_eq!(got[0].1, addresses[..addresses.len().min(6)]);
        }
    }

    #[test]
    fn the_ring_is_sized_for_the_rate() {
        assert_eq!(words_for_rate(100_000, 128, 2) * 8, 1 << 20);
        assert_eq!(words_for_rate(1_000_000, 128, 2) * 8, 128 << 10);
        assert_eq!(words_for_rate(10_000_000, 128, 1) * 8, 64 << 10);
        assert_eq!(words_for_rate(10_000, 128, 64) * 8, 4 << 20);
        // Deep stacks: at least 16 of the deepest records.
        assert_eq!(words_for_rate(10_000_000, 1020, 1), 16 << 10);
    }

    proptest! {
        /// Single writer and reader, in any interleaving: what comes out is what went in, in
        /// order, and every refusal happens only when the claim really did not fit.
        #[test]
        fn what_goes_in_comes_out(ops in prop::collection::vec((0usize..12, any::<bool>()), 1..300)) {
            let ring = Ring::new(64, 9);
            let mut expected = std::collections::VecDeque::new();
            for (n, (depth, pop)) in ops.into_iter().enumerate() {
                if pop {
                    let got = collect(&ring);
                    let want: Vec<_> = expected.drain(..).collect();
                    prop_assert_eq!(got, want);
                } else {
                    let addresses: Vec<u64> = (0..depth as u64).map(|a| a * 31 + n as u64).collect();
                    let used = ring.head.load(Ordering::Relaxed) - ring.tail.load(Ordering::Relaxed);
                    let fits = used + 13 <= 64;
                    prop_assert_eq!(write(&ring, n as u32, &addresses), fits);
                    if fits {
                        let kept = addresses[..depth.min(9)].to_vec();
                        let s = RawSample { tid: n as u32, time_ns: n as u64 * 3, weight: u64::MAX - n as u64 };
                        expected.push_back((s, kept));
                    }
                }
            }
        }
    }

    #[test]
    fn concurrent_writers_lose_nothing_they_were_not_told_about() {
        let ring = Arc::new(Ring::new(256, 8));
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    let mut dropped = 0;
                    for i in 0..20_000u64 {
                        match ring.claim() {
                            Some(mut c) => {
                                // Depth varies with i: 1 to 8 frames, each naming the sample.
                                for _ in 0..=i % 8 {
                                    c.push(i);
                                }
                                let s = RawSample {
                                    tid: t,
                                    time_ns: i,
                                    weight: i % 8 + 1,
                                };
                                ring.publish(c, &s);
                            }
                            None => dropped += 1,
                        }
                    }
                    dropped
                })
            })
            .collect();
        let mut seen = 0u64;
        let mut last = [None::<u64>; 4];
        loop {
            let done = writers.iter().all(|w| w.is_finished());
            while ring.pop(|s, a| {
                let addresses: Vec<u64> = a.collect();
                assert_eq!(addresses.len() as u64, s.weight, "depth kept");
                assert!(addresses.iter().all(|&i| i == s.time_ns), "{addresses:?}");
                let prev = &mut last[s.tid as usize];
                assert!(prev.is_none_or(|p| p < s.time_ns), "per-writer order kept");
                *prev = Some(s.time_ns);
                seen += 1;
            }) > 0
            {}
            if done {
                break;
            }
        }
        let dropped: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        assert_eq!(seen + dropped, 80_000);
        assert!(seen > 0);
    }
}
