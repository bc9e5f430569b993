//! Building a [`Session`]: strings, frames, stacks, threads, scope sites and tasks interned as
//! they come, so each distinct one is stored once; samples appended column by column.

use hashbrown::hash_table::{Entry, HashTable};
use std::hash::BuildHasher;

use super::ids::{FrameId, ProcessIdx, SiteIdx, SpanIdx, StackId, StrId, TaskIdx, ThreadIdx};
use super::model::{
    Mapping, Metadata, Process, SampleState, SampleType, Samples, Session, StackNode, Thread,
};
use super::scopes::{Field, Mark, Poll, Site, SiteKind, Span, Task};
use super::tables::Frame;

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
    /// samples).
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

    /// A pprof profile without per-sample times was drawn as one spike at 0 ms.
    #[test]
    fn a_session_whose_times_are_all_zero_has_no_sample_times() {
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
