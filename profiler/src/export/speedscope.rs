//! speedscope's JSON file format (`https://www.speedscope.app/file-format-schema.json`).
//!
//! One `sampled` profile per thread, its samples in time order with consecutive identical stacks
//! merged into one weighted sample. Frames are shared and deduplicated by function name and file:
//! speedscope keys frames by name, file and line, so keeping the sampled line would split one
//! function into a node per line in its flame graph.

use crate::session::{Session, StackId, StrId, ThreadIdx, Unit};
use crate::{Error, Result};
use serde::Serialize;
use std::collections::HashMap;
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
    frames: Vec<Frame<'a>>,
}

#[derive(Serialize)]
struct Frame<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
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
    samples: Vec<&'a [u32]>,
    weights: Vec<u64>,
}

/// Writes `session` as a speedscope JSON file.
pub fn write_speedscope(session: &Session, out: impl Write) -> Result<()> {
    let mut stacks = StackTable::new(session);
    // First pass: the stack (as an index into `stacks.paths`) and weight of each merged sample,
    // per thread; the paths are borrowed only once all are known.
    let mut per_thread: Vec<(Vec<usize>, Vec<u64>)> =
        vec![Default::default(); session.threads.len()];
    let mut last_path: Vec<Option<usize>> = vec![None; session.threads.len()];
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
            samples: paths.iter().map(|&p| stacks.paths[p].as_slice()).collect(),
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
            frames: stacks.frames,
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

/// Speedscope frames and root-first stacks of them, each distinct one stored once.
struct StackTable<'s> {
    session: &'s Session,
    frames: Vec<Frame<'s>>,
    frame_index: HashMap<(StrId, Option<StrId>), u32>,
    paths: Vec<Vec<u32>>,
    /// Indices into `paths`, hashed by the path: each path is stored once, not again as a key.
    path_index: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    by_stack: HashMap<StackId, usize>,
}

impl<'s> StackTable<'s> {
    fn new(session: &'s Session) -> Self {
        StackTable {
            session,
            frames: Vec::new(),
            frame_index: HashMap::new(),
            paths: Vec::new(),
            path_index: hashbrown::HashTable::new(),
            hasher: Default::default(),
            by_stack: HashMap::new(),
        }
    }

    /// The index in `paths` of a session stack's root-first speedscope frames.
    fn path(&mut self, stack: StackId) -> usize {
        if let Some(&p) = self.by_stack.get(&stack) {
            return p;
        }
        let session = self.session;
        let mut path: Vec<u32> = session
            .stack_frames(stack)
            .map(|f| {
                let frame = session.frame(f);
                let key = (frame.name, frame.file);
                let next = self.frames.len() as u32;
                *self.frame_index.entry(key).or_insert_with(|| {
                    self.frames.push(Frame {
                        name: session.str(frame.name),
                        file: frame.file.map(|f| session.str(f)),
                    });
                    next
                })
            })
            .collect();
        path.reverse();
        let (hasher, paths) = (&self.hasher, &mut self.paths);
        let p = match self.path_index.entry(
            hasher.hash_one(&path),
            |&p| paths[p] == path,
            |&p| hasher.hash_one(&paths[p]),
        ) {
            hashbrown::hash_table::Entry::Occupied(found) => *found.get(),
            hashbrown::hash_table::Entry::Vacant(new) => {
                paths.push(path);
                new.insert(paths.len() - 1);
                paths.len() - 1
            }
        };
        self.by_stack.insert(stack, p);
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
