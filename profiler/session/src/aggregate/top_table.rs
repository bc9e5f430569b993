//! The top-N table as text, like stackprof's: TOTAL (pct) SELF (pct) FRAME, with a CALLS
//! column before FRAME for a session grouped by scope, or for one whose functions' calls were
//! counted (`prof record --calls`: the counted functions' exact calls, empty for the others).

use super::format::{format_losses, format_percent, format_weight, thousands};
use super::grouping::ScopeCalls;
use super::threads::shown_label;
use super::top::{SortBy, TopRow};
use crate::session::{Session, ThreadIdx};
use std::fmt;

/// A top-N table ready to print. Weights are shown in the session's unit, scaled by the one
/// formatter ([`format_weight`]), with percentages of the total.
#[derive(Clone, Debug)]
pub struct TopTable<'a> {
    /// The session the rows come from (for the header).
    pub session: &'a Session,
    /// The threads the rows are of, named in the header ([`shown_label`]); `None` for all.
    pub threads: Option<&'a [ThreadIdx]>,
    /// The rows, in the order to print.
    pub rows: &'a [TopRow],
    /// The weight percentages are relative to (the filtered total).
    pub total_weight: u64,
    /// Samples behind `total_weight`.
    pub total_count: u64,
    /// What the rows were ranked by (named in the header).
    pub sort: SortBy,
    /// For a session grouped by scope ([`group_by_scope`](super::group_by_scope)), the calls
    /// of its scope frames: a CALLS column, empty for the other rows. `None`: no such column.
    pub calls: Option<&'a ScopeCalls>,
}

impl fmt::Display for TopTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let meta = &self.session.meta;
        let mode = meta.mode;
        let format_weight = |w: u64| format_weight(&meta.sample_type, w);
        write!(
            f,
            "{}: {} mode, {} samples, showing {} ({}), {} total, sorted by {}",
            shown_label(self.session, self.threads),
            mode.name(),
            thousands(self.total_count),
            meta.sample_type.name,
            meta.sample_type.unit.name(),
            format_weight(self.total_weight),
            match self.sort {
                SortBy::SelfWeight => "self",
                SortBy::Total => "total",
            }
        )?;
        // Losses are stated wherever a profile is shown, not only when it was saved.
        match format_losses(meta, self.session.sample_count()) {
            None => writeln!(f)?,
            Some(losses) => writeln!(f, "; dropped {losses}")?,
        }
        write!(
            f,
            "{:>12} {:>8} {:>12} {:>8}",
            "TOTAL", "(pct)", "SELF", "(pct)"
        )?;
        // Counted calls by function name (a function counted in two files: both counts).
        let counted = if self.calls.is_none() {
            super::counted_by_name(self.session)
        } else {
            Default::default()
        };
        if self.calls.is_some() || !counted.is_empty() {
            write!(f, " {:>10}", "CALLS")?;
        }
        writeln!(f, "  FRAME")?;
        for row in self.rows {
            write!(
                f,
                "{:>12} {:>8} {:>12} {:>8}",
                format_weight(row.total_weight),
                format_percent(row.total_weight, self.total_weight),
                format_weight(row.self_weight),
                format_percent(row.self_weight, self.total_weight),
            )?;
            if let Some(calls) = self.calls {
                let text = calls.of_function(row.func).map(thousands);
                write!(f, " {:>10}", text.unwrap_or_default())?;
            } else if !counted.is_empty() {
                let text = counted.get(row.name.as_str()).map(|&c| thousands(c));
                write!(f, " {:>10}", text.unwrap_or_default())?;
            }
            writeln!(f, "  {}", row.name)?;
        }
        Ok(())
    }
}
