//! The scope and task tables as text (`prof report --scopes`, `--tasks`): calls and
//! milliseconds per call, as Ruby's profiler prints them.

use super::format::{format_ms, format_percent, format_weight, thousands};
use super::scope_stats::{ScopeRow, TaskRow};
use crate::session::Session;
use std::fmt;

/// The scope table ready to print: one line per scope name, durations in milliseconds.
#[derive(Clone, Debug)]
pub struct ScopeTable<'a> {
    /// The session the rows come from (for the header).
    pub session: &'a Session,
    /// The rows, in the order to print.
    pub rows: &'a [ScopeRow],
}

impl fmt::Display for ScopeTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scopes = &self.session.scopes;
        let calls: u64 = self.rows.iter().map(|r| r.calls).sum();
        write!(
            f,
            "{} scopes, {} calls",
            thousands(self.rows.len() as u64),
            thousands(calls)
        )?;
        if scopes.dropped_events > 0 {
            write!(
                f,
                " ({} events dropped: counts are lower bounds)",
                thousands(scopes.dropped_events)
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:>10} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  SCOPE",
            "CALLS", "TOTAL ms", "SELF ms", "self/call", "total/call", "min", "max", "p50", "p99"
        )?;
        for row in self.rows {
            writeln!(
                f,
                "{:>10} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
                thousands(row.calls),
                format_ms(row.total_ns),
                format_ms(row.self_ns),
                format_ms(row.self_per_call_ns()),
                format_ms(row.total_per_call_ns()),
                format_ms(row.min_ns),
                format_ms(row.max_ns),
                format_ms(row.p50_ns),
                format_ms(row.p99_ns),
                row.name
            )?;
        }
        Ok(())
    }
}

/// The task table ready to print: one line per task name, its samples' weight (with the share
/// of `total_weight`) and its polls.
#[derive(Clone, Debug)]
pub struct TaskTable<'a> {
    /// The session the rows come from (for the unit).
    pub session: &'a Session,
    /// The rows, in the order to print.
    pub rows: &'a [TaskRow],
    /// The weight of all the samples kept (in tasks or not), for the percentages.
    pub total_weight: u64,
}

impl fmt::Display for TaskTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sample_type = &self.session.meta.sample_type;
        writeln!(
            f,
            "{:>12} {:>8} {:>8} {:>10} {:>12}  TASK",
            sample_type.name.to_uppercase(),
            "(pct)",
            "TASKS",
            "POLLS",
            "POLL ms"
        )?;
        for row in self.rows {
            writeln!(
                f,
                "{:>12} {:>8} {:>8} {:>10} {:>12}  {}",
                format_weight(sample_type, row.weight),
                format_percent(row.weight, self.total_weight),
                thousands(row.tasks),
                thousands(row.polls),
                format_ms(row.poll_ns),
                row.name
            )?;
        }
        Ok(())
    }
}
