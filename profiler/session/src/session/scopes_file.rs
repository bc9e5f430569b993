//! The `scopes` and `tasks` tables of a session file (version 5): their JSON shape, writer and
//! checked reader.
//!
//! Spans, marks and polls can number in the millions, so they are stored as packed columns, as
//! the samples are: times as zigzag deltas against the previous row of the same thread, durations
//! as plain numbers (so an end can never come before its start), a span's parent as the distance
//! back to it (so a parent always comes first). Fields are one packed list per table: each row's
//! number of fields, then all keys and all values in row order. See `docs/session-format.md`.

use super::column::{check_index, Column, Invalid};
use super::ids::{SiteIdx, SpanIdx, StackId, StrId, TaskIdx, ThreadIdx};
use super::packed::{self, unzigzag, zigzag};
use super::scopes::{Field, Mark, Poll, Scopes, Site, SiteKind, Span, Task, Tasks};
use serde::Serialize;
use std::borrow::Cow;

/// A call site as stored: texts are indices into the strings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct SiteRow {
    pub name: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub kind: SiteKind,
}

/// The fields of a table's rows: `count` per row, then `key` and `value` for all of them in row
/// order. Absent when no row has a field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct FieldsColumns<'a> {
    pub count: Cow<'a, str>,
    pub key: Cow<'a, str>,
    pub value: Cow<'a, str>,
}

/// The spans in packed columns of `count` entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct SpansColumns<'a> {
    pub count: u64,
    pub site: Cow<'a, str>,
    pub thread: Cow<'a, str>,
    pub start_delta: Cow<'a, str>,
    pub duration: Cow<'a, str>,
    pub parent: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<FieldsColumns<'a>>,
}

/// The marks in packed columns of `count` entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct MarksColumns<'a> {
    pub count: u64,
    pub site: Cow<'a, str>,
    pub thread: Cow<'a, str>,
    pub time_delta: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<FieldsColumns<'a>>,
}

/// The `scopes` object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ScopesFile<'a> {
    pub sites: Vec<SiteRow>,
    pub spans: SpansColumns<'a>,
    pub marks: MarksColumns<'a>,
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_events: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A task as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct TaskRow {
    pub id: u64,
    pub name: u32,
}

/// The polls in packed columns of `count` entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct PollsColumns<'a> {
    pub count: u64,
    pub task: Cow<'a, str>,
    pub thread: Cow<'a, str>,
    pub start_delta: Cow<'a, str>,
    pub duration: Cow<'a, str>,
    /// Where each poll's task waited after it: 0 for unknown, `n` for stack `n - 1`
    /// (version 6; absent when no poll knows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_at: Option<Cow<'a, str>>,
}

/// The `tasks` object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct TasksFile<'a> {
    pub tasks: Vec<TaskRow>,
    pub polls: PollsColumns<'a>,
}

/// Zigzag deltas of times against the previous time of the same thread (0 before its first).
struct ThreadDeltas(Vec<u64>);

impl ThreadDeltas {
    fn encode(&mut self, thread: ThreadIdx, time: u64) -> u64 {
        let t = thread.index();
        if t >= self.0.len() {
            self.0.resize(t + 1, 0);
        }
        let delta = zigzag(time.wrapping_sub(self.0[t]) as i64);
        self.0[t] = time;
        delta
    }
}

fn fields_columns<'r>(
    rows: impl Iterator<Item = &'r [Field]> + Clone,
) -> Option<FieldsColumns<'static>> {
    if rows.clone().all(<[Field]>::is_empty) {
        return None;
    }
    let all = || rows.clone().flatten();
    Some(FieldsColumns {
        count: packed::encode(rows.clone().map(|f| f.len() as u64)).into(),
        key: packed::encode(all().map(|f| u64::from(f.key.0))).into(),
        value: packed::encode(all().map(|f| u64::from(f.value.0))).into(),
    })
}

/// The `scopes` object of a session, or `None` when it has no scopes.
pub(crate) fn scopes_file(scopes: &Scopes) -> Option<ScopesFile<'static>> {
    if scopes.is_empty() {
        return None;
    }
    let spans = &scopes.spans;
    let mut starts = ThreadDeltas(Vec::new());
    let mut times = ThreadDeltas(Vec::new());
    Some(ScopesFile {
        sites: scopes
            .sites
            .iter()
            .map(|s| SiteRow {
                name: s.name.0,
                file: s.file.map(|f| f.0),
                line: s.line,
                kind: s.kind,
            })
            .collect(),
        spans: SpansColumns {
            count: spans.len() as u64,
            site: packed::encode(spans.iter().map(|s| u64::from(s.site.0))).into(),
            thread: packed::encode(spans.iter().map(|s| u64::from(s.thread.0))).into(),
            start_delta: packed::encode(spans.iter().map(|s| starts.encode(s.thread, s.start_ns)))
                .into(),
            duration: packed::encode(spans.iter().map(Span::duration_ns)).into(),
            parent: packed::encode(
                spans
                    .iter()
                    .enumerate()
                    .map(|(i, s)| s.parent.map_or(0, |p| (i as u64).wrapping_sub(p.0.into()))),
            )
            .into(),
            fields: fields_columns(spans.iter().map(|s| &s.fields[..])),
        },
        marks: MarksColumns {
            count: scopes.marks.len() as u64,
            site: packed::encode(scopes.marks.iter().map(|m| u64::from(m.site.0))).into(),
            thread: packed::encode(scopes.marks.iter().map(|m| u64::from(m.thread.0))).into(),
            time_delta: packed::encode(
                scopes
                    .marks
                    .iter()
                    .map(|m| times.encode(m.thread, m.time_ns)),
            )
            .into(),
            fields: fields_columns(scopes.marks.iter().map(|m| &m.fields[..])),
        },
        dropped_events: scopes.dropped_events,
    })
}

/// The `tasks` object of a session, or `None` when it has no tasks.
pub(crate) fn tasks_file(tasks: &Tasks) -> Option<TasksFile<'static>> {
    if tasks.is_empty() {
        return None;
    }
    let polls = &tasks.polls;
    let mut starts = ThreadDeltas(Vec::new());
    Some(TasksFile {
        tasks: tasks
            .tasks
            .iter()
            .map(|t| TaskRow {
                id: t.id,
                name: t.name.0,
            })
            .collect(),
        polls: PollsColumns {
            count: polls.len() as u64,
            task: packed::encode(polls.iter().map(|p| u64::from(p.task.0))).into(),
            thread: packed::encode(polls.iter().map(|p| u64::from(p.thread.0))).into(),
            start_delta: packed::encode(polls.iter().map(|p| starts.encode(p.thread, p.start_ns)))
                .into(),
            duration: packed::encode(polls.iter().map(|p| p.end_ns.saturating_sub(p.start_ns)))
                .into(),
            waited_at: polls.iter().any(|p| p.waited_at.is_some()).then(|| {
                packed::encode(
                    polls
                        .iter()
                        .map(|p| p.waited_at.map_or(0, |s| u64::from(s.0) + 1)),
                )
                .into()
            }),
        },
    })
}

/// A sample context column as stored: 0 for none, `n` for index `n - 1`.
pub(crate) fn context_column<T: Copy>(
    column: &[Option<T>],
    index: impl Fn(T) -> u32,
) -> Option<Cow<'static, str>> {
    (!column.is_empty()).then(|| {
        packed::encode(
            column
                .iter()
                .map(|c| c.map_or(0, |c| u64::from(index(c)) + 1)),
        )
        .into()
    })
}

/// The sizes of the tables a scope or task row may point into.
#[derive(Clone, Copy)]
pub(crate) struct Tables {
    pub strings: usize,
    pub threads: usize,
    pub stacks: usize,
}

/// Reads one field list of `table` (`spans` or `marks`) of `rows` rows, row by row.
struct FieldsReader<'a> {
    table: &'static str,
    count: Option<Column<'a>>,
    key: Option<Column<'a>>,
    value: Option<Column<'a>>,
    /// Fields read so far (the length the key and value columns must have so far).
    read: u64,
    strings: usize,
}

impl<'a> FieldsReader<'a> {
    fn new(
        table: &'static str,
        fields: Option<&'a FieldsColumns<'a>>,
        names: [&'static str; 3],
        strings: usize,
    ) -> Self {
        FieldsReader {
            table,
            count: fields.map(|f| Column::new(names[0], &f.count)),
            key: fields.map(|f| Column::new(names[1], &f.key)),
            value: fields.map(|f| Column::new(names[2], &f.value)),
            read: 0,
            strings,
        }
    }

    /// The fields of row `i` of `rows`.
    fn next(&mut self, i: u64, rows: u64) -> Result<Vec<Field>, Invalid> {
        let (Some(count), Some(key), Some(value)) =
            (&mut self.count, &mut self.key, &mut self.value)
        else {
            return Ok(Vec::new());
        };
        let n = count.next(rows)?;
        // A row cannot have more fields than the key column has entries left.
        let mut fields = Vec::with_capacity(n.min(16) as usize);
        for _ in 0..n {
            let expected = self.read + 1;
            let string = |v: u64, what: &str| {
                check_index(
                    || format!("{}.fields.{what}[{}] (of row {i})", self.table, self.read),
                    v,
                    self.strings,
                    "strings",
                )
                .map(StrId)
            };
            let k = string(key.next(expected)?, "key")?;
            let v = string(value.next(expected)?, "value")?;
            fields.push(Field { key: k, value: v });
            self.read += 1;
        }
        Ok(fields)
    }

    fn finish(self, rows: u64) -> Result<(), Invalid> {
        if let (Some(count), Some(key), Some(value)) = (self.count, self.key, self.value) {
            count.finish(rows)?;
            key.finish(self.read)?;
            value.finish(self.read)?;
        }
        Ok(())
    }
}

/// The end of a row that starts at `start` and lasts `duration`, or an error naming `what`.
fn end_of(what: impl FnOnce() -> String, start: u64, duration: u64) -> Result<u64, Invalid> {
    start
        .checked_add(duration)
        .ok_or_else(|| format!("{}: the end passes 2^64 ns", what()))
}

/// The field columns of the spans and of the marks, named for errors.
const SPAN_FIELDS: [&str; 3] = [
    "scopes.spans.fields.count",
    "scopes.spans.fields.key",
    "scopes.spans.fields.value",
];
const MARK_FIELDS: [&str; 3] = [
    "scopes.marks.fields.count",
    "scopes.marks.fields.key",
    "scopes.marks.fields.value",
];

/// A table's thread column and its time column, whose values are deltas from the same
/// thread's previous row (zigzag-encoded): each row's thread and time.
struct ThreadTimes<'a> {
    thread: Column<'a>,
    delta: Column<'a>,
    /// Each thread's last time.
    previous: Vec<u64>,
}

impl<'a> ThreadTimes<'a> {
    fn new(thread: Column<'a>, delta: Column<'a>, threads: usize) -> Self {
        ThreadTimes {
            thread,
            delta,
            previous: vec![0; threads],
        }
    }

    /// Row `i`'s (of `count`) thread and time.
    fn next(&mut self, i: u64, count: u64) -> Result<(ThreadIdx, u64), Invalid> {
        let t = self
            .thread
            .next_index(i, count, self.previous.len(), "threads")?;
        let before = &mut self.previous[t as usize];
        *before = before.wrapping_add(unzigzag(self.delta.next(count)?) as u64);
        Ok((ThreadIdx(t), *before))
    }

    /// Checks that both columns hold no more than `count` values.
    fn finish(self, count: u64) -> Result<(), Invalid> {
        self.thread.finish(count)?;
        self.delta.finish(count)
    }
}

/// Rows reserved for a column of `count` rows: no more than `column` can hold.
fn rows_for(count: u64, column: &Column<'_>) -> usize {
    usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(column.max_len())
}

/// The checked scopes of a file's `scopes` object.
pub(crate) fn decode_scopes(file: &ScopesFile<'_>, tables: Tables) -> Result<Scopes, Invalid> {
    let sites = file
        .sites
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let string = |v: u32, field: &str| {
                check_index(
                    || format!("scopes.sites[{i}].{field}"),
                    v.into(),
                    tables.strings,
                    "strings",
                )
                .map(StrId)
            };
            Ok(Site {
                name: string(row.name, "name")?,
                file: row.file.map(|f| string(f, "file")).transpose()?,
                line: row.line,
                kind: row.kind,
            })
        })
        .collect::<Result<Vec<_>, Invalid>>()?;
    let site_of = |what: &dyn Fn() -> String, v: u64, kind: SiteKind| {
        let s = check_index(what, v, sites.len(), "sites")?;
        if sites[s as usize].kind != kind {
            return Err(format!(
                "{}: site {s} is a {}, not a {}",
                what(),
                sites[s as usize].kind.name(),
                kind.name()
            ));
        }
        Ok(SiteIdx(s))
    };
    let cols = &file.spans;
    let count = cols.count;
    let mut site = Column::new("scopes.spans.site", &cols.site);
    let mut times = ThreadTimes::new(
        Column::new("scopes.spans.thread", &cols.thread),
        Column::new("scopes.spans.start_delta", &cols.start_delta),
        tables.threads,
    );
    let mut duration = Column::new("scopes.spans.duration", &cols.duration);
    let mut parent = Column::new("scopes.spans.parent", &cols.parent);
    let mut fields = FieldsReader::new(
        "scopes.spans",
        cols.fields.as_ref(),
        SPAN_FIELDS,
        tables.strings,
    );
    let mut spans = Vec::with_capacity(rows_for(count, &site));
    for i in 0..count {
        let s = site_of(
            &|| format!("scopes.spans.site[{i}]"),
            site.next(count)?,
            SiteKind::Scope,
        )?;
        let (thread, start_ns) = times.next(i, count)?;
        let end_ns = end_of(
            || format!("scopes.spans.duration[{i}]"),
            start_ns,
            duration.next(count)?,
        )?;
        let parent = match parent.next(count)? {
            0 => None,
            back if back <= i => Some(SpanIdx((i - back) as u32)),
            back => {
                return Err(format!(
                    "scopes.spans.parent[{i}]: offset {back} points before the first span \
                     (a parent must come before its child)"
                ))
            }
        };
        spans.push(Span {
            site: s,
            thread,
            start_ns,
            end_ns,
            parent,
            fields: fields.next(i, count)?,
        });
    }
    for column in [site, duration, parent] {
        column.finish(count)?;
    }
    times.finish(count)?;
    fields.finish(count)?;

    let cols = &file.marks;
    let count = cols.count;
    let mut site = Column::new("scopes.marks.site", &cols.site);
    let mut times = ThreadTimes::new(
        Column::new("scopes.marks.thread", &cols.thread),
        Column::new("scopes.marks.time_delta", &cols.time_delta),
        tables.threads,
    );
    let mut fields = FieldsReader::new(
        "scopes.marks",
        cols.fields.as_ref(),
        MARK_FIELDS,
        tables.strings,
    );
    let mut marks = Vec::with_capacity(rows_for(count, &site));
    for i in 0..count {
        let s = site_of(
            &|| format!("scopes.marks.site[{i}]"),
            site.next(count)?,
            SiteKind::Mark,
        )?;
        let (thread, time_ns) = times.next(i, count)?;
        marks.push(Mark {
            site: s,
            thread,
            time_ns,
            fields: fields.next(i, count)?,
        });
    }
    site.finish(count)?;
    times.finish(count)?;
    fields.finish(count)?;
    Ok(Scopes {
        sites,
        spans,
        marks,
        dropped_events: file.dropped_events,
    })
}

/// The checked tasks of a file's `tasks` object.
pub(crate) fn decode_tasks(file: &TasksFile<'_>, tables: Tables) -> Result<Tasks, Invalid> {
    let tasks = file
        .tasks
        .iter()
        .enumerate()
        .map(|(i, row)| {
            Ok(Task {
                id: row.id,
                name: StrId(check_index(
                    || format!("tasks.tasks[{i}].name"),
                    row.name.into(),
                    tables.strings,
                    "strings",
                )?),
            })
        })
        .collect::<Result<Vec<_>, Invalid>>()?;
    let cols = &file.polls;
    let count = cols.count;
    let mut task = Column::new("tasks.polls.task", &cols.task);
    let mut times = ThreadTimes::new(
        Column::new("tasks.polls.thread", &cols.thread),
        Column::new("tasks.polls.start_delta", &cols.start_delta),
        tables.threads,
    );
    let mut duration = Column::new("tasks.polls.duration", &cols.duration);
    let mut waited_at = cols
        .waited_at
        .as_deref()
        .map(|text| Column::new("tasks.polls.waited_at", text));
    let mut polls = Vec::with_capacity(rows_for(count, &task));
    for i in 0..count {
        let k = task.next_index(i, count, tasks.len(), "tasks")?;
        let (thread, start_ns) = times.next(i, count)?;
        let end_ns = end_of(
            || format!("tasks.polls.duration[{i}]"),
            start_ns,
            duration.next(count)?,
        )?;
        let waited_at = match &mut waited_at {
            Some(column) => match column.next(count)? {
                0 => None,
                n => Some(StackId(check_index(
                    || format!("tasks.polls.waited_at[{i}]"),
                    n - 1,
                    tables.stacks,
                    "stacks",
                )?)),
            },
            None => None,
        };
        polls.push(Poll {
            task: TaskIdx(k),
            thread,
            start_ns,
            end_ns,
            waited_at,
        });
    }
    for column in [Some(task), Some(duration), waited_at]
        .into_iter()
        .flatten()
    {
        column.finish(count)?;
    }
    times.finish(count)?;
    Ok(Tasks { tasks, polls })
}
