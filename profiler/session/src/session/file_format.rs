//! The session file's JSON shape (version 6; versions 1 to 5 are read too) and its writer
//! (serde's); [`super::file_reader`] reads it.
//!
//! The layout is documented for people in `docs/session-format.md` and for machines in
//! `docs/session.schema.json`. Tables are plain JSON; the columns that grow with the number of
//! stacks and samples are packed ([`super::packed`]). Decoding the file into a checked [`Session`]
//! lives in [`super::decode`].

use super::packed::{self, zigzag};
use super::scopes_file::{context_column, scopes_file, tasks_file, ScopesFile, TasksFile};
use super::{
    CountedFunction, Frame, Frames, Metadata, Process, SampleState, Session, StrId, Strings, Thread,
};
use serde::Serialize;
use std::borrow::Cow;

/// The value of the `format` field of every session file.
pub const FORMAT_NAME: &str = "prof-session";
/// The version this `prof` writes, and the newest it reads. Version 2 added `meta.sample_type`,
/// the optional `samples.multiplicity_delta` column and the optional `mappings` table; version 3
/// added further sample types (`meta.extra_sample_types`, `samples.extra_weight_delta`) and the
/// optional `samples.state` column; version 4 the optional `processes` table and each thread's
/// `process`; version 5 the optional `scopes` and `tasks` tables and the optional
/// `samples.scope` and `samples.task` columns; version 6 the optional `tasks.polls.waited_at`
/// column. Versions 1 to 5 are still read. The optional `calls` table came later without a new
/// version: older readers ignore an unknown top-level field.
pub const FORMAT_VERSION: u32 = 6;

/// One frame as stored: absent optional fields are omitted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct FrameRow {
    pub name: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inlined: bool,
}

/// The stack prefix tree: `parent` holds `own index - parent index` (0 for a root), so a parent
/// always comes first and no cycle can be written down. Packed columns borrow from the input when
/// they can (a JSON string without escapes), so reading never copies them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct StacksColumns<'a> {
    pub parent: Cow<'a, str>,
    pub frame: Cow<'a, str>,
}

/// The samples in packed columns. Every column but `thread` is a zigzag delta against the previous
/// sample *of the same thread* (0 before its first), which keeps the numbers small whatever order
/// the threads' samples are interleaved in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct SamplesColumns<'a> {
    pub count: u64,
    pub stack: Cow<'a, str>,
    pub thread: Cow<'a, str>,
    pub time_delta: Cow<'a, str>,
    pub weight_delta: Cow<'a, str>,
    /// How many samples each row stands for, when not every row is one (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiplicity_delta: Option<Cow<'a, str>>,
    /// The weights of `meta.extra_sample_types`, one packed delta column each, or `null` for a
    /// type whose weight is the row's number of samples (version 3).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_weight_delta: Vec<Option<String>>,
    /// Each row's thread state, 0 running and 1 waiting, when the mode records it (version 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<Cow<'a, str>>,
    /// Each row's innermost open span, 0 for none and `n` for span `n - 1` (version 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Cow<'a, str>>,
    /// Each row's task, 0 for none and `n` for task `n - 1` (version 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Cow<'a, str>>,
}

/// A thread as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ThreadRow {
    pub tid: u64,
    pub name: u32,
    /// Its process, an index into `processes` (version 4; 0 when absent).
    #[serde(skip_serializing_if = "is_zero")]
    pub process: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A mapping as stored: `path` is an index into the strings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct MappingRow {
    pub start: u64,
    pub limit: u64,
    pub offset: u64,
    pub path: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
}

/// A whole session file, parsed but not yet checked; its packed columns borrow from the input.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileIn<'a> {
    pub version: u32,
    pub meta: Metadata,
    pub strings: Strings,
    /// Read straight into columns, its string ids not checked yet ([`super::decode`] does).
    pub frames: FramesIn,
    pub stacks: StacksColumns<'a>,
    pub threads: Vec<ThreadRow>,
    /// Absent (empty) before version 4 and for one implicit process described by `meta`.
    pub processes: Vec<Process>,
    /// Absent (empty) in version 1 and whenever the mappings are unknown.
    pub mappings: Vec<MappingRow>,
    pub samples: SamplesColumns<'a>,
    /// Absent before version 5 and when the program recorded no scope.
    pub scopes: Option<ScopesFile<'a>>,
    /// Absent before version 5 and when the program recorded no task.
    pub tasks: Option<TasksFile<'a>>,
    /// Absent when no function's calls were counted (`prof record --calls`).
    pub calls: Vec<CountedFunction>,
}

/// A session in its file form, borrowing what it can from the session: the writer's input.
#[derive(Serialize)]
pub(crate) struct FileOut<'a> {
    format: &'static str,
    version: u32,
    meta: &'a Metadata,
    strings: &'a Strings,
    frames: FramesOut<'a>,
    stacks: StacksColumns<'static>,
    threads: Vec<ThreadRow>,
    #[serde(skip_serializing_if = "<[Process]>::is_empty")]
    processes: &'a [Process],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mappings: Vec<MappingRow>,
    samples: SamplesColumns<'static>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scopes: Option<ScopesFile<'static>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tasks: Option<TasksFile<'static>>,
    #[serde(skip_serializing_if = "<[CountedFunction]>::is_empty")]
    calls: &'a [CountedFunction],
}

impl<'a> FileOut<'a> {
    /// The file form of a session.
    pub fn new(session: &'a Session) -> Self {
        let frames = FramesOut(&session.frames);
        let stacks = StacksColumns {
            parent: packed::encode(session.stacks.iter().enumerate().map(|(i, node)| {
                node.parent
                    .map_or(0, |p| (i as u64).wrapping_sub(p.0.into()))
            }))
            .into(),
            frame: packed::encode(session.stacks.iter().map(|n| u64::from(n.frame.0))).into(),
        };
        let threads = session
            .threads
            .iter()
            .map(|t: &Thread| ThreadRow {
                tid: t.tid,
                name: t.name.0,
                process: t.process.0,
            })
            .collect();
        FileOut {
            format: FORMAT_NAME,
            version: FORMAT_VERSION,
            meta: &session.meta,
            strings: &session.strings,
            frames,
            stacks,
            threads,
            processes: &session.processes,
            mappings: session
                .mappings
                .iter()
                .map(|m| MappingRow {
                    start: m.start,
                    limit: m.limit,
                    offset: m.offset,
                    path: m.path.0,
                    build_id: m.build_id.clone(),
                })
                .collect(),
            samples: samples_columns(session),
            scopes: scopes_file(&session.scopes),
            tasks: tasks_file(&session.tasks),
            calls: &session.counted,
        }
    }
}

/// The frames table as the file stores it, written row by row from the session's columns.
struct FramesOut<'a>(&'a Frames);

impl Serialize for FramesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(frame_row))
    }
}

/// The frames table as read, row by row into columns (a `Vec<FrameRow>` would take 48 bytes a
/// frame on top of the session's).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FramesIn(pub Frames);

fn frame_row(frame: Frame) -> FrameRow {
    FrameRow {
        name: frame.name.0,
        file: frame.file.map(|s: StrId| s.0),
        line: frame.line,
        module: frame.module.map(|s| s.0),
        address: frame.address,
        inlined: frame.inlined,
    }
}

/// Per-thread state of the delta encoding: the previous sample's stack, time and weight.
#[derive(Clone, Copy, Default)]
pub(crate) struct Previous {
    pub stack: u64,
    pub time: u64,
    pub weight: u64,
    pub multiplicity: u64,
}

fn delta(now: u64, before: u64) -> u64 {
    zigzag(now.wrapping_sub(before) as i64)
}

fn samples_columns(session: &Session) -> SamplesColumns<'static> {
    let samples = &session.samples;
    let mut previous = vec![Previous::default(); session.threads.len()];
    let (mut stack, mut time, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    let mut multiplicity = Vec::new();
    let several = !samples.multiplicity.is_empty();
    let extras = samples.extra_weights.len();
    let mut extra: Vec<Vec<u64>> = vec![Vec::new(); extras];
    let mut previous_extra = vec![0u64; session.threads.len() * extras];
    for i in 0..samples.len() {
        let thread = samples.thread[i].index();
        if thread >= previous.len() {
            previous.resize(thread + 1, Previous::default());
            previous_extra.resize((thread + 1) * extras, 0);
        }
        for (k, column) in samples.extra_weights.iter().enumerate() {
            if let Some(column) = column {
                let before = &mut previous_extra[thread * extras + k];
                extra[k].push(delta(column[i], *before));
                *before = column[i];
            }
        }
        let prev = &mut previous[thread];
        let now = Previous {
            stack: samples.stack[i].0.into(),
            time: samples.time_ns[i],
            weight: samples.weight[i],
            multiplicity: samples.multiplicity(i),
        };
        stack.push(delta(now.stack, prev.stack));
        time.push(delta(now.time, prev.time));
        weight.push(delta(now.weight, prev.weight));
        if several {
            multiplicity.push(delta(now.multiplicity, prev.multiplicity));
        }
        *prev = now;
    }
    SamplesColumns {
        count: samples.len() as u64,
        stack: packed::encode(stack).into(),
        thread: packed::encode(samples.thread.iter().map(|t| u64::from(t.0))).into(),
        time_delta: packed::encode(time).into(),
        weight_delta: packed::encode(weight).into(),
        multiplicity_delta: several.then(|| packed::encode(multiplicity).into()),
        extra_weight_delta: samples
            .extra_weights
            .iter()
            .zip(extra)
            .map(|(column, deltas)| column.as_ref().map(|_| packed::encode(deltas)))
            .collect(),
        state: (!samples.state.is_empty()).then(|| {
            packed::encode(samples.state.iter().map(|&s| match s {
                SampleState::Running => 0,
                SampleState::Waiting => 1,
            }))
            .into()
        }),
        scope: context_column(&samples.scope, |s| s.0),
        task: context_column(&samples.task, |t| t.0),
    }
}
