//! Whether a client takes gzip, read from its `Accept-Encoding` header as RFC 9110 (§12.5.3)
//! defines it: a comma-separated list of codings, each with an optional weight `;q=` from 0 to 1,
//! names and parameters case-insensitive, `*` for any coding not named, `q=0` for "not this one".
//!
//! Written here rather than taken from a crate: the crates that parse this header are unmaintained
//! pre-releases, and hyper and `http` leave it to the application.

/// True when the `Accept-Encoding` header lines `values` accept gzip: `gzip` (or its alias
/// `x-gzip`) is listed with a weight above 0, or it is not listed and `*` is, above 0.
pub(crate) fn accepts_gzip<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in values {
        // Header values are visible ASCII; anything else is not a coding we know.
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            if coding.is_empty() {
                continue;
            }
            let Some(weight) = weight(parts) else {
                continue;
            };
            let slot =
                if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                    &mut gzip
                } else if coding == "*" {
                    &mut any
                } else {
                    continue;
                };
            *slot = Some(slot.map_or(weight, |w: u16| w.max(weight)));
        }
    }
    gzip.or(any).is_some_and(|w| w > 0)
}

/// The weight in thousandths given by an item's parameters (`q=0.5` is 500); 1000 when there is
/// none, `None` when it is malformed (the item is then ignored).
fn weight<'a>(params: impl Iterator<Item = &'a str>) -> Option<u16> {
    let mut weight = 1000;
    for param in params {
        let (name, value) = param.split_once('=')?;
        if name.trim().eq_ignore_ascii_case("q") {
            weight = qvalue(value.trim())?;
        }
    }
    Some(weight)
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0u16, |n, digit| n * 10 + u16::from(digit - b'0'));
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(header: &str) -> bool {
        accepts_gzip([header.as_bytes()])
    }

    #[test]
    fn gzip_is_accepted_by_name_in_any_case_with_a_positive_weight() {
        for header in [
            "gzip",
            "GZIP",
            "gzip, deflate, br",
            "br;q=1.0, gzip;q=0.5",
            "deflate, Gzip ; Q=0.001",
            "x-gzip",
            "gzip;q=1",
            "gzip;q=1.000",
            "*",
            "br, *;q=0.1",
        ] {
            assert!(accepts(header), "{header}");
        }
    }

    #[test]
    fn gzip_with_weight_zero_or_unlisted_is_refused() {
        for header in [
            "",
            "identity",
            "deflate, br",
            "gzip;q=0",
            "GZIP;q=0.000",
            "gzip;q=0, *",
            "*;q=0",
            "gzipped",
            "notgzip",
            // A malformed weight makes the item count for nothing.
            "gzip;q=2",
            "gzip;q=0.5000",
            "gzip;q=abc",
            "gzip;q",
        ] {
            assert!(!accepts(header), "{header}");
        }
    }

    #[test]
    fn several_header_lines_are_one_list() {
        assert!(accepts_gzip([&b"br"[..], &b"gzip"[..]]));
        assert!(!accepts_gzip([&b"gzip;q=0"[..], &b"br"[..]]));
        assert!(!accepts_gzip([&b"\xffgzip"[..]]));
    }

    #[test]
    fn qvalues_follow_the_grammar() {
        assert_eq!(qvalue("0"), Some(0));
        assert_eq!(qvalue("0.5"), Some(500));
        assert_eq!(qvalue("0.25"), Some(250));
        assert_eq!(qvalue("0.125"), Some(125));
        assert_eq!(qvalue("1."), Some(1000));
        assert_eq!(qvalue("1.001"), None);
        assert_eq!(qvalue(".5"), None);
        assert_eq!(qvalue("-0"), None);
    }
}
