//! The samples of a session as the collector keeps them until stop: a few bytes each.
//!
//! A session at 1 kHz on 8 threads for a minute is 480,000 samples, so their size is most of
//! what sampling holds. Each sample is a tag byte and variable-length numbers (protobuf's
//! varints, differences zigzag-encoded, by the `integer-encoding` crate; exact: every value a
//! sample can hold comes back as it went in):
//!
//! - the tag: the thread's index in the log (its order of first appearance; 15 means the index
//!   follows as a number), whether the sample was waiting, how the weight is written and how
//!   the time is written;
//! - the stack's index;
//! - the weight: nothing when it equals the thread's previous weight, else the difference from
//!   it or the weight itself, whichever is shorter (CPU-time samples weigh about one interval,
//!   a few microseconds apart: 2 bytes);
//! - the time: the difference from the previous sample's time, or from the thread's previous
//!   time plus this weight (a thread that ran without pause since its last sample), whichever
//!   is shorter.
//!
//! A typical sample is 6 to 8 bytes. The bytes go to chunks of [`CHUNK`] bytes allocated whole,
//! so the log holds at most one chunk more than it uses (a growing vector would hold up to twice
//! what it uses).

use super::ring::RawSample;
use integer_encoding::VarInt;
use std::collections::HashMap;

/// One stored sample: an index into the collector's distinct stacks and the rest of the raw
/// sample.
#[derive(Clone, Debug)]
pub struct StoredSample {
    /// Index into the stack list.
    pub stack: u32,
    /// The sample.
    pub raw: RawSample,
    /// Wall mode: the thread was off CPU (blocked), sampled by the collector without a signal.
    pub waiting: bool,
}

/// Bytes of each chunk of the log.
const CHUNK: usize = 64 << 10;
/// The most bytes one sample takes: tag, thread, stack, weight, time.
const MAX_SAMPLE: usize = 1 + 5 + 5 + 10 + 10;

/// Thread indexes written in the tag; [`THREAD_ESCAPE`] says the index follows.
const THREAD_BITS: u8 = 0x0f;
const THREAD_ESCAPE: u8 = THREAD_BITS;
const WAITING: u8 = 0x10;
/// The weight's form: the same as the thread's last, a difference from it, or whole.
const WEIGHT_SHIFT: u8 = 5;
const WEIGHT_SAME: u8 = 0;
const WEIGHT_DELTA: u8 = 1;
const WEIGHT_WHOLE: u8 = 2;
/// The time is a difference from the thread's last time plus the weight (else from the
/// previous sample's).
const TIME_FROM_THREAD: u8 = 0x80;

/// What the previous samples of one thread predict for its next.
#[derive(Clone, Copy, Default)]
struct Last {
    time_ns: u64,
    weight: u64,
}

/// Samples in arrival order, a few bytes each (see the module's documentation).
#[derive(Default)]
pub struct SampleLog {
    /// The encoded samples; only the last chunk is written to.
    chunks: Vec<Vec<u8>>,
    len: usize,
    /// Thread ids by index.
    tids: Vec<u32>,
    index_of: HashMap<u32, u32>,
    /// Each thread's last sample, by index.
    last: Vec<Last>,
    /// The time of the last sample pushed.
    last_ns: u64,
    /// The samples before those in `chunks`, decoded and in time order, once sorted.
    sorted: Vec<StoredSample>,
}

impl SampleLog {
    /// Appends a sample.
    pub fn push(&mut self, s: StoredSample) {
        let index = match self.index_of.get(&s.raw.tid) {
            Some(&i) => i,
            None => {
                let i = self.tids.len() as u32;
                self.tids.push(s.raw.tid);
                self.index_of.insert(s.raw.tid, i);
                self.last.push(Last::default());
                i
            }
        };
        let last = self.last[index as usize];
        let weight = s.raw.weight;
        let weight_delta = weight.wrapping_sub(last.weight) as i64;
        let weight_form = if weight == last.weight {
            WEIGHT_SAME
        } else if weight_delta.required_space() <= weight.required_space() {
            WEIGHT_DELTA
        } else {
            WEIGHT_WHOLE
        };
        let time = s.raw.time_ns;
        let from_previous = time.wrapping_sub(self.last_ns) as i64;
        let from_thread = time.wrapping_sub(last.time_ns.wrapping_add(weight)) as i64;
        let (time_form, time_delta) =
            if from_thread.required_space() < from_previous.required_space() {
                (TIME_FROM_THREAD, from_thread)
            } else {
                (0, from_previous)
            };

        let mut bytes = [0u8; MAX_SAMPLE];
        let thread = u8::try_from(index)
            .ok()
            .filter(|&i| i < THREAD_ESCAPE)
            .unwrap_or(THREAD_ESCAPE);
        let waiting = if s.waiting { WAITING } else { 0 };
        bytes[0] = thread | waiting | weight_form << WEIGHT_SHIFT | time_form;
        let mut n = 1;
        if thread == THREAD_ESCAPE {
            n += index.encode_var(&mut bytes[n..]);
        }
        n += s.stack.encode_var(&mut bytes[n..]);
        match weight_form {
            WEIGHT_DELTA => n += weight_delta.encode_var(&mut bytes[n..]),
            WEIGHT_WHOLE => n += weight.encode_var(&mut bytes[n..]),
            _ => {}
        }
        n += time_delta.encode_var(&mut bytes[n..]);
        self.chunk().extend_from_slice(&bytes[..n]);

        self.len += 1;
        self.last_ns = time;
        self.last[index as usize] = Last {
            time_ns: time,
            weight,
        };
    }

    /// The chunk to write the next sample to, with room for it.
    fn chunk(&mut self) -> &mut Vec<u8> {
        if self
            .chunks
            .last()
            .is_none_or(|c| c.len() + MAX_SAMPLE > c.capacity())
        {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let last = self.chunks.len() - 1;
        &mut self.chunks[last]
    }

    /// How many samples there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the encoded samples take (not counting the unused end of the last chunk).
    #[cfg(test)]
    pub fn encoded_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// The samples in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = StoredSample> + '_ {
        let decoded = Iter {
            log: self,
            chunk: 0,
            at: &[],
            last: vec![Last::default(); self.tids.len()],
            last_ns: 0,
        };
        self.sorted.iter().cloned().chain(decoded)
    }

    /// Puts the samples in time order (stable). Done once, at stop: they are kept decoded from
    /// then on (32 bytes each, as the session being built from them needs them anyway), which
    /// costs less than encoding them again.
    pub fn sort_by_time(&mut self) {
        let mut all: Vec<StoredSample> = self.iter().collect();
        all.sort_by_key(|s| s.raw.time_ns);
        self.sorted = all;
        // Samples pushed from now on are encoded from a fresh start, as `iter` decodes them.
        self.chunks = Vec::new();
        self.last.fill(Last::default());
        self.last_ns = 0;
    }
}

/// Decodes a [`SampleLog`], replaying the predictions its writer made.
struct Iter<'a> {
    log: &'a SampleLog,
    /// The next chunk to read once `at` is empty.
    chunk: usize,
    at: &'a [u8],
    last: Vec<Last>,
    last_ns: u64,
}

impl Iter<'_> {
    /// The next number of the log.
    fn number<T: VarInt>(&mut self) -> T {
        let (v, n) = T::decode_var(self.at).expect("the log reads back what it wrote");
        self.at = &self.at[n..];
        v
    }
}

impl Iterator for Iter<'_> {
    type Item = StoredSample;

    fn next(&mut self) -> Option<StoredSample> {
        while self.at.is_empty() {
            self.at = self.log.chunks.get(self.chunk)?;
            self.chunk += 1;
        }
        let tag = self.at[0];
        self.at = &self.at[1..];
        let index = match tag & THREAD_BITS {
            THREAD_ESCAPE => self.number::<u32>() as usize,
            i => usize::from(i),
        };
        let stack = self.number::<u32>();
        let last = self.last[index];
        let weight = match tag >> WEIGHT_SHIFT & 3 {
            WEIGHT_SAME => last.weight,
            WEIGHT_DELTA => last.weight.wrapping_add(self.number::<i64>() as u64),
            _ => self.number::<u64>(),
        };
        let base = if tag & TIME_FROM_THREAD != 0 {
            last.time_ns.wrapping_add(weight)
        } else {
            self.last_ns
        };
        let time_ns = base.wrapping_add(self.number::<i64>() as u64);
        self.last_ns = time_ns;
        self.last[index] = Last { time_ns, weight };
        Some(StoredSample {
            stack,
            raw: RawSample {
                tid: self.log.tids[index],
                time_ns,
                weight,
            },
            waiting: tag & WAITING != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    type Tuple = (u32, u32, u64, u64, bool);

    fn tuples(log: &SampleLog) -> Vec<Tuple> {
        log.iter()
            .map(|s| (s.stack, s.raw.tid, s.raw.time_ns, s.raw.weight, s.waiting))
            .collect()
    }

    fn log_of(given: &[Tuple]) -> SampleLog {
        let mut log = SampleLog::default();
        for &(stack, tid, time, weight, waiting) in given {
            log.push(sample(stack, tid, time, weight, waiting));
        }
        log
    }

    #[test]
    fn extreme_samples_come_back_exactly_and_sort_by_time() {
        let given = vec![
            (3, 4_194_303, 1_000_000, 1_000_123, false),
            (0, 7, 999_000, 5, true), // earlier than the previous one
            (9, 7, 10_000_000_000, 6_000_000_000, false), // a step and a weight over 32 bits
            (1, 1, 2, u64::MAX, true),
            (u32::MAX, u32::MAX, u64::MAX - 1, 0, false),
            (2, 7, 0, 0, false),
        ];
        let mut log = log_of(&given);
        assert_eq!(log.len(), 6);
        assert_eq!(tuples(&log), given);
        log.sort_by_time();
        let mut sorted = given.clone();
        sorted.sort_by_key(|s| s.2);
        assert_eq!(tuples(&log), sorted);
        // Pushed after sorting: after the sorted ones, exactly.
        let more = [(4, 7, 3, 2, true), (5, 1, 1, 1, false), (6, 7, 9, 2, false)];
        for &(stack, tid, time, weight, waiting) in &more {
            log.push(sample(stack, tid, time, weight, waiting));
        }
        sorted.extend(more);
        assert_eq!(log.len(), 9);
        assert_eq!(tuples(&log), sorted);
    }

    /// 8 threads at 1 kHz on 2 CPUs: each thread's samples weigh 1 ms of CPU within a few
    /// microseconds, the threads take turns on the CPUs in slices of 3 ms, and the stacks are a
    /// few thousand distinct ones.
    #[test]
    fn a_typical_sample_takes_at_most_8_bytes() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut given = Vec::new();
        let mut cpu_free = [0u64; 2];
        let mut thread_time = [0u64; 8];
        for slice in 0..20_000u64 {
            let tid = 1000 + (slice % 8) as u32;
            let cpu = (slice % 2) as usize;
            let mut t = cpu_free[cpu].max(thread_time[tid as usize - 1000]);
            for _ in 0..3 {
                let weight = 1_000_000 + next(20_000) - 10_000;
                t += weight + next(5_000);
                given.push((next(3_000) as u32, tid, t, weight, false));
            }
            cpu_free[cpu] = t;
            thread_time[tid as usize - 1000] = t;
        }
        // The writer sees them in roughly time order, as the ring delivers them.
        given.sort_by_key(|s| s.2 / 50_000);
        let log = log_of(&given);
        assert_eq!(tuples(&log), given);
        let per_sample = log.encoded_bytes() as f64 / given.len() as f64;
        assert!(per_sample <= 8.0, "{per_sample:.2} bytes a sample");
    }

    #[test]
    fn the_log_holds_at_most_one_chunk_more_than_it_uses() {
        let given: Vec<Tuple> = (0..100_000u64)
            .map(|i| (i as u32 % 100, 5, i * 1_000_000, 1_000_000, false))
            .collect();
        let log = log_of(&given);
        let held: usize = log.chunks.iter().map(Vec::capacity).sum();
        assert!(held <= log.encoded_bytes() + CHUNK, "{held}");
        assert!(log.chunks.len() > 1);
        assert_eq!(tuples(&log), given);
    }

    fn any_sample() -> impl Strategy<Value = Tuple> {
        let near = |x: u64| (x - 50_000)..(x + 50_000);
        (
            prop_oneof![0u32..200, any::<u32>()],
            prop_oneof![0u32..40, any::<u32>()],
            prop_oneof![near(1_000_000_000), any::<u64>()],
            prop_oneof![Just(1_000_000u64), near(1_000_000), any::<u64>()],
            any::<bool>(),
        )
    }

    proptest! {
        /// Any samples, and runs of typical ones (times that grow by about the weight, weights
        /// that repeat or differ a little, up to 40 threads): `iter` gives back exactly what
        /// was pushed.
        #[test]
        fn iter_gives_back_exactly_what_was_pushed(
            given in prop::collection::vec(any_sample(), 0..400),
            steps in prop::collection::vec((0u32..40, 0u64..3_000_000, 0u32..5), 0..400),
        ) {
            let mut all = given.clone();
            let mut t = 5_000_000_000u64;
            for (tid, step, stack) in steps {
                t = t.wrapping_add(step);
                all.push((stack, tid, t, step.max(1), tid % 3 == 0));
            }
            let log = log_of(&all);
            prop_assert_eq!(log.len(), all.len());
            prop_assert_eq!(tuples(&log), all);
        }
    }
}
