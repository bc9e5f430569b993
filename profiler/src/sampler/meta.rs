//! The session metadata the sampler fills in: who, where, when, how.

use crate::session::{Metadata, Mode};
use std::time::{SystemTime, UNIX_EPOCH};

/// Formats a time as RFC 3339 in UTC with millisecond precision, e.g.
/// `2026-11-22T12:09:46.123Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The metadata known at start; duration, rates and drops are filled in at stop.
pub fn at_start(mode: Mode, requested_interval_ns: u64, timer: &str) -> Metadata {
    let mut args = std::env::args();
    let program = std::env::current_exe()
        .map(|p| p.display().to_string())
        .ok()
        .or_else(|| args.next())
        .unwrap_or_default();
    let args = std::env::args().skip(1).collect();
    Metadata {
        program,
        args,
        pid: std::process::id(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default(),
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        start_time: rfc3339(SystemTime::now()),
        duration_ns: 0,
        mode,
        requested_interval_ns,
        achieved_interval_ns: 0,
        timer: timer.to_owned(),
        dropped_samples: 0,
        sample_type: mode.sample_type(),
        extra_sample_types: mode.extra_sample_types(),
        prof_version: crate::VERSION.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_000 + 3_723_456);
        assert_eq!(rfc3339(t), "2000-02-29T01:02:03.456Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_305_600);
        assert_eq!(rfc3339(t), "2026-11-22T00:00:00.000Z");
    }
}
