//! pprof's `profile.proto`, gzip-compressed: what `go tool pprof`, Pyroscope and Parca read.
//!
//! Each distinct (stack, thread) becomes one `Sample` with two values, the sample count and the
//! summed weight, a `thread` label, and `task` and `scope` labels when it was taken in an async
//! task or inside instrumented scopes (see `labels.rs`). Each run of inlined frames plus the frame they were
//! inlined into becomes one `Location` whose `line` entries list the inlined functions first and
//! the caller last. Every location lies in a `Mapping` whose `has_*` flags say it is already
//! symbolized, so pprof does not try to symbolize it again: the session's own mappings (the
//! objects the sampler saw loaded, or an imported profile's) with their file offsets and build
//! IDs, so `go tool pprof -disasm` finds the binaries; for addresses outside them, one mapping per
//! module spanning the addresses seen.

mod labels;
pub(crate) mod proto;

use crate::error::{Error, Result};
use crate::session::{FrameId, Session, StackId, StrId, ThreadIdx};
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::io::Write;

/// The name of the count sample type, first in every profile `prof` writes.
pub const COUNT_TYPE: (&str, &str) = ("samples", "count");

/// The pprof sample type of the session's weights: `cpu/nanoseconds`, `cycles/count`, ...
pub fn weight_type(session: &Session) -> (&str, &'static str) {
    let t = &session.meta.sample_type;
    (&t.name, t.unit.name())
}

/// Writes `session` as a gzipped pprof profile; an allocation profile in Go's heap shape
/// ([`GoHeap`]: `alloc_space`, `inuse_space`, …, as `go tool pprof -sample_index` and profiling
/// backends name them), showing by default what the session shows.
pub fn write_pprof(session: &Session, out: impl Write) -> Result<()> {
    write_pprof_with(session, &PprofOptions::for_session(session), out)
}

/// How [`write_pprof_with`] writes a profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PprofOptions {
    /// For an allocation profile ([`Mode::Alloc`](crate::Mode::Alloc)): write its sample types as
    /// Go's heap profile names them, which `go tool pprof` and profiling backends (Pyroscope,
    /// Parca) read as a heap profile. `None` writes prof's own names.
    pub go_heap: Option<GoHeap>,
}

impl PprofOptions {
    /// How [`write_pprof`] writes `session`: an allocation profile (one with prof's
    /// `alloc_bytes` type) in Go's heap shape, its default type the one the session shows
    /// (`inuse_space` when it shows what is still in use, else `alloc_space`), with the sampling
    /// interval unknown (the period is 0: sessions do not keep it); any other as it is.
    pub fn for_session(session: &Session) -> Self {
        let types = session.sample_types();
        if !types.iter().any(|t| t.name == "alloc_bytes") {
            return PprofOptions::default();
        }
        let default = match session.meta.sample_type.name.starts_with("inuse") {
            true => GoHeapIndex::InuseSpace,
            false => GoHeapIndex::AllocSpace,
        };
        PprofOptions::default().go_heap(GoHeap {
            default,
            interval_bytes: 0,
        })
    }

    /// Writes an allocation profile in Go's heap shape ([`PprofOptions::go_heap`]).
    pub fn go_heap(mut self, heap: GoHeap) -> Self {
        self.go_heap = Some(heap);
        self
    }
}

/// Go's heap profile shape: sample types `alloc_objects/count`, `alloc_space/bytes`,
/// `inuse_objects/count`, `inuse_space/bytes` (prof's `alloc_bytes` and `inuse_bytes` are the
/// `_space` ones; its `samples` count is left out), and a `space/bytes` period of the sampling
/// interval (Go's `MemProfileRate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoHeap {
    /// The sample type shown by default.
    pub default: GoHeapIndex,
    /// The mean bytes between two allocation samples the profile was taken with
    /// (`prof::Options::alloc_interval_bytes`).
    pub interval_bytes: u64,
}

/// Which sample type of a [`GoHeap`] profile is shown by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoHeapIndex {
    /// `inuse_space`: what is still allocated at the end (Go's `/debug/pprof/heap`).
    InuseSpace,
    /// `alloc_space`: everything allocated (Go's `/debug/pprof/allocs`).
    AllocSpace,
}

impl GoHeapIndex {
    /// The sample type's name, `inuse_space` or `alloc_space`.
    pub fn name(self) -> &'static str {
        match self {
            GoHeapIndex::InuseSpace => "inuse_space",
            GoHeapIndex::AllocSpace => "alloc_space",
        }
    }
}

/// Go's heap sample types: its name, prof's name for the same values, the unit.
const GO_HEAP: [(&str, &str, &str); 4] = [
    ("alloc_objects", "alloc_objects", "count"),
    ("alloc_space", "alloc_bytes", "bytes"),
    ("inuse_objects", "inuse_objects", "count"),
    ("inuse_space", "inuse_bytes", "bytes"),
];

/// Writes `session` as a gzipped pprof profile, with `options`.
pub fn write_pprof_with(session: &Session, options: &PprofOptions, out: impl Write) -> Result<()> {
    let mut gz = GzEncoder::new(out, Compression::default());
    encode(session, options, &mut gz).map_err(Error::Write)?;
    gz.finish().map_err(Error::Write)?;
    Ok(())
}

/// The uncompressed profile message for `session`, decoded (for tests).
#[cfg(test)]
pub(crate) fn to_profile(session: &Session) -> proto::Profile {
    to_profile_with(session, &PprofOptions::default())
}

/// The uncompressed profile message for `session` written with `options`, decoded (for tests).
#[cfg(test)]
pub(crate) fn to_profile_with(session: &Session, options: &PprofOptions) -> proto::Profile {
    let mut bytes = Vec::new();
    encode(session, options, &mut bytes).expect("a vector takes every write");
    proto::Profile::decode(&bytes[..]).expect("prof's own encoding decodes")
}

/// Writes the uncompressed profile message for `session` to `out`: sample types
/// `samples/count` first, then every sample type of the session (a `samples` count among them is
/// not written twice), with the session's primary type as `default_sample_type`, so `go tool
/// pprof -sample_index=NAME` picks any; or Go's heap sample types ([`PprofOptions::go_heap`]).
///
/// Two passes over the grouped samples, so that no table is held encoded: the first numbers
/// every location, function, mapping and string in the order the samples meet them, keeping
/// only what each id stands for (a frame, a name, a string of the session); the second encodes
/// the samples to `out` a MiB at a time, and the tables follow, made again from the session as
/// they are written. The fields are in field-number order, as prost encodes a whole `Profile`,
/// so the bytes are the same. (Holding the encoded tables took 50 MB for a million distinct
/// functions, and messages several times that.)
fn encode(session: &Session, options: &PprofOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let mut enc = Encoder::new(session);
    // Which value of a grouped sample ([count, primary, extra 0, extra 1, ...]) each pprof
    // sample type takes (none: 0).
    let mut columns = vec![Some(0usize)];
    let mut types = vec![enc.value_type(COUNT_TYPE)];
    let mut primary = types[0];
    for (k, t) in session.sample_types().into_iter().enumerate() {
        if t.is_sample_count() {
            if k == 0 {
                // Folded stacks: the weights are the counts; the one value is the weight.
                columns[0] = Some(1);
            }
            continue;
        }
        let value = enc.value_type((&t.name, t.unit.name()));
        if k == 0 {
            primary = value;
        }
        columns.push(Some(k + 1));
        types.push(value);
    }
    enc.profile.sample_type = types;
    enc.profile.default_sample_type = primary.r#type;
    enc.profile.period_type = Some(primary);
    let meta = &session.meta;
    let interval = match meta.achieved_interval_ns {
        0 => meta.requested_interval_ns,
        n => n,
    };
    enc.profile.period = i64::try_from(interval).unwrap_or(i64::MAX);
    if let Some(heap) = options.go_heap {
        let ours: Vec<&str> = session
            .sample_types()
            .into_iter()
            .map(|t| t.name.as_str())
            .collect();
        columns = GO_HEAP
            .iter()
            .map(|(_, prof_name, _)| ours.iter().position(|n| n == prof_name).map(|k| k + 1))
            .collect();
        enc.profile.sample_type = GO_HEAP
            .iter()
            .map(|&(go, _, unit)| enc.value_type((go, unit)))
            .collect();
        enc.profile.default_sample_type = enc.string(heap.default.name());
        enc.profile.period_type = Some(enc.value_type(("space", "bytes")));
        enc.profile.period = i64::try_from(heap.interval_bytes).unwrap_or(i64::MAX);
    }
    enc.profile.duration_nanos = i64::try_from(meta.duration_ns).unwrap_or(i64::MAX);
    enc.profile.time_nanos = meta.start_time_ns.unwrap_or(0);
    let title = super::title(session);
    let comment = enc.string(&title);
    enc.profile.comment = vec![comment];
    let (of_sample, contexts) = labels::sample_contexts(session);
    let groups = Groups::new(session, &of_sample);
    // The locations and labels of group `g`'s samples (of its first sample, whose stack, thread
    // and context are the group's).
    let ids = |enc: &mut Encoder, g: usize| {
        let i = groups.first[g] as usize;
        let context = &contexts[of_sample.get(i).copied().unwrap_or(0) as usize];
        enc.sample_ids(session.samples.stack[i], session.samples.thread[i], context)
    };
    // The first pass numbers what the samples refer to.
    for g in 0..groups.first.len() {
        ids(&mut enc, g);
    }
    // The sample types (field 1) are known: the samples (field 2) follow them.
    let mut chunk = enc.sample_types();
    let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut sums = Vec::with_capacity(groups.stride);
    for g in 0..groups.first.len() {
        groups.sums_into(session, g, &mut sums);
        let (location_id, label) = ids(&mut enc, g);
        let sample = proto::Sample {
            location_id,
            value: columns
                .iter()
                .map(|c| clamp(c.map_or(0, |c| sums[c])))
                .collect(),
            label,
        };
        prost::encoding::message::encode(2, &sample, &mut chunk);
        flush_full(&mut chunk, out)?;
    }
    drop(groups);
    enc.finish(chunk, out)
}

/// Bytes of encoded samples and tables written at a time.
const CHUNK: usize = 1 << 20;

/// Writes `chunk` to `out` and empties it once it holds [`CHUNK`] bytes.
fn flush_full(chunk: &mut Vec<u8>, out: &mut dyn Write) -> std::io::Result<()> {
    if chunk.len() >= CHUNK {
        out.write_all(chunk)?;
        chunk.clear();
    }
    Ok(())
}

/// The samples grouped per (stack, thread, context), in order of first appearance (the
/// context an index into [`labels::sample_contexts`]'s).
struct Groups {
    /// The first sample of each group, which gives its stack, thread and context.
    first: Vec<u32>,
    /// Each group's sums, `stride` per group: the number of samples, the primary weight and
    /// then each extra type's weight. Empty when every group has one sample (imported folded
    /// stacks and pprof profiles are grouped already): its values are the sums.
    sums: Vec<u64>,
    stride: usize,
}

impl Groups {
    fn new(session: &Session, contexts: &[u32]) -> Groups {
        let samples = &session.samples;
        let context = |i: usize| contexts.get(i).copied().unwrap_or(0);
        let key = |i: usize| (samples.stack[i], samples.thread[i], context(i));
        // The group of each stack's first (thread, context), by stack (most stacks are sampled
        // on one thread), and of the others in a map.
        let mut of_stack: Vec<u32> = vec![u32::MAX; session.stacks.len()];
        let mut others: foldhash::HashMap<(StackId, ThreadIdx, u32), u32> = Default::default();
        let mut first: Vec<u32> = Vec::new();
        // The group of sample `i`, made when new; whether it was new.
        let mut group_of = |i: usize, first: &mut Vec<u32>| {
            let (stack, thread, context) = key(i);
            // Samples are counted with u32 in a session, and so are groups.
            let new_group = |first: &mut Vec<u32>| {
                first.push(i as u32);
                (first.len() - 1) as u32
            };
            match of_stack[stack.index()] {
                u32::MAX => {
                    let g = new_group(first);
                    of_stack[stack.index()] = g;
                    (g, true)
                }
                g if key(first[g as usize] as usize) == (stack, thread, context) => (g, false),
                _ => match others.entry((stack, thread, context)) {
                    Entry::Occupied(e) => (*e.get(), false),
                    Entry::Vacant(e) => (*e.insert(new_group(first)), true),
                },
            }
        };
        let mut grouped = false;
        for i in 0..samples.len() {
            grouped |= !group_of(i, &mut first).1;
        }
        let stride = session.meta.extra_sample_types.len() + 2;
        let mut sums = Vec::new();
        if grouped {
            sums = vec![0; first.len() * stride];
            for i in 0..samples.len() {
                let g = group_of(i, &mut first).0 as usize;
                let sums = &mut sums[g * stride..(g + 1) * stride];
                for (sum, value) in sums.iter_mut().zip(values(session, i)) {
                    *sum += value;
                }
            }
        }
        Groups {
            first,
            sums,
            stride,
        }
    }

    /// Group `g`'s sums into `out`: the number of samples, the primary weight and each extra
    /// weight.
    fn sums_into(&self, session: &Session, g: usize, out: &mut Vec<u64>) {
        out.clear();
        match self.sums.is_empty() {
            true => out.extend(values(session, self.first[g] as usize)),
            false => out.extend_from_slice(&self.sums[g * self.stride..(g + 1) * self.stride]),
        }
    }
}

/// Sample `i`'s values: the number of samples it stands for, its weight and each extra weight.
fn values(session: &Session, i: usize) -> impl Iterator<Item = u64> + '_ {
    let samples = &session.samples;
    let extra = (0..session.meta.extra_sample_types.len()).map(move |k| samples.extra_weight(k, i));
    [samples.multiplicity(i), samples.weight[i]]
        .into_iter()
        .chain(extra)
}

/// Numbers the profile's strings, functions, locations and mappings, each once, in the order
/// they are first asked for, and writes the tables from what each id stands for.
struct Encoder<'s> {
    session: &'s Session,
    /// The profile's fields other than the four tables below.
    profile: proto::Profile,
    /// What each string index stands for: one of the session's strings, or with [`EXTRA`] set
    /// one of `extras` (the few strings prof adds: sample types, label keys, ...).
    strings: Vec<u32>,
    extras: Vec<String>,
    /// String indices, hashed by their text, which is read back from the session or `extras`
    /// (a map keyed by the texts took 40 bytes a string).
    by_text: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// What each function id (less one) stands for: a name and a file ([`NO_FILE`]: none), in
    /// 8 bytes rather than an `Option`'s 12.
    functions: Vec<(StrId, u32)>,
    /// Function id per (name, file) of the functions with a file.
    with_file: foldhash::HashMap<(StrId, Option<StrId>), u32>,
    /// Function id of the functions without a file (0: none yet), by name: imports name most.
    fileless: Vec<u32>,
    /// What each location id (less one) stands for: a frame's index, or with [`EXTRA`] set an
    /// index into `runs`.
    locations: Vec<u32>,
    /// Location id of each frame that makes a location alone (0: none yet), by frame index.
    single: Vec<u32>,
    /// The runs of several frames (inlined frames, then the frame they were inlined into) that
    /// make a location, and the location id of each.
    runs: Vec<Vec<FrameId>>,
    of_run: HashMap<Vec<FrameId>, u64>,
    /// Mapping index in `profile.mapping` per module (None: frames with no module), for
    /// addresses outside the session's mappings.
    mappings: HashMap<Option<StrId>, usize>,
    /// The session's own mappings as `(start, limit, id)`, sorted by start.
    real: Vec<(u64, u64, u64)>,
}

/// The bit that marks an index into the second of two tables (see [`Encoder::strings`]).
const EXTRA: u32 = 1 << 31;

/// Room for the strings prof adds to the session's before growing: sample types, label keys,
/// ... (a name per unnamed thread may go past it).
const EXTRAS: usize = 64;

/// The text of string index `i` of an [`Encoder`] (its `strings`, `extras` and session given
/// apart, for when the encoder is borrowed in parts).
fn string_text<'a>(strings: &[u32], extras: &'a [String], session: &'a Session, i: u32) -> &'a str {
    match strings[i as usize] {
        k if k & EXTRA != 0 => &extras[(k & !EXTRA) as usize],
        k => session.str(StrId(k)),
    }
}

/// The file of a function without one (see [`Encoder::functions`]).
const NO_FILE: u32 = u32::MAX;

impl<'s> Encoder<'s> {
    fn new(session: &'s Session) -> Self {
        let mut enc = Encoder {
            session,
            profile: proto::Profile::default(),
            // Sized for the most there can be, so they never grow by copying: the system gives
            // their pages only as they are written.
            strings: Vec::with_capacity(session.strings.len() + EXTRAS),
            extras: Vec::new(),
            by_text: hashbrown::HashTable::with_capacity(session.strings.len() + EXTRAS),
            hasher: Default::default(),
            functions: Vec::with_capacity(session.frames.len()),
            with_file: Default::default(),
            fileless: vec![0; session.strings.len()],
            locations: Vec::with_capacity(session.frames.len()),
            single: vec![0; session.frames.len()],
            runs: Vec::new(),
            of_run: HashMap::new(),
            mappings: HashMap::new(),
            real: Vec::new(),
        };
        enc.string("");
        // The program's own mapping first: pprof has no field for the program, and `go tool
        // pprof` (and prof's reader) name it after the first mapping's file.
        let program = session.meta.program.as_str();
        let mut mappings: Vec<_> = session.mappings.iter().collect();
        mappings.sort_by_key(|m| session.str(m.path) != program);
        for m in mappings {
            let id = enc.profile.mapping.len() as u64 + 1;
            let filename = enc.session_string(m.path);
            let build_id = m.build_id.as_deref().map_or(0, |b| enc.string(b));
            enc.profile.mapping.push(proto::Mapping {
                id,
                memory_start: m.start,
                memory_limit: m.limit,
                file_offset: m.offset,
                filename,
                build_id,
                has_functions: true,
                has_filenames: true,
                has_line_numbers: true,
                has_inline_frames: true,
            });
            enc.real.push((m.start, m.limit, id));
        }
        enc.real.sort_unstable();
        enc
    }

    /// The text of string index `i`.
    fn text(&self, i: u32) -> &str {
        string_text(&self.strings, &self.extras, self.session, i)
    }

    /// The index of the string `text`, if it has one.
    fn index_of(&self, text: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(text.as_bytes());
        self.by_text.find(hash, |&i| self.text(i) == text).copied()
    }

    /// The index of the string `text`, `source` making it when it is new.
    fn intern(&mut self, text: &str, source: impl FnOnce(&mut Self) -> u32) -> i64 {
        if let Some(i) = self.index_of(text) {
            return i64::from(i);
        }
        let hash = self.hasher.hash_one(text.as_bytes());
        let source = source(self);
        // The profile's strings are the session's and a few more, far fewer than 2^31.
        let i = u32::try_from(self.strings.len()).expect("fewer than 2^31 strings");
        self.strings.push(source);
        let Self {
            by_text,
            hasher,
            strings,
            extras,
            session,
            ..
        } = self;
        let text_of = |i| string_text(strings, extras, session, i);
        by_text.insert_unique(hash, i, |&i| hasher.hash_one(text_of(i).as_bytes()));
        i64::from(i)
    }

    /// The index of a string prof adds.
    fn string(&mut self, text: &str) -> i64 {
        self.intern(text, |enc| {
            enc.extras.push(text.to_owned());
            EXTRA | (enc.extras.len() - 1) as u32
        })
    }

    /// The index of one of the session's strings.
    fn session_string(&mut self, id: StrId) -> i64 {
        let session = self.session;
        self.intern(session.str(id), |_| id.index() as u32)
    }

    fn value_type(&mut self, (kind, unit): (&str, &str)) -> proto::ValueType {
        proto::ValueType {
            r#type: self.string(kind),
            unit: self.string(unit),
        }
    }

    /// A sample's location ids and labels, numbering what is new.
    fn sample_ids(
        &mut self,
        stack: StackId,
        thread: ThreadIdx,
        (task, scopes): &labels::Context,
    ) -> (Vec<u64>, Vec<proto::Label>) {
        let location_id = self.stack_locations(stack);
        let thread = &self.session.threads[thread.index()];
        let mut label = vec![
            proto::Label {
                key: self.string("thread"),
                str: match self.session.str(thread.name) {
                    "" => self.string(&thread.tid.to_string()),
                    _ => self.session_string(thread.name),
                },
                ..proto::Label::default()
            },
            proto::Label {
                key: self.string("thread_id"),
                num: i64::try_from(thread.tid).unwrap_or(i64::MAX),
                ..proto::Label::default()
            },
        ];
        let named = task.iter().map(|&t| ("task", t));
        for (key, value) in named.chain(scopes.iter().map(|&s| ("scope", s))) {
            label.push(proto::Label {
                key: self.string(key),
                str: self.session_string(value),
                ..proto::Label::default()
            });
        }
        (location_id, label)
    }

    /// The location ids of a stack, leaf first: each run of inlined frames ends at (and
    /// includes) the first frame that was not inlined.
    fn stack_locations(&mut self, stack: StackId) -> Vec<u64> {
        let frames: Vec<FrameId> = self.session.stack_frames(stack).collect();
        let mut ids = Vec::new();
        let mut run = Vec::new();
        for (i, &frame) in frames.iter().enumerate() {
            run.push(frame);
            if !self.session.frame(frame).inlined || i + 1 == frames.len() {
                ids.push(self.location(std::mem::take(&mut run)));
            }
        }
        ids
    }

    fn location(&mut self, run: Vec<FrameId>) -> u64 {
        let found = match run[..] {
            [frame] => u64::from(self.single[frame.index()]),
            _ => self.of_run.get(&run).copied().unwrap_or(0),
        };
        if found != 0 {
            return found;
        }
        // Numbered in the order pprof's lines list them: the mapping, then each line's function.
        let caller = self.session.frame(*run.last().expect("a run has a frame"));
        self.mapping(caller.module, caller.address);
        for &f in &run {
            let frame = self.session.frame(f);
            self.function(frame.name, frame.file);
        }
        // Ids count frames, which a session indexes with u32.
        let id = self.locations.len() as u64 + 1;
        match run[..] {
            [frame] => {
                self.single[frame.index()] = id as u32;
                self.locations.push(frame.index() as u32);
            }
            _ => {
                self.locations.push(EXTRA | self.runs.len() as u32);
                self.runs.push(run.clone());
                self.of_run.insert(run, id);
            }
        }
        id
    }

    /// The location with id `id`, as written.
    fn location_message(&self, id: u64) -> proto::Location {
        let one;
        let run: &[FrameId] = match self.locations[id as usize - 1] {
            k if k & EXTRA != 0 => &self.runs[(k & !EXTRA) as usize],
            k => {
                one = [FrameId(k)];
                &one
            }
        };
        let caller = self.session.frame(*run.last().expect("a run has a frame"));
        let line = run
            .iter()
            .map(|&f| {
                let frame = self.session.frame(f);
                proto::Line {
                    function_id: self.function_id(frame.name, frame.file),
                    line: i64::from(frame.line.unwrap_or(0)),
                }
            })
            .collect();
        proto::Location {
            id,
            mapping_id: self.mapping_id(caller.module, caller.address).unwrap_or(0),
            address: caller.address.unwrap_or(0),
            line,
        }
    }

    fn function(&mut self, name: StrId, file: Option<StrId>) {
        if self.function_id(name, file) != 0 {
            return;
        }
        self.session_string(name);
        if let Some(f) = file {
            self.session_string(f);
        }
        self.functions.push((name, file.map_or(NO_FILE, |f| f.0)));
        // Ids count functions, fewer than the session's frames.
        let id = self.functions.len() as u32;
        match file {
            None => self.fileless[name.index()] = id,
            Some(_) => {
                self.with_file.insert((name, file), id);
            }
        }
    }

    /// The id of the function (name, file), 0 when it has none yet.
    fn function_id(&self, name: StrId, file: Option<StrId>) -> u64 {
        u64::from(match file {
            None => self.fileless[name.index()],
            Some(_) => self.with_file.get(&(name, file)).copied().unwrap_or(0),
        })
    }

    /// The function with id `id`, as written.
    fn function_message(&self, id: u64) -> proto::Function {
        let (name, file) = self.functions[id as usize - 1];
        let file = (file != NO_FILE).then_some(StrId(file));
        let index = |s: &str| {
            i64::from(
                self.index_of(s)
                    .expect("the first pass interned every name"),
            )
        };
        let name = index(self.session.str(name));
        proto::Function {
            id,
            name,
            system_name: name,
            filename: file.map_or(0, |f| index(self.session.str(f))),
            start_line: 0,
        }
    }

    /// The id of the session's mapping holding `address`, or else of the mapping made for
    /// `module`; `None` when there is none yet.
    fn mapping_id(&self, module: Option<StrId>, address: Option<u64>) -> Option<u64> {
        if let Some(id) = self.real_mapping(address) {
            return Some(id);
        }
        // A mapping's id is its place in `profile.mapping`, plus one.
        Some(*self.mappings.get(&module)? as u64 + 1)
    }

    /// The id of the session's mapping holding `address`, if one does.
    fn real_mapping(&self, address: Option<u64>) -> Option<u64> {
        let address = address?;
        let after = self.real.partition_point(|&(start, _, _)| start <= address);
        let &(_, limit, id) = &self.real[after.checked_sub(1)?];
        (address < limit).then_some(id)
    }

    /// Numbers the mapping of `address` in `module` ([`Encoder::mapping_id`]): a mapping made
    /// for the module when no mapping of the session holds it, widened to cover `address`.
    fn mapping(&mut self, module: Option<StrId>, address: Option<u64>) {
        if self.real_mapping(address).is_some() {
            return;
        }
        let slot = match self.mappings.get(&module) {
            Some(&slot) => slot,
            None => {
                let filename = match module {
                    Some(m) => self.session_string(m),
                    None if !self.session.meta.program.is_empty() => {
                        let session = self.session;
                        self.string(&session.meta.program)
                    }
                    None => self.string("[unknown]"),
                };
                let slot = self.profile.mapping.len();
                self.profile.mapping.push(proto::Mapping {
                    id: slot as u64 + 1,
                    memory_start: u64::MAX,
                    filename,
                    has_functions: true,
                    has_filenames: true,
                    has_line_numbers: true,
                    has_inline_frames: true,
                    ..proto::Mapping::default()
                });
                self.mappings.insert(module, slot);
                slot
            }
        };
        let mapping = &mut self.profile.mapping[slot];
        if let Some(address) = address {
            mapping.memory_start = mapping.memory_start.min(address);
            mapping.memory_limit = mapping.memory_limit.max(address.saturating_add(1));
        }
    }

    /// The encoded `sample_type` field (the first), taken out of the profile's other fields.
    fn sample_types(&mut self) -> Vec<u8> {
        proto::Profile {
            sample_type: std::mem::take(&mut self.profile.sample_type),
            ..proto::Profile::default()
        }
        .encode_to_vec()
    }

    /// Writes `chunk` (the samples not yet written) and the fields that follow the samples,
    /// in field-number order: mappings, locations, functions, strings and the other fields.
    fn finish(mut self, mut chunk: Vec<u8>, out: &mut dyn Write) -> std::io::Result<()> {
        for mapping in &mut self.profile.mapping {
            if mapping.memory_start == u64::MAX {
                mapping.memory_start = 0;
            }
        }
        let mappings = proto::Profile {
            mapping: std::mem::take(&mut self.profile.mapping),
            ..proto::Profile::default()
        };
        mappings
            .encode(&mut chunk)
            .expect("a vector takes every write");
        for id in 1..=self.locations.len() as u64 {
            prost::encoding::message::encode(4, &self.location_message(id), &mut chunk);
            flush_full(&mut chunk, out)?;
        }
        for id in 1..=self.functions.len() as u64 {
            prost::encoding::message::encode(5, &self.function_message(id), &mut chunk);
            flush_full(&mut chunk, out)?;
        }
        for i in 0..self.strings.len() as u32 {
            let text = self.text(i);
            prost::encoding::encode_key(6, prost::encoding::WireType::LengthDelimited, &mut chunk);
            prost::encoding::encode_varint(text.len() as u64, &mut chunk);
            chunk.extend_from_slice(text.as_bytes());
            flush_full(&mut chunk, out)?;
        }
        self.profile
            .encode(&mut chunk)
            .expect("a vector takes every write");
        out.write_all(&chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn decoded() -> proto::Profile {
        let mut gz = Vec::new();
        write_pprof(&crate::export::fixture::session(), &mut gz).unwrap();
        let mut bytes = Vec::new();
        GzDecoder::new(&gz[..]).read_to_end(&mut bytes).unwrap();
        proto::Profile::decode(&bytes[..]).unwrap()
    }

    fn function_name(p: &proto::Profile, id: u64) -> &str {
        let f = p.function.iter().find(|f| f.id == id).unwrap();
        &p.string_table[f.name as usize]
    }

    /// Go's heap profile shape (`/debug/pprof/heap` and `allocs`, and pushed alloc windows):
    /// its four sample types in its order with prof's values under them, the default asked
    /// for, and a `space/bytes` period of the sampling interval.
    #[test]
    fn an_allocation_profile_has_go_heap_sample_types() {
        use crate::session::{FrameSpec, Metadata, Mode, SessionBuilder};
        let mut b = SessionBuilder::new(Metadata {
            mode: Mode::Alloc,
            sample_type: Mode::Alloc.sample_type(),
            extra_sample_types: Mode::Alloc.extra_sample_types(),
            ..Metadata::default()
        });
        let main = b.intern_frame(&FrameSpec::named("main"));
        let stack = b.intern_stack_path(&[main]).unwrap();
        let thread = b.thread(1, "main");
        // alloc_bytes, alloc_objects, inuse_bytes, inuse_objects.
        b.push_sample_full(stack, thread, 0, &[1000, 3, 400, 2], 1, None);
        let session = b.finish();
        let heap = |default| PprofOptions {
            go_heap: Some(GoHeap {
                default,
                interval_bytes: 512 * 1024,
            }),
        };
        let p = to_profile_with(&session, &heap(GoHeapIndex::InuseSpace));
        let s = |i: i64| p.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("alloc_objects", "count"),
                ("alloc_space", "bytes"),
                ("inuse_objects", "count"),
                ("inuse_space", "bytes")
            ]
        );
        assert_eq!(p.sample[0].value, [3, 1000, 2, 400]);
        assert_eq!(s(p.default_sample_type), "inuse_space");
        assert_eq!(p.period, 512 * 1024);
        let period_type = p.period_type.unwrap();
        assert_eq!(
            (s(period_type.r#type), s(period_type.unit)),
            ("space", "bytes")
        );
        let p = to_profile_with(&session, &heap(GoHeapIndex::AllocSpace));
        assert_eq!(
            p.string_table[p.default_sample_type as usize],
            "alloc_space"
        );
        // Without the option, prof's own names.
        let p = to_profile(&session);
        assert_eq!(
            p.string_table[p.default_sample_type as usize],
            "alloc_bytes"
        );
    }

    #[test]
    fn header_has_empty_first_string_two_sample_types_and_period() {
        let p = decoded();
        assert_eq!(p.string_table[0], "");
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| {
                let s = |i: i64| p.string_table[i as usize].as_str();
                (s(t.r#type), s(t.unit))
            })
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        assert_eq!(p.period, 1_000_000);
        assert!(p.sample.iter().all(|s| s.value.len() == 2));
    }

    #[test]
    fn inlined_frames_share_one_location_with_the_caller_last() {
        let p = decoded();
        // Samples are grouped per (stack, thread): hot on main, hot on worker, idle, other.
        assert_eq!(p.sample.len(), 4);
        assert_eq!(p.sample[0].value, [3, 300]);
        let leaf = p.sample[0].location_id[0];
        let loc = p.location.iter().find(|l| l.id == leaf).unwrap();
        assert_eq!(loc.address, 0x2010);
        let lines: Vec<&str> = loc
            .line
            .iter()
            .map(|l| function_name(&p, l.function_id))
            .collect();
        assert_eq!(lines, ["hash", "work"]);
        assert_eq!(p.sample[0].location_id.len(), 2, "hash+work, then main");
        // The hot stack on the worker reuses the same locations.
        assert_eq!(p.sample[1].location_id, p.sample[0].location_id);
    }

    #[test]
    fn mappings_cover_their_addresses_and_say_they_are_symbolized() {
        let p = decoded();
        assert_eq!(p.mapping.len(), 2);
        for loc in &p.location {
            let m = p.mapping.iter().find(|m| m.id == loc.mapping_id).unwrap();
            assert!(m.memory_start <= loc.address && loc.address < m.memory_limit);
            assert!(m.has_functions && m.has_filenames && m.has_line_numbers);
            assert!(m.has_inline_frames);
        }
    }

    #[test]
    fn the_sessions_mappings_are_written_with_offsets_and_build_ids() {
        let mut session = crate::export::fixture::session();
        // The fixture's work frames are at 0x2010 and 0x2020, main at 0x1000, idle at 0x7000.
        let path = session.strings.len() as u32;
        session.strings.push("/usr/bin/demo");
        session.mappings.push(crate::session::Mapping {
            start: 0x2000,
            limit: 0x3000,
            offset: 0x1000,
            path: crate::session::StrId(path),
            build_id: Some("00ff".into()),
        });
        let p = to_profile(&session);
        let s = |i: i64| p.string_table[i as usize].as_str();
        let m = &p.mapping[0];
        assert_eq!((m.id, m.memory_start, m.memory_limit), (1, 0x2000, 0x3000));
        assert_eq!(
            (m.file_offset, s(m.filename), s(m.build_id)),
            (0x1000, "/usr/bin/demo", "00ff")
        );
        for loc in &p.location {
            if (0x2000..0x3000).contains(&loc.address) {
                assert_eq!(loc.mapping_id, 1, "{loc:?}");
                continue;
            }
            let other = p.mapping.iter().find(|m| m.id == loc.mapping_id).unwrap();
            assert_ne!(other.id, 1, "{loc:?}");
            assert!(other.memory_limit <= 0x2000 || other.memory_start >= 0x3000);
        }
    }

    #[test]
    fn each_sample_is_labelled_with_its_thread() {
        let p = decoded();
        let s = |i: i64| p.string_table[i as usize].as_str();
        let thread_of = |sample: &proto::Sample| {
            let label = sample.label.iter().find(|l| s(l.key) == "thread").unwrap();
            s(label.str).to_owned()
        };
        assert_eq!(thread_of(&p.sample[0]), "main");
        assert_eq!(thread_of(&p.sample[1]), "worker");
    }

    /// Samples of one stack and thread are summed into one; a session whose samples are all
    /// distinct (an imported profile) writes each as it is, without summing.
    #[test]
    fn samples_of_one_stack_and_thread_are_summed_and_distinct_ones_kept() {
        use crate::session::{FrameSpec, Metadata, SessionBuilder};
        let values = |rows: &[(usize, usize, u64)]| {
            let mut b = SessionBuilder::new(Metadata::default());
            let frames = ["a", "b"].map(|n| b.intern_frame(&FrameSpec::named(n)));
            let stacks = frames.map(|f| b.intern_stack_path(&[f]).unwrap());
            let threads = [b.thread(1, "one"), b.thread(2, "two")];
            for &(stack, thread, weight) in rows {
                b.push_sample_full(stacks[stack], threads[thread], 0, &[weight], 1, None);
            }
            let p = to_profile(&b.finish());
            let s = |i: i64| p.string_table[i as usize].clone();
            p.sample
                .iter()
                .map(|x| {
                    let name = s(p.function[p.location[x.location_id[0] as usize - 1].line[0]
                        .function_id as usize
                        - 1]
                    .name);
                    (name, s(x.label[0].str), x.value.clone())
                })
                .collect::<Vec<_>>()
        };
        let row = |f: &str, t: &str, v: [i64; 2]| (f.to_owned(), t.to_owned(), v.to_vec());
        assert_eq!(
            values(&[(0, 0, 10), (1, 0, 1), (0, 0, 5), (0, 1, 7)]),
            [
                row("a", "one", [2, 15]),
                row("b", "one", [1, 1]),
                row("a", "two", [1, 7])
            ]
        );
        assert_eq!(
            values(&[(0, 0, 10), (1, 0, 1), (0, 1, 7)]),
            [
                row("a", "one", [1, 10]),
                row("b", "one", [1, 1]),
                row("a", "two", [1, 7])
            ]
        );
    }

    #[test]
    fn samples_are_labelled_with_their_task_and_every_open_scope() {
        let session = crate::session::scopes_tests::scoped_session();
        let p = to_profile(&session);
        let s = |i: i64| p.string_table[i as usize].as_str();
        let labels: Vec<Vec<(&str, &str)>> = p
            .sample
            .iter()
            .map(|sample| {
                sample
                    .label
                    .iter()
                    .filter(|l| matches!(s(l.key), "task" | "scope"))
                    .map(|l| (s(l.key), s(l.str)))
                    .collect()
            })
            .collect();
        assert_eq!(
            labels,
            [
                vec![],
                vec![("task", "fetch"), ("scope", "parse"), ("scope", "request")],
                vec![("scope", "parse")],
                vec![("scope", "request")],
            ]
        );
        // The last sample (no context) joins the first's group: same stack, thread, context.
        let counts: Vec<i64> = p.sample.iter().map(|x| x.value[0]).collect();
        assert_eq!(counts, [2, 1, 1, 1]);
    }

    #[test]
    fn every_sample_type_is_written_with_the_primary_as_default() {
        use crate::session::{FrameSpec, Metadata, SampleState, SampleType, SessionBuilder, Unit};
        let mut b = SessionBuilder::new(Metadata::default());
        b.set_sample_types(
            SampleType::new("alloc_bytes", Unit::Bytes),
            vec![
                SampleType::new("alloc_objects", Unit::Count),
                SampleType::samples(),
                SampleType::new("inuse_bytes", Unit::Bytes),
            ],
        );
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        b.push_sample_full(s, t, 0, &[4096, 2, 0], 1, Some(SampleState::Running));
        b.push_sample_full(s, t, 1, &[1024, 1, 1024], 3, None);
        let p = to_profile(&b.finish());
        let s = |i: i64| p.string_table[i as usize].as_str();
        let types: Vec<&str> = p.sample_type.iter().map(|t| s(t.r#type)).collect();
        assert_eq!(
            types,
            ["samples", "alloc_bytes", "alloc_objects", "inuse_bytes"]
        );
        assert_eq!(s(p.default_sample_type), "alloc_bytes");
        assert_eq!(p.sample.len(), 1);
        assert_eq!(p.sample[0].value, [4, 5120, 3, 1024]);
        // Read back, every type is there again, the default shown.
        let session =
            crate::import::read_pprof(&p.encode_to_vec(), std::path::Path::new("x.pb")).unwrap();
        let names: Vec<&str> = session
            .sample_types()
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["alloc_bytes", "samples", "alloc_objects", "inuse_bytes"]
        );
        assert_eq!((session.total_weight(), session.sample_count()), (5120, 4));
    }
}
