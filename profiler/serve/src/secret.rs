//! The random secret path segment that every served URL carries, so that other local users and
//! other web pages cannot guess where the profile is.

use prof_session::{Error, Result};
use std::fmt::Write as _;
use std::io::Read;

/// Bytes of randomness in a secret: 128 bits, written as 32 hex digits.
const SECRET_BYTES: usize = 16;

/// A fresh secret from the operating system's random source, as lowercase hex.
pub(crate) fn new_secret() -> Result<String> {
    let mut bytes = [0u8; SECRET_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|source| Error::Os {
            call: "reading /dev/urandom",
            source,
        })?;
    Ok(bytes.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_hex_and_differ() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_eq!(a.len(), 2 * SECRET_BYTES);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
