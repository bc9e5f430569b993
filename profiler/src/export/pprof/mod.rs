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

use crate::session::{FrameId, Session, StackId, StrId, ThreadIdx};
use crate::{Error, Result};
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
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

/// Writes `session` as a gzipped pprof profile.
pub fn write_pprof(session: &Session, out: impl Write) -> Result<()> {
    write_pprof_with(session, &PprofOptions::default(), out)
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
    /// ([`Options::alloc_interval_bytes`](crate::Options::alloc_interval_bytes)).
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
/// Samples, locations, functions and strings are encoded as they are made, each table into its
/// own buffer, rather than kept as messages until the end: a message is several times its
/// encoded size, and a million distinct functions made a gigabyte. The samples go to `out` as
/// they come; the other tables follow them. The fields are in field-number order, as prost
/// encodes a whole `Profile`, so the bytes are the same.
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
    enc.profile.time_nanos = unix_nanos(&meta.start_time).unwrap_or(0);
    let title = super::title(session);
    let comment = enc.string(&title);
    enc.profile.comment = vec![comment];
    let (of_sample, contexts) = labels::sample_contexts(session);
    let (groups, sums, stride) = group_samples(session, &of_sample);
    // The sample types (field 1) are known: the samples (field 2) follow them as they are
    // encoded, a MiB at a time, rather than be held to the end (10 MB for a million).
    out.write_all(&enc.sample_types())?;
    for (g, &(stack, thread, context)) in groups.iter().enumerate() {
        let sums = &sums[g * stride..(g + 1) * stride];
        let values = columns.iter().map(|c| c.map_or(0, |c| sums[c])).collect();
        enc.sample(stack, thread, &contexts[context as usize], values);
        if enc.samples.len() >= SAMPLES_CHUNK {
            out.write_all(&enc.samples)?;
            enc.samples.clear();
        }
    }
    for part in enc.finish() {
        out.write_all(&part)?;
    }
    Ok(())
}

/// Bytes of encoded samples written at a time.
const SAMPLES_CHUNK: usize = 1 << 20;

/// Nanoseconds since the Unix epoch of an RFC 3339 time such as `2026-11-22T12:09:46.123Z` or
/// `2026-11-22T13:09:46+01:00`; `None` when `text` is not one.
fn unix_nanos(text: &str) -> Option<i64> {
    let num = |s: &str| s.parse::<i64>().ok();
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut ymd = date.splitn(3, '-').map(num);
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let zone_at = time.rfind(['Z', 'z', '+', '-'])?;
    let (clock, zone) = time.split_at(zone_at);
    let offset_s = match zone {
        "Z" | "z" => 0,
        _ => {
            let (h, min) = zone[1..].split_once(':')?;
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (num(h)? * 3600 + num(min)? * 60)
        }
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = hms.splitn(3, ':').map(num);
    let (h, min, sec) = (parts.next()??, parts.next()??, parts.next()??);
    let nanos = match fraction {
        "" => 0,
        f if f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            num(f)? * 10_i64.pow(9 - f.len() as u32)
        }
        _ => return None,
    };
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + min * 60 + sec - offset_s;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// The samples summed per (stack, thread, context), in order of first appearance: the groups
/// (the context an index into [`labels::sample_contexts`]'s), and their sums, `stride` per group (the number of samples, the primary weight and
/// then each extra type's weight), in one vector.
type Groups = (Vec<(StackId, ThreadIdx, u32)>, Vec<u64>, usize);

fn group_samples(session: &Session, contexts: &[u32]) -> Groups {
    let samples = &session.samples;
    let stride = session.meta.extra_sample_types.len() + 2;
    // The group of each stack's first thread, by stack (most stacks are sampled on one
    // thread), and of the others in a map.
    let mut first: Vec<u32> = vec![u32::MAX; session.stacks.len()];
    let mut others: foldhash::HashMap<(StackId, ThreadIdx, u32), usize> = Default::default();
    let mut groups: Vec<(StackId, ThreadIdx, u32)> = Vec::new();
    let mut all_sums: Vec<u64> = Vec::new();
    for i in 0..samples.len() {
        let context = contexts.get(i).copied().unwrap_or(0);
        let key = (samples.stack[i], samples.thread[i], context);
        let new_group = |groups: &mut Vec<(StackId, ThreadIdx, u32)>, all_sums: &mut Vec<u64>| {
            groups.push(key);
            all_sums.resize(all_sums.len() + stride, 0);
            groups.len() - 1
        };
        let slot = match first[key.0.index()] {
            u32::MAX => {
                let slot = new_group(&mut groups, &mut all_sums);
                first[key.0.index()] = slot as u32;
                slot
            }
            g if (groups[g as usize].1, groups[g as usize].2) == (key.1, key.2) => g as usize,
            _ => *others
                .entry(key)
                .or_insert_with(|| new_group(&mut groups, &mut all_sums)),
        };
        let sums = &mut all_sums[slot * stride..(slot + 1) * stride];
        sums[0] += samples.multiplicity(i);
        sums[1] += samples.weight[i];
        for (k, sum) in sums[2..].iter_mut().enumerate() {
            *sum += samples.extra_weight(k, i);
        }
    }
    (groups, all_sums, stride)
}

/// Builds the profile's tables, interning each string, function, location and mapping once.
struct Encoder<'s> {
    session: &'s Session,
    /// The profile's fields other than the four tables below.
    profile: proto::Profile,
    /// Encoded `sample`, `location`, `function` and `string_table` fields.
    samples: Vec<u8>,
    locations_out: Vec<u8>,
    functions_out: Vec<u8>,
    strings_out: Vec<u8>,
    /// The number of strings, locations and functions written.
    n_strings: i64,
    n_locations: u64,
    n_functions: u64,
    /// String indices, hashed by their text, which is read back from `strings_out` (a map
    /// keyed by the texts took 40 bytes a string).
    strings: hashbrown::HashTable<u32>,
    /// Where each string's text lies in `strings_out`.
    string_spans: Vec<(u32, u32)>,
    hasher: foldhash::fast::RandomState,
    /// Function id per (name, file) of the functions with a file.
    functions: foldhash::HashMap<(StrId, Option<StrId>), u64>,
    /// Function id of the functions without a file (0: none yet), by name: imports name most.
    fileless: Vec<u32>,
    /// Location id of each frame that makes a location alone (0: none yet), by frame index.
    single: Vec<u32>,
    /// Location id per run of several frames (inlined frames, then the frame they were inlined
    /// into).
    locations: HashMap<Vec<FrameId>, u64>,
    /// Mapping index in `profile.mapping` per module (None: frames with no module), for
    /// addresses outside the session's mappings.
    mappings: HashMap<Option<StrId>, usize>,
    /// The session's own mappings as `(start, limit, id)`, sorted by start.
    real: Vec<(u64, u64, u64)>,
}

impl<'s> Encoder<'s> {
    fn new(session: &'s Session) -> Self {
        let mut enc = Encoder {
            session,
            profile: proto::Profile::default(),
            samples: Vec::new(),
            locations_out: Vec::new(),
            functions_out: Vec::new(),
            strings_out: Vec::new(),
            n_strings: 0,
            n_locations: 0,
            n_functions: 0,
            strings: hashbrown::HashTable::new(),
            string_spans: Vec::new(),
            hasher: Default::default(),
            functions: Default::default(),
            fileless: vec![0; session.strings.len()],
            single: vec![0; session.frames.len()],
            locations: HashMap::new(),
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

    fn string(&mut self, text: &str) -> i64 {
        let (out, spans) = (&self.strings_out, &self.string_spans);
        let text_of = |i: u32| {
            let (start, end) = spans[i as usize];
            &out[start as usize..end as usize]
        };
        let hash = self.hasher.hash_one(text.as_bytes());
        if let Some(&id) = self.strings.find(hash, |&i| text_of(i) == text.as_bytes()) {
            return i64::from(id);
        }
        let id = self.n_strings;
        self.n_strings += 1;
        prost::encoding::string::encode(6, &text.to_owned(), &mut self.strings_out);
        // The profile's strings are the session's and a few more, bounded far below 4 GiB.
        let end = u32::try_from(self.strings_out.len()).expect("strings above 4 GiB");
        self.string_spans.push((end - text.len() as u32, end));
        let (out, spans, hasher) = (&self.strings_out, &self.string_spans, &self.hasher);
        self.strings.insert_unique(hash, id as u32, |&i| {
            let (start, end) = spans[i as usize];
            hasher.hash_one(&out[start as usize..end as usize])
        });
        id
    }

    /// The index of one of the session's strings.
    fn session_string(&mut self, id: StrId) -> i64 {
        self.string(self.session.str(id))
    }

    fn value_type(&mut self, (kind, unit): (&str, &str)) -> proto::ValueType {
        proto::ValueType {
            r#type: self.string(kind),
            unit: self.string(unit),
        }
    }

    fn sample(
        &mut self,
        stack: StackId,
        thread: ThreadIdx,
        (task, scopes): &labels::Context,
        values: Vec<u64>,
    ) {
        let location_id = self.stack_locations(stack);
        let thread = &self.session.threads[thread.index()];
        let name = match self.session.str(thread.name) {
            "" => format!("{}", thread.tid),
            name => name.to_owned(),
        };
        let mut label = vec![
            proto::Label {
                key: self.string("thread"),
                str: self.string(&name),
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
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let sample = proto::Sample {
            location_id,
            value: values.into_iter().map(clamp).collect(),
            label,
        };
        prost::encoding::message::encode(2, &sample, &mut self.samples);
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
            _ => self.locations.get(&run).copied().unwrap_or(0),
        };
        if found != 0 {
            return found;
        }
        let caller = self.session.frame(*run.last().expect("a run has a frame"));
        let address = caller.address.unwrap_or(0);
        let mapping_id = self.mapping(caller.module, caller.address);
        let line = run
            .iter()
            .map(|&f| {
                let frame = self.session.frame(f);
                proto::Line {
                    function_id: self.function(frame.name, frame.file),
                    line: i64::from(frame.line.unwrap_or(0)),
                }
            })
            .collect();
        self.n_locations += 1;
        let id = self.n_locations;
        let location = proto::Location {
            id,
            mapping_id,
            address,
            line,
        };
        prost::encoding::message::encode(4, &location, &mut self.locations_out);
        match run[..] {
            // Ids count frames, which a session indexes with u32.
            [frame] => self.single[frame.index()] = id as u32,
            _ => {
                self.locations.insert(run, id);
            }
        }
        id
    }

    fn function(&mut self, name: StrId, file: Option<StrId>) -> u64 {
        let found = match file {
            None => u64::from(self.fileless[name.index()]),
            Some(_) => self.functions.get(&(name, file)).copied().unwrap_or(0),
        };
        if found != 0 {
            return found;
        }
        self.n_functions += 1;
        let id = self.n_functions;
        let name_idx = self.session_string(name);
        let filename = file.map_or(0, |f| self.session_string(f));
        let function = proto::Function {
            id,
            name: name_idx,
            system_name: name_idx,
            filename,
            start_line: 0,
        };
        prost::encoding::message::encode(5, &function, &mut self.functions_out);
        match file {
            // Ids count functions, fewer than the session's frames.
            None => self.fileless[name.index()] = id as u32,
            Some(_) => {
                self.functions.insert((name, file), id);
            }
        }
        id
    }

    /// The id of the session's mapping holding `address`, or else of the mapping for `module`,
    /// widened to cover `address`.
    fn mapping(&mut self, module: Option<StrId>, address: Option<u64>) -> u64 {
        if let Some(address) = address {
            let after = self.real.partition_point(|&(start, _, _)| start <= address);
            if let Some(&(_, limit, id)) = after.checked_sub(1).map(|i| &self.real[i]) {
                if address < limit {
                    return id;
                }
            }
        }
        let slot = match self.mappings.get(&module) {
            Some(&slot) => slot,
            None => {
                let name = match module {
                    Some(m) => self.session.str(m).to_owned(),
                    None if !self.session.meta.program.is_empty() => {
                        self.session.meta.program.clone()
                    }
                    None => "[unknown]".to_owned(),
                };
                let slot = self.profile.mapping.len();
                let filename = self.string(&name);
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
        mapping.id
    }

    /// The parts of the message in field-number order: sample types, samples, mappings,
    /// locations, functions, strings, then the remaining fields.
    /// The encoded `sample_type` field (the first), taken out of the profile's other fields.
    fn sample_types(&mut self) -> Vec<u8> {
        proto::Profile {
            sample_type: std::mem::take(&mut self.profile.sample_type),
            ..proto::Profile::default()
        }
        .encode_to_vec()
    }

    /// The parts that follow the sample types and the samples written so far, in
    /// field-number order: the samples not yet written, mappings, locations, functions,
    /// strings and the other fields.
    fn finish(mut self) -> Vec<Vec<u8>> {
        for mapping in &mut self.profile.mapping {
            if mapping.memory_start == u64::MAX {
                mapping.memory_start = 0;
            }
        }
        let mappings = proto::Profile {
            mapping: std::mem::take(&mut self.profile.mapping),
            ..proto::Profile::default()
        };
        vec![
            self.samples,
            mappings.encode_to_vec(),
            self.locations_out,
            self.functions_out,
            self.strings_out,
            self.profile.encode_to_vec(),
        ]
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
    fn start_times_in_rfc_3339_become_unix_nanoseconds() {
        assert_eq!(unix_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_nanos("1970-01-01T00:00:00.000Z"), Some(0));
        // `date -u -d 2026-11-22T12:09:46Z +%s` = 1795349386.
        let t = 1_795_349_386_000_000_000;
        assert_eq!(unix_nanos("2026-11-22T12:09:46.5Z"), Some(t + 500_000_000));
        assert_eq!(unix_nanos("2026-11-22T13:09:46+01:00"), Some(t));
        assert_eq!(
            unix_nanos("2000-02-29T00:00:00Z"),
            Some(951_782_400_000_000_000)
        );
        assert_eq!(unix_nanos(""), None);
        assert_eq!(unix_nanos("yesterday"), None);
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
