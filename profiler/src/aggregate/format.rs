//! The one formatter of weights and percentages. The terminal table, the exports and the viewer
//! all print through here, so the same weight reads the same everywhere (`4.70 s`, `47.3%`).
//!
//! Times and bytes are scaled to the largest unit that keeps the value at least 1 and shown with
//! three significant digits (`950 ns`, `12.3 µs`, `4.70 s`; `512 B`, `1.50 KiB`, `2.00 GiB`);
//! counts are exact, with thousands separators (`20,834,821`). Percentages have one decimal.

use crate::session::{Frame, SampleType, Session, Unit};

/// `weight` in the unit of `sample_type`, auto-scaled: `4.70 s`, `1.50 MiB`, `20,834,821`.
pub fn format_weight(sample_type: &SampleType, weight: u64) -> String {
    match sample_type.unit {
        Unit::Nanoseconds => scaled(
            weight,
            &[
                (1, "ns"),
                (1_000, "µs"),
                (1_000_000, "ms"),
                (1_000_000_000, "s"),
            ],
        ),
        Unit::Bytes => scaled(
            weight,
            &[
                (1, "B"),
                (1 << 10, "KiB"),
                (1 << 20, "MiB"),
                (1 << 30, "GiB"),
            ],
        ),
        Unit::Count => thousands(weight),
    }
}

/// `weight` with the unit's name spelled out for counts (`20,834,821 cycles`), as headers say
/// it; times and bytes as [`format_weight`].
pub fn format_weight_named(sample_type: &SampleType, weight: u64) -> String {
    match sample_type.unit {
        Unit::Count => format!("{} {}", thousands(weight), sample_type.name),
        _ => format_weight(sample_type, weight),
    }
}

/// Where a frame's code is, as the views show it: `src/parse.rs:42`, the file alone when the
/// line is unknown, `None` when debug info names no file.
pub fn format_location(session: &Session, frame: Frame) -> Option<String> {
    let file = session.str(frame.file?);
    Some(match frame.line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_owned(),
    })
}

/// `part` as a percentage of `whole` with one decimal, `12.3%` (`0.0%` when `whole` is 0).
pub fn format_percent(part: u64, whole: u64) -> String {
    format!("{:.1}%", percent(part, whole))
}

/// A change in percentage points with one decimal and its sign, as diffs show it: `+2.7%`,
/// `-0.4%`, and `0.0%` for a change that rounds to nothing.
pub fn format_percent_change(points: f64) -> String {
    let text = format!("{points:+.1}%");
    match text.as_str() {
        "+0.0%" | "-0.0%" => "0.0%".to_owned(),
        _ => text,
    }
}

/// The change from `before` to `after` as [`format_weight`] writes weights, with its sign:
/// `+6.00 ms`, `-512 B`, `0 ns`.
pub fn format_weight_change(sample_type: &SampleType, before: u64, after: u64) -> String {
    let size = format_weight(sample_type, before.abs_diff(after));
    match after.cmp(&before) {
        std::cmp::Ordering::Greater => format!("+{size}"),
        std::cmp::Ordering::Less => format!("-{size}"),
        std::cmp::Ordering::Equal => size,
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in milliseconds with three decimals (to the microsecond), without the unit: the
/// scope table's columns (`12.345`), as Ruby's profiler prints `ms/call`.
pub fn format_ms(ns: u64) -> String {
    let us = ns / 1_000 + u64::from(ns % 1_000 >= 500);
    format!("{}.{:03}", thousands(us / 1_000), us % 1_000)
}

/// A point in time (nanoseconds since the session started) to within `resolution_ns`, for axes
/// and time ranges: the unit fits the larger of the two, and the decimals show the resolution
/// and no more (`400.1 s` on an axis every 100 ms, `1.20 s` for a range 1.25 s long).
pub fn format_time_at(ns: u64, resolution_ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1, "ns"),
        (1_000, "µs"),
        (1_000_000, "ms"),
        (1_000_000_000, "s"),
    ];
    let resolution = resolution_ns.max(1);
    let magnitude = ns.max(resolution);
    let (factor, name) = UNITS
        .iter()
        .rev()
        .find(|(factor, _)| magnitude >= *factor)
        .copied()
        .unwrap_or(UNITS[0]);
    let step = resolution as f64 / factor as f64;
    let decimals = if step >= 1.0 {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(9)
    };
    format!("{:.*} {name}", decimals, ns as f64 / factor as f64)
}

/// `value` in the largest of `units` (factor, name; ascending) that it reaches, with three
/// significant digits; below the second unit, exact.
fn scaled(value: u64, units: &[(u64, &str)]) -> String {
    let (factor, name) = units
        .iter()
        .rev()
        .find(|(factor, _)| value >= *factor)
        .copied()
        .unwrap_or(units[0]);
    if factor == 1 {
        return format!("{value} {name}");
    }
    let x = value as f64 / factor as f64;
    // Rounding may carry into the next unit: 999.96 ms is 1.00 s, 1023.98 KiB is 1.00 MiB.
    if let Some((next, next_name)) = units.iter().find(|(f, _)| *f > factor) {
        if x.round() >= (*next / factor) as f64 {
            return format!("1.00 {next_name}");
        }
    }
    // Three significant digits.
    let text = match x {
        x if x < 9.995 => format!("{x:.2}"),
        x if x < 99.95 => format!("{x:.1}"),
        x => format!("{x:.0}"),
    };
    format!("{text} {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(w: u64) -> String {
        format_weight(&SampleType::new("cpu", Unit::Nanoseconds), w)
    }

    fn bytes(w: u64) -> String {
        format_weight(&SampleType::new("alloc_bytes", Unit::Bytes), w)
    }

    #[test]
    fn times_scale_to_three_significant_digits() {
        assert_eq!(ns(0), "0 ns");
        assert_eq!(ns(950), "950 ns");
        assert_eq!(ns(12_345), "12.3 µs");
        assert_eq!(ns(4_701_700_000), "4.70 s");
        assert_eq!(ns(15_979_300_000), "16.0 s");
        assert_eq!(ns(999_960_000), "1.00 s");
        assert_eq!(ns(250_000), "250 µs");
        assert_eq!(ns(3_600_000_000_000), "3600 s");
    }

    #[test]
    fn bytes_scale_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(2 << 30), "2.00 GiB");
        assert_eq!(bytes(1023 * 1024 + 1000), "1.00 MiB");
    }

    #[test]
    fn counts_are_exact_with_separators() {
        let cycles = SampleType::new("cycles", Unit::Count);
        assert_eq!(format_weight(&cycles, 20_834_821), "20,834,821");
        assert_eq!(format_weight_named(&cycles, 1_000), "1,000 cycles");
        assert_eq!(format_weight(&cycles, 7), "7");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn changes_have_a_sign_unless_they_round_to_nothing() {
        assert_eq!(format_percent_change(0.04), "0.0%");
        assert_eq!(format_percent_change(-0.04), "0.0%");
        assert_eq!(format_percent_change(2.66), "+2.7%");
        assert_eq!(format_percent_change(-15.0), "-15.0%");
        let cpu = SampleType::new("cpu", Unit::Nanoseconds);
        assert_eq!(format_weight_change(&cpu, 3_000_000, 9_000_000), "+6.00 ms");
        assert_eq!(format_weight_change(&cpu, 1_536, 1_024), "-512 ns");
        assert_eq!(format_weight_change(&cpu, 7, 7), "0 ns");
    }

    #[test]
    fn percentages_have_one_decimal_and_survive_an_empty_total() {
        assert_eq!(format_percent(1, 3), "33.3%");
        assert_eq!(format_percent(2, 3), "66.7%");
        assert_eq!(format_percent(5, 0), "0.0%");
    }

    #[test]
    fn points_in_time_show_as_many_decimals_as_their_resolution() {
        assert_eq!(format_time_at(400_100_000_000, 100_000_000), "400.1 s");
        assert_eq!(format_time_at(1_200_000_000, 12_500_000), "1.20 s");
        assert_eq!(format_time_at(0, 20_000_000), "0 ms");
        assert_eq!(format_time_at(120_000_000, 20_000_000), "120 ms");
        assert_eq!(format_time_at(1_050, 5), "1.050 µs");
        assert_eq!(format_time_at(7, 0), "7 ns");
    }

    #[test]
    fn milliseconds_have_three_decimals_rounded_to_the_microsecond() {
        assert_eq!(format_ms(0), "0.000");
        assert_eq!(format_ms(1_499), "0.001");
        assert_eq!(format_ms(1_500), "0.002");
        assert_eq!(format_ms(12_345_678), "12.346");
        assert_eq!(format_ms(1_234_567_000_000), "1,234,567.000");
    }
}
