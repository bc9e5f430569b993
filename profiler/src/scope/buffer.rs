//! A thread's event buffer: a bounded single-producer, single-consumer queue of `u64` words.
//! The thread that owns it writes whole records (an event and its fields), the collector reads
//! them; every word is an atomic, so no `unsafe` is needed, and nothing waits: a record that
//! does not fit is dropped and counted.
//!
//! `head` (the writer's) and `tail` (the reader's) are word positions that only grow; the array
//! index is the position modulo the power-of-two length. The writer stores a record's words,
//! then `head` with release ordering; the reader loads `head` with acquire ordering, reads up
//! to it, then stores `tail` with release ordering, after which the writer may reuse the words.
//!
//! A record is a header word (kind, length in words, a site or field index and a small extra
//! number, see [`header`]) followed by its payload words.

use std::sync::atomic::{AtomicU64, Ordering};

/// A scope began: time, sequence number, the sequence number of the scope open around it.
pub const BEGIN: u8 = 1;
/// A scope ended: time, sequence number.
pub const END: u8 = 2;
/// An instant: time.
pub const MARK: u8 = 3;
/// A field of the preceding scope or mark: its text, packed 8 bytes a word.
pub const FIELD: u8 = 4;
/// A task poll began: time, task id.
pub const POLL_BEGIN: u8 = 5;
/// A task poll ended: time, task id.
pub const POLL_END: u8 = 6;
/// A task's name: task id, then its text.
pub const TASK_NAME: u8 = 7;

/// Where the task whose poll ended just before on this thread waited: task id, then return
/// addresses, innermost first.
pub const AWAIT: u8 = 8;

/// The longest record, in words.
pub const MAX_RECORD: usize = 64;

/// A record's header: `kind`, its length in words (header included), `index` (a site, or a
/// field's position among its site's keys) and `extra` (the number of fields, or a text's
/// length in bytes).
pub fn header(kind: u8, len: usize, index: u32, extra: u16) -> u64 {
    u64::from(kind) | (len as u64 & 0xff) << 8 | u64::from(index) << 16 | u64::from(extra) << 48
}

/// A header's parts: kind, length, index, extra.
pub fn parts(header: u64) -> (u8, usize, u32, u16) {
    (
        header as u8,
        ((header >> 8) & 0xff) as usize,
        (header >> 16) as u32,
        (header >> 48) as u16,
    )
}

/// Packs `text` into words, 8 bytes each, little-endian; returns how many words it took.
pub fn pack(text: &[u8], out: &mut [u64]) -> usize {
    let mut n = 0;
    for (chunk, word) in text.chunks(8).zip(out.iter_mut()) {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_le_bytes(bytes);
        n += 1;
    }
    n
}

/// The text of `len` bytes packed into `words` (see [`pack`]); invalid UTF-8 (a value cut
/// inside a character cannot be: [`pack`]'s callers cut at character boundaries) is replaced.
pub fn unpack(words: &[u64], len: usize) -> String {
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take(len)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The queue.
pub struct EventBuf {
    words: Box<[AtomicU64]>,
    mask: u64,
    head: AtomicU64,
    tail: AtomicU64,
    /// Records dropped because the queue was full.
    dropped: AtomicU64,
    /// The owning thread's kernel id.
    pub tid: u32,
}

impl EventBuf {
    /// A queue of `words` words (rounded up to a power of two, at least two records) for the
    /// thread `tid`.
    pub fn new(words: usize, tid: u32) -> EventBuf {
        let words = words.max(2 * MAX_RECORD).next_power_of_two();
        EventBuf {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            mask: words as u64 - 1,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            tid,
        }
    }

    fn word(&self, pos: u64) -> &AtomicU64 {
        &self.words[(pos & self.mask) as usize]
    }

    /// Appends `records` (whole records, at most [`MAX_RECORD`] words each) as one: all or, when
    /// they do not fit, none (counted in [`EventBuf::dropped`]). Only the owning thread calls
    /// this. Returns whether they were written.
    #[cfg(test)]
    pub fn push(&self, records: &[u64]) -> bool {
        self.write(records, 0).is_some()
    }

    /// [`EventBuf::push`] that also refuses `records` unless `reserve` words stay free after
    /// them (room kept for the ends of the scopes open on the thread). Returns the words the
    /// queue holds after writing, or `None` when the records were dropped.
    pub fn write(&self, records: &[u64], reserve: usize) -> Option<usize> {
        let head = self.head.load(Ordering::Relaxed);
        // Acquire: the reader is done with every word below `tail`.
        let tail = self.tail.load(Ordering::Acquire);
        let held = head - tail + records.len() as u64;
        if held + reserve as u64 > self.words.len() as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        for (i, &w) in records.iter().enumerate() {
            self.word(head + i as u64).store(w, Ordering::Relaxed);
        }
        // Release: the reader that sees this head sees the words.
        self.head
            .store(head + records.len() as u64, Ordering::Release);
        Some(held as usize)
    }

    /// Hands every record written so far to `f` (header, then payload), oldest first. Only one
    /// reader at a time (the registry's lock).
    pub fn drain(&self, mut f: impl FnMut(u64, &[u64])) {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        let mut record = [0u64; MAX_RECORD];
        while tail < head {
            let h = self.word(tail).load(Ordering::Relaxed);
            let len = parts(h).1.clamp(1, MAX_RECORD) as u64;
            let len = len.min(head - tail);
            for i in 1..len {
                record[i as usize - 1] = self.word(tail + i).load(Ordering::Relaxed);
            }
            f(h, &record[..len as usize - 1]);
            tail += len;
        }
        // Release: the writer that sees this tail may overwrite the words read.
        self.tail.store(tail, Ordering::Release);
    }

    /// Appends every word written so far to `out` (whole records: a record is written all or
    /// none), oldest first; returns how many. Only one reader at a time (the registry's lock).
    pub fn drain_words(&self, out: &mut Vec<u64>) -> usize {
        let head = self.head.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Relaxed);
        out.extend((tail..head).map(|pos| self.word(pos).load(Ordering::Relaxed)));
        // Release: the writer that sees this tail may overwrite the words read.
        self.tail.store(head, Ordering::Release);
        (head - tail) as usize
    }

    /// Records dropped because the queue was full, and resets the count.
    pub fn take_dropped(&self) -> u64 {
        self.dropped.swap(0, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(buf: &EventBuf) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        buf.drain(|h, p| {
            let mut r = vec![h];
            r.extend_from_slice(p);
            out.push(r)
        });
        out
    }

    #[test]
    fn records_come_out_whole_and_in_order_across_the_wrap() {
        let buf = EventBuf::new(128, 7);
        for round in 0..50u64 {
            let r = [header(BEGIN, 4, 3, 0), round, round + 1, round + 2];
            let e = [header(END, 3, 0, 0), round + 10, round + 1];
            assert!(buf.push(&r));
            assert!(buf.push(&e));
            let got = all(&buf);
            assert_eq!(got, vec![r.to_vec(), e.to_vec()]);
        }
        assert_eq!(buf.take_dropped(), 0);
    }

    #[test]
    fn a_full_buffer_drops_whole_records_and_counts_them() {
        let buf = EventBuf::new(128, 1);
        let r = [header(BEGIN, 4, 1, 0), 1, 2, 3];
        let mut written = 0;
        for _ in 0..40 {
            written += usize::from(buf.push(&r));
        }
        // 128 words hold 32 records of 4; the other 8 are dropped, none in part.
        assert_eq!(written, 32);
        assert_eq!(buf.take_dropped(), 8);
        assert_eq!(buf.take_dropped(), 0);
        let got = all(&buf);
        assert_eq!(got.len(), 32);
        assert!(got.iter().all(|g| g == &r));
        // Drained, it takes records again.
        assert!(buf.push(&r));
    }

    #[test]
    fn a_write_leaves_its_reserve_free_for_the_ends_that_follow() {
        let buf = EventBuf::new(128, 1);
        let begin = [header(BEGIN, 4, 1, 0), 1, 2, 3];
        let end = [header(END, 3, 0, 0), 4, 2];
        // 31 begins of 4 words fit with 3 words kept free: 124 + 3 <= 128; the 32nd does not.
        for _ in 0..31 {
            assert!(buf.write(&begin, 3).is_some());
        }
        assert_eq!(buf.write(&begin, 3), None);
        assert_eq!(buf.take_dropped(), 1);
        // The end that the reserve was for still fits.
        assert_eq!(buf.write(&end, 0), Some(127));
        let mut words = Vec::new();
        assert_eq!(buf.drain_words(&mut words), 127);
        assert_eq!(&words[124..], &end);
    }

    #[test]
    fn text_packs_and_unpacks() {
        let mut words = [0u64; 4];
        let text = "request/üß-42";
        let n = pack(text.as_bytes(), &mut words);
        assert_eq!(n, text.len().div_ceil(8));
        assert_eq!(unpack(&words[..n], text.len()), text);
        assert_eq!(
            parts(header(FIELD, 9, 70_000, 513)),
            (FIELD, 9, 70_000, 513)
        );
    }

    #[test]
    fn a_reader_on_another_thread_sees_every_record_written() {
        let buf = std::sync::Arc::new(EventBuf::new(256, 1));
        let writer = {
            let buf = buf.clone();
            std::thread::spawn(move || {
                let mut sent = 0u64;
                while sent < 20_000 {
                    if buf.push(&[header(MARK, 2, 0, 0), sent]) {
                        sent += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut next = 0u64;
        while next < 20_000 {
            buf.drain(|h, p| {
                assert_eq!(parts(h).0, MARK);
                assert_eq!(p, [next]);
                next += 1;
            });
        }
        writer.join().unwrap();
    }
}
