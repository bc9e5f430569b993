//! The session's one date format, written and read here only. A session holds its start as
//! nanoseconds since the Unix epoch ([`Metadata::start_time_ns`](super::Metadata::start_time_ns):
//! the sampler's clock, pprof's `time_nanos`); its file writes it as RFC 3339 in UTC, to the
//! millisecond as every version has (to the nanosecond only when a finer time was imported), and
//! reads any RFC 3339 time, with an offset or without a fraction.

/// `unix_nanos` (nanoseconds since 1970-01-01 UTC, negative before) as RFC 3339 in UTC with
/// millisecond precision, e.g. `2026-11-22T12:09:46.123Z`: how a start time is shown.
pub fn rfc3339_utc(unix_nanos: i64) -> String {
    let (date, millis) = date_time(unix_nanos);
    format!("{date}.{:03}Z", millis / 1_000_000)
}

/// `unix_nanos` as RFC 3339 in UTC as the session file stores it: to the millisecond when that
/// is exact (every time prof takes), else to the nanosecond.
pub(crate) fn rfc3339_utc_exact(unix_nanos: i64) -> String {
    match date_time(unix_nanos) {
        (date, nanos) if nanos % 1_000_000 == 0 => format!("{date}.{:03}Z", nanos / 1_000_000),
        (date, nanos) => format!("{date}.{nanos:09}Z"),
    }
}

/// The date and time of `unix_nanos` to the second (`2026-11-22T12:09:46`), and the
/// nanoseconds past that second.
fn date_time(unix_nanos: i64) -> (String, i64) {
    let secs = unix_nanos.div_euclid(1_000_000_000);
    let nanos = unix_nanos.rem_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let date = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
    );
    (date, nanos)
}

/// Nanoseconds since the Unix epoch of an RFC 3339 time such as `2026-11-22T12:09:46.123Z` or
/// `2026-11-22T13:09:46+01:00`; `None` when `text` is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    // Digits only (no sign: a negative part is no RFC 3339 time).
    let num = |s: &str| {
        (!s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.bytes().fold(0i64, |n, b| n * 10 + i64::from(b - b'0')))
    };
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut ymd = date.splitn(3, '-').map(num);
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let zone_at = time.rfind(['Z', 'z', '+', '-'])?;
    let (clock, zone) = time.split_at(zone_at);
    let offset_s = match zone {
        "Z" | "z" => 0,
        _ => {
            let (h, min) = zone[1..].split_once(':')?;
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (num(h)? * 3600 + num(min)? * 60)
        }
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = hms.splitn(3, ':').map(num);
    let (h, min, sec) = (parts.next()??, parts.next()??, parts.next()??);
    let nanos = match fraction {
        "" => 0,
        f if f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            num(f)? * 10_i64.pow(9 - f.len() as u32)
        }
        _ => return None,
    };
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + min * 60 + sec - offset_s;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// The file's form of a start time (see the module's docs): `""` for none.
pub(crate) fn start_time_text(start_time_ns: Option<i64>) -> String {
    start_time_ns.map(rfc3339_utc_exact).unwrap_or_default()
}

/// A start time as the file holds it: `None` for `""`; an error for text that is no RFC 3339
/// time.
pub(crate) fn read_start_time(text: &str) -> Result<Option<i64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    parse_rfc3339(text)
        .map(Some)
        // Quoted by hand: `{:?}` would link Unicode's printable tables into the wasm viewer.
        .ok_or_else(|| format!("start_time \"{text}\" is not an RFC 3339 time"))
}

/// Serde's form of [`Metadata::start_time_ns`](super::Metadata::start_time_ns): the file's
/// `start_time` text.
pub(crate) mod serde_start_time {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the file's text.
    pub fn serialize<S: Serializer>(ns: &Option<i64>, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(&super::start_time_text(*ns))
    }

    /// Reads the file's text.
    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Option<i64>, D::Error> {
        let text = String::deserialize(input)?;
        super::read_start_time(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_nanos_become_rfc3339_in_utc() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        // What `go tool pprof` prints for /work/shared/repro/B3-go-cpu.pprof's time_nanos.
        assert_eq!(
            rfc3339_utc(1_795_417_458_693_463_541),
            "2026-11-23T07:04:18.693Z"
        );
        assert_eq!(
            rfc3339_utc(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(rfc3339_utc(-1_000_000), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn the_file_keeps_milliseconds_as_every_version_wrote_them_and_finer_times_whole() {
        let ms = 1_795_417_458_693_000_000;
        assert_eq!(rfc3339_utc_exact(ms), "2026-11-23T07:04:18.693Z");
        assert_eq!(parse_rfc3339(&rfc3339_utc_exact(ms)), Some(ms));
        let ns = 1_795_417_458_693_463_541;
        assert_eq!(rfc3339_utc_exact(ns), "2026-11-23T07:04:18.693463541Z");
        assert_eq!(parse_rfc3339(&rfc3339_utc_exact(ns)), Some(ns));
        assert_eq!(read_start_time(""), Ok(None));
        assert_eq!(
            read_start_time("2026-11-22T12:00:00Z"),
            Ok(Some(1_795_348_800_000_000_000))
        );
        let bad = read_start_time("yesterday").unwrap_err();
        assert_eq!(bad, "start_time \"yesterday\" is not an RFC 3339 time");
    }

    #[test]
    fn start_times_in_rfc_3339_become_unix_nanoseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00.000Z"), Some(0));
        // `date -u -d 2026-11-22T12:09:46Z +%s` = 1795349386.
        let t = 1_795_349_386_000_000_000;
        assert_eq!(
            parse_rfc3339("2026-11-22T12:09:46.5Z"),
            Some(t + 500_000_000)
        );
        assert_eq!(parse_rfc3339("2026-11-22T13:09:46+01:00"), Some(t));
        assert_eq!(
            parse_rfc3339("2000-02-29T00:00:00Z"),
            Some(951_782_400_000_000_000)
        );
        assert_eq!(parse_rfc3339(""), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
