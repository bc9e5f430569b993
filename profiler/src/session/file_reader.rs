//! Reading a session file's JSON into a [`FileIn`], object by object, with [`Json`]'s steps.
//!
//! Each object's fields are those of `docs/session.schema.json`, read as serde's derives read
//! them: a field may appear once, a required one must appear, optional ones may be `null`, and
//! the file's own tables (frames, stacks, threads, mappings, samples, scopes, tasks) refuse
//! unknown fields while the top level, `meta` and its sample types skip them (so that a newer
//! writer's additions there stay readable).

use super::decode::Invalid;
use super::file_format::{
    FileIn, FramesIn, MappingRow, SamplesColumns, StacksColumns, ThreadRow, FORMAT_NAME,
    FORMAT_VERSION,
};
use super::json::{json_fields as fields, json_need as need, Json, Step};
use super::scopes_file::{
    FieldsColumns, MarksColumns, PollsColumns, ScopesFile, SiteRow, SpansColumns, TaskRow,
    TasksFile,
};
use super::{Frame, Frames, Metadata, Mode, Process, SampleType, SiteKind, StrId, Strings, Unit};
use std::borrow::Cow;

/// Reads a whole session file (the top-level value and nothing after it).
pub(super) fn read_file(text: &[u8]) -> Result<FileIn<'_>, Invalid> {
    Json::parse(text, file)
}

/// The top-level object, checking `format` and `version` as soon as they are seen (writers put
/// them first), so a file of another kind or a newer version is refused with that reason rather
/// than with whatever field the newer layout changed.
fn file<'a>(json: &mut Json<'a>) -> Step<FileIn<'a>> {
    let mut format_seen = false;
    let mut version = None;
    let (mut meta, mut strings, mut frames, mut stacks) = (None, None, None, None);
    let (mut threads, mut processes, mut mappings, mut samples) = (None, None, None, None);
    let (mut scopes, mut tasks) = (None, None);
    json.object("a prof session object")?;
    let mut first = true;
    while let Some(key) = json.key(&mut first)? {
        // The last of a repeated field counts, as it did with serde's map visitor.
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
            "processes" => processes = Some(rows(json, process)?),
            "mappings" => mappings = Some(rows(json, mapping_row)?),
            "samples" => samples = Some(samples_columns(json)?),
            "scopes" => scopes = Some(scopes_file(json)?),
            "tasks" => tasks = Some(tasks_file(json)?),
            _ => json.skip()?,
        }
    }
    if !format_seen {
        return Err(json.error("not a prof session: no \"format\": \"prof-session\" field"));
    }
    Ok(FileIn {
        version: need!(json, version),
        meta: need!(json, meta),
        strings: need!(json, strings),
        frames: need!(json, frames),
        stacks: need!(json, stacks),
        threads: need!(json, threads),
        processes: processes.unwrap_or_default(),
        mappings: mappings.unwrap_or_default(),
        samples: need!(json, samples),
        scopes,
        tasks,
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

fn metadata(json: &mut Json<'_>) -> Step<Metadata> {
    let (mut program, mut args, mut pid, mut hostname, mut os, mut arch) =
        (None, None, None, None, None, None);
    let (mut start_time, mut duration_ns, mut mode, mut requested_interval_ns) =
        (None, None, None, None);
    let (mut achieved_interval_ns, mut timer, mut dropped_samples, mut sample_type) =
        (None, None, None, None);
    let (mut extra_sample_types, mut prof_version) = (None, None);
    fields!(json, "struct Metadata", skip, {
        "program" => program = string(json)?,
        "args" => args = json.strings()?,
        "pid" => pid = json.u32()?,
        "hostname" => hostname = string(json)?,
        "os" => os = string(json)?,
        "arch" => arch = string(json)?,
        "start_time" => start_time = string(json)?,
        "duration_ns" => duration_ns = json.u64()?,
        "mode" => mode = variant(json, &[("cpu", Mode::Cpu), ("wall", Mode::Wall), ("alloc", Mode::Alloc)])?,
        "requested_interval_ns" => requested_interval_ns = json.u64()?,
        "achieved_interval_ns" => achieved_interval_ns = json.u64()?,
        "timer" => timer = string(json)?,
        "dropped_samples" => dropped_samples = json.u64()?,
        "sample_type" => sample_type = self::sample_type(json)?,
        "extra_sample_types" => extra_sample_types = rows(json, self::sample_type)?,
        "prof_version" => prof_version = string(json)?,
    });
    Ok(Metadata {
        program: need!(json, program),
        args: need!(json, args),
        pid: need!(json, pid),
        hostname: need!(json, hostname),
        os: need!(json, os),
        arch: need!(json, arch),
        start_time: need!(json, start_time),
        duration_ns: need!(json, duration_ns),
        mode: need!(json, mode),
        requested_interval_ns: need!(json, requested_interval_ns),
        achieved_interval_ns: need!(json, achieved_interval_ns),
        timer: need!(json, timer),
        dropped_samples: need!(json, dropped_samples),
        sample_type: sample_type.unwrap_or_default(),
        extra_sample_types: extra_sample_types.unwrap_or_default(),
        prof_version: need!(json, prof_version),
    })
}

/// One of a lowercase enum's `variants`, by name.
fn variant<T: Copy>(json: &mut Json<'_>, variants: &[(&str, T)]) -> Step<T> {
    let name = json.string()?;
    match variants.iter().find(|(n, _)| *n == name) {
        Some(&(_, value)) => Ok(value),
        None => {
            let known = variants
                .iter()
                .map(|(n, _)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            Err(json.error(format_args!(
                "unknown variant `{name}`, expected one of {known}"
            )))
        }
    }
}

fn sample_type(json: &mut Json<'_>) -> Step<SampleType> {
    let (mut name, mut unit) = (None, None);
    fields!(json, "struct SampleType", skip, {
        "name" => name = string(json)?,
        "unit" => unit = variant(json, &[
            ("nanoseconds", Unit::Nanoseconds),
            ("bytes", Unit::Bytes),
            ("count", Unit::Count),
        ])?,
    });
    Ok(SampleType {
        name: need!(json, name),
        unit: need!(json, unit),
    })
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
    let (mut name, mut file, mut line, mut module, mut address, mut inlined) =
        (None, None, None, None, None, None);
    fields!(json, "struct FrameRow", deny, {
        "name" => name = json.u32()?,
        "file" => file = optional(json, u32)?,
        "line" => line = optional(json, u32)?,
        "module" => module = optional(json, u32)?,
        "address" => address = optional(json, Json::u64)?,
        "inlined" => inlined = json.bool()?,
    });
    Ok(Frame {
        name: StrId(need!(json, name)),
        file: file.flatten().map(StrId),
        line: line.flatten(),
        module: module.flatten().map(StrId),
        address: address.flatten(),
        inlined: inlined.unwrap_or(false),
    })
}

fn stacks_columns<'a>(json: &mut Json<'a>) -> Step<StacksColumns<'a>> {
    let (mut parent, mut frame) = (None, None);
    fields!(json, "struct StacksColumns", deny, {
        "parent" => parent = column(json)?,
        "frame" => frame = column(json)?,
    });
    Ok(StacksColumns {
        parent: need!(json, parent),
        frame: need!(json, frame),
    })
}

fn thread_row(json: &mut Json<'_>) -> Step<ThreadRow> {
    let (mut tid, mut name, mut process) = (None, None, None);
    fields!(json, "struct ThreadRow", deny, {
        "tid" => tid = json.u64()?,
        "name" => name = json.u32()?,
        "process" => process = json.u32()?,
    });
    Ok(ThreadRow {
        tid: need!(json, tid),
        name: need!(json, name),
        process: process.unwrap_or(0),
    })
}

fn process(json: &mut Json<'_>) -> Step<Process> {
    let (mut pid, mut parent_pid, mut name, mut command_line, mut executable) =
        (None, None, None, None, None);
    fields!(json, "struct Process", deny, {
        "pid" => pid = json.u32()?,
        "parent_pid" => parent_pid = optional(json, u32)?,
        "name" => name = string(json)?,
        "command_line" => command_line = json.strings()?,
        "executable" => executable = optional(json, string)?,
    });
    Ok(Process {
        pid: need!(json, pid),
        parent_pid: parent_pid.flatten(),
        name: need!(json, name),
        command_line: command_line.unwrap_or_default(),
        executable: executable.flatten(),
    })
}

fn mapping_row(json: &mut Json<'_>) -> Step<MappingRow> {
    let (mut start, mut limit, mut offset, mut path, mut build_id) = (None, None, None, None, None);
    fields!(json, "struct MappingRow", deny, {
        "start" => start = json.u64()?,
        "limit" => limit = json.u64()?,
        "offset" => offset = json.u64()?,
        "path" => path = json.u32()?,
        "build_id" => build_id = optional(json, string)?,
    });
    Ok(MappingRow {
        start: need!(json, start),
        limit: need!(json, limit),
        offset: need!(json, offset),
        path: need!(json, path),
        build_id: build_id.flatten(),
    })
}

fn samples_columns<'a>(json: &mut Json<'a>) -> Step<SamplesColumns<'a>> {
    let (mut count, mut stack, mut thread, mut time_delta, mut weight_delta) =
        (None, None, None, None, None);
    let (mut multiplicity_delta, mut extra_weight_delta, mut state, mut scope, mut task) =
        (None, None, None, None, None);
    fields!(json, "struct SamplesColumns", deny, {
        "count" => count = json.u64()?,
        "stack" => stack = column(json)?,
        "thread" => thread = column(json)?,
        "time_delta" => time_delta = column(json)?,
        "weight_delta" => weight_delta = column(json)?,
        "multiplicity_delta" => multiplicity_delta = optional(json, column)?,
        "extra_weight_delta" => extra_weight_delta = rows(json, |json| optional(json, string))?,
        "state" => state = optional(json, column)?,
        "scope" => scope = optional(json, column)?,
        "task" => task = optional(json, column)?,
    });
    Ok(SamplesColumns {
        count: need!(json, count),
        stack: need!(json, stack),
        thread: need!(json, thread),
        time_delta: need!(json, time_delta),
        weight_delta: need!(json, weight_delta),
        multiplicity_delta: multiplicity_delta.flatten(),
        extra_weight_delta: extra_weight_delta.unwrap_or_default(),
        state: state.flatten(),
        scope: scope.flatten(),
        task: task.flatten(),
    })
}

fn scopes_file<'a>(json: &mut Json<'a>) -> Step<ScopesFile<'a>> {
    let (mut sites, mut spans, mut marks, mut dropped_events) = (None, None, None, None);
    fields!(json, "struct ScopesFile", deny, {
        "sites" => sites = rows(json, site_row)?,
        "spans" => spans = spans_columns(json)?,
        "marks" => marks = marks_columns(json)?,
        "dropped_events" => dropped_events = json.u64()?,
    });
    Ok(ScopesFile {
        sites: need!(json, sites),
        spans: need!(json, spans),
        marks: need!(json, marks),
        dropped_events: dropped_events.unwrap_or(0),
    })
}

fn site_row(json: &mut Json<'_>) -> Step<SiteRow> {
    let (mut name, mut file, mut line, mut kind) = (None, None, None, None);
    fields!(json, "struct SiteRow", deny, {
        "name" => name = json.u32()?,
        "file" => file = optional(json, u32)?,
        "line" => line = optional(json, u32)?,
        "kind" => kind = variant(json, &[("scope", SiteKind::Scope), ("mark", SiteKind::Mark)])?,
    });
    Ok(SiteRow {
        name: need!(json, name),
        file: file.flatten(),
        line: line.flatten(),
        kind: need!(json, kind),
    })
}

fn fields_columns<'a>(json: &mut Json<'a>) -> Step<FieldsColumns<'a>> {
    let (mut count, mut key, mut value) = (None, None, None);
    fields!(json, "struct FieldsColumns", deny, {
        "count" => count = column(json)?,
        "key" => key = column(json)?,
        "value" => value = column(json)?,
    });
    Ok(FieldsColumns {
        count: need!(json, count),
        key: need!(json, key),
        value: need!(json, value),
    })
}

fn spans_columns<'a>(json: &mut Json<'a>) -> Step<SpansColumns<'a>> {
    let (mut count, mut site, mut thread, mut start_delta) = (None, None, None, None);
    let (mut duration, mut parent, mut fields) = (None, None, None);
    fields!(json, "struct SpansColumns", deny, {
        "count" => count = json.u64()?,
        "site" => site = column(json)?,
        "thread" => thread = column(json)?,
        "start_delta" => start_delta = column(json)?,
        "duration" => duration = column(json)?,
        "parent" => parent = column(json)?,
        "fields" => fields = optional(json, fields_columns)?,
    });
    Ok(SpansColumns {
        count: need!(json, count),
        site: need!(json, site),
        thread: need!(json, thread),
        start_delta: need!(json, start_delta),
        duration: need!(json, duration),
        parent: need!(json, parent),
        fields: fields.flatten(),
    })
}

fn marks_columns<'a>(json: &mut Json<'a>) -> Step<MarksColumns<'a>> {
    let (mut count, mut site, mut thread, mut time_delta, mut fields) =
        (None, None, None, None, None);
    fields!(json, "struct MarksColumns", deny, {
        "count" => count = json.u64()?,
        "site" => site = column(json)?,
        "thread" => thread = column(json)?,
        "time_delta" => time_delta = column(json)?,
        "fields" => fields = optional(json, fields_columns)?,
    });
    Ok(MarksColumns {
        count: need!(json, count),
        site: need!(json, site),
        thread: need!(json, thread),
        time_delta: need!(json, time_delta),
        fields: fields.flatten(),
    })
}

fn tasks_file<'a>(json: &mut Json<'a>) -> Step<TasksFile<'a>> {
    let (mut tasks, mut polls) = (None, None);
    fields!(json, "struct TasksFile", deny, {
        "tasks" => tasks = rows(json, task_row)?,
        "polls" => polls = polls_columns(json)?,
    });
    Ok(TasksFile {
        tasks: need!(json, tasks),
        polls: need!(json, polls),
    })
}

fn task_row(json: &mut Json<'_>) -> Step<TaskRow> {
    let (mut id, mut name) = (None, None);
    fields!(json, "struct TaskRow", deny, {
        "id" => id = json.u64()?,
        "name" => name = json.u32()?,
    });
    Ok(TaskRow {
        id: need!(json, id),
        name: need!(json, name),
    })
}

fn polls_columns<'a>(json: &mut Json<'a>) -> Step<PollsColumns<'a>> {
    let (mut count, mut task, mut thread, mut start_delta) = (None, None, None, None);
    let (mut duration, mut waited_at) = (None, None);
    fields!(json, "struct PollsColumns", deny, {
        "count" => count = json.u64()?,
        "task" => task = column(json)?,
        "thread" => thread = column(json)?,
        "start_delta" => start_delta = column(json)?,
        "duration" => duration = column(json)?,
        "waited_at" => waited_at = optional(json, column)?,
    });
    Ok(PollsColumns {
        count: need!(json, count),
        task: need!(json, task),
        thread: need!(json, thread),
        start_delta: need!(json, start_delta),
        duration: need!(json, duration),
        waited_at: waited_at.flatten(),
    })
}
