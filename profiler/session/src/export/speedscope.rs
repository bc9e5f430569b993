//! speedscope's JSON file format (`https://www.speedscope.app/file-format-schema.json`).
//!
//! One `sampled` profile per thread, its samples in time order with consecutive identical stacks
//! merged into one weighted sample. Frames are shared and deduplicated by function name and file:
//! speedscope keys frames by name, file and line, so keeping the sampled line would split one
//! function into a node per line in its flame graph.

use crate::error::{Error, Result};
use crate::session::{FrameId, Session, StackId, StrId, ThreadIdx, Unit};
use serde::Serialize;
use std::hash::BuildHasher;
use std::io::Write;

/// The `$schema` every speedscope file names.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared<'a>,
    profiles: Vec<Profile<'a>>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: String,
}

#[derive(Serialize)]
struct Shared<'a> {
    frames: FramesOut<'a>,
}

#[derive(Serialize)]
struct Frame<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
}

/// The shared frames, named only as they are written.
struct FramesOut<'a>(&'a StackTable<'a>);

impl Serialize for FramesOut<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let session = self.0.session;
        serializer.collect_seq(self.0.frames.iter().map(|&(name, file)| Frame {
            name: session.str(name),
            file: (file != NONE).then(|| session.str(StrId(file))),
        }))
    }
}

/// A profile's samples: indices of paths in the table, written as the paths.
struct SamplesOut<'a> {
    table: &'a StackTable<'a>,
    paths: Vec<u32>,
}

impl Serialize for SamplesOut<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.paths.iter().map(|&p| self.table.path_frames(p)))
    }
}

#[derive(Serialize)]
struct Profile<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    samples: SamplesOut<'a>,
    weights: Vec<u64>,
}

/// Writes `session` as a speedscope JSON file.
pub fn write_speedscope(session: &Session, out: impl Write) -> Result<()> {
    let mut stacks = StackTable::new(session);
    // First pass: the stack (as an index into the table's paths) and weight of each merged
    // sample, per thread; the paths are written from the table once all are known.
    let mut per_thread: Vec<(Vec<u32>, Vec<u64>)> = vec![Default::default(); session.threads.len()];
    let mut last_path: Vec<Option<u32>> = vec![None; session.threads.len()];
    let samples = &session.samples;
    for i in 0..samples.len() {
        let weight = samples.weight[i];
        if weight == 0 {
            continue;
        }
        let thread = samples.thread[i].index();
        let path = stacks.path(samples.stack[i]);
        let (paths, weights) = &mut per_thread[thread];
        if last_path[thread] == Some(path) {
            *weights.last_mut().expect("a previous sample") += weight;
        } else {
            paths.push(path);
            weights.push(weight);
            last_path[thread] = Some(path);
        }
    }
    // speedscope's units: nanoseconds, bytes, or "none" for counts.
    let unit = match session.meta.sample_type.unit {
        Unit::Nanoseconds => "nanoseconds",
        Unit::Bytes => "bytes",
        _ => "none",
    };
    let stacks = stacks.done();
    let mut profiles = Vec::new();
    for (t, (paths, weights)) in per_thread.into_iter().enumerate() {
        if paths.is_empty() {
            continue;
        }
        let end_value = weights.iter().sum();
        profiles.push(Profile {
            kind: "sampled",
            name: thread_name(session, ThreadIdx(t as u32)),
            unit,
            start_value: 0,
            end_value,
            samples: SamplesOut {
                table: &stacks,
                paths,
            },
            weights,
        });
    }
    let active_profile_index = profiles
        .iter()
        .enumerate()
        .max_by_key(|(i, p)| (p.end_value, std::cmp::Reverse(*i)))
        .map_or(0, |(i, _)| i);
    let file = File {
        schema: SCHEMA_URL,
        shared: Shared {
            frames: FramesOut(&stacks),
        },
        profiles,
        name: super::title(session),
        active_profile_index,
        exporter: format!("prof {}", crate::VERSION),
    };
    serde_json::to_writer(out, &file).map_err(|e| Error::Write(e.into()))?;
    Ok(())
}

/// `name (tid)` or `thread tid` for an unnamed thread.
fn thread_name(session: &Session, thread: ThreadIdx) -> String {
    let thread = &session.threads[thread.index()];
    match session.str(thread.name) {
        "" => format!("thread {}", thread.tid),
        name => format!("{name} ({})", thread.tid),
    }
}

/// Not yet seen, in [`StackTable::by_stack`] and [`StackTable::by_frame`].
const NONE: u32 = u32::MAX;

/// Speedscope frames and root-first stacks of them, each distinct one stored once, in flat
/// vectors (a million distinct stacks cost 12 bytes each and their frames, not a `Vec` each).
struct StackTable<'s> {
    session: &'s Session,
    /// Each speedscope frame's name and file ([`NONE`] for none: 8 bytes a frame, where an
    /// `Option` took 12).
    frames: Vec<(StrId, u32)>,
    /// Indices into `frames`, hashed by name and file.
    frame_index: hashbrown::HashTable<u32>,
    /// The speedscope frame of each session frame, or [`NONE`].
    by_frame: Vec<u32>,
    /// Every path's frames, one after the other; path `p` ends at `path_ends[p]`.
    path_frames: Vec<u32>,
    path_ends: Vec<u32>,
    /// Indices of paths, hashed by their frames: each path is stored once, not again as a key.
    path_index: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// The path of each session stack, or [`NONE`].
    by_stack: Vec<u32>,
}

impl<'s> StackTable<'s> {
    fn new(session: &'s Session) -> Self {
        StackTable {
            session,
            frames: Vec::new(),
            frame_index: hashbrown::HashTable::new(),
            by_frame: vec![NONE; session.frames.len()],
            path_frames: Vec::new(),
            path_ends: Vec::new(),
            path_index: hashbrown::HashTable::new(),
            hasher: Default::default(),
            by_stack: vec![NONE; session.stacks.len()],
        }
    }

    /// Drops the tables only building needs.
    fn done(mut self) -> Self {
        self.frame_index = hashbrown::HashTable::new();
        self.path_index = hashbrown::HashTable::new();
        self.by_frame = Vec::new();
        self.by_stack = Vec::new();
        self
    }

    /// The frames of path `p`, root first.
    fn path_frames(&self, p: u32) -> &[u32] {
        let p = p as usize;
        let start = match p {
            0 => 0,
            _ => self.path_ends[p - 1] as usize,
        };
        &self.path_frames[start..self.path_ends[p] as usize]
    }

    /// The speedscope frame of a session frame.
    fn frame(&mut self, id: FrameId) -> u32 {
        let seen = self.by_frame[id.index()];
        if seen != NONE {
            return seen;
        }
        let frame = self.session.frame(id);
        let key = (frame.name, frame.file.map_or(NONE, |f| f.0));
        let (hasher, frames) = (&self.hasher, &mut self.frames);
        let index = match self.frame_index.entry(
            hasher.hash_one(key),
            |&f| frames[f as usize] == key,
            |&f| hasher.hash_one(frames[f as usize]),
        ) {
            hashbrown::hash_table::Entry::Occupied(found) => *found.get(),
            hashbrown::hash_table::Entry::Vacant(new) => {
                frames.push(key);
                *new.insert(frames.len() as u32 - 1).get()
            }
        };
        self.by_frame[id.index()] = index;
        index
    }

    /// The index of a session stack's root-first speedscope frames among the paths.
    fn path(&mut self, stack: StackId) -> u32 {
        let seen = self.by_stack[stack.index()];
        if seen != NONE {
            return seen;
        }
        let start = self.path_frames.len();
        let session = self.session;
        for f in session.stack_frames(stack) {
            let frame = self.frame(f);
            self.path_frames.push(frame);
        }
        self.path_frames[start..].reverse();
        let (hasher, ends, all) = (&self.hasher, &self.path_ends, &self.path_frames);
        let path_of = |p: u32| {
            let p = p as usize;
            let from = if p == 0 { 0 } else { ends[p - 1] as usize };
            &all[from..ends[p] as usize]
        };
        let path = &all[start..];
        let p = match self.path_index.entry(
            hasher.hash_one(path),
            |&p| path_of(p) == path,
            |&p| hasher.hash_one(path_of(p)),
        ) {
            hashbrown::hash_table::Entry::Occupied(found) => {
                let p = *found.get();
                self.path_frames.truncate(start);
                p
            }
            hashbrown::hash_table::Entry::Vacant(new) => {
                let p = self.path_ends.len() as u32;
                new.insert(p);
                // Inputs are bounded (256 MiB): their paths' frames are far below 2^32.
                let end = u32::try_from(self.path_frames.len()).expect("paths above 2^32 frames");
                self.path_ends.push(end);
                p
            }
        };
        self.by_stack[stack.index()] = p;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn export() -> Value {
        let mut out = Vec::new();
        write_speedscope(&crate::export::fixture::session(), &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    fn names(file: &Value, stack: &Value) -> Vec<String> {
        let frames = file["shared"]["frames"].as_array().unwrap();
        let names = stack.as_array().unwrap().iter();
        names
            .map(|i| {
                frames[i.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn frames_are_shared_once_per_function_and_file() {
        let file = export();
        let frames: Vec<&str> = file["shared"]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let mut sorted = frames.clone();
        sorted.sort();
        assert_eq!(sorted, ["hash", "idle", "main", "work"]);
        assert_eq!(file["$schema"], SCHEMA_URL);
        assert_eq!(file["name"], "demo --fast");
    }

    #[test]
    fn one_profile_per_thread_with_root_first_merged_samples() {
        let file = export();
        let profiles = file["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2);
        let main = &profiles[0];
        assert_eq!(main["name"], "main (1)");
        assert_eq!(main["unit"], "nanoseconds");
        let samples = main["samples"].as_array().unwrap();
        assert_eq!(names(&file, &samples[0]), ["main", "work", "hash"]);
        assert_eq!(names(&file, &samples[1]), ["main", "idle"]);
        assert_eq!(main["weights"], serde_json::json!([200, 50, 100]));
        assert_eq!(main["endValue"], 350);
        // `work` at line 13 is the same speedscope frame as `work` at line 12.
        let worker = &profiles[1];
        assert_eq!(worker["weights"], serde_json::json!([120, 80]));
        let worker_samples = worker["samples"].as_array().unwrap();
        assert_eq!(worker_samples[1][1], samples[0][1]);
        assert_eq!(file["activeProfileIndex"], 0);
    }
}
