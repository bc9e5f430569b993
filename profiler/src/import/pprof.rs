//! pprof `profile.proto` in (gzipped or not): each sample becomes one session sample.
//!
//! The weight is the first `nanoseconds` or `bytes` value (a `count` value times the period when
//! the profile has no such value); the thread comes from a `thread`/`thread_id` label (or
//! `thread_name`/`tid`), else all samples are on one thread named `all`.

use crate::export::pprof::proto;
use crate::session::{
    FrameId, FrameSpec, MappingSpec, Metadata, Mode, SampleType, Session, SessionBuilder, Unit,
};
use crate::{Error, Result};
use prost::Message;
use std::collections::HashMap;
use std::path::Path;

/// The `timer` metadata of a session imported from pprof.
pub const PPROF_TIMER: &str = "import:pprof";

/// Reads a pprof profile from `bytes` (gzip-compressed or raw); `path` only names the input in
/// errors. Decompressed data beyond [`super::MAX_DECOMPRESSED`] is refused.
pub fn read_pprof(bytes: &[u8], path: &Path) -> Result<Session> {
    let raw;
    let bytes = if super::is_gzip(bytes) {
        raw = super::gunzip(bytes, path)?;
        &raw[..]
    } else {
        bytes
    };
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let profile =
        proto::Profile::decode(bytes).map_err(|e| bad(format!("not a pprof profile: {e}")))?;
    Importer::new(&profile).run().map_err(bad)
}

struct Importer<'p> {
    profile: &'p proto::Profile,
    b: SessionBuilder,
    functions: HashMap<u64, &'p proto::Function>,
    mappings: HashMap<u64, &'p proto::Mapping>,
    locations: HashMap<u64, &'p proto::Location>,
    /// The frames of each location already converted, caller first.
    location_frames: HashMap<u64, Vec<FrameId>>,
}

impl<'p> Importer<'p> {
    fn new(profile: &'p proto::Profile) -> Self {
        Importer {
            profile,
            b: SessionBuilder::default(),
            functions: profile.function.iter().map(|f| (f.id, f)).collect(),
            mappings: profile.mapping.iter().map(|m| (m.id, m)).collect(),
            locations: profile.location.iter().map(|l| (l.id, l)).collect(),
            location_frames: HashMap::new(),
        }
    }

    fn string(&self, index: i64) -> Result<&'p str, String> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.profile.string_table.get(i))
            .map(String::as_str)
            .ok_or_else(|| format!("string index {index} is out of range"))
    }

    /// The index of the value used as weight, the factor it is multiplied by, the mode and
    /// what the weights then measure.
    fn weight_column(&self) -> Result<(usize, u64, Mode, SampleType), String> {
        let types = &self.profile.sample_type;
        if types.is_empty() {
            return Err("the profile has no sample types".into());
        }
        let mode_of = |kind: &str, unit: &str| match (kind, unit) {
            (_, "bytes") => Some(Mode::Alloc),
            ("wall", "nanoseconds") => Some(Mode::Wall),
            (_, "nanoseconds") => Some(Mode::Cpu),
            _ => None,
        };
        let sample_type = |kind: &str, unit: &str| {
            let unit = match unit {
                "nanoseconds" => Unit::Nanoseconds,
                "bytes" => Unit::Bytes,
                _ => Unit::Count,
            };
            SampleType::new(kind, unit)
        };
        for (i, t) in types.iter().enumerate() {
            let (kind, unit) = (self.string(t.r#type)?, self.string(t.unit)?);
            if let Some(mode) = mode_of(kind, unit) {
                return Ok((i, 1, mode, sample_type(kind, unit)));
            }
        }
        // Counts only: scale by the period when it is a time.
        let period = u64::try_from(self.profile.period).unwrap_or(0);
        if let Some(pt) = self.profile.period_type {
            let (kind, unit) = (self.string(pt.r#type)?, self.string(pt.unit)?);
            if let (Some(mode), true) = (mode_of(kind, unit), period > 0) {
                return Ok((types.len() - 1, period, mode, sample_type(kind, unit)));
            }
        }
        let last = &types[types.len() - 1];
        let last = sample_type(self.string(last.r#type)?, self.string(last.unit)?);
        Ok((types.len() - 1, 1, Mode::Cpu, last))
    }

    fn run(mut self) -> Result<Session, String> {
        if self
            .profile
            .string_table
            .first()
            .is_some_and(|s| !s.is_empty())
        {
            return Err("string_table[0] is not empty".into());
        }
        let (column, factor, mode, sample_type) = self.weight_column()?;
        let period_unit = match self.profile.period_type {
            Some(pt) => self.string(pt.unit)?,
            None => "",
        };
        *self.b.meta_mut() = Metadata {
            mode,
            duration_ns: u64::try_from(self.profile.duration_nanos).unwrap_or(0),
            requested_interval_ns: match period_unit {
                "nanoseconds" => u64::try_from(self.profile.period).unwrap_or(0),
                _ => 0,
            },
            timer: PPROF_TIMER.into(),
            prof_version: crate::VERSION.into(),
            sample_type,
            ..Metadata::default()
        };
        let mut path: Vec<FrameId> = Vec::new();
        for (n, sample) in self.profile.sample.iter().enumerate() {
            let value = *sample
                .value
                .get(column)
                .ok_or_else(|| format!("sample {n} has {} values", sample.value.len()))?;
            let weight = u64::try_from(value).unwrap_or(0).saturating_mul(factor);
            path.clear();
            for &id in sample.location_id.iter().rev() {
                if !self.location_frames.contains_key(&id) {
                    let mut frames = Vec::new();
                    self.push_location(id, &mut frames)?;
                    self.location_frames.insert(id, frames);
                }
                path.extend_from_slice(&self.location_frames[&id]);
            }
            let Some(leaf) = self.b.intern_stack_path(&path) else {
                continue;
            };
            let (tid, name) = self.thread(sample)?;
            let thread = self.b.thread(tid, &name);
            self.b.push_sample(leaf, thread, 0, weight);
        }
        self.keep_mappings()?;
        Ok(self.b.finish())
    }

    /// Keeps the profile's mappings that span addresses (ranges pprof leaves empty say nothing).
    fn keep_mappings(&mut self) -> Result<(), String> {
        for m in &self.profile.mapping {
            if m.memory_limit > m.memory_start {
                let build_id = Some(self.string(m.build_id)?).filter(|b| !b.is_empty());
                self.b.push_mapping(&MappingSpec {
                    start: m.memory_start,
                    limit: m.memory_limit,
                    offset: m.file_offset,
                    path: self.string(m.filename)?,
                    build_id,
                });
            }
        }
        Ok(())
    }

    /// Appends the frames of a location, caller first then the functions inlined into it.
    fn push_location(&mut self, id: u64, path: &mut Vec<FrameId>) -> Result<(), String> {
        let loc = *self
            .locations
            .get(&id)
            .ok_or_else(|| format!("location {id} is not in the location table"))?;
        let module = match loc.mapping_id {
            0 => None,
            m => {
                let mapping = self
                    .mappings
                    .get(&m)
                    .ok_or_else(|| format!("mapping {m} is missing"))?;
                Some(self.string(mapping.filename)?).filter(|s| !s.is_empty())
            }
        };
        let address = Some(loc.address).filter(|&a| a != 0);
        if loc.line.is_empty() {
            let name = format!("{:#x}", loc.address);
            let spec = FrameSpec {
                module,
                address,
                ..FrameSpec::named(&name)
            };
            path.push(self.b.intern_frame(&spec));
            return Ok(());
        }
        for (i, line) in loc.line.iter().enumerate().rev() {
            let f = *self
                .functions
                .get(&line.function_id)
                .ok_or_else(|| format!("function {} is missing", line.function_id))?;
            let file = Some(self.string(f.filename)?).filter(|s| !s.is_empty());
            let spec = FrameSpec {
                name: self.string(f.name)?,
                file,
                line: u32::try_from(line.line).ok().filter(|&l| l != 0),
                module,
                address,
                inlined: i + 1 != loc.line.len(),
            };
            path.push(self.b.intern_frame(&spec));
        }
        Ok(())
    }

    fn thread(&self, sample: &proto::Sample) -> Result<(u64, String), String> {
        let (mut tid, mut name) = (None, None);
        for label in &sample.label {
            match self.string(label.key)? {
                "thread" | "thread_name" if label.str != 0 => name = Some(self.string(label.str)?),
                "thread_id" | "tid" => tid = u64::try_from(label.num).ok(),
                _ => {}
            }
        }
        let name = name.map(str::to_owned);
        Ok(match (tid, name) {
            (Some(tid), name) => (tid, name.unwrap_or_default()),
            (None, Some(name)) => (synthetic_tid(&name), name),
            (None, None) => (0, "all".to_owned()),
        })
    }
}

/// A stable id for a thread known only by name.
fn synthetic_tid(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::pprof::write_pprof;

    /// A sample as text: thread name, frames leaf first with their `inlined` flag, weight.
    type SampleText = (String, Vec<(String, bool)>, u64);

    #[test]
    fn a_written_profile_reads_back_with_the_same_stacks_threads_and_weights() {
        let original = crate::export::fixture::session();
        let mut gz = Vec::new();
        write_pprof(&original, &mut gz).unwrap();
        let s = read_pprof(&gz, Path::new("p.pb.gz")).unwrap();
        assert_eq!(s.meta.timer, PPROF_TIMER);
        assert_eq!(s.meta.mode, Mode::Cpu);
        assert_eq!(s.meta.requested_interval_ns, 1_000_000);
        assert_eq!(s.total_weight(), original.total_weight());
        let stacks = |s: &Session| {
            let mut v: Vec<SampleText> = Vec::new();
            for i in 0..s.samples.len() {
                let t = &s.threads[s.samples.thread[i].index()];
                let frames = s
                    .stack_frames(s.samples.stack[i])
                    .map(|f| (s.frame_name(f).to_owned(), s.frame(f).inlined))
                    .collect();
                v.push((s.str(t.name).to_owned(), frames, s.samples.weight[i]));
            }
            v
        };
        let mut want = stacks(&original);
        // pprof sums samples of one stack and thread.
        want.sort();
        want.dedup_by(|a, b| {
            let same = a.0 == b.0 && a.1 == b.1;
            if same {
                b.2 += a.2;
            }
            same
        });
        let mut got = stacks(&s);
        got.sort();
        assert_eq!(got, want);
        let hash = s.frames.iter().find(|f| s.str(f.name) == "hash").unwrap();
        assert_eq!((hash.line, hash.address), (Some(20), Some(0x2010)));
        assert_eq!(hash.module.map(|m| s.str(m)), Some("/usr/bin/demo"));
    }

    #[test]
    fn an_imported_profile_keeps_its_mappings() {
        let mut original = crate::export::fixture::session();
        original.strings.push("/usr/bin/demo".into());
        original.mappings.push(crate::session::Mapping {
            start: 0x2000,
            limit: 0x3000,
            offset: 0x1000,
            path: crate::session::StrId(original.strings.len() as u32 - 1),
            build_id: Some("00ff".into()),
        });
        let mut gz = Vec::new();
        write_pprof(&original, &mut gz).unwrap();
        let s = read_pprof(&gz, Path::new("p.pb.gz")).unwrap();
        let m = s.mapping_at(0x2010).expect("the mapping is kept");
        assert_eq!((m.start, m.limit, m.offset), (0x2000, 0x3000, 0x1000));
        assert_eq!(
            (s.str(m.path), m.build_id.as_deref()),
            ("/usr/bin/demo", Some("00ff"))
        );
        // The exporter's own spans for addresses outside it come back too.
        assert!(s.mapping_at(0x7000).is_some());
    }

    #[test]
    fn bad_bytes_and_dangling_ids_are_one_line_errors() {
        let err = read_pprof(b"\xff\xff\xff", Path::new("x.pb"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.pb: not a pprof profile"), "{err}");
        let profile = proto::Profile {
            string_table: vec!["".into(), "samples".into(), "count".into()],
            sample_type: vec![proto::ValueType { r#type: 1, unit: 2 }],
            sample: vec![proto::Sample {
                location_id: vec![7],
                value: vec![1],
                label: vec![],
            }],
            ..proto::Profile::default()
        };
        let err = read_pprof(&profile.encode_to_vec(), Path::new("x.pb")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.pb: location 7 is not in the location table"
        );
    }
}
