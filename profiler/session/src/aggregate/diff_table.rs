//! The diff of two profiles as a table of functions: the weight of each in the base and the new
//! profile and the change, largest change first (`prof diff`).
//!
//! By default each side is a share of its own total, so a profile recorded for longer does not
//! look slower everywhere: the change is in percentage points of each side's total. Absolute
//! weights compare the raw weights instead. Functions are matched by name, as the two profiles
//! have separate string tables. Two profiles are comparable only when their weights are in one
//! unit (and, for counts, counts of one event): see [`check_comparable`].

use super::format::{
    format_percent, format_percent_change, format_weight, format_weight_change, percent, thousands,
};
use super::top::SortBy;
use super::{CallTree, DiffTree, Filter};
use crate::session::{SampleType, Session, Unit};
use std::collections::HashMap;
use std::fmt;

/// One side of a diff: a profile and the name it is shown by (usually its file name).
#[derive(Clone, Copy, Debug)]
pub struct DiffSide<'a> {
    /// What the user calls this profile.
    pub label: &'a str,
    /// The profile.
    pub session: &'a Session,
}

/// Two profiles whose weights cannot be compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{new} measures {} ({}) but {base} measures {} ({}): a diff needs both in one unit",
    new_type.name, new_type.unit.name(), base_type.name, base_type.unit.name()
)]
pub struct DiffError {
    /// The base profile's label.
    pub base: String,
    /// What its weights measure.
    pub base_type: SampleType,
    /// The new profile's label.
    pub new: String,
    /// What its weights measure.
    pub new_type: SampleType,
}

/// The crate's error knows nothing of the aggregation core: the conversion lives here.
impl From<DiffError> for crate::error::Error {
    fn from(err: DiffError) -> Self {
        crate::error::Error::Incomparable(err.to_string())
    }
}

/// Refuses two profiles whose weights are in different units, or counts of different events
/// (`cycles` against `instructions`); times of different clocks (`cpu`, `wall`) compare.
pub fn check_comparable(base: DiffSide<'_>, new: DiffSide<'_>) -> Result<(), DiffError> {
    let (b, n) = (
        &base.session.meta.sample_type,
        &new.session.meta.sample_type,
    );
    let same = b.unit == n.unit && (b.unit != Unit::Count || b.name == n.name);
    if same {
        return Ok(());
    }
    Err(DiffError {
        base: base.label.to_owned(),
        base_type: b.clone(),
        new: new.label.to_owned(),
        new_type: n.clone(),
    })
}

impl DiffTree {
    /// The merged call trees of `base` and `new` with `base` scaled to `new`'s total (see
    /// [`DiffTree::normalized`]) unless `absolute`; an error when their weights are not
    /// comparable. What differential flame graphs are drawn from.
    pub fn between(
        base: DiffSide<'_>,
        new: DiffSide<'_>,
        absolute: bool,
    ) -> Result<DiffTree, DiffError> {
        check_comparable(base, new)?;
        let trees = [base.session, new.session].map(|s| CallTree::new(s, &Filter::all()));
        let diff = DiffTree::new((base.session, &trees[0]), (new.session, &trees[1]));
        Ok(if absolute { diff } else { diff.normalized() })
    }
}

/// What a diff table shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiffOptions {
    /// How many functions to list ([`super::DEFAULT_TOP`] by default).
    pub top: usize,
    /// Compare self weights (the function itself) or total weights (with its callees).
    pub by: SortBy,
    /// Compare raw weights instead of shares of each side's total.
    pub absolute: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            top: super::DEFAULT_TOP,
            by: SortBy::SelfWeight,
            absolute: false,
        }
    }
}

impl DiffOptions {
    /// Lists `n` functions.
    pub fn top(mut self, n: usize) -> Self {
        self.top = n;
        self
    }

    /// Compares self or total weights.
    pub fn by(mut self, by: SortBy) -> Self {
        self.by = by;
        self
    }

    /// Compares raw weights (`true`) or shares of each side's total.
    pub fn absolute(mut self, absolute: bool) -> Self {
        self.absolute = absolute;
        self
    }
}

/// One function's weight in both profiles (self or total, as [`DiffOptions::by`] says), in
/// each profile's own unit of weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffRow {
    /// The function's name.
    pub name: String,
    /// Its weight in the base profile.
    pub base: u64,
    /// Its weight in the new profile.
    pub new: u64,
}

/// A column of a diff table to order its rows by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffColumn {
    /// The function's name.
    Name,
    /// Its weight (or share) in the base profile.
    Base,
    /// Its weight (or share) in the new profile.
    New,
    /// The change with its sign: descending, what grew most comes first.
    Delta,
    /// The size of the change, whichever way: descending, what changed most comes first.
    Change,
}

/// The functions that changed most between two profiles, ready to print.
#[derive(Clone, Debug)]
pub struct DiffTable<'a> {
    base: DiffSide<'a>,
    new: DiffSide<'a>,
    options: DiffOptions,
    totals: [u64; 2],
    counts: [u64; 2],
    rows: Vec<DiffRow>,
}

impl<'a> DiffTable<'a> {
    /// The table of `base` against `new`; an error when their weights are not comparable.
    pub fn new(
        base: DiffSide<'a>,
        new: DiffSide<'a>,
        options: DiffOptions,
    ) -> Result<Self, DiffError> {
        check_comparable(base, new)?;
        let mut by_name: HashMap<String, [u64; 2]> = HashMap::new();
        let mut totals = [0; 2];
        let mut counts = [0; 2];
        for (side, session) in [base.session, new.session].into_iter().enumerate() {
            let tree = CallTree::new(session, &Filter::all());
            totals[side] = tree.total_weight(tree.root());
            counts[side] = tree.total_count(tree.root());
            for f in tree.functions(session) {
                let weight = match options.by {
                    SortBy::SelfWeight => f.self_weight,
                    SortBy::Total => f.total_weight,
                };
                by_name.entry(f.name).or_default()[side] += weight;
            }
        }
        // Functions with no weight on either side (callers, when comparing self weights) say
        // nothing.
        let rows: Vec<DiffRow> = by_name
            .into_iter()
            .filter(|(_, weights)| *weights != [0, 0])
            .map(|(name, [base, new])| DiffRow { name, base, new })
            .collect();
        let mut table = DiffTable {
            base,
            new,
            options,
            totals,
            counts,
            rows,
        };
        table.sort(DiffColumn::Change, true);
        table.rows.truncate(options.top);
        Ok(table)
    }

    /// Orders the rows by `column`, largest first when `descending`; ties go by the larger
    /// weight, then by name. [`DiffTable::new`] orders them by [`DiffColumn::Change`],
    /// descending: largest change first, as `prof diff` prints them.
    pub fn sort(&mut self, column: DiffColumn, descending: bool) {
        let totals = self.totals;
        let absolute = self.options.absolute;
        // Exact: shares compare as base * new_total against new * base_total.
        let signed = |r: &DiffRow| -> i128 {
            if absolute {
                i128::from(r.new) - i128::from(r.base)
            } else {
                let b = i128::from(r.base) * i128::from(totals[1]);
                let n = i128::from(r.new) * i128::from(totals[0]);
                n - b
            }
        };
        let key = |r: &DiffRow| -> i128 {
            match column {
                DiffColumn::Base => i128::from(r.base),
                DiffColumn::New => i128::from(r.new),
                DiffColumn::Delta => signed(r),
                DiffColumn::Change => signed(r).abs(),
                DiffColumn::Name => 0,
            }
        };
        crate::order::sort_by(&mut self.rows, |a, b| {
            let primary = match column {
                DiffColumn::Name => a.name.cmp(&b.name),
                _ => key(a).cmp(&key(b)),
            };
            let primary = if descending {
                primary.reverse()
            } else {
                primary
            };
            primary
                .then_with(|| b.new.max(b.base).cmp(&a.new.max(a.base)))
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    /// The rows, in the order of the last [`DiffTable::sort`] (largest change first).
    pub fn rows(&self) -> &[DiffRow] {
        &self.rows
    }

    /// The total weight of the base and the new profile.
    pub fn totals(&self) -> [u64; 2] {
        self.totals
    }

    /// The lines above the table: what is compared, and each side's samples and total.
    pub fn summary(&self) -> [String; 3] {
        let unit = &self.new.session.meta.sample_type;
        let head = format!(
            "diff of {} ({}), {} weight, {}; top {} by change",
            unit.name,
            unit.unit.name(),
            match self.options.by {
                SortBy::SelfWeight => "self",
                SortBy::Total => "total",
            },
            match self.options.absolute {
                true => "absolute",
                false => "each side as a share of its own total",
            },
            self.rows.len()
        );
        let side = |tag: &str, side: DiffSide<'_>, i: usize| {
            let program = &side.session.meta.program;
            let program = match program.is_empty() {
                true => "unknown program",
                false => program,
            };
            format!(
                "{tag}  {}: {} samples, {} total ({program})",
                side.label,
                thousands(self.counts[i]),
                format_weight(&side.session.meta.sample_type, self.totals[i])
            )
        };
        [head, side("base", self.base, 0), side("new ", self.new, 1)]
    }

    /// The change of a row as a number: percentage points of each side's total, or the
    /// difference of the weights when absolute.
    pub fn change(&self, row: &DiffRow) -> f64 {
        if self.options.absolute {
            row.new as f64 - row.base as f64
        } else {
            percent(row.new, self.totals[1]) - percent(row.base, self.totals[0])
        }
    }

    /// The texts of a row's base, new and delta cells, as `prof diff` prints them: shares of
    /// each side's total and the change in points, or weights when absolute.
    pub fn cells(&self, row: &DiffRow) -> [String; 3] {
        let unit = &self.new.session.meta.sample_type;
        if self.options.absolute {
            [
                format_weight(unit, row.base),
                format_weight(unit, row.new),
                format_weight_change(unit, row.base, row.new),
            ]
        } else {
            [
                format_percent(row.base, self.totals[0]),
                format_percent(row.new, self.totals[1]),
                format_percent_change(self.change(row)),
            ]
        }
    }
}

impl fmt::Display for DiffTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.summary() {
            writeln!(f, "{line}")?;
        }
        writeln!(f, "{:>12} {:>12} {:>12}  FRAME", "BASE", "NEW", "DELTA")?;
        for row in &self.rows {
            let [base, new, delta] = self.cells(row);
            writeln!(f, "{base:>12} {new:>12} {delta:>12}  {}", row.name)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionBuilder;

    /// `work` and `main`: `work` takes `work` of `total` nanoseconds.
    fn profile(work: u64, rest: u64) -> Session {
        let mut b = SessionBuilder::default();
        b.meta_mut().program = "demo".into();
        let t = b.thread(1, "main");
        b.push_named(&["main", "work"], t, 0, work);
        b.push_named(&["main", "parse"], t, 1, rest);
        b.finish()
    }

    fn side<'a>(label: &'a str, session: &'a Session) -> DiffSide<'a> {
        DiffSide { label, session }
    }

    #[test]
    fn a_profile_diffed_with_itself_changes_nothing() {
        let p = profile(3_000_000, 1_000_000);
        for absolute in [false, true] {
            let options = DiffOptions {
                absolute,
                ..DiffOptions::default()
            };
            let table = DiffTable::new(side("a", &p), side("a", &p), options).unwrap();
            assert_eq!(table.rows().len(), 2);
            for row in table.rows() {
                assert_eq!(row.base, row.new);
                assert_eq!(table.change(row), 0.0);
            }
            let text = table.to_string();
            let deltas: Vec<&str> = text
                .lines()
                .skip(4)
                .map(|l| l.split_whitespace().rev().nth(1).unwrap())
                .collect();
            let zero = if absolute { "ns" } else { "0.0%" };
            assert_eq!(deltas, [zero, zero], "{text}");
        }
    }

    #[test]
    fn shares_of_each_total_hide_a_longer_recording() {
        // Twice as long, same shape: nothing changed. Then work grows from 75% to 90%.
        let base = profile(3_000_000, 1_000_000);
        let longer = profile(6_000_000, 2_000_000);
        let table =
            DiffTable::new(side("a", &base), side("b", &longer), DiffOptions::default()).unwrap();
        assert!(table.rows().iter().all(|r| table.change(r) == 0.0));
        let slower = profile(9_000_000, 1_000_000);
        let table =
            DiffTable::new(side("a", &base), side("b", &slower), DiffOptions::default()).unwrap();
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "diff of cpu (nanoseconds), self weight, each side as a share of its own total; \
             top 2 by change"
        );
        assert_eq!(lines[1], "base  a: 2 samples, 4.00 ms total (demo)");
        assert_eq!(lines[2], "new   b: 2 samples, 10.0 ms total (demo)");
        let cells = |i: usize| lines[i].split_whitespace().collect::<Vec<_>>();
        // Both moved by 15 points; the heavier one comes first.
        assert_eq!(cells(4), ["75.0%", "90.0%", "+15.0%", "work"]);
        assert_eq!(cells(5), ["25.0%", "10.0%", "-15.0%", "parse"]);
    }

    #[test]
    fn absolute_weights_compare_raw_weights() {
        let base = profile(3_000_000, 1_000_000);
        let slower = profile(9_000_000, 1_000_000);
        let options = DiffOptions {
            absolute: true,
            ..DiffOptions::default()
        };
        let table = DiffTable::new(side("a", &base), side("b", &slower), options).unwrap();
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("self weight, absolute;"), "{text}");
        let cells = |i: usize| lines[i].split_whitespace().collect::<Vec<_>>();
        assert_eq!(
            cells(4),
            ["3.00", "ms", "9.00", "ms", "+6.00", "ms", "work"]
        );
        assert_eq!(cells(5), ["1.00", "ms", "1.00", "ms", "0", "ns", "parse"]);
        assert_eq!(table.rows().len(), 2);
    }

    #[test]
    fn total_weights_count_the_callees_and_top_limits_the_rows() {
        let base = profile(3_000_000, 1_000_000);
        let options = DiffOptions {
            by: SortBy::Total,
            top: 1,
            absolute: true,
        };
        let table = DiffTable::new(side("a", &base), side("b", &base), options).unwrap();
        assert_eq!(table.rows().len(), 1);
        assert_eq!(
            table.rows()[0],
            DiffRow {
                name: "main".into(),
                base: 4_000_000,
                new: 4_000_000
            }
        );
    }

    #[test]
    fn functions_on_one_side_only_are_rows_too() {
        let base = profile(3_000_000, 1_000_000);
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["main", "fresh"], t, 0, 5);
        let new = b.finish();
        let table =
            DiffTable::new(side("a", &base), side("b", &new), DiffOptions::default()).unwrap();
        let row = |name: &str| {
            table
                .rows()
                .iter()
                .find(|r| r.name == name)
                .unwrap()
                .clone()
        };
        assert_eq!((row("fresh").base, row("fresh").new), (0, 5));
        assert_eq!((row("work").base, row("work").new), (3_000_000, 0));
    }

    #[test]
    fn rows_sort_by_any_column_either_way() {
        // Shares: work 75% -> 90% (+15), parse 25% -> 10% (-15), in a table of both.
        let base = profile(3_000_000, 1_000_000);
        let slower = profile(9_000_000, 1_000_000);
        let mut table =
            DiffTable::new(side("a", &base), side("b", &slower), DiffOptions::default()).unwrap();
        let names = |t: &DiffTable<'_>| t.rows().iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        table.sort(DiffColumn::Delta, true);
        assert_eq!(names(&table), ["work", "parse"]);
        table.sort(DiffColumn::Delta, false);
        assert_eq!(names(&table), ["parse", "work"]);
        table.sort(DiffColumn::Name, false);
        assert_eq!(names(&table), ["parse", "work"]);
        table.sort(DiffColumn::Name, true);
        assert_eq!(names(&table), ["work", "parse"]);
        table.sort(DiffColumn::Base, false);
        assert_eq!(names(&table), ["parse", "work"]);
        table.sort(DiffColumn::New, true);
        assert_eq!(names(&table), ["work", "parse"]);
        assert_eq!(table.totals(), [4_000_000, 10_000_000]);
        let [b, n, d] = table.cells(&table.rows()[0]);
        assert_eq!([b.as_str(), &n, &d], ["75.0%", "90.0%", "+15.0%"]);
        // The summary is the lines `prof diff` prints above the table.
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().take(3).collect();
        assert_eq!(lines, table.summary());
    }

    #[test]
    fn different_units_or_events_are_refused_in_one_line() {
        let time = profile(1, 1);
        let mut counts = profile(1, 1);
        counts.meta.sample_type = SampleType::samples();
        let err = DiffTable::new(
            side("a.json", &time),
            side("b.folded", &counts),
            DiffOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "b.folded measures samples (count) but a.json measures cpu (nanoseconds): \
             a diff needs both in one unit"
        );
        let mut cycles = profile(1, 1);
        cycles.meta.sample_type = SampleType::new("cycles", Unit::Count);
        assert!(check_comparable(side("a", &counts), side("b", &cycles)).is_err());
        let mut wall = profile(1, 1);
        wall.meta.sample_type = SampleType::new("wall", Unit::Nanoseconds);
        assert!(check_comparable(side("a", &time), side("b", &wall)).is_ok());
    }
}
