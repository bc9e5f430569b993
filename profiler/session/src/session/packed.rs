//! Packed integer columns: LEB128 varints, base64-encoded into one JSON string.
//!
//! A sample column of a million decimal numbers costs 6–8 bytes per value in JSON; the same values
//! as deltas in varints cost 1–3 bytes, 4/3 of that in base64. That is what keeps a session file
//! under 16 bytes per sample (see `docs/session-format.md`). Signed values (deltas) are zigzag
//! encoded first, so small negative numbers stay small.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// Why a packed column could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PackedError {
    /// The string is not base64.
    Base64(String),
    /// A varint runs past the end of the data or past 64 bits; the offset is its first byte.
    Varint(usize),
}

impl std::fmt::Display for PackedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackedError::Base64(why) => write!(f, "not base64 ({why})"),
            PackedError::Varint(at) => write!(f, "broken varint at decoded byte {at}"),
        }
    }
}

/// Maps a signed value to an unsigned one with small magnitudes near zero.
pub(crate) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub(crate) fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Appends `value` as an LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Encodes unsigned values into a packed column string.
pub(crate) fn encode(values: impl IntoIterator<Item = u64>) -> String {
    let mut bytes = Vec::new();
    for value in values {
        put_varint(&mut bytes, value);
    }
    STANDARD.encode(bytes)
}

/// Decodes a packed column string into its unsigned values, all at once: the reference the
/// streaming reader ([`Values`]) is tested against.
#[cfg(test)]
pub(crate) fn decode(text: &str) -> Result<Vec<u64>, PackedError> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| PackedError::Base64(e.to_string()))?;
    // Every value takes at least one byte, so this never over-allocates past the input size.
    let mut values = Vec::with_capacity(bytes.len());
    let mut pos = 0;
    while pos < bytes.len() {
        let start = pos;
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = bytes.get(pos) else {
                return Err(PackedError::Varint(start));
            };
            pos += 1;
            let low = u64::from(byte & 0x7f);
            if shift == 63 && low > 1 || shift > 63 {
                return Err(PackedError::Varint(start));
            }
            value |= low << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        values.push(value);
    }
    Ok(values)
}

/// Base64 characters decoded per refill of a [`Values`] buffer (a multiple of 4).
const CHUNK_CHARS: usize = 4096;

/// The values of a packed column, decoded as they are read: base64 and varints in one pass
/// through a small buffer, so a column of ten million values never exists as a whole in memory
/// (neither as bytes nor as numbers). Yields the same values as [`decode`], and the same error
/// when a column has one thing wrong (with several, it may name a different one first).
pub(crate) struct Values<'a> {
    /// The whole column text (for error messages).
    text: &'a str,
    /// Where the next chunk of `text` starts.
    next_chunk: usize,
    /// Decoded bytes of the current chunk.
    buf: Box<[u8; CHUNK_CHARS / 4 * 3]>,
    len: usize,
    pos: usize,
    /// Decoded bytes before the current chunk.
    before: usize,
    /// Set once an error is returned: the iterator then ends.
    failed: bool,
}

impl<'a> Values<'a> {
    /// The values of the packed column `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Values {
            text,
            next_chunk: 0,
            buf: Box::new([0; CHUNK_CHARS / 4 * 3]),
            len: 0,
            pos: 0,
            before: 0,
            failed: false,
        }
    }

    /// The most values the column can hold: every value takes at least one decoded byte. A bound
    /// for `Vec::with_capacity` that a file cannot inflate past its own size.
    pub(crate) fn max_len(&self) -> usize {
        self.text.len() / 4 * 3 + 3
    }

    /// The error for base64 that fails to decode: the one [`decode`] gives for the whole text.
    fn base64_error(&self) -> PackedError {
        match STANDARD.decode(self.text) {
            Err(e) => PackedError::Base64(e.to_string()),
            // Padding that ends a chunk in the middle of the text.
            Ok(_) => PackedError::Base64("padding before the end".to_owned()),
        }
    }

    /// Decodes the next chunk into the buffer; false at the end of the text.
    fn refill(&mut self) -> Result<bool, PackedError> {
        let rest = &self.text.as_bytes()[self.next_chunk..];
        if rest.is_empty() {
            return Ok(false);
        }
        let take = rest.len().min(CHUNK_CHARS);
        let chunk = &rest[..take];
        let last = take == rest.len();
        // Padding may only end the whole text, not a chunk inside it.
        if !last && chunk.last() == Some(&b'=') {
            return Err(self.base64_error());
        }
        self.before += self.len;
        self.len = STANDARD
            .decode_slice(chunk, &mut self.buf[..])
            .map_err(|_| self.base64_error())?;
        self.pos = 0;
        self.next_chunk += take;
        Ok(true)
    }

    fn next_value(&mut self) -> Result<Option<u64>, PackedError> {
        if self.pos == self.len && !self.refill()? {
            return Ok(None);
        }
        // The common case: a one-byte value (most deltas are small).
        let first = self.buf[self.pos];
        if first & 0x80 == 0 {
            self.pos += 1;
            return Ok(Some(u64::from(first)));
        }
        let start = self.before + self.pos;
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            if self.pos == self.len && !self.refill()? {
                return Err(PackedError::Varint(start));
            }
            let byte = self.buf[self.pos];
            self.pos += 1;
            let low = u64::from(byte & 0x7f);
            if shift == 63 && low > 1 || shift > 63 {
                return Err(PackedError::Varint(start));
            }
            value |= low << shift;
            if byte & 0x80 == 0 {
                return Ok(Some(value));
            }
            shift += 7;
        }
    }
}

impl Values<'_> {
    /// Appends the next values to `out` until it holds `max` (fewer only at the end of the
    /// column). The same values and errors as the iterator, faster: a varint that lies wholly in
    /// the decoded chunk is read in a tight loop, without the iterator's per-value wrapping. On
    /// an error, `out` holds the values before it and the values end.
    pub(crate) fn fill(&mut self, out: &mut Vec<u64>, max: usize) -> Result<(), PackedError> {
        while out.len() < max {
            // A varint takes at most 10 bytes: with that many left, none runs past the chunk.
            while out.len() < max && self.pos + 10 <= self.len {
                let start = self.pos;
                let mut value = 0u64;
                let mut shift = 0u32;
                loop {
                    if shift > 63 {
                        self.failed = true;
                        return Err(PackedError::Varint(self.before + start));
                    }
                    let byte = self.buf[self.pos];
                    self.pos += 1;
                    let low = u64::from(byte & 0x7f);
                    if shift == 63 && low > 1 {
                        self.failed = true;
                        return Err(PackedError::Varint(self.before + start));
                    }
                    value |= low << shift;
                    if byte & 0x80 == 0 {
                        break;
                    }
                    shift += 7;
                }
                out.push(value);
            }
            if out.len() < max {
                // Near the end of the chunk: the iterator reads across into the next one.
                match self.next() {
                    Some(Ok(value)) => out.push(value),
                    Some(Err(e)) => return Err(e),
                    None => return Ok(()),
                }
            }
        }
        Ok(())
    }
}

impl Iterator for Values<'_> {
    type Item = Result<u64, PackedError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_value().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_the_extremes() {
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }

    #[test]
    fn columns_round_trip() {
        let values = vec![0, 1, 127, 128, 300, 1 << 35, u64::MAX];
        assert_eq!(decode(&encode(values.clone())).unwrap(), values);
        assert_eq!(decode("").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn small_values_take_one_byte() {
        let mut out = Vec::new();
        put_varint(&mut out, 127);
        assert_eq!(out.len(), 1);
        put_varint(&mut out, 128);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn broken_input_is_an_error_not_a_panic() {
        assert!(matches!(decode("!!"), Err(PackedError::Base64(_))));
        // 0x80 promises another byte that never comes.
        let truncated = STANDARD.encode([0x05, 0x80]);
        assert_eq!(decode(&truncated), Err(PackedError::Varint(1)));
        // Eleven continuation bytes overflow 64 bits.
        let long = STANDARD.encode([0xff; 11]);
        assert_eq!(decode(&long), Err(PackedError::Varint(0)));
    }

    /// 20,000 values of mixed sizes (one to ten bytes as varints), so that varints straddle
    /// many chunk boundaries.
    fn mixed_values() -> Vec<u64> {
        (0..20_000u64)
            .map(|i| match i % 5 {
                0 => i,
                1 => i << 20,
                2 => u64::MAX - i,
                3 => 127,
                _ => 1 << 35,
            })
            .collect()
    }

    fn streamed(text: &str) -> Result<Vec<u64>, PackedError> {
        Values::new(text).collect()
    }

    /// The values of `text` read by [`Values::fill`] in batches of `batch`, as the session
    /// reader reads its sample columns; an error comes with the values read before it.
    fn filled(text: &str, batch: usize) -> (Vec<u64>, Option<PackedError>) {
        let mut values = Values::new(text);
        let mut out = Vec::new();
        let mut all = Vec::new();
        loop {
            out.clear();
            let result = values.fill(&mut out, batch);
            all.extend_from_slice(&out);
            if let Err(e) = result {
                assert!(values.next().is_none(), "an error ends the values");
                return (all, Some(e));
            }
            assert!(out.len() <= batch);
            if out.len() < batch {
                return (all, None);
            }
        }
    }

    /// Regression for the batched reader (`fill`), which replaced reading sample columns value
    /// by value (most of a 1M-sample session's read time): the same values and errors.
    #[test]
    fn filled_values_and_errors_equal_the_iterators() {
        let values = mixed_values();
        let text = encode(values.clone());
        for batch in [1, 3, 1024, 50_000] {
            assert_eq!(
                filled(&text, batch),
                (values.clone(), None),
                "batch {batch}"
            );
            assert_eq!(filled("", batch), (vec![], None));
        }
        let big = encode((0..10_000u64).map(|i| i << 30));
        let broken = [
            "!!".to_owned(),
            STANDARD.encode([0x05, 0x80]),
            STANDARD.encode([0xff; 11]),
            // Eleven continuation bytes in the middle of a chunk, and at the end of a column.
            STANDARD.encode([[0x01; 20].as_slice(), &[0xff; 11], &[0x01; 20]].concat()),
            {
                let mut bytes = STANDARD.decode(&big).unwrap();
                bytes.push(0x80);
                STANDARD.encode(bytes)
            },
            // 2^64 exactly: the tenth byte holds 2.
            STANDARD.encode([[0x80; 9].as_slice(), &[0x02], &[0x01; 20]].concat()),
            format!("{}!{}", &big[..5000], &big[5001..]),
            format!("{}AA=={}", &big[..CHUNK_CHARS - 4], &big[CHUNK_CHARS..]),
        ];
        for text in &broken {
            let want = decode(text).unwrap_err();
            let before: Vec<u64> = Values::new(text).map_while(Result::ok).collect();
            for batch in [1, 7, 4096] {
                assert_eq!(
                    filled(text, batch),
                    (before.clone(), Some(want.clone())),
                    "batch {batch}: {}",
                    &text[..text.len().min(40)]
                );
            }
        }
    }

    #[test]
    fn streamed_values_equal_decoded_across_chunk_boundaries() {
        let values = mixed_values();
        let text = encode(values.clone());
        assert!(text.len() > 4 * CHUNK_CHARS);
        assert_eq!(streamed(&text).unwrap(), values);
        assert!(Values::new(&text).max_len() >= values.len());
        assert_eq!(streamed("").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn streamed_errors_are_the_decoders_errors() {
        let big = encode((0..10_000u64).map(|i| i << 30));
        let cases = [
            "!!".to_owned(),
            STANDARD.encode([0x05, 0x80]),
            STANDARD.encode([0xff; 11]),
            // A broken varint at the very end of a long column: its offset counts every chunk.
            {
                let mut bytes = STANDARD.decode(&big).unwrap();
                bytes.push(0x80);
                STANDARD.encode(bytes)
            },
            // Bad base64 deep inside a long column, and padding ending a chunk mid-text.
            format!("{}!{}", &big[..5000], &big[5001..]),
            format!("{}AA=={}", &big[..CHUNK_CHARS - 4], &big[CHUNK_CHARS..]),
        ];
        for text in &cases {
            let want = decode(text).unwrap_err();
            assert_eq!(
                streamed(text).unwrap_err(),
                want,
                "{}",
                &text[..text.len().min(40)]
            );
        }
        let mut values = Values::new("!!");
        assert!(values.next().unwrap().is_err());
        assert!(values.next().is_none(), "an error ends the values");
    }
}
