//! pprof `profile.proto` in (gzipped or not): each sample becomes one session row.
//!
//! The weight is one value column, chosen as `go tool pprof` does: the one asked for by name
//! ([`LoadOptions::sample_type`], `--type`), else the profile's `default_sample_type`, else the
//! last. A `samples`/`count` column, when there is one, says how many samples each row stands
//! for. The thread comes from a `thread`/`thread_id` label (or `thread_name`/`tid`), else all
//! samples are on one thread named `all`. Negative values (a profile of differences) and
//! profiles without samples are refused.

use super::pprof_wire::{self as wire, Sample};
use super::{cut_warning, unknown_type, LoadOptions, Loaded, Totals, MAX_STACK_DEPTH};
use crate::error::{Error, Result};
use crate::session::{
    FrameId, FrameSpec, MappingSpec, Metadata, Mode, SampleType, Session, SessionBuilder, Unit,
};
use std::collections::HashMap;
use std::path::Path;

/// The `timer` metadata of a session imported from pprof.
pub const PPROF_TIMER: &str = "import:pprof";

/// Reads a pprof profile from `bytes` (gzip-compressed or raw); `path` only names the input in
/// errors. Decompressed data beyond [`super::MAX_DECOMPRESSED`] is refused.
pub fn read_pprof(bytes: &[u8], path: &Path) -> Result<Session> {
    read_pprof_with(bytes, path, &LoadOptions::default()).map(|l| l.session)
}

/// Reads a pprof profile from `bytes` (gzip-compressed or raw), showing the value column
/// `options.sample_type` (by default pprof's: `default_sample_type`, else the last); `path` only
/// names the input in errors.
pub fn read_pprof_with(bytes: &[u8], path: &Path, options: &LoadOptions) -> Result<Loaded> {
    let raw;
    let bytes = if super::is_gzip(bytes) {
        raw = super::gunzip(bytes, path, options.max_bytes)?;
        &raw[..]
    } else {
        bytes
    };
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let profile =
        wire::Profile::parse(bytes).map_err(|e| bad(format!("not a pprof profile: {e}")))?;
    Importer::new(&profile)
        .run(options.sample_type.as_deref())
        .map_err(bad)
}

/// Not yet converted, in [`Importer::location_frames`].
const UNCONVERTED: u32 = u32::MAX;

/// In [`Importer::location_frames`], the bit that says the rest is the location's one frame.
const SINGLE: u32 = 1 << 31;

struct Importer<'p, 'a> {
    profile: &'p wire::Profile<'a>,
    b: SessionBuilder,
    /// The frames of each location (by its index in the table) once converted, caller first:
    /// its one frame's id with [`SINGLE`] set (most locations), else where its frames' count
    /// and then the frames are in [`Importer::frame_pool`]. 4 bytes a location; a range in the
    /// pool took 8 and the pool 4 more (a million locations).
    location_frames: Vec<u32>,
    frame_pool: Vec<u32>,
    /// Mapping id to its index in the profile's mappings (the last of an id wins).
    mappings: HashMap<u64, usize>,
}

impl<'p, 'a> Importer<'p, 'a> {
    fn new(profile: &'p wire::Profile<'a>) -> Self {
        Importer {
            profile,
            b: SessionBuilder::default(),
            location_frames: vec![UNCONVERTED; profile.locations.len()],
            frame_pool: Vec::new(),
            mappings: (profile.mapping.iter().enumerate())
                .map(|(i, m)| (m.id, i))
                .collect(),
        }
    }

    fn string(&self, index: i64) -> Result<&'a str, String> {
        self.profile
            .string(index)
            .ok_or_else(|| format!("string index {index} is out of range"))
    }

    /// The index of the value column shown (`wanted` by name, else pprof's default), the index
    /// of the `samples`/`count` column if there is one, the mode and what the weights measure.
    /// The column shown (asked for, else pprof's default), the `samples/count` column if there
    /// is one, the mode, and every column's sample type.
    fn columns(
        &self,
        wanted: Option<&str>,
    ) -> Result<(usize, Option<usize>, Mode, Vec<SampleType>), String> {
        let types = self
            .profile
            .sample_type
            .iter()
            .map(|t| Ok((self.string(t.kind)?, self.string(t.unit)?)))
            .collect::<Result<Vec<(&str, &str)>, String>>()?;
        if types.is_empty() {
            return Err("the profile has no sample types".into());
        }
        // A type is chosen by name and a session's types need one: an unnamed column (string
        // 0, which is "") is called by its position.
        let names: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, &(kind, _))| match kind {
                "" => format!("unnamed_{i}"),
                kind => kind.to_owned(),
            })
            .collect();
        let find = |name: &str| names.iter().position(|kind| kind == name);
        let column = match wanted {
            Some(name) => {
                find(name).ok_or_else(|| unknown_type(name, names.iter().map(String::as_str)))?
            }
            None => match self.profile.default_sample_type {
                0 => types.len() - 1,
                index => find(self.string(index)?).unwrap_or(types.len() - 1),
            },
        };
        let count = types
            .iter()
            .position(|&(kind, unit)| kind == "samples" && unit == "count");
        let (kind, unit) = types[column];
        let mode = match (kind, unit) {
            (_, "bytes") => Mode::Alloc,
            ("wall", "nanoseconds") => Mode::Wall,
            _ => Mode::Cpu,
        };
        let sample_types = types
            .iter()
            .zip(&names)
            .map(|(&(_, unit), name)| {
                let unit = match unit {
                    "nanoseconds" => Unit::Nanoseconds,
                    "bytes" => Unit::Bytes,
                    _ => Unit::Count,
                };
                SampleType::new(name, unit)
            })
            .collect();
        Ok((column, count, mode, sample_types))
    }

    fn run(mut self, wanted: Option<&str>) -> Result<Loaded, String> {
        if self.profile.string(0).is_some_and(|s| !s.is_empty()) {
            return Err("string_table[0] is not empty".into());
        }
        let (column, count_column, mode, sample_types) = self.columns(wanted)?;
        // Every other column is kept as an extra sample type, in the profile's order; the
        // `samples/count` column is each row's multiplicity and is not stored again.
        let extra_columns: Vec<usize> = (0..sample_types.len()).filter(|&c| c != column).collect();
        let extra_types: Vec<SampleType> = extra_columns
            .iter()
            .map(|&c| sample_types[c].clone())
            .collect();
        let stored_extras: Vec<usize> = extra_columns
            .iter()
            .copied()
            .filter(|&c| Some(c) != count_column)
            .collect();
        let sample_type = sample_types[column].clone();
        if self.profile.samples == 0 {
            return Err("the profile has no samples".into());
        }
        let period_unit = match self.profile.period_type {
            Some(pt) => self.string(pt.unit)?,
            None => "",
        };
        let name = sample_type.name.clone();
        *self.b.meta_mut() = Metadata {
            program: self.program()?.to_owned(),
            start_time_ns: match self.profile.time_nanos {
                0 => None,
                nanos => Some(nanos),
            },
            mode,
            duration_ns: u64::try_from(self.profile.duration_nanos).unwrap_or(0),
            requested_interval_ns: match period_unit {
                "nanoseconds" => u64::try_from(self.profile.period).unwrap_or(0),
                _ => 0,
            },
            timer: PPROF_TIMER.into(),
            prof_version: crate::VERSION.into(),
            sample_type: sample_type.clone(),
            ..Metadata::default()
        };
        self.b.set_sample_types(sample_type, extra_types);
        let mut extra_totals = vec![Totals::default(); stored_extras.len()];
        let mut weights = Vec::with_capacity(stored_extras.len() + 1);
        let mut path: Vec<FrameId> = Vec::new();
        let mut totals = Totals::default();
        let (mut rows, mut stackless, mut cut) = (0u64, 0u64, 0u64);
        let profile = self.profile;
        profile.for_each_sample(|n, sample| {
            let value = |column: usize, name: &str| {
                let value = *sample
                    .value
                    .get(column)
                    .ok_or_else(|| format!("sample {n} has {} values", sample.value.len()))?;
                u64::try_from(value).map_err(|_| {
                    format!(
                        "sample {n} has a negative {name} value ({value}); prof reads \
                         profiles, not differences of profiles"
                    )
                })
            };
            let weight = value(column, &name)?;
            let multiplicity = match count_column {
                Some(c) => value(c, "samples")?,
                None => 1,
            };
            path.clear();
            for &id in sample.location_id.iter().rev() {
                self.location(id, &mut path)?;
            }
            if path.len() > MAX_STACK_DEPTH {
                path.drain(..path.len() - MAX_STACK_DEPTH);
                cut += 1;
            }
            let Some(leaf) = self.b.intern_stack_path(&path) else {
                stackless += 1;
                return Ok(());
            };
            totals
                .add(weight, multiplicity)
                .map_err(|why| format!("sample {n}: {why}"))?;
            weights.clear();
            weights.push(weight);
            for (&c, totals) in stored_extras.iter().zip(&mut extra_totals) {
                let extra = value(c, &sample_types[c].name)?;
                totals
                    .add(extra, 0)
                    .map_err(|why| format!("sample {n}: {why}"))?;
                weights.push(extra);
            }
            let (tid, name) = self.thread(sample)?;
            let thread = self.b.thread(tid, name);
            self.b
                .push_sample_full(leaf, thread, 0, &weights, multiplicity, None);
            rows += 1;
            Ok(())
        })?;
        if rows == 0 {
            return Err("the profile's samples have no locations".into());
        }
        let mut warnings = Vec::new();
        if stackless > 0 {
            warnings.push(format!(
                "{stackless} sample{} without locations left out",
                if stackless == 1 { "" } else { "s" }
            ));
        }
        warnings.extend(cut_warning(cut));
        self.keep_mappings()?;
        Ok(Loaded {
            session: self.b.finish(),
            warnings,
        })
    }

    /// The profiled program, as `go tool pprof` names it: the file of the first mapping, which
    /// is the main executable's in the profiles Go and prof write; empty when there is none.
    fn program(&self) -> Result<&'a str, String> {
        match self.profile.mapping.first() {
            Some(main) => self.string(main.filename),
            None => Ok(""),
        }
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

    /// Appends the frames of location `id` to `path`, converting it on first sight.
    fn location(&mut self, id: u64, path: &mut Vec<FrameId>) -> Result<(), String> {
        let index = self
            .profile
            .locations
            .find(id)
            .ok_or_else(|| format!("location {id} is not in the location table"))?;
        if self.location_frames[index] == UNCONVERTED {
            let start = self.frame_pool.len();
            // The count, set once the frames are pushed after it.
            self.frame_pool.push(0);
            self.push_location(index)?;
            let len = self.frame_pool.len() - start - 1;
            // A frame id or a place in the pool below 2^31 - 1, so that neither the tag nor
            // UNCONVERTED is taken for it; a profile needs more than 2^31 bytes to pass it.
            let fits = |n: usize| n < (SINGLE - 1) as usize;
            let at = match len {
                1 if fits(self.frame_pool[start + 1] as usize) => {
                    let frame = self.frame_pool[start + 1];
                    self.frame_pool.truncate(start);
                    frame | SINGLE
                }
                _ if fits(start) => {
                    self.frame_pool[start] = len as u32;
                    start as u32
                }
                _ => return Err("more than 2^31 - 1 frames".into()),
            };
            self.location_frames[index] = at;
        }
        let at = self.location_frames[index];
        if at & SINGLE != 0 {
            path.push(FrameId(at & !SINGLE));
        } else {
            let frames = &self.frame_pool[at as usize + 1..];
            let len = self.frame_pool[at as usize] as usize;
            path.extend(frames[..len].iter().map(|&f| FrameId(f)));
        }
        Ok(())
    }

    /// Appends the frames of the location at `index` to the pool, caller first then the
    /// functions inlined into it.
    fn push_location(&mut self, index: usize) -> Result<(), String> {
        let loc = self.profile.location(index)?;
        let module = match loc.mapping_id {
            0 => None,
            m => {
                let mapping = self
                    .mappings
                    .get(&m)
                    .map(|&i| &self.profile.mapping[i])
                    .ok_or_else(|| format!("mapping {m} is missing"))?;
                Some(self.string(mapping.filename)?).filter(|s| !s.is_empty())
            }
        };
        let address = Some(loc.address).filter(|&a| a != 0);
        if loc.line_count() == 0 {
            let name = format!("{:#x}", loc.address);
            let spec = FrameSpec {
                module,
                address,
                ..FrameSpec::named(&name)
            };
            let frame = self.b.intern_frame(&spec);
            self.frame_pool.push(frame.0);
            return Ok(());
        }
        let lines = loc.lines()?;
        for (i, line) in lines.iter().enumerate().rev() {
            let f = self
                .profile
                .functions
                .find(line.function_id)
                .ok_or_else(|| format!("function {} is missing", line.function_id))?;
            let f = self.profile.function(f)?;
            let file = Some(self.string(f.filename)?).filter(|s| !s.is_empty());
            let spec = FrameSpec {
                name: self.string(f.name)?,
                file,
                line: u32::try_from(line.line).ok().filter(|&l| l != 0),
                module,
                address,
                inlined: i + 1 != lines.len(),
            };
            let frame = self.b.intern_frame(&spec);
            self.frame_pool.push(frame.0);
        }
        Ok(())
    }

    fn thread(&self, sample: &Sample) -> Result<(u64, &'a str), String> {
        let (mut tid, mut name) = (None, None);
        for label in &sample.label {
            match self.string(label.key)? {
                "thread" | "thread_name" if label.str != 0 => name = Some(self.string(label.str)?),
                "thread_id" | "tid" => tid = u64::try_from(label.num).ok(),
                _ => {}
            }
        }
        Ok(match (tid, name) {
            (Some(tid), name) => (tid, name.unwrap_or_default()),
            (None, Some(name)) => (synthetic_tid(name), name),
            (None, None) => (0, "all"),
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
    use crate::export::pprof::{proto, write_pprof};
    use prost::Message;

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
        original.strings.push("/usr/bin/demo");
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

    /// Found beside `session::read_tests::an_empty_sample_type_name_is_refused_with_its_field`:
    /// an unnamed pprof column became a sample type named "", and the session saved from it
    /// broke the schema.
    #[test]
    fn an_unnamed_column_is_named_by_its_position_and_saves_valid() {
        let profile = profile(&[("", "count"), ("cpu", "nanoseconds")], &[3, 30], None);
        let bytes = profile.encode_to_vec();
        let s = read_pprof(&bytes, Path::new("x.pb")).unwrap();
        let names: Vec<&str> = s.sample_types().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["cpu", "unnamed_0"]);
        let options = LoadOptions {
            sample_type: Some("unnamed_0".into()),
            ..LoadOptions::default()
        };
        let chosen = read_pprof_with(&bytes, Path::new("x.pb"), &options).unwrap();
        assert_eq!(chosen.session.total_weight(), 3);
        let mut saved = Vec::new();
        crate::session::write(&s, &mut saved).unwrap();
        assert_eq!(crate::session::read(&saved[..]).unwrap(), s);
    }

    /// A profile of `types` (name, unit) whose one sample at `main` has `values`.
    fn profile(types: &[(&str, &str)], values: &[i64], default: Option<&str>) -> proto::Profile {
        let mut strings: Vec<String> = vec!["".into(), "main".into()];
        let mut index = |s: &str| {
            strings.iter().position(|t| t == s).unwrap_or_else(|| {
                strings.push(s.into());
                strings.len() - 1
            }) as i64
        };
        let sample_type = types
            .iter()
            .map(|&(t, u)| proto::ValueType {
                r#type: index(t),
                unit: index(u),
            })
            .collect();
        let default_sample_type = default.map_or(0, &mut index);
        proto::Profile {
            sample_type,
            default_sample_type,
            sample: vec![proto::Sample {
                location_id: vec![1],
                value: values.to_vec(),
                label: vec![],
            }],
            location: vec![proto::Location {
                id: 1,
                line: vec![proto::Line {
                    function_id: 1,
                    line: 0,
                }],
                ..proto::Location::default()
            }],
            function: vec![proto::Function {
                id: 1,
                name: 1,
                ..proto::Function::default()
            }],
            string_table: strings,
            ..proto::Profile::default()
        }
    }

    fn import(profile: &proto::Profile, wanted: Option<&str>) -> Result<Session> {
        let options = LoadOptions {
            sample_type: wanted.map(str::to_owned),
            ..LoadOptions::default()
        };
        read_pprof_with(&profile.encode_to_vec(), Path::new("x.pb"), &options).map(|l| l.session)
    }

    const HEAP: [(&str, &str); 4] = [
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ];

    #[test]
    fn the_column_shown_is_pprofs_default_or_the_one_asked_for() {
        // No default_sample_type: the last column, as go tool pprof shows.
        let s = import(&profile(&HEAP, &[3, 300, 1, 100], None), None).unwrap();
        assert_eq!(
            s.meta.sample_type,
            SampleType::new("inuse_space", Unit::Bytes)
        );
        assert_eq!((s.meta.mode, s.total_weight()), (Mode::Alloc, 100));
        let s = import(
            &profile(&HEAP, &[3, 300, 1, 100], Some("alloc_space")),
            None,
        )
        .unwrap();
        assert_eq!(s.total_weight(), 300);
        let s = import(
            &profile(&HEAP, &[3, 300, 1, 100], None),
            Some("alloc_objects"),
        )
        .unwrap();
        assert_eq!(
            s.meta.sample_type,
            SampleType::new("alloc_objects", Unit::Count)
        );
        assert_eq!(s.total_weight(), 3);
        let err = import(&profile(&HEAP, &[3, 300, 1, 100], None), Some("space")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.pb: no sample type `space` (available: alloc_objects, alloc_space, inuse_objects, inuse_space)"
        );
    }

    #[test]
    fn samples_count_is_kept_as_the_number_of_samples() {
        let types = [("samples", "count"), ("cpu", "nanoseconds")];
        let s = import(&profile(&types, &[7, 70_000_000], None), None).unwrap();
        assert_eq!(
            s.meta.sample_type,
            SampleType::new("cpu", Unit::Nanoseconds)
        );
        assert_eq!((s.sample_count(), s.samples.len()), (7, 1));
        let s = import(&profile(&types, &[7, 70_000_000], None), Some("samples")).unwrap();
        assert_eq!((s.sample_count(), s.total_weight()), (7, 7));
    }

    #[test]
    fn negative_values_and_empty_profiles_are_refused() {
        let types = [("cpu", "nanoseconds")];
        let err = import(&profile(&types, &[-5], None), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.pb: sample 0 has a negative cpu value (-5); prof reads profiles, not differences of profiles"
        );
        let mut empty = profile(&types, &[1], None);
        empty.sample.clear();
        let err = import(&empty, None).unwrap_err();
        assert_eq!(err.to_string(), "x.pb: the profile has no samples");
    }

    #[test]
    fn totals_past_2_64_are_refused() {
        let mut p = profile(&[("cpu", "nanoseconds")], &[i64::MAX], None);
        p.sample.extend([p.sample[0].clone(), p.sample[0].clone()]);
        let err = import(&p, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.pb: sample 2: the weights add up to more than 2^64 - 1, more than prof can total"
        );
    }

    /// Go profiles read "unknown" for Program and Date though they hold both, as
    /// `go tool pprof` shows (`File: burn`, `Time: 2026-11-23 07:04:18.693463541 UTC`,
    /// `Duration: 3.10`); a heap profile has no duration (`go tool pprof` shows none).
    #[test]
    fn go_profiles_keep_their_program_date_and_duration() {
        let burn = include_bytes!("../../../../tests/data/import/go-cpu-burn.pprof");
        let s = read_pprof(burn, Path::new("burn.pprof")).unwrap();
        assert_eq!(s.meta.program, "/tmp/ceo/conformance/t2/burn/burn");
        // Kept to the nanosecond, shown to the millisecond.
        assert_eq!(s.meta.start_time_ns, Some(1_795_417_458_693_463_541));
        let shown = crate::session::rfc3339_utc(s.meta.start_time_ns.unwrap());
        assert_eq!(shown, "2026-11-23T07:04:18.693Z");
        assert_eq!(
            s.meta.duration_ns / 10_000_000,
            310,
            "{}",
            s.meta.duration_ns
        );
        // Go's CPU profiles carry no per-sample times.
        assert!(!s.has_sample_times());
        let heap = include_bytes!("../../../../tests/data/import/go-heap.pb.gz");
        let s = read_pprof(heap, Path::new("heap.pb.gz")).unwrap();
        assert_eq!(s.meta.program, "/tmp/go-build169460002/b001/exe/heapdemo");
        let shown = crate::session::rfc3339_utc(s.meta.start_time_ns.unwrap());
        assert_eq!(shown, "2026-11-23T10:22:13.463Z");
        assert_eq!(s.meta.duration_ns, 0);
        // prof's own pprof puts the program's mapping first, so it reads back the same.
        let mut session = crate::export::fixture::session();
        session.meta.program = "/usr/bin/demo".into();
        session.meta.start_time_ns = crate::session::parse_rfc3339("2026-11-22T10:00:00.250Z");
        for path in ["/lib/libc.so.6", "/usr/bin/demo"] {
            session.strings.push(path);
            let start = 0x1000 * session.strings.len() as u64;
            session.mappings.push(crate::session::Mapping {
                start,
                limit: start + 0x800,
                offset: 0,
                path: crate::session::StrId(session.strings.len() as u32 - 1),
                build_id: None,
            });
        }
        let mut gz = Vec::new();
        write_pprof(&session, &mut gz).unwrap();
        let s = read_pprof(&gz, Path::new("p.pb.gz")).unwrap();
        assert_eq!(s.meta.program, "/usr/bin/demo");
        assert_eq!(s.meta.start_time_ns, session.meta.start_time_ns);
        // Without mappings or a time, nothing is made up.
        let s = import(&profile(&[("cpu", "nanoseconds")], &[5], None), None).unwrap();
        assert_eq!((&*s.meta.program, s.meta.start_time_ns), ("", None));
    }
}
