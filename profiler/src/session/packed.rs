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

/// Decodes a packed column string into its unsigned values.
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
}
