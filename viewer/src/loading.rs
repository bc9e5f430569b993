//! Loading a session into the wasm module without holding its bytes twice, and the module's
//! memory size (for the benchmark).

use crate::profile::{Profile, ViewSpec};
use prof::aggregate::{
    thread_totals, CallTree, Filter, StackWeights, TransformedStacks, TASK_WAIT_TYPE,
};
use prof::session::Session;
use wasm_bindgen::prelude::*;

/// A session file's bytes, gathered in the wasm module's memory as they arrive from the network:
/// each chunk is copied in once, and the reader then parses them where they lie.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct SessionBytes {
    bytes: Vec<u8>,
}

#[wasm_bindgen]
impl SessionBytes {
    /// An empty buffer with room for `size` bytes (the file's length if known, else 0), so a
    /// known length is reserved once rather than grown by doubling.
    #[wasm_bindgen(constructor)]
    pub fn new(size: f64) -> SessionBytes {
        SessionBytes {
            bytes: Vec::with_capacity(size.max(0.0) as usize),
        }
    }

    /// Appends a chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
    }

    /// The number of bytes gathered.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.bytes.len() as f64
    }
}

#[wasm_bindgen]
impl Profile {
    /// Reads the gathered session (JSON, or gzip-compressed JSON) with `prof`'s own reader, then
    /// frees the bytes before the call tree is built, so the tree reuses their memory.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: SessionBytes) -> Result<Profile, JsError> {
        Profile::read(&bytes.bytes, None)
        // `bytes` is dropped here, before the caller builds anything on the profile.
    }
}

#[wasm_bindgen]
impl Profile {
    /// Reads a session file the user opened in the page (JSON, or gzip-compressed JSON);
    /// `name` (the file's) starts the error, which says how to open the formats the page does
    /// not read (their readers would more than double the module's size).
    #[wasm_bindgen(js_name = loadOpened)]
    pub fn load_opened(bytes: &[u8], name: &str) -> Result<Profile, JsError> {
        Profile::read(bytes, Some(name))
    }
}

impl Profile {
    /// The one way the page reads a session: `prof`'s own reader, and on failure one message
    /// saying what is wrong and where, prefixed by the file's name when the user opened one
    /// (with how to open the formats the page does not read).
    pub(crate) fn read(bytes: &[u8], opened: Option<&str>) -> Result<Profile, JsError> {
        let session = prof::session::read_bytes(bytes).map_err(|e| {
            JsError::new(&match opened {
                None => format!("not a readable prof session: {e}"),
                Some(name) => format!(
                    "{name}: not a readable prof session: {e}. The page opens prof session files (.json, .json.gz); give folded stacks, perf script output or pprof to `prof serve`, or turn them into one with `prof convert FILE -o FILE.json`"
                ),
            })
        })?;
        Ok(Profile::of(session))
    }
}

impl Profile {
    /// A loaded session showing all its samples. Each thread's stack weights are kept when
    /// they cost at most 2 bytes per sample (threads x stacks x 16 bytes), so that thread
    /// changes need no pass over the samples.
    pub(crate) fn of(session: Session) -> Profile {
        let entries = session.threads.len().saturating_mul(session.stacks.len());
        let thread_weights =
            (entries <= session.samples.len() / 8).then(|| StackWeights::per_thread(&session));
        let weights =
            StackWeights::select(&session, &Filter::all(), thread_weights.as_deref(), false);
        let transformed = TransformedStacks::new(&session, &[]);
        let tree = CallTree::build_transformed(&session, &weights, &transformed);
        let totals = thread_totals(&session);
        let time_sorted = session.samples.time_ns.is_sorted();
        let mut sample_types: Vec<String> = session
            .sample_types()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        // The tasks' waits, shown in place of the samples (`prof report --waits`).
        let waits = session.tasks.polls.iter().any(|p| p.waited_at.is_some());
        if waits && !sample_types.iter().any(|t| t == TASK_WAIT_TYPE) {
            sample_types.push(TASK_WAIT_TYPE.to_owned());
        }
        Profile {
            session,
            tree,
            transformed,
            view: ViewSpec::default(),
            weights,
            highlight: None,
            thread_weights,
            thread_totals: totals,
            sample_types,
            time_sorted,
            ungrouped: None,
            grouping: None,
            unwaited: None,
            scope_calls: None,
            scope_index: Default::default(),
        }
    }
}

/// The size of the wasm module's memory in bytes (it grows and never shrinks: its peak).
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        (core::arch::wasm32::memory_size::<0>() * 65536) as f64
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0.0
    }
}
