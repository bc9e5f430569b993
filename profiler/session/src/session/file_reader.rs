//! Reading a session file's JSON into a [`FileIn`], object by object, with [`Json`]'s steps.
//!
//! Each object is read into its value directly, by field index ([`Json::field`]), with its
//! required fields checked at its end; its fields are those of `docs/session.schema.json`,
//! read as serde's derives read them: a field may appear once, a required one must appear, optional ones may be `null`, and
//! the file's own tables (frames, stacks, threads, mappings, samples, scopes, tasks) refuse
//! unknown fields while the top level, `meta` and its sample types skip them (so that a newer
//! writer's additions there stay readable).

use super::column::Invalid;
use super::file_format::{
    FileIn, FramesIn, MappingRow, SamplesColumns, StacksColumns, ThreadRow, FORMAT_NAME,
    FORMAT_VERSION,
};
use super::scopes_file::{
    FieldsColumns, MarksColumns, PollsColumns, ScopesFile, SiteRow, SpansColumns, TaskRow,
    TasksFile,
};
use super::{
    CountedFunction, Frame, Frames, Metadata, Mode, Process, SampleType, SamplingEnded, SiteKind,
    StrId, Strings, TimedCalls, Unit,
};
use crate::json::{Json, Step, Unknown};
use std::borrow::Cow;

/// An empty packed column, until the file's is read.
const NONE: Cow<'static, str> = Cow::Borrowed("");

/// Reads a whole session file (the top-level value and nothing after it).
pub(super) fn read_file(text: &[u8]) -> Result<FileIn<'_>, Invalid> {
    Json::parse(text, file)
}

/// The top-level object, checking `format` and `version` as soon as they are seen (writers put
/// them first), so a file of another kind or a newer version is refused with that reason rather
/// than with whatever field the newer layout changed. The last of a repeated field counts, as
/// it did with serde's map visitor.
fn file<'a>(json: &mut Json<'a>) -> Step<FileIn<'a>> {
    let mut format_seen = false;
    let mut version = None;
    let (mut meta, mut strings, mut frames, mut stacks) = (None, None, None, None);
    let (mut threads, mut samples) = (None, None);
    let (mut processes, mut mappings, mut scopes, mut tasks) = (Vec::new(), Vec::new(), None, None);
    let mut calls = Vec::new();
    json.object("a prof session object")?;
    let mut first = true;
    while let Some(key) = json.key(&mut first)? {
        match &*key {
            "format" => {
                let value = json.string()?;
                if value != FORMAT_NAME {
                    return Err(json.error(format_args!(
                        "not a prof session: format is {value:?}, expected {FORMAT_NAME:?}"
                    )));
                }
                format_seen = true;
            }
            "version" => {
                let value = json.u64()?;
                if value > u64::from(FORMAT_VERSION) {
                    return Err(json.error(format_args!(
                        "session file version {value} is newer than this prof reads \
                         (version {FORMAT_VERSION}); upgrade prof"
                    )));
                }
                if value == 0 {
                    return Err(json.error("session file version 0 does not exist"));
                }
                version = Some(value as u32);
            }
            "meta" => meta = Some(metadata(json)?),
            "strings" => strings = Some(string_table(json)?),
            "frames" => frames = Some(frame_table(json)?),
            "stacks" => stacks = Some(stacks_columns(json)?),
            "threads" => threads = Some(rows(json, thread_row)?),
            "processes" => processes = rows(json, process)?,
            "mappings" => mappings = rows(json, mapping_row)?,
            "samples" => samples = Some(samples_columns(json)?),
            "scopes" => scopes = Some(scopes_file(json)?),
            "tasks" => tasks = Some(tasks_file(json)?),
            "calls" => calls = rows(json, counted_function)?,
            _ => json.skip()?,
        }
    }
    if !format_seen {
        return Err(json.error("not a prof session: no \"format\": \"prof-session\" field"));
    }
    let missing = |field| json.missing(field);
    Ok(FileIn {
        version: version.ok_or_else(|| missing("version"))?,
        meta: meta.ok_or_else(|| missing("meta"))?,
        strings: strings.ok_or_else(|| missing("strings"))?,
        frames: frames.ok_or_else(|| missing("frames"))?,
        stacks: stacks.ok_or_else(|| missing("stacks"))?,
        threads: threads.ok_or_else(|| missing("threads"))?,
        processes,
        mappings,
        samples: samples.ok_or_else(|| missing("samples"))?,
        scopes,
        tasks,
        calls,
    })
}

/// `None` for `null`, else the value `read` reads.
fn optional<'a, T>(
    json: &mut Json<'a>,
    read: impl FnOnce(&mut Json<'a>) -> Step<T>,
) -> Step<Option<T>> {
    if json.null()? {
        Ok(None)
    } else {
        read(json).map(Some)
    }
}

/// An array whose items `read` reads.
fn rows<'a, T>(
    json: &mut Json<'a>,
    mut read: impl FnMut(&mut Json<'a>) -> Step<T>,
) -> Step<Vec<T>> {
    json.array("a sequence")?;
    let mut rows = Vec::new();
    let mut first = true;
    while json.item(&mut first)? {
        rows.push(read(json)?);
    }
    Ok(rows)
}

fn string(json: &mut Json<'_>) -> Step<String> {
    json.string().map(Cow::into_owned)
}

fn u32(json: &mut Json<'_>) -> Step<u32> {
    json.u32()
}

/// A packed column: a string, borrowed from the input when it has no escapes.
fn column<'a>(json: &mut Json<'a>) -> Step<Cow<'a, str>> {
    json.string()
}

/// The bits of fields `0..n`: all required.
const fn all(n: u32) -> u64 {
    (1 << n) - 1
}

fn metadata(json: &mut Json<'_>) -> Step<Metadata> {
    const NAMES: &[&str] = &[
        "program",
        "args",
        "pid",
        "hostname",
        "os",
        "arch",
        "start_time",
        "duration_ns",
        "mode",
        "requested_interval_ns",
        "achieved_interval_ns",
        "timer",
        "dropped_samples",
        "prof_version",
        "sample_type",
        "extra_sample_types",
        "sampling_ended",
    ];
    let mut meta = Metadata::default();
    let mut fields = json.fields("struct Metadata", NAMES, Unknown::Skip)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => meta.program = string(json)?,
            1 => meta.args = json.strings()?,
            2 => meta.pid = json.u32()?,
            3 => meta.hostname = string(json)?,
            4 => meta.os = string(json)?,
            5 => meta.arch = string(json)?,
            6 => {
                let text = string(json)?;
                meta.start_time_ns =
                    super::date::read_start_time(&text).map_err(|e| json.error(e))?;
            }
            7 => meta.duration_ns = json.u64()?,
            8 => {
                meta.mode = match variant(json, &["cpu", "wall", "alloc"])? {
                    0 => Mode::Cpu,
                    1 => Mode::Wall,
                    _ => Mode::Alloc,
                }
            }
            9 => meta.requested_interval_ns = json.u64()?,
            10 => meta.achieved_interval_ns = json.u64()?,
            11 => meta.timer = string(json)?,
            12 => meta.dropped_samples = json.u64()?,
            13 => meta.prof_version = string(json)?,
            14 => meta.sample_type = sample_type(json)?,
            15 => meta.extra_sample_types = rows(json, sample_type)?,
            _ => meta.sampling_ended = Some(sampling_ended(json)?),
        }
    }
    json.require(&fields, all(14))?;
    Ok(meta)
}

fn sampling_ended(json: &mut Json<'_>) -> Step<SamplingEnded> {
    let mut ended = SamplingEnded::default();
    let mut fields = json.fields("struct SamplingEnded", &["at_ns", "reason"], Unknown::Skip)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => ended.at_ns = json.u64()?,
            _ => ended.reason = string(json)?,
        }
    }
    json.require(&fields, all(2))?;
    Ok(ended)
}

/// The index in `names` of a lowercase enum's variant, read by name.
fn variant(json: &mut Json<'_>, names: &[&str]) -> Step<usize> {
    let name = json.string()?;
    match names.iter().position(|n| *n == name) {
        Some(i) => Ok(i),
        None => {
            let known = names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            Err(json.error(format_args!(
                "unknown variant `{name}`, expected one of {known}"
            )))
        }
    }
}

fn sample_type(json: &mut Json<'_>) -> Step<SampleType> {
    let mut sample_type = SampleType::new(String::new(), Unit::Nanoseconds);
    let mut fields = json.fields("struct SampleType", &["name", "unit"], Unknown::Skip)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => sample_type.name = string(json)?,
            _ => {
                sample_type.unit = match variant(json, &["nanoseconds", "bytes", "count"])? {
                    0 => Unit::Nanoseconds,
                    1 => Unit::Bytes,
                    _ => Unit::Count,
                }
            }
        }
    }
    json.require(&fields, all(2))?;
    Ok(sample_type)
}

fn string_table(json: &mut Json<'_>) -> Step<Strings> {
    json.array("a sequence of strings")?;
    let mut strings = Strings::default();
    let mut first = true;
    while json.item(&mut first)? {
        strings.push(&json.string()?);
    }
    Ok(strings)
}

/// The frames table, row by row into columns.
fn frame_table(json: &mut Json<'_>) -> Step<FramesIn> {
    json.array("a sequence of frames")?;
    let mut frames = Frames::default();
    let mut first = true;
    while json.item(&mut first)? {
        frames.push(frame(json)?);
    }
    Ok(FramesIn(frames))
}

fn frame(json: &mut Json<'_>) -> Step<Frame> {
    const NAMES: &[&str] = &["name", "file", "line", "module", "address", "inlined"];
    let mut frame = Frame {
        name: StrId(0),
        file: None,
        line: None,
        module: None,
        address: None,
        inlined: false,
    };
    let mut fields = json.fields("struct FrameRow", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => frame.name = StrId(json.u32()?),
            1 => frame.file = optional(json, u32)?.map(StrId),
            2 => frame.line = optional(json, u32)?,
            3 => frame.module = optional(json, u32)?.map(StrId),
            4 => frame.address = optional(json, Json::u64)?,
            _ => frame.inlined = json.bool()?,
        }
    }
    json.require(&fields, all(1))?;
    Ok(frame)
}

fn stacks_columns<'a>(json: &mut Json<'a>) -> Step<StacksColumns<'a>> {
    let mut stacks = StacksColumns {
        parent: NONE,
        frame: NONE,
    };
    let mut fields = json.fields("struct StacksColumns", &["parent", "frame"], Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => stacks.parent = column(json)?,
            _ => stacks.frame = column(json)?,
        }
    }
    json.require(&fields, all(2))?;
    Ok(stacks)
}

fn thread_row(json: &mut Json<'_>) -> Step<ThreadRow> {
    let mut row = ThreadRow {
        tid: 0,
        name: 0,
        process: 0,
    };
    let mut fields = json.fields(
        "struct ThreadRow",
        &["tid", "name", "process"],
        Unknown::Deny,
    )?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => row.tid = json.u64()?,
            1 => row.name = json.u32()?,
            _ => row.process = json.u32()?,
        }
    }
    json.require(&fields, all(2))?;
    Ok(row)
}

fn process(json: &mut Json<'_>) -> Step<Process> {
    const NAMES: &[&str] = &["pid", "name", "parent_pid", "command_line", "executable"];
    let mut process = Process::default();
    let mut fields = json.fields("struct Process", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => process.pid = json.u32()?,
            1 => process.name = string(json)?,
            2 => process.parent_pid = optional(json, u32)?,
            3 => process.command_line = json.strings()?,
            _ => process.executable = optional(json, string)?,
        }
    }
    json.require(&fields, all(2))?;
    Ok(process)
}

fn counted_function(json: &mut Json<'_>) -> Step<CountedFunction> {
    const NAMES: &[&str] = &["name", "module", "offset", "calls", "inlined", "timed"];
    let mut counted = CountedFunction::default();
    let mut fields = json.fields("struct CountedFunction", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => counted.name = string(json)?,
            1 => counted.module = string(json)?,
            2 => counted.offset = json.u64()?,
            3 => counted.calls = json.u64()?,
            4 => counted.inlined = optional(json, |j| j.bool())?,
            _ => counted.timed = optional(json, timed_calls)?,
        }
    }
    json.require(&fields, all(4))?;
    Ok(counted)
}

fn timed_calls(json: &mut Json<'_>) -> Step<TimedCalls> {
    const NAMES: &[&str] = &["calls", "total_ns", "self_ns"];
    let mut timed = TimedCalls::default();
    let mut fields = json.fields("struct TimedCalls", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => timed.calls = json.u64()?,
            1 => timed.total_ns = json.u64()?,
            _ => timed.self_ns = json.u64()?,
        }
    }
    json.require(&fields, all(3))?;
    Ok(timed)
}

fn mapping_row(json: &mut Json<'_>) -> Step<MappingRow> {
    const NAMES: &[&str] = &["start", "limit", "offset", "path", "build_id"];
    let mut row = MappingRow {
        start: 0,
        limit: 0,
        offset: 0,
        path: 0,
        build_id: None,
    };
    let mut fields = json.fields("struct MappingRow", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => row.start = json.u64()?,
            1 => row.limit = json.u64()?,
            2 => row.offset = json.u64()?,
            3 => row.path = json.u32()?,
            _ => row.build_id = optional(json, string)?,
        }
    }
    json.require(&fields, all(4))?;
    Ok(row)
}

fn samples_columns<'a>(json: &mut Json<'a>) -> Step<SamplesColumns<'a>> {
    const NAMES: &[&str] = &[
        "count",
        "stack",
        "thread",
        "time_delta",
        "weight_delta",
        "multiplicity_delta",
        "extra_weight_delta",
        "state",
        "scope",
        "task",
    ];
    let mut samples = SamplesColumns {
        count: 0,
        stack: NONE,
        thread: NONE,
        time_delta: NONE,
        weight_delta: NONE,
        multiplicity_delta: None,
        extra_weight_delta: Vec::new(),
        state: None,
        scope: None,
        task: None,
    };
    let mut fields = json.fields("struct SamplesColumns", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => samples.count = json.u64()?,
            1 => samples.stack = column(json)?,
            2 => samples.thread = column(json)?,
            3 => samples.time_delta = column(json)?,
            4 => samples.weight_delta = column(json)?,
            5 => samples.multiplicity_delta = optional(json, column)?,
            6 => samples.extra_weight_delta = rows(json, |json| optional(json, string))?,
            7 => samples.state = optional(json, column)?,
            8 => samples.scope = optional(json, column)?,
            _ => samples.task = optional(json, column)?,
        }
    }
    json.require(&fields, all(5))?;
    Ok(samples)
}

fn scopes_file<'a>(json: &mut Json<'a>) -> Step<ScopesFile<'a>> {
    const NAMES: &[&str] = &["sites", "spans", "marks", "dropped_events"];
    let (mut sites, mut spans, mut marks, mut dropped_events) = (Vec::new(), None, None, 0);
    let mut fields = json.fields("struct ScopesFile", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => sites = rows(json, site_row)?,
            1 => spans = Some(spans_columns(json)?),
            2 => marks = Some(marks_columns(json)?),
            _ => dropped_events = json.u64()?,
        }
    }
    json.require(&fields, all(3))?;
    Ok(ScopesFile {
        sites,
        spans: spans.ok_or_else(|| json.missing("spans"))?,
        marks: marks.ok_or_else(|| json.missing("marks"))?,
        dropped_events,
    })
}

fn site_row(json: &mut Json<'_>) -> Step<SiteRow> {
    let mut row = SiteRow {
        name: 0,
        file: None,
        line: None,
        kind: SiteKind::Scope,
    };
    let names = &["name", "kind", "file", "line"];
    let mut fields = json.fields("struct SiteRow", names, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => row.name = json.u32()?,
            1 => {
                row.kind = match variant(json, &["scope", "mark"])? {
                    0 => SiteKind::Scope,
                    _ => SiteKind::Mark,
                }
            }
            2 => row.file = optional(json, u32)?,
            _ => row.line = optional(json, u32)?,
        }
    }
    json.require(&fields, all(2))?;
    Ok(row)
}

fn fields_columns<'a>(json: &mut Json<'a>) -> Step<FieldsColumns<'a>> {
    let mut columns = FieldsColumns {
        count: NONE,
        key: NONE,
        value: NONE,
    };
    let names = &["count", "key", "value"];
    let mut fields = json.fields("struct FieldsColumns", names, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => columns.count = column(json)?,
            1 => columns.key = column(json)?,
            _ => columns.value = column(json)?,
        }
    }
    json.require(&fields, all(3))?;
    Ok(columns)
}

fn spans_columns<'a>(json: &mut Json<'a>) -> Step<SpansColumns<'a>> {
    const NAMES: &[&str] = &[
        "count",
        "site",
        "thread",
        "start_delta",
        "duration",
        "parent",
        "fields",
    ];
    let mut spans = SpansColumns {
        count: 0,
        site: NONE,
        thread: NONE,
        start_delta: NONE,
        duration: NONE,
        parent: NONE,
        fields: None,
    };
    let mut fields = json.fields("struct SpansColumns", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => spans.count = json.u64()?,
            1 => spans.site = column(json)?,
            2 => spans.thread = column(json)?,
            3 => spans.start_delta = column(json)?,
            4 => spans.duration = column(json)?,
            5 => spans.parent = column(json)?,
            _ => spans.fields = optional(json, fields_columns)?,
        }
    }
    json.require(&fields, all(6))?;
    Ok(spans)
}

fn marks_columns<'a>(json: &mut Json<'a>) -> Step<MarksColumns<'a>> {
    const NAMES: &[&str] = &["count", "site", "thread", "time_delta", "fields"];
    let mut marks = MarksColumns {
        count: 0,
        site: NONE,
        thread: NONE,
        time_delta: NONE,
        fields: None,
    };
    let mut fields = json.fields("struct MarksColumns", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => marks.count = json.u64()?,
            1 => marks.site = column(json)?,
            2 => marks.thread = column(json)?,
            3 => marks.time_delta = column(json)?,
            _ => marks.fields = optional(json, fields_columns)?,
        }
    }
    json.require(&fields, all(4))?;
    Ok(marks)
}

fn tasks_file<'a>(json: &mut Json<'a>) -> Step<TasksFile<'a>> {
    let (mut tasks, mut polls) = (Vec::new(), None);
    let mut fields = json.fields("struct TasksFile", &["tasks", "polls"], Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => tasks = rows(json, task_row)?,
            _ => polls = Some(polls_columns(json)?),
        }
    }
    json.require(&fields, all(2))?;
    Ok(TasksFile {
        tasks,
        polls: polls.ok_or_else(|| json.missing("polls"))?,
    })
}

fn task_row(json: &mut Json<'_>) -> Step<TaskRow> {
    let mut row = TaskRow { id: 0, name: 0 };
    let mut fields = json.fields("struct TaskRow", &["id", "name"], Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => row.id = json.u64()?,
            _ => row.name = json.u32()?,
        }
    }
    json.require(&fields, all(2))?;
    Ok(row)
}

fn polls_columns<'a>(json: &mut Json<'a>) -> Step<PollsColumns<'a>> {
    const NAMES: &[&str] = &[
        "count",
        "task",
        "thread",
        "start_delta",
        "duration",
        "waited_at",
    ];
    let mut polls = PollsColumns {
        count: 0,
        task: NONE,
        thread: NONE,
        start_delta: NONE,
        duration: NONE,
        waited_at: None,
    };
    let mut fields = json.fields("struct PollsColumns", NAMES, Unknown::Deny)?;
    while let Some(i) = json.field(&mut fields)? {
        match i {
            0 => polls.count = json.u64()?,
            1 => polls.task = column(json)?,
            2 => polls.thread = column(json)?,
            3 => polls.start_delta = column(json)?,
            4 => polls.duration = column(json)?,
            _ => polls.waited_at = optional(json, column)?,
        }
    }
    json.require(&fields, all(5))?;
    Ok(polls)
}
