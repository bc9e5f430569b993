//! The in-memory session: shared tables plus columnar samples, and the queries over them.
//!
//! Every other part of `prof` meets here. The sampler and the importers build a [`Session`] with a
//! [`SessionBuilder`](super::SessionBuilder); the aggregation core, the exporters and the viewer
//! only read it. Tables are addressed by typed indices ([`StrId`], [`FrameId`], [`StackId`],
//! [`ThreadIdx`]) so an index into one table can never be used for another.

use serde::{Deserialize, Serialize};

use super::ids::{FrameId, ProcessIdx, SpanIdx, StackId, StrId, TaskIdx, ThreadIdx};
use super::scopes::{Scopes, Tasks};
use super::tables::{Frame, Frames, Strings};

/// What the samples measure, and so what a sample's weight means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Mode {
    /// CPU time: weights are CPU nanoseconds consumed by the thread.
    #[default]
    Cpu,
    /// Wall-clock time: weights are elapsed nanoseconds, on or off CPU.
    Wall,
    /// Allocations: weights are bytes allocated.
    Alloc,
}

impl Mode {
    /// The sample type the sampler records in this mode: `cpu` or `wall` nanoseconds, or
    /// `alloc_bytes` bytes.
    pub fn sample_type(self) -> SampleType {
        match self {
            Mode::Cpu => SampleType::new("cpu", Unit::Nanoseconds),
            Mode::Wall => SampleType::new("wall", Unit::Nanoseconds),
            Mode::Alloc => SampleType::new("alloc_bytes", Unit::Bytes),
        }
    }

    /// The sample types recorded in this mode after the primary one ([`Mode::sample_type`]):
    /// `samples` for CPU and wall time, objects and in-use figures for allocations.
    pub fn extra_sample_types(self) -> Vec<SampleType> {
        match self {
            Mode::Cpu | Mode::Wall => vec![SampleType::samples()],
            Mode::Alloc => vec![
                SampleType::new("alloc_objects", Unit::Count),
                SampleType::new("inuse_bytes", Unit::Bytes),
                SampleType::new("inuse_objects", Unit::Count),
            ],
        }
    }

    /// The lowercase name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cpu => "cpu",
            Mode::Wall => "wall",
            Mode::Alloc => "alloc",
        }
    }
}

/// The unit of a weight. A weight is a measured quantity in one of these units, never assumed
/// from a sampling rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Unit {
    /// Nanoseconds of time (CPU or wall clock).
    #[default]
    Nanoseconds,
    /// Bytes of memory.
    Bytes,
    /// A count of events; [`SampleType::name`] says of what (`samples`, `cycles`, ...).
    Count,
}

impl Unit {
    /// The unit's name as pprof and speedscope spell it: `nanoseconds`, `bytes`, `count`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "nanoseconds",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
        }
    }
}

/// The sample types of an allocation profile that Go's heap profile names otherwise: (Go's
/// name, prof's). prof's pprof output uses Go's names (what `go tool pprof -sample_index` and
/// profiling backends know); both choose the type in [`Session::select_sample_type`].
pub const HEAP_TYPE_NAMES: [(&str, &str); 2] = [
    ("alloc_space", "alloc_bytes"),
    ("inuse_space", "inuse_bytes"),
];

/// What the weights of a session measure: a name (`cpu`, `wall`, `samples`, `cycles`,
/// `alloc_bytes`, ...) and the unit, as pprof's `sample_type` has them. The default is what the
/// default [`Mode`] records: `cpu` nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SampleType {
    /// What is measured: for counts, the name of the event counted (`samples`, `cycles`).
    pub name: String,
    /// The unit of each weight.
    pub unit: Unit,
}

impl Default for SampleType {
    fn default() -> Self {
        Mode::default().sample_type()
    }
}

impl SampleType {
    /// A sample type named `name` in `unit`.
    pub fn new(name: impl Into<String>, unit: Unit) -> Self {
        SampleType {
            name: name.into(),
            unit,
        }
    }

    /// Plain counts of samples: each weight is a number of samples (folded stacks).
    pub fn samples() -> Self {
        SampleType::new("samples", Unit::Count)
    }

    /// True for the `samples` count, whose weight in an extra column is each row's number of
    /// samples ([`Samples::multiplicity`]), so it is never stored twice.
    pub fn is_sample_count(&self) -> bool {
        self.name == "samples" && self.unit == Unit::Count
    }
}

/// Why [`Session::select_sample_type`] failed: the profile has no sample type of that name.
/// Its own type rather than [`crate::Error`], so that showing it (the wasm viewer does) does
/// not bring every other error's message along.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no sample type `{name}` (available: {known})")]
pub struct UnknownSampleType {
    /// The name asked for.
    pub name: String,
    /// The names the profile has, comma-separated, primary first.
    pub known: String,
}

/// Facts about the recording: what ran, where, when, and how it was sampled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// The profiled program (usually the executable path).
    pub program: String,
    /// Its command-line arguments, without the program itself.
    pub args: Vec<String>,
    /// Its process id.
    pub pid: u32,
    /// The host it ran on.
    pub hostname: String,
    /// Operating system, e.g. `linux`.
    pub os: String,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// When sampling started, in nanoseconds since the Unix epoch (UTC); `None` when unknown
    /// (an imported profile that does not say). The file holds it as RFC 3339 text
    /// (`start_time`), which [`rfc3339_utc`](super::rfc3339_utc) shows.
    #[serde(rename = "start_time", with = "super::date::serde_start_time")]
    pub start_time_ns: Option<i64>,
    /// How long sampling ran, in nanoseconds of wall time.
    pub duration_ns: u64,
    /// What the samples measure.
    pub mode: Mode,
    /// The interval the user asked for, in nanoseconds.
    pub requested_interval_ns: u64,
    /// The interval actually achieved (duration per sample per busy thread), in nanoseconds;
    /// 0 when unknown, e.g. for imported profiles.
    pub achieved_interval_ns: u64,
    /// The timer mechanism that produced the samples, e.g. `perf_event`, `timer_create`,
    /// `setitimer`, or `import:folded` for imported profiles.
    pub timer: String,
    /// Samples the sampler had to drop (buffer full or `max_samples` reached), and those it
    /// could not take after sampling ended early ([`Metadata::sampling_ended`], an estimate).
    pub dropped_samples: u64,
    /// When sampling ended before the session did, and why; `None` when it ran to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_ended: Option<SamplingEnded>,
    /// What the weights measure and in which unit: the primary sample type, the one
    /// [`Samples::weight`] holds and every single-weight view shows. Files of version 1 have
    /// none; it is derived from `mode` and `timer` when they are read (see
    /// `docs/session-format.md`).
    #[serde(default)]
    pub sample_type: SampleType,
    /// Further sample types each sample carries, in order ([`Samples::extra_weights`] holds
    /// their weights), as pprof's `sample_type` lists several: a CPU session has `cpu` and then
    /// `samples`. [`Session::select_sample_type`] makes one of them the primary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_sample_types: Vec<SampleType>,
    /// The `prof` version that wrote the session.
    pub prof_version: String,
}

/// Sampling that ended before its session did (see [`Metadata::sampling_ended`]): the samples
/// the session would have had after it are estimated and counted in
/// [`Metadata::dropped_samples`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingEnded {
    /// When, in nanoseconds since the session started.
    pub at_ns: u64,
    /// Why, as a sentence without its full stop: "the program replaced prof's SIGPROF
    /// handler".
    pub reason: String,
}

/// A node of the stack prefix tree: `frame` called from the stack `parent` (None at the root).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StackNode {
    /// The calling stack, or `None` for an outermost frame.
    pub parent: Option<StackId>,
    /// The frame at the top (leaf end) of this stack.
    pub frame: FrameId,
}

/// A thread that was sampled.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Thread {
    /// The operating system's thread id.
    pub tid: u64,
    /// Its name (`/proc/self/task/<tid>/comm` on Linux), possibly empty.
    pub name: StrId,
    /// The process it belongs to.
    pub process: ProcessIdx,
}

/// A process whose threads were sampled: the profiled program itself for the in-process
/// sampler, every process a command started for `prof record`. Its texts are plain strings
/// (a session holds few processes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    /// The operating system's process id.
    pub pid: u32,
    /// The process that started it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_pid: Option<u32>,
    /// Its name: what its main thread was called after its last `exec` (`comm` on Linux), or
    /// its executable's file name.
    pub name: String,
    /// Its command line, the program as started first; empty when it could not be read (a
    /// process that ended before prof looked).
    #[serde(default)]
    pub command_line: Vec<String>,
    /// The path of its executable, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
}

/// A function whose calls the kernel counted exactly (`prof record --calls`): every entry into
/// it, by any thread of the processes recorded, while the recording ran. Calls the compiler
/// inlined into their callers are not entries and are not counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountedFunction {
    /// Its name, demangled, as the frames of its samples name it.
    pub name: String,
    /// The file it is in (the program or a library), as the probe named it.
    pub module: String,
    /// Its entry's offset in that file.
    pub offset: u64,
    /// The calls counted.
    pub calls: u64,
    /// Whether the compiler also inlined it somewhere, per its file's debug info: calls of
    /// those copies never enter it and are not in [`CountedFunction::calls`]. `None` when the
    /// file has no debug info to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inlined: Option<bool>,
    /// Its calls timed from their entry and return (`prof record --calls-timed`); `None` when
    /// only counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed: Option<TimedCalls>,
}

/// The calls of a counted function timed by their entry and return records
/// (`prof record --calls-timed`): wall time, exact to the kernel's clock, for every call that
/// both entered and returned while the recording ran (a call still running at the end, or whose
/// record was lost, is not in them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedCalls {
    /// The calls timed.
    pub calls: u64,
    /// Their wall time from entry to return, in nanoseconds; a recursive call inside another
    /// of the same function is in its outermost call's time only.
    pub total_ns: u64,
    /// Their wall time less that of the timed calls of counted functions they made, in
    /// nanoseconds.
    pub self_ns: u64,
}

impl Process {
    /// The one process a session without a process table describes: its metadata's program,
    /// arguments and pid (files before version 4, imports).
    pub fn implicit(meta: &Metadata) -> Process {
        let name = meta.program.rsplit(['/', '\\']).next().unwrap_or_default();
        Process {
            pid: meta.pid,
            parent_pid: None,
            name: name.to_owned(),
            command_line: if meta.program.is_empty() {
                Vec::new()
            } else {
                std::iter::once(meta.program.clone())
                    .chain(meta.args.iter().cloned())
                    .collect()
            },
            executable: (!meta.program.is_empty()).then(|| meta.program.clone()),
        }
    }

    /// True when `name` names this process: its name, or its executable's or its command's
    /// first word's file name.
    pub fn is_named(&self, name: &str) -> bool {
        let base = |path: &str| path.rsplit('/').next().unwrap_or_default().to_owned();
        self.name == name
            || self.executable.as_deref().map(base).as_deref() == Some(name)
            || self.command_line.first().map(|c| base(c)).as_deref() == Some(name)
    }
}

/// The samples, in columns of equal length: row `i` is `stack[i]` on `thread[i]` at `time_ns[i]`
/// with weight `weight[i]`, and stands for `multiplicity[i]` samples (1 when that column is empty,
/// as it is for recorded sessions; imports of aggregated formats such as pprof fill it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Samples {
    /// The leaf stack node of each sample.
    pub stack: Vec<StackId>,
    /// The thread each sample was taken on.
    pub thread: Vec<ThreadIdx>,
    /// Nanoseconds since the session started, non-decreasing per thread.
    pub time_ns: Vec<u64>,
    /// The weight, in the unit of [`Metadata::sample_type`]: measured, never assumed.
    pub weight: Vec<u64>,
    /// How many samples each row stands for; empty when every row is one sample.
    pub multiplicity: Vec<u64>,
    /// The weights of [`Metadata::extra_sample_types`], one column each, in the same order:
    /// `None` for a type whose weight is each row's number of samples (a `samples` count),
    /// which is then not stored twice.
    pub extra_weights: Vec<Option<Vec<u64>>>,
    /// Whether each sample's thread was running or waiting (wall mode); empty when the mode
    /// records no state.
    pub state: Vec<SampleState>,
    /// The innermost scope open on each sample's thread when it was taken (an index into
    /// [`Scopes::spans`]), `None` outside every scope; empty when no sample has one.
    pub scope: Vec<Option<SpanIdx>>,
    /// The async task being polled on each sample's thread when it was taken (an index into
    /// [`Tasks::tasks`]), `None` outside every poll; empty when no sample has one.
    pub task: Vec<Option<TaskIdx>>,
}

/// What a thread was doing when it was sampled: on CPU, or off CPU (blocked in a system call,
/// sleeping, waiting for a lock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleState {
    /// On CPU, or ready to run.
    #[default]
    Running,
    /// Off CPU: blocked or sleeping.
    Waiting,
}

impl SampleState {
    /// The lowercase name used in files and texts: `running` or `waiting`.
    pub fn name(self) -> &'static str {
        match self {
            SampleState::Running => "running",
            SampleState::Waiting => "waiting",
        }
    }
}

impl Samples {
    /// The number of rows (distinct sample records, not samples: see [`Samples::count`]).
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// The innermost scope open on row `i`'s thread when it was taken, if any.
    pub fn scope(&self, i: usize) -> Option<SpanIdx> {
        self.scope.get(i).copied().flatten()
    }

    /// The task being polled on row `i`'s thread when it was taken, if any.
    pub fn task(&self, i: usize) -> Option<TaskIdx> {
        self.task.get(i).copied().flatten()
    }

    /// How many samples row `i` stands for.
    pub fn multiplicity(&self, i: usize) -> u64 {
        self.multiplicity.get(i).copied().unwrap_or(1)
    }

    /// The state of row `i`'s thread, when the mode records one.
    pub fn state(&self, i: usize) -> Option<SampleState> {
        self.state.get(i).copied()
    }

    /// Row `i`'s weight in extra type `k` (an index into [`Metadata::extra_sample_types`]).
    pub fn extra_weight(&self, k: usize, i: usize) -> u64 {
        match self.extra_weights.get(k) {
            Some(Some(column)) => column[i],
            _ => self.multiplicity(i),
        }
    }

    /// The number of samples: the rows, each counted as many times as it stands for.
    pub fn count(&self) -> u64 {
        if self.multiplicity.is_empty() {
            self.len() as u64
        } else {
            self.multiplicity
                .iter()
                .fold(0u64, |sum, &m| sum.saturating_add(m))
        }
    }
}

/// A binary or shared library as it was mapped into the profiled process: the addresses
/// `start..limit` hold the file `path` from byte `offset` on. Frames are matched to a mapping by
/// their [`Frame::address`] ([`Session::mapping_at`]); pprof exports write these, so `go tool
/// pprof` can find the binary (by build ID or name) and disassemble it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mapping {
    /// The first address of the mapping.
    pub start: u64,
    /// The address just past its end (above `start`).
    pub limit: u64,
    /// The offset in the file of the byte mapped at `start`.
    pub offset: u64,
    /// The file mapped, as the loader named it (an absolute path for the main program).
    pub path: StrId,
    /// The file's build ID (for ELF, the GNU build ID note in lowercase hex), when it has one.
    pub build_id: Option<String>,
}

/// A complete profile: metadata, shared tables and samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Session {
    /// Facts about the recording.
    pub meta: Metadata,
    /// Interned strings; `strings[0]` is always `""`.
    pub strings: Strings,
    /// Distinct frames.
    pub frames: Frames,
    /// The stack prefix tree; a parent always comes before its children.
    pub stacks: Vec<StackNode>,
    /// Sampled threads.
    pub threads: Vec<Thread>,
    /// The processes the threads belong to; empty for one implicit process described by
    /// [`Session::meta`] (files before version 4, imports): see [`Session::process_table`].
    pub processes: Vec<Process>,
    /// The binaries and libraries the samples' addresses lie in, when known (recorded sessions,
    /// pprof imports); empty otherwise.
    pub mappings: Vec<Mapping>,
    /// The samples.
    pub samples: Samples,
    /// Instrumented scopes and markers (`prof::scope!`, `prof::mark!`); empty when the program
    /// has none.
    pub scopes: Scopes,
    /// Async tasks and when they were polled (`prof::task::instrument`); empty when the
    /// program has none.
    pub tasks: Tasks,
    /// The functions whose calls were counted exactly (`prof record --calls`), in the order
    /// probed; empty when none were.
    pub counted: Vec<CountedFunction>,
}

impl Session {
    /// The text of an interned string.
    pub fn str(&self, id: StrId) -> &str {
        &self.strings[id.index()]
    }

    /// A frame by index.
    pub fn frame(&self, id: FrameId) -> Frame {
        self.frames.at(id.index())
    }

    /// The function name of a frame.
    pub fn frame_name(&self, id: FrameId) -> &str {
        self.str(self.frame(id).name)
    }

    /// A stack node by index.
    pub fn stack(&self, id: StackId) -> &StackNode {
        &self.stacks[id.index()]
    }

    /// The frames of a stack, leaf first.
    pub fn stack_frames(&self, leaf: StackId) -> impl Iterator<Item = FrameId> + '_ {
        let mut next = Some(leaf);
        std::iter::from_fn(move || {
            let node = self.stack(next?);
            next = node.parent;
            Some(node.frame)
        })
    }

    /// The processes, indexed by [`ProcessIdx`]: [`Session::processes`], or the one implicit
    /// process of [`Process::implicit`] when that table is empty.
    pub fn process_table(&self) -> std::borrow::Cow<'_, [Process]> {
        if self.processes.is_empty() {
            std::borrow::Cow::Owned(vec![Process::implicit(&self.meta)])
        } else {
            std::borrow::Cow::Borrowed(&self.processes)
        }
    }

    /// The mapping holding `address`, if one does.
    pub fn mapping_at(&self, address: u64) -> Option<&Mapping> {
        self.mappings
            .iter()
            .find(|m| m.start <= address && address < m.limit)
    }

    /// The sum of all sample weights.
    pub fn total_weight(&self) -> u64 {
        self.samples.weight.iter().sum()
    }

    /// True when the samples carry their times. Formats that record none (folded stacks, pprof)
    /// are imported with every time 0, and so are read back: such a session has no timeline.
    /// A session that records times has a sample after its start (times count from it).
    pub fn has_sample_times(&self) -> bool {
        self.samples.time_ns.iter().any(|&t| t != 0)
    }

    /// The number of samples taken (rows weighted by how many samples each stands for).
    pub fn sample_count(&self) -> u64 {
        self.samples.count()
    }

    /// Every sample type the session carries, the primary (the one [`Samples::weight`] holds)
    /// first.
    pub fn sample_types(&self) -> Vec<&SampleType> {
        std::iter::once(&self.meta.sample_type)
            .chain(&self.meta.extra_sample_types)
            .collect()
    }

    /// Makes the sample type named `name` the primary one, so every single-weight view and
    /// export shows it; the previous primary becomes the first extra type. Fails with
    /// [`UnknownSampleType`] naming the types there are (which converts into
    /// [`crate::Error::UnknownSampleType`]).
    pub fn select_sample_type(&mut self, name: &str) -> Result<(), UnknownSampleType> {
        // Go's heap profile names (`alloc_space`, the names prof's pprof output uses) and
        // prof's (`alloc_bytes`) choose the same type, whichever the session has.
        let alias = HEAP_TYPE_NAMES
            .iter()
            .find_map(|&(go, ours)| match name {
                n if n == go => Some(ours),
                n if n == ours => Some(go),
                _ => None,
            })
            .unwrap_or(name);
        let named = |t: &SampleType| t.name == name || t.name == alias;
        if named(&self.meta.sample_type) {
            return Ok(());
        }
        let Some(k) = self.meta.extra_sample_types.iter().position(named) else {
            return Err(UnknownSampleType {
                name: name.to_owned(),
                known: self
                    .sample_types()
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let chosen_type = self.meta.extra_sample_types.remove(k);
        let old_type = std::mem::replace(&mut self.meta.sample_type, chosen_type);
        self.meta.extra_sample_types.insert(0, old_type);
        let samples = &mut self.samples;
        let chosen = samples.extra_weights.remove(k).unwrap_or_else(|| {
            (0..samples.len())
                .map(|i| samples.multiplicity(i))
                .collect()
        });
        let old = std::mem::replace(&mut samples.weight, chosen);
        let old_is_count = self.meta.extra_sample_types[0].is_sample_count()
            && (0..samples.len()).all(|i| old[i] == samples.multiplicity(i));
        samples
            .extra_weights
            .insert(0, if old_is_count { None } else { Some(old) });
        Ok(())
    }
}
