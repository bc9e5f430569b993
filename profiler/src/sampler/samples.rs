//! The samples of a session as the collector keeps them until stop: 16 bytes each.
//!
//! A session at 1 kHz on 8 threads for a minute is 480,000 samples, so their size is most of
//! what sampling holds. Each is kept as four 32-bit words: its stack's index, its thread id (with
//! whether it was waiting in the top bit), its weight, and its time as the difference from the
//! previous sample's. Weights of 4.29 s or more and time steps of 2.1 s or more (rare: a thread
//! that did not run for that long, or a session that was idle) are kept whole in a side table,
//! so nothing is rounded.

use super::collector::StoredSample;
use super::ring::RawSample;
use std::collections::HashMap;

/// Marks a waiting sample in the thread word (thread ids are below 2^22).
const WAITING: u32 = 1 << 31;

/// Samples in arrival order, 16 bytes each (see the module's documentation).
#[derive(Default)]
pub struct SampleLog {
    words: Vec<[u32; 4]>,
    /// Weights that do not fit in 32 bits, by sample index.
    big_weights: HashMap<usize, u64>,
    /// Time steps that do not fit in 32 bits (signed), by sample index.
    big_steps: HashMap<usize, i64>,
    /// The time of the last sample pushed.
    last_ns: u64,
}

impl SampleLog {
    /// Appends a sample.
    pub fn push(&mut self, s: StoredSample) {
        let index = self.words.len();
        let weight = u32::try_from(s.raw.weight).unwrap_or_else(|_| {
            self.big_weights.insert(index, s.raw.weight);
            u32::MAX
        });
        let step = s.raw.time_ns.wrapping_sub(self.last_ns) as i64;
        let step = i32::try_from(step).unwrap_or_else(|_| {
            self.big_steps.insert(index, step);
            i32::MIN
        });
        self.last_ns = s.raw.time_ns;
        let thread = s.raw.tid | if s.waiting { WAITING } else { 0 };
        self.words.push([s.stack, thread, weight, step as u32]);
    }

    /// How many samples there are.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The samples in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = StoredSample> + '_ {
        let mut time_ns = 0u64;
        self.words
            .iter()
            .enumerate()
            .map(move |(i, &[stack, thread, weight, step])| {
                let step = match self.big_steps.get(&i) {
                    Some(&big) => big,
                    None => i64::from(step as i32),
                };
                time_ns = time_ns.wrapping_add(step as u64);
                StoredSample {
                    stack,
                    raw: RawSample {
                        tid: thread & !WAITING,
                        time_ns,
                        weight: self
                            .big_weights
                            .get(&i)
                            .copied()
                            .unwrap_or(u64::from(weight)),
                    },
                    waiting: thread & WAITING != 0,
                }
            })
    }

    /// Puts the samples in time order (stable).
    pub fn sort_by_time(&mut self) {
        let mut all: Vec<StoredSample> = self.iter().collect();
        all.sort_by_key(|s| s.raw.time_ns);
        *self = SampleLog::default();
        for s in all {
            self.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(stack: u32, tid: u32, time_ns: u64, weight: u64, waiting: bool) -> StoredSample {
        StoredSample {
            stack,
            raw: RawSample {
                tid,
                time_ns,
                weight,
            },
            waiting,
        }
    }

    fn tuples(log: &SampleLog) -> Vec<(u32, u32, u64, u64, bool)> {
        log.iter()
            .map(|s| (s.stack, s.raw.tid, s.raw.time_ns, s.raw.weight, s.waiting))
            .collect()
    }

    #[test]
    fn samples_come_back_exactly_in_16_bytes_each() {
        assert_eq!(std::mem::size_of::<[u32; 4]>(), 16);
        let given = vec![
            (3, 4_194_303, 1_000_000, 1_000_123, false),
            (0, 7, 999_000, 5, true), // earlier than the previous one
            (9, 7, 10_000_000_000, 6_000_000_000, false), // a step and a weight over 32 bits
            (1, 1, 2, u64::MAX, true),
            (2, 8, u64::MAX - 1, 0, false),
        ];
        let mut log = SampleLog::default();
        for &(stack, tid, time, weight, waiting) in &given {
            log.push(sample(stack, tid, time, weight, waiting));
        }
        assert_eq!(log.len(), 5);
        assert_eq!(tuples(&log), given);
        log.sort_by_time();
        let mut sorted = given.clone();
        sorted.sort_by_key(|s| s.2);
        assert_eq!(tuples(&log), sorted);
    }
}
