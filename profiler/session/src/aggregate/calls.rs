//! Counted functions (`prof record --calls`): each function's exact calls beside the time its
//! samples give it, and that time per call, as Ruby's profiler prints a method's: `% time`,
//! self and total time, calls, self and total per call.
//!
//! The counts are the kernel's, exact; the times are the samples', estimates: a function's self
//! weight is that of the samples whose leaf frame it is, its total weight that of the samples
//! with it anywhere on the stack (once per sample, however deep it recurses). Per call is that
//! weight over the count, so a function called 40,000 times for 1 µs each reads 1 µs a call
//! where a sampler alone could not tell it from one call of 40 ms.

use super::format::{format_percent, format_weight, thousands};
use super::{Filter, SortBy, StackWeights};
use crate::session::{CountedFunction, SampleType, Session, TimedCalls, Unit};
use std::collections::HashMap;
use std::fmt;

/// One counted function's row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallRow {
    /// The function's name, as its frames are named.
    pub name: String,
    /// The file it is in.
    pub module: String,
    /// Exact calls, from the kernel.
    pub calls: u64,
    /// The weight of the kept samples whose leaf frame it is.
    pub self_weight: u64,
    /// The weight of the kept samples with it anywhere on the stack.
    pub total_weight: u64,
    /// Whether its file's debug info shows copies inlined into callers, whose calls are not
    /// counted (`None`: no debug info to tell).
    pub inlined: Option<bool>,
    /// Its calls timed from entry to return (`prof record --calls-timed`), over the whole
    /// recording (the sample filters do not apply to them).
    pub timed: Option<TimedCalls>,
}

impl CallRow {
    /// Mean self weight per call (0 without calls).
    pub fn self_per_call(&self) -> u64 {
        self.self_weight.checked_div(self.calls).unwrap_or(0)
    }

    /// Mean total weight per call (0 without calls).
    pub fn total_per_call(&self) -> u64 {
        self.total_weight.checked_div(self.calls).unwrap_or(0)
    }

    /// Mean self time of its timed calls, in nanoseconds (`None` when none was timed).
    pub fn timed_self_per_call(&self) -> Option<u64> {
        self.timed.and_then(|t| t.self_ns.checked_div(t.calls))
    }

    /// Mean total time of its timed calls, in nanoseconds (`None` when none was timed).
    pub fn timed_total_per_call(&self) -> Option<u64> {
        self.timed.and_then(|t| t.total_ns.checked_div(t.calls))
    }
}

/// The last part of a path: how a frame's module and a counted function's file are compared
/// (one may name the file by a link, the other by its target's directory).
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The exact calls of each counted function of `session` by name (a name counted in two files:
/// the sum), for a Calls column beside sampled functions; empty when nothing was counted.
pub fn counted_by_name(session: &Session) -> HashMap<&str, u64> {
    let mut calls: HashMap<&str, u64> = HashMap::new();
    for c in &session.counted {
        let sum = calls.entry(c.name.as_str()).or_default();
        *sum = sum.saturating_add(c.calls);
    }
    calls
}

/// One row per counted function of `session`, with the weights of the samples `filter` keeps,
/// sorted by `sort` (then by calls, then by name). A function counted in two files (two copies
/// of a library) has a row for each. Frames are matched to a counted function by name, and by
/// module when the frame has one.
pub fn call_table(session: &Session, filter: &Filter, sort: SortBy) -> Vec<CallRow> {
    let counted = &session.counted;
    let mut rows: Vec<CallRow> = counted
        .iter()
        .map(|c: &CountedFunction| CallRow {
            name: c.name.clone(),
            module: c.module.clone(),
            calls: c.calls,
            inlined: c.inlined,
            timed: c.timed,
            ..CallRow::default()
        })
        .collect();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, c) in counted.iter().enumerate() {
        by_name.entry(c.name.as_str()).or_default().push(i);
    }
    if !by_name.is_empty() {
        let weights = StackWeights::compute(session, filter);
        let mut seen: Vec<usize> = Vec::new();
        for (leaf, &weight) in weights.weight.iter().enumerate() {
            if weight == 0 {
                continue;
            }
            seen.clear();
            let stack = crate::session::StackId(leaf as u32);
            for (depth, frame_id) in session.stack_frames(stack).enumerate() {
                let frame = session.frame(frame_id);
                let Some(candidates) = by_name.get(session.str(frame.name)) else {
                    continue;
                };
                let module = frame.module.map(|m| file_name(session.str(m)));
                for &i in candidates {
                    if module.is_some_and(|m| m != file_name(&counted[i].module)) {
                        continue;
                    }
                    if depth == 0 {
                        rows[i].self_weight = rows[i].self_weight.saturating_add(weight);
                    }
                    if !seen.contains(&i) {
                        seen.push(i);
                        rows[i].total_weight = rows[i].total_weight.saturating_add(weight);
                    }
                }
            }
        }
    }
    rows.sort_by(|a, b| {
        let key = |r: &CallRow| match sort {
            SortBy::SelfWeight => r.self_weight,
            SortBy::Total => r.total_weight,
        };
        key(b)
            .cmp(&key(a))
            .then(b.calls.cmp(&a.calls))
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

/// The counted functions' table ready to print (`prof report --calls`).
#[derive(Clone, Debug)]
pub struct CallTable<'a> {
    /// The session the rows come from (for the unit and the header).
    pub session: &'a Session,
    /// The rows, in the order to print.
    pub rows: &'a [CallRow],
    /// The weight of every sample kept, for the percentages.
    pub total_weight: u64,
}

impl fmt::Display for CallTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sample_type = &self.session.meta.sample_type;
        let counted = &self.session.counted;
        let calls: u64 = counted.iter().map(|c| c.calls).sum();
        writeln!(
            f,
            "{} functions counted, {} calls (exact); {} from samples ({} in all)",
            thousands(counted.len() as u64),
            thousands(calls),
            sample_type.name,
            format_weight(sample_type, self.total_weight)
        )?;
        let timed = self.rows.iter().any(|r| r.timed.is_some());
        let wall = SampleType {
            name: "wall".into(),
            unit: Unit::Nanoseconds,
        };
        if timed {
            writeln!(
                f,
                "t.self/call, t.total/call: each call timed from its entry to its return (wall \
                 time), over the whole recording"
            )?;
        }
        let timed_columns = |self_per: &str, total_per: &str| {
            if timed {
                format!(" {self_per:>11} {total_per:>12}")
            } else {
                String::new()
            }
        };
        writeln!(
            f,
            "{:>7} {:>10} {:>10} {:>12} {:>10} {:>10}{}  FUNCTION (MODULE)",
            "%SELF",
            "SELF",
            "TOTAL",
            "CALLS",
            "self/call",
            "total/call",
            timed_columns("t.self/call", "t.total/call")
        )?;
        for row in self.rows {
            let timed_per_call =
                |per: Option<u64>| per.map_or("-".to_owned(), |ns| format_weight(&wall, ns));
            let per_call = |weight: u64, per: u64| {
                if row.calls == 0 {
                    "-".to_owned()
                } else if weight == 0 {
                    // No sample landed in it: less than the interval's worth in all.
                    "0".to_owned()
                } else {
                    format_weight(sample_type, per)
                }
            };
            writeln!(
                f,
                "{:>7} {:>10} {:>10} {:>12} {:>10} {:>10}{}  {} ({}){}",
                format_percent(row.self_weight, self.total_weight),
                format_weight(sample_type, row.self_weight),
                format_weight(sample_type, row.total_weight),
                thousands(row.calls),
                per_call(row.self_weight, row.self_per_call()),
                per_call(row.total_weight, row.total_per_call()),
                timed_columns(
                    &timed_per_call(row.timed_self_per_call()),
                    &timed_per_call(row.timed_total_per_call())
                ),
                row.name,
                file_name(&row.module),
                if row.inlined == Some(true) {
                    " [also inlined]"
                } else {
                    ""
                }
            )?;
        }
        let untimed: u64 = self
            .rows
            .iter()
            .filter_map(|r| r.timed.map(|t| r.calls.saturating_sub(t.calls)))
            .sum();
        if untimed > 0 {
            writeln!(
                f,
                "{} calls counted but not timed: running when the recording ended, begun before \
                 prof attached, nested deeper than the kernel's 64 return probes on a thread, or \
                 their record lost",
                thousands(untimed)
            )?;
        }
        if self.rows.iter().any(|r| r.inlined == Some(true)) {
            writeln!(
                f,
                "[also inlined]: the compiler inlined copies into callers too; their calls never \
                 enter the function and are not counted (their time is in its samples)"
            )?;
        }
        let mut unknown: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.inlined.is_none())
            .map(|r| file_name(&r.module))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if !unknown.is_empty() {
            writeln!(
                f,
                "no debug info in {}: inlined copies, whose calls are not counted, cannot be seen",
                unknown.join(", ")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::folded_session;
    use super::*;

    /// A session with `parse` under `main` (leaf) and `leaf` under `parse`, and counts for both
    /// and for `never` (counted, never sampled). Samples are 10 ns apart from 0.
    fn counted_session() -> Session {
        // main > parse: 30 self in parse; main > parse > leaf: 10 self in leaf; main > parse >
        // parse (recursion): 20, counted once in parse's total; main alone: 40.
        let mut session = folded_session(&[
            ("main;parse", 30),
            ("main;parse;leaf", 10),
            ("main;parse;parse", 20),
            ("main", 40),
        ]);
        session.counted = vec![
            CountedFunction {
                name: "parse".into(),
                module: "/bin/app".into(),
                offset: 0x1000,
                calls: 5,
                inlined: Some(true),
                timed: None,
            },
            CountedFunction {
                name: "leaf".into(),
                module: "/bin/app".into(),
                offset: 0x2000,
                calls: 1_000,
                inlined: Some(false),
                timed: None,
            },
            CountedFunction {
                name: "never".into(),
                module: "/bin/app".into(),
                offset: 0x3000,
                calls: 0,
                inlined: Some(false),
                timed: None,
            },
        ];
        session
    }

    #[test]
    fn self_and_total_weights_come_from_the_samples_and_recursion_counts_once() {
        let session = counted_session();
        let rows = call_table(&session, &Filter::all(), SortBy::SelfWeight);
        let parse = rows.iter().find(|r| r.name == "parse").unwrap();
        assert_eq!(
            (parse.calls, parse.self_weight, parse.total_weight),
            (5, 50, 60)
        );
        assert_eq!((parse.self_per_call(), parse.total_per_call()), (10, 12));
        let leaf = rows.iter().find(|r| r.name == "leaf").unwrap();
        assert_eq!(
            (leaf.calls, leaf.self_weight, leaf.total_weight),
            (1_000, 10, 10)
        );
        assert_eq!(rows[0].name, "parse", "sorted by self weight: {rows:?}");
        assert_eq!(rows[2].name, "never");
    }

    #[test]
    fn the_filter_chooses_the_samples_the_counts_stay_exact() {
        let session = counted_session();
        let filter = Filter::all().time_range(0, 10);
        let rows = call_table(&session, &filter, SortBy::Total);
        let parse = rows.iter().find(|r| r.name == "parse").unwrap();
        assert_eq!(
            (parse.calls, parse.self_weight, parse.total_weight),
            (5, 30, 30)
        );
    }

    #[test]
    fn the_table_prints_calls_and_time_per_call() {
        let session = counted_session();
        let rows = call_table(&session, &Filter::all(), SortBy::SelfWeight);
        let text = CallTable {
            session: &session,
            rows: &rows,
            total_weight: 100,
        }
        .to_string();
        assert!(
            text.starts_with("3 functions counted, 1,005 calls (exact)"),
            "{text}"
        );
        let parse = text
            .lines()
            .find(|l| l.ends_with("parse (app) [also inlined]"))
            .unwrap();
        let columns: Vec<&str> = parse.split_whitespace().collect();
        assert_eq!(&columns[..5], ["50.0%", "50", "ns", "60", "ns"], "{parse}");
        let never = text.lines().find(|l| l.ends_with("never (app)")).unwrap();
        assert!(never.contains(" 0 "), "{never}");
        assert!(
            text.contains("\n[also inlined]: the compiler inlined copies"),
            "{text}"
        );
        assert!(!text.contains("no debug info"), "{text}");
    }

    #[test]
    fn timed_calls_add_their_own_per_call_columns_and_say_what_was_not_timed() {
        let mut session = counted_session();
        session.counted[0].timed = Some(TimedCalls {
            calls: 4,
            total_ns: 8_000_000,
            self_ns: 2_000_000,
        });
        session.counted[1].timed = Some(TimedCalls {
            calls: 1_000,
            total_ns: 6_000_000,
            self_ns: 6_000_000,
        });
        let rows = call_table(&session, &Filter::all(), SortBy::SelfWeight);
        let parse = rows.iter().find(|r| r.name == "parse").unwrap();
        assert_eq!(
            (parse.timed_self_per_call(), parse.timed_total_per_call()),
            (Some(500_000), Some(2_000_000))
        );
        let text = CallTable {
            session: &session,
            rows: &rows,
            total_weight: 100,
        }
        .to_string();
        let header = text.lines().find(|l| l.contains("%SELF")).unwrap();
        assert!(header.contains("t.self/call t.total/call"), "{header}");
        let line = text.lines().find(|l| l.contains("parse (app)")).unwrap();
        let words = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("10 ns 12 ns 500 µs 2.00 ms parse"), "{line}");
        let never = text.lines().find(|l| l.ends_with("never (app)")).unwrap();
        assert!(never.contains(" - "), "{never}");
        assert!(text.contains("1 calls counted but not timed"), "{text}");
    }

    #[test]
    fn the_functions_table_has_a_calls_column_for_the_counted_functions() {
        let session = counted_session();
        let text = super::super::TableOptions::default()
            .functions(&session)
            .unwrap()
            .to_string();
        let header = text.lines().nth(1).unwrap();
        assert!(header.contains("CALLS"), "{text}");
        let parse = text.lines().find(|l| l.ends_with("  parse")).unwrap();
        assert_eq!(parse.split_whitespace().nth(6), Some("5"), "{text}");
        let leaf = text.lines().find(|l| l.ends_with("  leaf")).unwrap();
        assert_eq!(leaf.split_whitespace().nth(6), Some("1,000"), "{text}");
        let main = text.lines().find(|l| l.ends_with("  main")).unwrap();
        assert_eq!(
            main.split_whitespace().count(),
            7,
            "not counted: no count: {text}"
        );
        // Without counts, no column.
        let mut plain = session.clone();
        plain.counted.clear();
        let text = super::super::TableOptions::default()
            .functions(&plain)
            .unwrap()
            .to_string();
        assert!(!text.contains("CALLS"), "{text}");
    }
}
