//! The session's one date format: [`Metadata::start_time`](super::Metadata::start_time) is RFC
//! 3339 in UTC, written here from a count of nanoseconds since the Unix epoch (the sampler's
//! clock, pprof's `time_nanos`).

/// `unix_nanos` (nanoseconds since 1970-01-01 UTC, negative before) as RFC 3339 in UTC with
/// millisecond precision, e.g. `2026-11-22T12:09:46.123Z`.
pub fn rfc3339_utc(unix_nanos: i64) -> String {
    let secs = unix_nanos.div_euclid(1_000_000_000);
    let millis = unix_nanos.rem_euclid(1_000_000_000) / 1_000_000;
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
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
    )
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
}
