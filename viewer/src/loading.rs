//! Loading a session into the wasm module without holding its bytes twice, and the module's
//! memory size (for the benchmark).

use crate::profile::{Profile, ViewSpec};
use prof_session::aggregate::{
    thread_totals, CallTree, Filter, StackWeights, TransformedStacks, TASK_WAIT_TYPE,
};
use prof_session::session::{ReadError, ReadOptions, Session, DEFAULT_MAX_BYTES};
use wasm_bindgen::prelude::*;

/// A session file's JSON, gathered in the wasm module's memory as it arrives (from the network,
/// or from the browser's `DecompressionStream` for a gzip file: the module holds no inflater):
/// each chunk is copied in once, and the reader then parses them where they lie.
#[wasm_bindgen]
#[derive(Debug)]
pub struct SessionBytes {
    bytes: Vec<u8>,
    /// The most bytes a session may have: [`DEFAULT_MAX_BYTES`], as for `prof report`.
    limit: u64,
    /// Why the file cannot be read, found while gathering it (past `limit`, or gzip the
    /// browser could not decompress): its bytes were let go, and reading it says this.
    refused: Option<ReadError>,
}

#[wasm_bindgen]
impl SessionBytes {
    /// An empty buffer with room for `size` bytes (the file's length if known, else 0), so a
    /// known length is reserved once rather than grown by doubling.
    #[wasm_bindgen(constructor)]
    pub fn new(size: f64) -> SessionBytes {
        SessionBytes::limited(size, DEFAULT_MAX_BYTES)
    }

    /// Appends a chunk of the file. False once the file is larger than a session may be: the
    /// bytes are let go (a gzip file that inflates without end fills no memory) and the caller
    /// may stop, as reading the file will only say it is too large.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        if self.refused.is_none() && (self.bytes.len() + chunk.len()) as u64 > self.limit {
            self.refuse(ReadError::too_large(self.limit));
        }
        if self.refused.is_some() {
            return false;
        }
        self.bytes.extend_from_slice(chunk);
        true
    }

    /// Says the browser could not decompress the gzip file (`why`, its message): reading it
    /// then says so. Chromium's messages end in a full stop, which the reader's own sentence
    /// after it would double.
    pub fn undecompressed(&mut self, why: &str) {
        let why = why.trim_end_matches('.');
        self.refuse(ReadError::Invalid(format!(
            "gzip data the browser could not decompress: {why}"
        )));
    }

    /// The number of bytes gathered.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.bytes.len() as f64
    }
}

impl SessionBytes {
    /// [`SessionBytes::new`] with `limit` in place of [`DEFAULT_MAX_BYTES`].
    fn limited(size: f64, limit: u64) -> SessionBytes {
        SessionBytes {
            bytes: Vec::with_capacity((size.max(0.0) as u64).min(limit) as usize),
            limit,
            refused: None,
        }
    }

    /// The session read from the gathered bytes, or why it cannot be.
    fn read(self) -> Result<Session, ReadError> {
        match self.refused {
            Some(why) => Err(why),
            None => prof_session::session::read_json_bytes(
                &self.bytes,
                ReadOptions::default().max_bytes(self.limit),
            ),
        }
    }

    fn refuse(&mut self, why: ReadError) {
        self.refused = Some(why);
        self.bytes = Vec::new();
    }
}

#[wasm_bindgen]
impl Profile {
    /// Reads the gathered session with `prof`'s own reader, then frees the bytes before the
    /// call tree is built, so the tree reuses their memory.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: SessionBytes) -> Result<Profile, JsError> {
        Profile::read_gathered(bytes, None)
        // `bytes` is dropped here, before the caller builds anything on the profile.
    }

    /// Reads a session file the user opened in the page, gathered as [`Profile::from_bytes`]
    /// reads one; `name` (the file's) starts the error, which says how to open the formats the
    /// page does not read (their readers would more than double the module's size).
    #[wasm_bindgen(js_name = loadOpened)]
    pub fn load_opened(bytes: SessionBytes, name: &str) -> Result<Profile, JsError> {
        Profile::read_gathered(bytes, Some(name))
    }
}

impl Profile {
    /// The one way the page reads a session: `prof`'s own reader of uncompressed JSON (the
    /// page decompresses gzip files first), and on failure one message saying what is wrong
    /// and where, prefixed by the file's name when the user opened one (with how to open the
    /// formats the page does not read).
    fn read_gathered(bytes: SessionBytes, opened: Option<&str>) -> Result<Profile, JsError> {
        let session = bytes.read().map_err(|e| {
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
            shown_totals: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::SessionBuilder;

    fn session_json() -> Vec<u8> {
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        b.push_named(&["main", "work"], main, 0, 7);
        let mut json = Vec::new();
        prof_session::session::write(&b.finish(), &mut json).unwrap();
        json
    }

    #[test]
    fn gathered_chunks_read_as_the_whole_file() {
        let json = session_json();
        let mut bytes = SessionBytes::new(json.len() as f64);
        for chunk in json.chunks(5) {
            assert!(bytes.push(chunk));
        }
        assert_eq!(bytes.length(), json.len() as f64);
        assert_eq!(bytes.read().unwrap().total_weight(), 7);
    }

    #[test]
    fn a_file_past_the_limit_is_let_go_and_read_as_too_large() {
        let json = session_json();
        let mut bytes = SessionBytes::limited(0.0, json.len() as u64 - 1);
        assert!(bytes.push(&json[..10]));
        assert!(!bytes.push(&json[10..]));
        assert_eq!(bytes.length(), 0.0);
        // Once refused, it stays refused.
        assert!(!bytes.push(b" "));
        let e = bytes.read().unwrap_err().to_string();
        assert!(e.contains("the limit for a session file"), "{e}");
    }

    #[test]
    fn gzip_the_browser_could_not_decompress_says_so() {
        let mut bytes = SessionBytes::new(0.0);
        bytes.push(b"{");
        bytes.undecompressed("incorrect header check");
        let e = bytes.read().unwrap_err().to_string();
        assert_eq!(
            e,
            "gzip data the browser could not decompress: incorrect header check"
        );
        let mut bytes = SessionBytes::new(0.0);
        bytes.undecompressed("The compressed data was not valid: invalid block type.");
        let e = bytes.read().unwrap_err().to_string();
        assert!(e.ends_with("invalid block type"), "{e}");
    }

    #[test]
    fn gzip_handed_to_the_reader_is_refused_with_what_to_do() {
        let mut bytes = SessionBytes::new(0.0);
        bytes.push(&[0x1f, 0x8b, 8, 0]);
        let e = bytes.read().unwrap_err().to_string();
        assert!(
            e.contains("gzip-compressed") && e.contains("decompressed"),
            "{e}"
        );
    }
}
