//! A bounded, preallocated, lock-free queue of raw samples: many signal handlers write, the
//! collector thread reads. Built on per-slot sequence numbers (the classic bounded MPMC design
//! by D. Vyukov, here with a single consumer); every word is an atomic, so no `unsafe` is needed.
//!
//! A full queue makes the writer drop the sample (the caller counts it); nothing ever waits.

use std::sync::atomic::{AtomicU64, Ordering};

/// Words before the addresses in each record: tid, time, weight, depth.
const HEADER: usize = 4;

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
    seq: Box<[AtomicU64]>,
    words: Box<[AtomicU64]>,
    stride: usize,
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
    /// A queue of `capacity` records of up to `max_depth` addresses each.
    pub fn new(capacity: usize, max_depth: usize) -> Ring {
        let capacity = capacity.max(2);
        let stride = HEADER + max_depth;
        Ring {
            seq: (0..capacity as u64).map(AtomicU64::new).collect(),
            words: (0..capacity * stride).map(|_| AtomicU64::new(0)).collect(),
            stride,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
        }
    }

    /// How many records the ring holds.
    pub fn capacity(&self) -> usize {
        self.seq.len()
    }

    fn slot(&self, pos: u64) -> usize {
        (pos % self.seq.len() as u64) as usize
    }

    /// Claims a free record, or `None` when the queue is full. Lock-free; async-signal-safe.
    pub fn claim(&self) -> Option<Claim<'_>> {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let seq = self.seq[self.slot(pos)].load(Ordering::Acquire);
            if seq == pos {
                match self.head.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        return Some(Claim {
                            ring: self,
                            pos,
                            depth: 0,
                        })
                    }
                    Err(now) => pos = now,
                }
            } else if seq < pos {
                return None;
            } else {
                pos = self.head.load(Ordering::Relaxed);
            }
        }
    }

    /// Makes a claimed record visible to the reader.
    pub fn publish(&self, claim: Claim<'_>, sample: &RawSample) {
        let base = self.slot(claim.pos) * self.stride;
        let w = &self.words[base..base + HEADER];
        w[0].store(u64::from(sample.tid), Ordering::Relaxed);
        w[1].store(sample.time_ns, Ordering::Relaxed);
        w[2].store(sample.weight, Ordering::Relaxed);
        w[3].store(claim.depth as u64, Ordering::Relaxed);
        self.seq[self.slot(claim.pos)].store(claim.pos + 1, Ordering::Release);
    }

    /// Takes the oldest published record, handing its sample and addresses (leaf first) to `f`.
    /// Only the collector thread calls this. Returns false when nothing is ready.
    pub fn pop(&self, f: impl FnOnce(RawSample, &mut dyn Iterator<Item = u64>)) -> bool {
        let pos = self.tail.load(Ordering::Relaxed);
        let slot = self.slot(pos);
        if self.seq[slot].load(Ordering::Acquire) != pos + 1 {
            return false;
        }
        let base = slot * self.stride;
        let w = &self.words[base..base + self.stride];
        let sample = RawSample {
            tid: w[0].load(Ordering::Relaxed) as u32,
            time_ns: w[1].load(Ordering::Relaxed),
            weight: w[2].load(Ordering::Relaxed),
        };
        let depth = (w[3].load(Ordering::Relaxed) as usize).min(self.stride - HEADER);
        f(
            sample,
            &mut w[HEADER..HEADER + depth]
                .iter()
                .map(|a| a.load(Ordering::Relaxed)),
        );
        self.seq[slot].store(pos + self.seq.len() as u64, Ordering::Release);
        self.tail.store(pos + 1, Ordering::Relaxed);
        true
    }
}

impl Claim<'_> {
    /// Appends an address (leaf first); returns false when the record is full.
    pub fn push(&mut self, address: u64) -> bool {
        if self.depth >= self.ring.stride - HEADER {
            return false;
        }
        let base = self.ring.slot(self.pos) * self.ring.stride + HEADER;
        self.ring.words[base + self.depth].store(address, Ordering::Relaxed);
        self.depth += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn collect(ring: &Ring) -> Vec<(RawSample, Vec<u64>)> {
        let mut out = Vec::new();
        while ring.pop(|s, a| out.push((s, a.collect()))) {}
        out
    }

    #[test]
    fn records_come_out_in_order_with_their_addresses() {
        let ring = Ring::new(4, 3);
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
    fn a_full_ring_refuses_and_frees_up_after_a_pop() {
        let ring = Ring::new(2, 1);
        let a = ring.claim().unwrap();
        ring.publish(a, &RawSample::default());
        let b = ring.claim().unwrap();
        ring.publish(b, &RawSample::default());
        assert!(ring.claim().is_none());
        assert!(ring.pop(|_, _| {}));
        assert!(ring.claim().is_some());
    }

    #[test]
    fn concurrent_writers_lose_nothing_they_were_not_told_about() {
        let ring = Arc::new(Ring::new(64, 2));
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    let mut dropped = 0;
                    for i in 0..5000u64 {
                        match ring.claim() {
                            Some(mut c) => {
                                c.push(i);
                                let s = RawSample {
                                    tid: t,
                                    time_ns: i,
                                    weight: 1,
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
                let i = a.next().unwrap();
                assert_eq!(i, s.time_ns);
                let prev = &mut last[s.tid as usize];
                assert!(prev.is_none_or(|p| p < i), "per-writer order kept");
                *prev = Some(i);
                seen += 1;
            }) {}
            if done {
                break;
            }
        }
        let dropped: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        assert_eq!(seen + dropped, 20_000);
    }
}
