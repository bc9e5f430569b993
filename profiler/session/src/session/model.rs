//! The in-memory session: shared tables plus columnar samples.
//!
//! Every other part of `prof` meets here. The sampler and the importers build a [`Session`] with a
//! [`SessionBuilder`]; the aggregation core, the exporters and the viewer only read it. Tables are
//! addressed by typed indices ([`StrId`], [`FrameId`], [`StackId`], [`ThreadIdx`]) so an index into
//! one table can never be used for another.

use hashbrown::hash_table::{Entry, HashTable};
use serde::{Deserialize, Serialize};
use std::hash::BuildHasher;

use super::scopes::{Field, Mark, Poll, Scopes, Site, SiteKind, Span, Task, Tasks};
pub use super::tables::{Frames, Strings};

macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The position in its table, for indexing a `Vec`.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

index_type!(
    /// An index into [`Session::strings`].
    StrId
);
index_type!(
    /// An index into [`Session::frames`].
    FrameId
);
index_type!(
    /// An index into [`Session::stacks`]: one node of the stack prefix tree.
    StackId
);
index_type!(
    /// An index into [`Session::threads`].
    ThreadIdx
);
index_type!(
    /// An index into [`Scopes::sites`]: one `prof::scope!` or `prof::mark!` call site.
    SiteIdx
);
index_type!(
    /// An index into [`Scopes::spans`]: one execution of a scope.
    SpanIdx
);
index_type!(
    /// An index into [`Tasks::tasks`]: one async task.
    TaskIdx
);
index_type!(
    /// An index into [`Session::processes`] (0, the implicit process, when that table is
    /// empty: see [`Session::process_table`]).
    ProcessIdx
);

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
    /// When sampling started, RFC 3339 in UTC.
    pub start_time: String,
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
    /// Samples the sampler had to drop (buffer full or `max_samples` reached).
    pub dropped_samples: u64,
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

/// One frame: a function at a place in the code. Inlined calls are frames of their own, marked
/// [`Frame::inlined`], sharing the caller's [`Frame::address`]. A session stores its frames in
/// columns ([`Frames`]) and hands them out by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// The demangled function name; where no symbol names the code, its object's file name
    /// and file address (`gzip+0x4290`), or a hex address when it is in no object.
    pub name: StrId,
    /// The source file, when debug info names one.
    pub file: Option<StrId>,
    /// The line in [`Frame::file`], when known.
    pub line: Option<u32>,
    /// The binary or shared library the code lives in.
    pub module: Option<StrId>,
    /// The instruction address sampled, when the frame came from a native stack.
    pub address: Option<u64>,
    /// True when this call was inlined into the frame below it (its caller).
    pub inlined: bool,
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
}

/// The frame's data with strings still as text: the builder's input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameSpec<'a> {
    /// Function name.
    pub name: &'a str,
    /// Source file, if known.
    pub file: Option<&'a str>,
    /// Source line, if known.
    pub line: Option<u32>,
    /// Module (binary or library), if known.
    pub module: Option<&'a str>,
    /// Instruction address, if known.
    pub address: Option<u64>,
    /// Inlined into its caller.
    pub inlined: bool,
}

/// A mapping's data with its path still as text: the builder's input (see [`Mapping`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappingSpec<'a> {
    /// The first address.
    pub start: u64,
    /// The address just past the end.
    pub limit: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// The file mapped.
    pub path: &'a str,
    /// The file's build ID, when known.
    pub build_id: Option<&'a str>,
}

impl<'a> FrameSpec<'a> {
    /// A frame known only by its function name.
    pub fn named(name: &'a str) -> Self {
        FrameSpec {
            name,
            ..FrameSpec::default()
        }
    }
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
        if self.meta.sample_type.name == name {
            return Ok(());
        }
        let Some(k) = self
            .meta
            .extra_sample_types
            .iter()
            .position(|t| t.name == name)
        else {
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

/// Builds a [`Session`], interning strings, frames and stacks so each distinct one is stored once.
///
/// Its maps hash with foldhash rather than the standard library's SipHash: a sampler's stop
/// interns every frame of every distinct stack (over 100,000 lookups for 10,000 stacks), and
/// SipHash was most of that time. foldhash seeds each map at random, so a hostile file still
/// cannot choose keys that collide. The tables hold indices into the session's own vectors, so
/// each string, frame and stack is stored once, not a second time as a key: a million distinct
/// names take half the memory.
#[derive(Debug)]
pub struct SessionBuilder {
    session: Session,
    hasher: foldhash::fast::RandomState,
    strings: HashTable<StrId>,
    frames: HashTable<FrameId>,
    stacks: HashTable<StackId>,
    threads: foldhash::HashMap<u64, ThreadIdx>,
    sites: foldhash::HashMap<Site, SiteIdx>,
    tasks: foldhash::HashMap<u64, TaskIdx>,
    /// True while every sample pushed had time 0 (folded stacks, pprof without timestamps):
    /// the time column is then not kept but made at [`SessionBuilder::finish`] as one zeroed
    /// allocation, whose pages the system gives only when written (8 MB for a million
    /// samples, issue 20).
    untimed: bool,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        Self::new(Metadata::default())
    }
}

/// The empty extra weight columns of `types`: none for a sample count.
fn columns_for(types: &[SampleType]) -> Vec<Option<Vec<u64>>> {
    types
        .iter()
        .map(|t| (!t.is_sample_count()).then(Vec::new))
        .collect()
}

impl SessionBuilder {
    /// A builder for a session with the given metadata and no samples; its
    /// [`Metadata::extra_sample_types`] are declared as [`SessionBuilder::set_sample_types`] does.
    pub fn new(meta: Metadata) -> Self {
        let extra_weights = columns_for(&meta.extra_sample_types);
        let mut builder = SessionBuilder {
            session: Session {
                meta,
                samples: Samples {
                    extra_weights,
                    ..Samples::default()
                },
                ..Session::default()
            },
            hasher: foldhash::fast::RandomState::default(),
            strings: HashTable::new(),
            frames: HashTable::new(),
            stacks: HashTable::new(),
            threads: foldhash::HashMap::default(),
            sites: foldhash::HashMap::default(),
            tasks: foldhash::HashMap::default(),
            untimed: true,
        };
        builder.intern_str("");
        builder
    }

    /// The metadata, for filling in as recording goes on.
    pub fn meta_mut(&mut self) -> &mut Metadata {
        &mut self.session.meta
    }

    /// The id of `text`, adding it on first sight.
    pub fn intern_str(&mut self, text: &str) -> StrId {
        let hasher = &self.hasher;
        let strings = &mut self.session.strings;
        let hash = hasher.hash_one(text);
        match self.strings.entry(
            hash,
            |id| &strings[id.index()] == text,
            |id| hasher.hash_one(&strings[id.index()]),
        ) {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(new) => {
                let id = strings.push(text);
                new.insert(id);
                id
            }
        }
    }

    /// The id of a frame, adding it on first sight.
    pub fn intern_frame(&mut self, spec: &FrameSpec<'_>) -> FrameId {
        let frame = Frame {
            name: self.intern_str(spec.name),
            file: spec.file.map(|f| self.intern_str(f)),
            line: spec.line,
            module: spec.module.map(|m| self.intern_str(m)),
            address: spec.address,
            inlined: spec.inlined,
        };
        self.intern_frame_ids(frame)
    }

    /// The id of a frame whose texts this builder interned already ([`SessionBuilder::intern_str`]),
    /// adding it on first sight: for a caller that interns each text once rather than once per
    /// frame.
    pub fn intern_frame_ids(&mut self, frame: Frame) -> FrameId {
        let strings = self.session.strings.len();
        debug_assert!(
            [Some(frame.name), frame.file, frame.module]
                .iter()
                .flatten()
                .all(|id| id.index() < strings),
            "a text id of another builder"
        );
        // One hash and probe, found or not.
        let hasher = &self.hasher;
        let frames = &mut self.session.frames;
        match self.frames.entry(
            hasher.hash_one(frame),
            |id| frames.at(id.index()) == frame,
            |id| hasher.hash_one(frames.at(id.index())),
        ) {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(new) => {
                let id = FrameId(frames.len() as u32);
                frames.push(frame);
                new.insert(id);
                id
            }
        }
    }

    /// Adds a mapping (see [`Mapping`]); one equal to a mapping already added is not added again.
    pub fn push_mapping(&mut self, spec: &MappingSpec<'_>) {
        let mapping = Mapping {
            start: spec.start,
            limit: spec.limit,
            offset: spec.offset,
            path: self.intern_str(spec.path),
            build_id: spec.build_id.map(str::to_owned),
        };
        if !self.session.mappings.contains(&mapping) {
            self.session.mappings.push(mapping);
        }
    }

    /// The id of the stack `frame` called from `parent`, adding it on first sight.
    pub fn intern_stack(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        let node = StackNode { parent, frame };
        let hasher = &self.hasher;
        let stacks = &mut self.session.stacks;
        match self.stacks.entry(
            hasher.hash_one(node),
            |id| stacks[id.index()] == node,
            |id| hasher.hash_one(stacks[id.index()]),
        ) {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(new) => {
                let id = StackId(stacks.len() as u32);
                stacks.push(node);
                new.insert(id);
                id
            }
        }
    }

    /// The leaf id of a whole stack given root first, adding what is new.
    /// Returns `None` for an empty stack.
    pub fn intern_stack_path(&mut self, root_first: &[FrameId]) -> Option<StackId> {
        root_first.iter().fold(None, |parent, &frame| {
            Some(self.intern_stack(parent, frame))
        })
    }

    /// The index of the thread with OS id `tid`, adding it (or renaming it) with `name`, in
    /// the first process (the implicit one when no process was added).
    pub fn thread(&mut self, tid: u64, name: &str) -> ThreadIdx {
        self.thread_in(ProcessIdx(0), tid, name)
    }

    /// The index of the thread with OS id `tid` of `process`, adding it (or renaming and
    /// moving it) with `name`.
    pub fn thread_in(&mut self, process: ProcessIdx, tid: u64, name: &str) -> ThreadIdx {
        let name = self.intern_str(name);
        if let Some(&idx) = self.threads.get(&tid) {
            let thread = &mut self.session.threads[idx.index()];
            thread.name = name;
            thread.process = process;
            return idx;
        }
        let idx = ThreadIdx(self.session.threads.len() as u32);
        self.session.threads.push(Thread { tid, name, process });
        self.threads.insert(tid, idx);
        idx
    }

    /// Adds a process to the table (see [`Process`]); threads join it with
    /// [`SessionBuilder::thread_in`].
    pub fn push_process(&mut self, process: Process) -> ProcessIdx {
        self.session.processes.push(process);
        ProcessIdx(self.session.processes.len() as u32 - 1)
    }

    /// Declares the sample types every sample carries: `primary` (what [`Samples::weight`]
    /// holds) and further ones. A `samples` count among the extras ([`SampleType::is_sample_count`])
    /// is each row's number of samples and gets no column of its own. Call before pushing any
    /// sample.
    pub fn set_sample_types(&mut self, primary: SampleType, extra: Vec<SampleType>) {
        debug_assert!(
            self.session.samples.is_empty(),
            "set_sample_types after samples"
        );
        self.session.meta.sample_type = primary;
        self.session.meta.extra_sample_types = extra;
        self.session.samples.extra_weights = columns_for(&self.session.meta.extra_sample_types);
    }

    /// Adds a row with a weight for every sample type: `weights` holds the primary's and then
    /// those of the extra types that are not sample counts, in order (missing ones are 0). It
    /// stands for `multiplicity` samples; `state` says whether its thread was running or
    /// waiting (all rows or none should have one).
    pub fn push_sample_full(
        &mut self,
        stack: StackId,
        thread: ThreadIdx,
        time_ns: u64,
        weights: &[u64],
        multiplicity: u64,
        state: Option<SampleState>,
    ) {
        let mut rest = weights.iter().skip(1);
        for column in self.session.samples.extra_weights.iter_mut().flatten() {
            column.push(rest.next().copied().unwrap_or(0));
        }
        if let Some(state) = state {
            let samples = &mut self.session.samples;
            samples
                .state
                .resize(samples.stack.len(), SampleState::Running);
            samples.state.push(state);
        }
        self.push_samples(
            stack,
            thread,
            time_ns,
            weights.first().copied().unwrap_or(0),
            multiplicity,
        );
    }

    /// Adds one sample.
    pub fn push_sample(&mut self, stack: StackId, thread: ThreadIdx, time_ns: u64, weight: u64) {
        self.push_samples(stack, thread, time_ns, weight, 1);
    }

    /// Adds a row standing for `multiplicity` samples of one stack whose weights sum to
    /// `weight` (an aggregated format's sample).
    pub fn push_samples(
        &mut self,
        stack: StackId,
        thread: ThreadIdx,
        time_ns: u64,
        weight: u64,
        multiplicity: u64,
    ) {
        let samples = &mut self.session.samples;
        if self.untimed && time_ns != 0 {
            samples.time_ns = vec![0; samples.stack.len()];
            self.untimed = false;
        }
        if !samples.multiplicity.is_empty() || multiplicity != 1 {
            // The column is kept only once some row stands for other than one sample.
            samples.multiplicity.resize(samples.stack.len(), 1);
            samples.multiplicity.push(multiplicity);
        }
        // The context columns, once they exist, get a row for every sample (`None` here:
        // `set_last_sample_context` sets it).
        if !samples.scope.is_empty() {
            samples.scope.push(None);
        }
        if !samples.task.is_empty() {
            samples.task.push(None);
        }
        samples.stack.push(stack);
        samples.thread.push(thread);
        if !self.untimed {
            samples.time_ns.push(time_ns);
        }
        samples.weight.push(weight);
        let rows = samples.stack.len();
        for column in samples.extra_weights.iter_mut().flatten() {
            // A sample pushed with `push_sample(s)` has no extra weights: 0.
            column.resize(rows, 0);
        }
    }

    /// The id of a scope or mark call site, adding it on first sight.
    pub fn intern_site(
        &mut self,
        name: &str,
        file: Option<&str>,
        line: Option<u32>,
        kind: SiteKind,
    ) -> SiteIdx {
        let site = Site {
            name: self.intern_str(name),
            file: file.map(|f| self.intern_str(f)),
            line,
            kind,
        };
        let sites = &mut self.session.scopes.sites;
        *self.sites.entry(site).or_insert_with(|| {
            sites.push(site);
            SiteIdx(sites.len() as u32 - 1)
        })
    }

    /// A field of a span or mark, its texts interned.
    pub fn field(&mut self, key: &str, value: &str) -> Field {
        Field {
            key: self.intern_str(key),
            value: self.intern_str(value),
        }
    }

    /// Adds one execution of a scope. Its `parent`, when it has one, must have been pushed
    /// before it (the enclosing span starts first).
    pub fn push_span(&mut self, span: Span) -> SpanIdx {
        debug_assert!(
            span.parent
                .is_none_or(|p| p.index() < self.session.scopes.spans.len()),
            "a span's parent is pushed before it"
        );
        let spans = &mut self.session.scopes.spans;
        spans.push(span);
        SpanIdx(spans.len() as u32 - 1)
    }

    /// Adds one mark (an instant).
    pub fn push_mark(&mut self, mark: Mark) {
        self.session.scopes.marks.push(mark);
    }

    /// Counts scope or mark events the recorder had to drop (a full buffer).
    pub fn add_dropped_events(&mut self, n: u64) {
        let dropped = &mut self.session.scopes.dropped_events;
        *dropped = dropped.saturating_add(n);
    }

    /// The index of the task with id `id`, adding it (or renaming it) with `name`.
    pub fn intern_task(&mut self, id: u64, name: &str) -> TaskIdx {
        let name = self.intern_str(name);
        let tasks = &mut self.session.tasks.tasks;
        let idx = *self.tasks.entry(id).or_insert_with(|| {
            tasks.push(Task { id, name });
            TaskIdx(tasks.len() as u32 - 1)
        });
        tasks[idx.index()].name = name;
        idx
    }

    /// Adds one poll of a task.
    pub fn push_poll(&mut self, poll: Poll) {
        self.session.tasks.polls.push(poll);
    }

    /// Sets the scope and the task of the sample pushed last (see [`Samples::scope`] and
    /// [`Samples::task`]); the columns are created when the first sample has one.
    pub fn set_last_sample_context(&mut self, scope: Option<SpanIdx>, task: Option<TaskIdx>) {
        let samples = &mut self.session.samples;
        let Some(last) = samples.len().checked_sub(1) else {
            return;
        };
        if scope.is_some() || !samples.scope.is_empty() {
            samples.scope.resize(samples.len(), None);
            samples.scope[last] = scope;
        }
        if task.is_some() || !samples.task.is_empty() {
            samples.task.resize(samples.len(), None);
            samples.task[last] = task;
        }
    }

    /// The finished session.
    pub fn finish(mut self) -> Session {
        if self.untimed {
            let samples = &mut self.session.samples;
            samples.time_ns = vec![0; samples.stack.len()];
        }
        self.session
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_stores_each_distinct_thing_once() {
        let mut b = SessionBuilder::default();
        let main = b.intern_frame(&FrameSpec::named("main"));
        let work = b.intern_frame(&FrameSpec::named("work"));
        assert_eq!(b.intern_frame(&FrameSpec::named("main")), main);
        let s1 = b.intern_stack_path(&[main, work]).unwrap();
        let s2 = b.intern_stack_path(&[main, work]).unwrap();
        assert_eq!(s1, s2);
        let t = b.thread(7, "worker");
        b.push_sample(s1, t, 0, 10);
        b.push_sample(s2, t, 5, 20);
        let s = b.finish();
        assert_eq!(&s.strings[0], "");
        assert_eq!(s.frames.len(), 2);
        assert_eq!(s.stacks.len(), 2);
        assert_eq!(s.total_weight(), 30);
        assert_eq!(s.sample_count(), 2);
        let names: Vec<&str> = s.stack_frames(s1).map(|f| s.frame_name(f)).collect();
        assert_eq!(names, ["work", "main"]);
    }

    /// Issue 20: a pprof profile without per-sample times was drawn as one spike at 0 ms.
    #[test]
    fn r20_a_session_whose_times_are_all_zero_has_no_sample_times() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_samples(s, t, 0, 70, 7);
        b.push_sample(s, t, 0, 10);
        let untimed = b.finish();
        assert!(!untimed.has_sample_times());
        let mut timed = untimed.clone();
        timed.samples.time_ns[1] = 5;
        assert!(timed.has_sample_times());
        assert!(!Session::default().has_sample_times());
    }

    #[test]
    fn rows_standing_for_several_samples_count_as_that_many() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_sample(s, t, 0, 10);
        b.push_samples(s, t, 0, 70, 7);
        b.push_sample(s, t, 0, 10);
        let s = b.finish();
        assert_eq!(s.samples.multiplicity, [1, 7, 1]);
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.sample_count(), 9);
    }

    #[test]
    fn frames_find_their_mapping_by_address() {
        let mut b = SessionBuilder::default();
        let spec = MappingSpec {
            start: 0x1000,
            limit: 0x2000,
            offset: 0x400,
            path: "/bin/demo",
            build_id: Some("abcd"),
        };
        b.push_mapping(&spec);
        b.push_mapping(&spec);
        let s = b.finish();
        assert_eq!(s.mappings.len(), 1);
        let m = s.mapping_at(0x1fff).unwrap();
        assert_eq!((s.str(m.path), m.offset), ("/bin/demo", 0x400));
        assert_eq!(m.build_id.as_deref(), Some("abcd"));
        assert!(s.mapping_at(0x2000).is_none() && s.mapping_at(0xfff).is_none());
    }

    #[test]
    fn empty_stack_path_has_no_id() {
        let mut b = SessionBuilder::default();
        assert_eq!(b.intern_stack_path(&[]), None);
    }

    #[test]
    fn a_thread_seen_again_keeps_its_index_and_takes_the_new_name() {
        let mut b = SessionBuilder::default();
        let a = b.thread(1, "old");
        assert_eq!(b.thread(1, "new"), a);
        let s = b.finish();
        assert_eq!(s.str(s.threads[0].name), "new");
    }
}
