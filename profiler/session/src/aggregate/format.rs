//! The one formatter of weights and percentages. The terminal table, the exports and the viewer
//! all print through here, so the same weight reads the same everywhere (`4.70 s`, `47.3%`).
//!
//! Times and bytes are scaled to the largest unit that keeps the value at least 1 and shown with
//! three significant digits (`950 ns`, `12.3 µs`, `4.70 s`; `512 B`, `1.50 KiB`, `2.00 GiB`);
//! counts are exact, with thousands separators (`20,834,821`). Percentages have one decimal.

use crate::session::{Frame, Metadata, SampleType, Session, Unit};

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
    format!("{}%", fixed(percent(part, whole), 1, false))
}

/// Samples lost before they were recorded, with their share of all taken: `4,889 (70.8% of
/// those taken)` for 4,889 dropped beside 2,012 kept. Every view that states losses says them
/// so.
pub fn format_dropped(dropped: u64, kept: u64) -> String {
    let taken = dropped.saturating_add(kept);
    format!(
        "{} ({} of those taken)",
        thousands(dropped),
        format_percent(dropped, taken)
    )
}

/// Everything a session lost, as every view states it: the dropped samples
/// ([`format_dropped`]) and, when sampling ended before the session did, when and why
/// (`12 (4.1% of those taken); sampling ended at 0.52 s: the program replaced prof's SIGPROF
/// handler`). `None` when nothing was lost.
pub fn format_losses(meta: &Metadata, kept: u64) -> Option<String> {
    let ended = meta.sampling_ended.as_ref().map(|ended| {
        format!(
            "sampling ended at {}: {}",
            format_time_at(ended.at_ns, 10_000_000),
            ended.reason
        )
    });
    match (meta.dropped_samples, ended) {
        (0, None) => None,
        (0, Some(ended)) => Some(format!("0; {ended}")),
        (n, None) => Some(format_dropped(n, kept)),
        (n, Some(ended)) => Some(format!("{}; {ended}", format_dropped(n, kept))),
    }
}

/// A change in percentage points with one decimal and its sign, as diffs show it: `+2.7%`,
/// `-0.4%`, and `0.0%` for a change that rounds to nothing.
pub fn format_percent_change(points: f64) -> String {
    let text = format!("{}%", fixed(points, 1, true));
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
    format!(
        "{} {name}",
        fixed(ns as f64 / factor as f64, decimals, false)
    )
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
        x if x < 9.995 => fixed(x, 2, false),
        x if x < 99.95 => fixed(x, 1, false),
        x => fixed(x, 0, false),
    };
    format!("{text} {name}")
}

/// `words` as one command line a POSIX shell splits back into them: words of letters, digits
/// and `,._+-:=/@%` as they are, others in single quotes (`'it'\''s'`).
pub fn shell_words(words: &[String]) -> String {
    let mut line = String::new();
    for word in words {
        if !line.is_empty() {
            line.push(' ');
        }
        let plain = !word.is_empty()
            && word
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b",._+-:=/@%".contains(&b));
        if plain {
            line += word;
            continue;
        }
        line.push('\'');
        for c in word.chars() {
            match c {
                '\'' => line += "'\\''",
                c => line.push(c),
            }
        }
        line.push('\'');
    }
    line
}

/// `x` with `decimals` digits after the point, `+` before it when `plus` and it is not negative:
/// exactly the text of `format!("{x:.decimals$}")` (`{x:+.decimals$}` with `plus`), rounded half
/// to even on the float's exact binary value. Written out because core's float formatting, which
/// also carries the shortest round-trip algorithms, is 20 kB of the wasm viewer; this needs only
/// integer arithmetic.
pub fn fixed(x: f64, decimals: usize, plus: bool) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    let sign = match (x.is_sign_negative(), plus) {
        (true, _) => "-",
        (false, true) => "+",
        (false, false) => "",
    };
    if x.is_infinite() {
        return format!("{sign}inf");
    }
    // x = mantissa × 2^exponent, exactly.
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = match biased {
        0 => (fraction, -1074),
        _ => (fraction | 1 << 52, biased - 1075),
    };
    // The digits of round(|x| × 10^decimals), the last `decimals` of them after the point.
    let digits = scaled_digits(mantissa, exponent, decimals);
    let (whole, after) = if decimals == 0 {
        (digits.as_str(), "")
    } else {
        digits.split_at(digits.len() - decimals)
    };
    let point = if decimals == 0 { "" } else { "." };
    format!("{sign}{whole}{point}{after}")
}

/// The decimal digits of `mantissa × 2^exponent × 10^decimals` rounded to an integer, half to
/// even, with at least `decimals + 1` of them (leading zeros added).
fn scaled_digits(mantissa: u64, exponent: i32, decimals: usize) -> String {
    let text = match rounded_in_u64(mantissa, exponent, decimals) {
        Some(n) => n.to_string(),
        None => big_scaled_digits(mantissa, exponent, decimals),
    };
    format!("{text:0>width$}", width = decimals + 1)
}

/// [`scaled_digits`]'s integer when the arithmetic fits in 128 bits and the result in 64, as it
/// does for every weight, share and time the formatter is given; `None` for the rest.
fn rounded_in_u64(mantissa: u64, exponent: i32, decimals: usize) -> Option<u64> {
    let scale = 10u128.checked_pow(u32::try_from(decimals).ok()?)?;
    let m = u128::from(mantissa).checked_mul(scale)?;
    let n = if exponent >= 0 {
        if i64::from(m.leading_zeros()) <= i64::from(exponent) {
            return None;
        }
        m << exponent
    } else {
        let shift = exponent.unsigned_abs();
        if shift >= 128 {
            return None;
        }
        let (kept, rest) = (m >> shift, m & ((1u128 << shift) - 1));
        let half = 1u128 << (shift - 1);
        kept + u128::from(rest > half || (rest == half && kept & 1 == 1))
    };
    u64::try_from(n).ok()
}

/// [`scaled_digits`] for any float, on numbers of as many 32-bit limbs as they need.
fn big_scaled_digits(mantissa: u64, exponent: i32, decimals: usize) -> String {
    // The digits of a number held as base-2^32 limbs, least significant first.
    fn big_digits(mut limbs: Vec<u32>) -> String {
        let mut chunks = Vec::new();
        while limbs.iter().any(|&l| l != 0) {
            let mut rest = 0u64;
            for limb in limbs.iter_mut().rev() {
                let cur = rest << 32 | u64::from(*limb);
                *limb = (cur / 1_000_000_000) as u32;
                rest = cur % 1_000_000_000;
            }
            chunks.push(rest as u32);
        }
        let mut text = chunks.pop().unwrap_or(0).to_string();
        for chunk in chunks.iter().rev() {
            text.push_str(&format!("{chunk:09}"));
        }
        text
    }
    // mantissa × 10^decimals as limbs (a few more limbs than `decimals` digits need).
    let mut limbs = vec![mantissa as u32, (mantissa >> 32) as u32];
    for _ in 0..decimals {
        let mut carry = 0u64;
        for limb in limbs.iter_mut() {
            let cur = u64::from(*limb) * 10 + carry;
            *limb = cur as u32;
            carry = cur >> 32;
        }
        if carry > 0 {
            limbs.push(carry as u32);
        }
    }
    if exponent >= 0 {
        // Shift left: whole limbs, then bits.
        let (words, bits) = ((exponent / 32) as usize, exponent % 32);
        let mut shifted = vec![0u32; words];
        let mut carry = 0u32;
        for &limb in &limbs {
            shifted.push(if bits == 0 {
                limb
            } else {
                limb << bits | carry
            });
            carry = if bits == 0 { 0 } else { limb >> (32 - bits) };
        }
        shifted.push(carry);
        big_digits(shifted)
    } else {
        // Shift right by `shift` bits, rounding half to even on what falls off.
        let shift = exponent.unsigned_abs() as usize;
        let total_bits = limbs.len() * 32;
        let bit = |i: usize| i < total_bits && limbs[i / 32] >> (i % 32) & 1 == 1;
        let mut kept: Vec<u32> = vec![0; limbs.len()];
        for i in shift..total_bits {
            if bit(i) {
                kept[(i - shift) / 32] |= 1 << ((i - shift) % 32);
            }
        }
        let half = shift >= 1 && bit(shift - 1);
        let below_half = (0..shift.saturating_sub(1).min(total_bits)).any(bit);
        let odd = bit(shift);
        if half && (below_half || odd) {
            for limb in kept.iter_mut() {
                let (sum, over) = limb.overflowing_add(1);
                *limb = sum;
                if !over {
                    break;
                }
            }
            kept.push(0);
        }
        big_digits(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_what_a_shell_would_split_or_expand() {
        let words = |w: &[&str]| shell_words(&w.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        assert_eq!(
            words(&["--tid", "41,43", "--from", "0.5"]),
            "--tid 41,43 --from 0.5"
        );
        assert_eq!(
            words(&["--scope", "it's a $scope", ""]),
            "--scope 'it'\\''s a $scope' ''"
        );
    }

    #[test]
    fn losses_name_the_dropped_samples_and_when_and_why_sampling_ended() {
        let mut meta = Metadata::default();
        assert_eq!(format_losses(&meta, 100), None);
        meta.dropped_samples = 25;
        assert_eq!(
            format_losses(&meta, 75).as_deref(),
            Some("25 (25.0% of those taken)")
        );
        meta.sampling_ended = Some(crate::session::SamplingEnded {
            at_ns: 523_000_000,
            reason: "the program replaced prof's SIGPROF handler".to_owned(),
        });
        assert_eq!(
            format_losses(&meta, 75).as_deref(),
            Some(
                "25 (25.0% of those taken); sampling ended at 523 ms: \
                 the program replaced prof's SIGPROF handler"
            )
        );
        meta.dropped_samples = 0;
        assert!(format_losses(&meta, 75)
            .unwrap()
            .starts_with("0; sampling ended at 523 ms"));
    }

    fn ns(w: u64) -> String {
        format_weight(&SampleType::new("cpu", Unit::Nanoseconds), w)
    }

    fn bytes(w: u64) -> String {
        format_weight(&SampleType::new("alloc_bytes", Unit::Bytes), w)
    }

    /// `fixed` against core's formatting: the values where they could part (ties, carries,
    /// subnormals, the largest and smallest), and 400,000 more from a fixed-seed generator.
    #[test]
    fn fixed_writes_what_core_writes() {
        let check = |x: f64| {
            for decimals in 0..=9 {
                assert_eq!(
                    fixed(x, decimals, false),
                    format!("{x:.decimals$}"),
                    "{x:e}"
                );
                assert_eq!(
                    fixed(x, decimals, true),
                    format!("{x:+.decimals$}"),
                    "{x:e}"
                );
            }
        };
        for x in [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            -2.5,
            0.25,
            0.35,
            0.05,
            0.125,
            9.995,
            99.95,
            999.5,
            1e-7,
            0.045,
            1.005,
            2.675,
            1e15,
            1e16 + 2.0,
            1e22,
            1e300,
            4.9e-324,
            2.2e-308,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            123_456.789,
            0.999_999_999_95,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            18_446_744_073_709_551_615.0,
        ] {
            check(x);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..400_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = match i % 4 {
                // Any bit pattern.
                0 => f64::from_bits(state),
                // The formatter's own inputs: a u64 over a unit's factor, percentages.
                1 => state as f64 / 1e6,
                2 => (state % 1_000_000) as f64 * 100.0 / ((state >> 40) % 1_000_000 + 1) as f64,
                // Values on a grid of halves, where ties are.
                _ => (state % 100_000) as f64 / 2f64.powi((state >> 60) as i32),
            };
            assert_eq!(
                fixed(x, (i % 4) as usize, false),
                format!("{x:.0$}", (i % 4) as usize),
                "{x:e}"
            );
        }
    }

    /// The two ways `fixed` computes its digits agree wherever the quick one applies.
    #[test]
    fn fixed_s_big_and_quick_arithmetic_agree() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut quick = 0;
        for i in 0..100_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (mantissa, exponent) = (state >> 11, (state % 200) as i32 - 130);
            let decimals = (i % 10) as usize;
            if let Some(n) = rounded_in_u64(mantissa, exponent, decimals) {
                quick += 1;
                let big = big_scaled_digits(mantissa, exponent, decimals);
                assert_eq!(big, n.to_string(), "{mantissa} × 2^{exponent}, {decimals}");
            }
        }
        assert!(quick > 50_000, "{quick}");
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
