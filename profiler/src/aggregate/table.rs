//! The top-N table as text, like stackprof's: TOTAL (pct) SELF (pct) FRAME.

use super::top::{SortBy, TopRow};
use crate::session::{Mode, Session};
use std::fmt;

/// A top-N table ready to print. Weights are shown in the session's unit (milliseconds for
/// time, bytes for allocations; plain numbers for imported folded stacks, whose weights are
/// counts) with percentages of the total.
#[derive(Clone, Debug)]
pub struct TopTable<'a> {
    /// The session the rows come from (for the header).
    pub session: &'a Session,
    /// The rows, in the order to print.
    pub rows: &'a [TopRow],
    /// The weight percentages are relative to (the filtered total).
    pub total_weight: u64,
    /// Samples behind `total_weight`.
    pub total_count: u64,
    /// What the rows were ranked by (named in the header).
    pub sort: SortBy,
}

/// `weight` in a unit fit for `mode`: `12.3 ms` for time, `4.5 MiB` for bytes.
pub fn format_weight(mode: Mode, weight: u64) -> String {
    match mode {
        Mode::Alloc => {
            let w = weight as f64;
            if w >= (1u64 << 30) as f64 {
                format!("{:.1} GiB", w / (1u64 << 30) as f64)
            } else if w >= (1u64 << 20) as f64 {
                format!("{:.1} MiB", w / (1u64 << 20) as f64)
            } else if w >= 1024.0 {
                format!("{:.1} KiB", w / 1024.0)
            } else {
                format!("{weight} B")
            }
        }
        _ => format!("{:.1} ms", weight as f64 / 1e6),
    }
}

/// `part` as a percentage of `whole` with one decimal, `12.3%`, as the top-N table prints it
/// (`0.0%` when `whole` is 0). The viewer uses it too, so both show the same rounding.
pub fn format_percent(part: u64, whole: u64) -> String {
    format!("{:.1}%", percent(part, whole))
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

impl fmt::Display for TopTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let meta = &self.session.meta;
        let mode = meta.mode;
        let counts = crate::export::weights_are_counts(self.session);
        let format_weight = |w: u64| {
            if counts {
                w.to_string()
            } else {
                format_weight(mode, w)
            }
        };
        let program = if meta.program.is_empty() {
            "(unknown program)"
        } else {
            &meta.program
        };
        writeln!(
            f,
            "{program}: {} mode, {} samples, {} total, sorted by {}",
            mode.name(),
            self.total_count,
            format_weight(self.total_weight),
            match self.sort {
                SortBy::SelfWeight => "self",
                SortBy::Total => "total",
            }
        )?;
        writeln!(
            f,
            "{:>12} {:>8} {:>12} {:>8}  FRAME",
            "TOTAL", "(pct)", "SELF", "(pct)"
        )?;
        for row in self.rows {
            writeln!(
                f,
                "{:>12} {:>7.1}% {:>12} {:>7.1}%  {}",
                format_weight(row.total_weight),
                percent(row.total_weight, self.total_weight),
                format_weight(row.self_weight),
                percent(row.self_weight, self.total_weight),
                row.name
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod format_tests {
    use super::format_percent;

    #[test]
    fn percentages_have_one_decimal_and_survive_an_empty_total() {
        assert_eq!(format_percent(1, 3), "33.3%");
        assert_eq!(format_percent(2, 3), "66.7%");
        assert_eq!(format_percent(5, 0), "0.0%");
    }
}
