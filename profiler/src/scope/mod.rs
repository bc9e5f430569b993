//! Instrumented scopes and marks: exact call counts and durations on the sampler's timeline.
//!
//! `prof::scope!("parse")` opens a scope that ends when the returned [`Guard`] drops;
//! `prof::scope!("request", id = req.id)` adds up to [`MAX_FIELDS`] fields (values formatted
//! with `Display`, only while a session runs, cut to [`MAX_VALUE`] bytes); `prof::mark!("gc")`
//! records an instant. Each call site has a `static` [`Site`] (name, `file!()`, `line!()`),
//! registered once, on its first use in a session.
//!
//! While no session runs a scope costs one relaxed atomic load: no thread-local access, no
//! clock read. While a [`Profiler`](crate::Profiler) runs (cpu, wall or alloc mode) each begin,
//! end and mark writes one fixed-size record (site, monotonic time, the same clock samples are
//! stamped with) into the calling thread's `buffer::EventBuf`: allocated and registered on
//! the thread's first event, then written without allocation or lock. The collector drains the
//! buffers; a full buffer drops the event and counts it
//! ([`Scopes::dropped_events`](crate::session::Scopes)), never waits.
//!
//! Samples get their scope and task at assembly from these events, by time on their thread:
//! a sample taken by the thread's own signal handler is stamped after every begin and before
//! every end that the interrupted code ran around it (the handler runs inside them, on the same
//! monotonic clock), so attribution by time is exact for those; samples taken elsewhere (wall
//! mode's blocked threads, `perf_ring`) get the scopes open at their time.
//!
//! A [`Guard`] is not `Send`: a scope is one thread's. Across `.await` points use
//! [`crate::task::instrument`].

pub(crate) mod buffer;
pub(crate) mod join;
pub(crate) mod recording;

use buffer::EventBuf;
use prof_capture::sys;
use std::cell::{Cell, OnceCell};
use std::fmt::Write as _;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The most fields a scope or mark records (more are ignored).
pub const MAX_FIELDS: usize = 4;
/// The most bytes of a field's value (longer ones are cut at a character boundary).
pub const MAX_VALUE: usize = 48;
/// The most bytes of a task's name.
pub const MAX_TASK_NAME: usize = 128;
/// Each thread's buffer, in 8-byte words (256 KiB). A scope without fields takes 7 words (a
/// begin of 4, an end of 3), so the buffer holds about 4,700 of them: the collector sleeps
/// less while a buffer fills fast (see [`drain`]), and a writer whose buffer passes a quarter
/// full wakes it (see [`wake_on_fill`]).
pub(crate) const BUFFER_WORDS: usize = 32 << 10;
/// Words of an end record ([`buffer::END`] or [`buffer::POLL_END`]).
const END_WORDS: usize = 3;

/// Whether a session records scopes.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Sessions started since the process did: a task announces its name once per session.
static SESSION: AtomicU64 = AtomicU64::new(0);
/// Whether task polls note where their tasks wait (wall mode sessions: see [`awaits`]).
static AWAITS: AtomicBool = AtomicBool::new(false);

/// What a call site is.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A scope: a begin and an end.
    Scope,
    /// An instant.
    Mark,
}

/// A call site of [`scope!`](crate::scope!) or [`mark!`](crate::mark!): a `static` the macro
/// declares. Public for the macros only.
#[doc(hidden)]
pub struct Site {
    name: &'static str,
    file: &'static str,
    line: u32,
    keys: &'static [&'static str],
    kind: Kind,
    /// The index in [`SITES`] plus one; 0 until the site's first use in a session.
    id: AtomicU32,
}

/// Every site used so far, registered on first use.
static SITES: Mutex<Vec<&'static Site>> = Mutex::new(Vec::new());
/// Every thread's buffer.
static BUFFERS: Mutex<Vec<Arc<EventBuf>>> = Mutex::new(Vec::new());
/// How to wake the collector when a buffer passes a quarter full (see [`wake_on_fill`]).
static COLLECTOR: Mutex<Option<Box<dyn Fn() + Send>>> = Mutex::new(None);

impl Site {
    /// A site (the macros' `static`).
    pub const fn new(
        name: &'static str,
        file: &'static str,
        line: u32,
        keys: &'static [&'static str],
        kind: Kind,
    ) -> Site {
        Site {
            name,
            file,
            line,
            keys,
            kind,
            id: AtomicU32::new(0),
        }
    }

    /// The site's id, registering it on first use.
    #[inline]
    fn id(&'static self) -> u32 {
        match self.id.load(Ordering::Relaxed) {
            0 => self.register(),
            id => id,
        }
    }

    #[cold]
    fn register(&'static self) -> u32 {
        let mut sites = SITES.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have registered it meanwhile.
        match self.id.load(Ordering::Relaxed) {
            0 => {
                prof_capture::sys::bypass(|| sites.push(self));
                let id = sites.len() as u32;
                self.id.store(id, Ordering::Relaxed);
                id
            }
            id => id,
        }
    }
}

/// A site as the session keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SiteInfo {
    pub name: &'static str,
    pub file: &'static str,
    pub line: u32,
    pub keys: &'static [&'static str],
    pub kind: Kind,
}

/// The registered sites, by id minus one.
pub(crate) fn sites() -> Vec<SiteInfo> {
    SITES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|s| SiteInfo {
            name: s.name,
            file: s.file,
            line: s.line,
            keys: s.keys,
            kind: s.kind,
        })
        .collect()
}

/// Whether a session records scopes: the one relaxed load a disabled scope costs.
#[doc(hidden)]
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The calling thread's state. `Local` has a destructor (the buffer's `Arc`), so the first
/// access registers it; the sampler's signal handler never reads it.
struct Local {
    buf: OnceCell<Arc<EventBuf>>,
    /// The sequence number of the innermost open scope (0: none).
    current: Cell<u64>,
    /// The last sequence number given.
    seq: Cell<u64>,
    /// Recorded scopes and polls begun and not yet ended: the buffer keeps room for their ends.
    open: Cell<u32>,
    /// The polls begun on this thread and not yet ended, innermost in the lowest bit: 1 for a
    /// poll whose begin was recorded (its end is written), 0 for one whose begin a full buffer
    /// refused (its end is not: it would take room kept for others' ends). Polls nested more
    /// than 64 deep lose their outermost bits, and those polls end at the session's stop.
    polls: Cell<u64>,
}

std::thread_local! {
    static LOCAL: Local = const {
        Local {
            buf: OnceCell::new(),
            current: Cell::new(0),
            seq: Cell::new(0),
            open: Cell::new(0),
            polls: Cell::new(0),
        }
    };
}

impl Local {
    fn buf(&self) -> &EventBuf {
        self.buf.get_or_init(|| {
            // prof's memory, not the program's: an alloc session does not sample it.
            prof_capture::sys::bypass(|| {
                let buf = Arc::new(EventBuf::new(BUFFER_WORDS, sys::gettid()));
                BUFFERS
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Arc::clone(&buf));
                buf
            })
        })
    }

    /// Writes `record`, an end (or a record that opens nothing), without reserve: the room for
    /// an end was kept when its begin was written.
    fn push(&self, record: &[u64]) -> bool {
        self.write(record, 0)
    }

    /// Writes `record`, a begin, mark or poll begin, only if room for the ends of every open
    /// recorded scope and poll, and one more (its own end), stays free after it: the end of a
    /// recorded begin is never dropped (a dropped end would leave its span open until the
    /// session's end, given to every later sample of the thread).
    fn push_opening(&self, record: &[u64]) -> bool {
        self.write(record, (self.open.get() as usize + 1) * END_WORDS)
    }

    fn write(&self, record: &[u64], reserve: usize) -> bool {
        let Some(held) = self.buf().write(record, reserve) else {
            return false;
        };
        // Passing a quarter full: the collector may be in a long sleep, chosen while the
        // buffers were quiet. Once per crossing, and never waiting for the lock.
        let quarter = BUFFER_WORDS / 4;
        if held >= quarter && held - record.len() < quarter {
            if let Ok(collector) = COLLECTOR.try_lock() {
                if let Some(wake) = collector.as_ref() {
                    wake();
                }
            }
        }
        true
    }
}

/// Sets how a buffer passing a quarter full wakes the collector (`None` at its end: what
/// `wake` needs may be gone after it).
pub(crate) fn wake_on_fill(wake: Option<Box<dyn Fn() + Send>>) {
    *COLLECTOR.lock().unwrap_or_else(|e| e.into_inner()) = wake;
}

/// A value's text, cut to `N` bytes at a character boundary, on the stack.
pub(crate) struct Text<const N: usize = MAX_VALUE> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Text {
            bytes: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> Text<N> {
    /// The text written so far.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> std::fmt::Write for Text<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = N - self.len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        if take < s.len() {
            // Full: the rest of the value is cut.
            return Err(std::fmt::Error);
        }
        Ok(())
    }
}

/// The record of a begin or mark with its fields: `head` then one field record per value.
fn with_fields(
    head: &[u64],
    values: &[&dyn std::fmt::Display],
    out: &mut [u64; MAX_RECORD_SET],
) -> usize {
    out[..head.len()].copy_from_slice(head);
    let mut n = head.len();
    for (i, value) in values.iter().take(MAX_FIELDS).enumerate() {
        let mut text = Text::<MAX_VALUE>::default();
        let _ = write!(text, "{value}");
        let words = buffer::pack(&text.bytes[..text.len], &mut out[n + 1..]);
        out[n] = buffer::header(buffer::FIELD, 1 + words, i as u32, text.len as u16);
        n += 1 + words;
    }
    n
}

/// Words of a begin with every field at its longest.
const MAX_RECORD_SET: usize = 4 + MAX_FIELDS * (1 + MAX_VALUE / 8);

/// An open scope: ends it when dropped. Made by [`scope!`](crate::scope!); not `Send` (a scope
/// belongs to the thread that opened it).
#[must_use = "the scope ends when this guard drops: bind it with `let _guard = ...`"]
pub struct Guard {
    /// The scope's sequence number on its thread; 0 when it was not recorded.
    seq: u64,
    /// The scope open around it when it began.
    parent: u64,
    _not_send: PhantomData<*const ()>,
}

impl Guard {
    /// A scope that records nothing (no session ran when it began).
    #[doc(hidden)]
    #[inline(always)]
    pub fn disabled() -> Guard {
        Guard {
            seq: 0,
            parent: 0,
            _not_send: PhantomData,
        }
    }

    /// Begins a scope of `site` with field `values` (the site's keys, in order).
    #[doc(hidden)]
    #[inline]
    pub fn begin(site: &'static Site, values: &[&dyn std::fmt::Display]) -> Guard {
        let id = site.id();
        LOCAL
            .try_with(|l| {
                let seq = l.seq.get() + 1;
                let parent = l.current.get();
                let n = values.len().min(MAX_FIELDS) as u16;
                let mut head = [buffer::header(buffer::BEGIN, 4, id, n), 0, seq, parent];
                // The scope's time starts once its fields are written, as its samples do (it
                // is not the thread's current scope before it is pushed).
                let pushed = if values.is_empty() {
                    head[1] = sys::monotonic_ns();
                    l.push_opening(&head)
                } else {
                    let mut out = [0u64; MAX_RECORD_SET];
                    let len = with_fields(&head, values, &mut out);
                    out[1] = sys::monotonic_ns();
                    l.push_opening(&out[..len])
                };
                if !pushed {
                    // Not recorded: no end either, and scopes inside get the parent's.
                    return Guard::disabled();
                }
                l.seq.set(seq);
                l.current.set(seq);
                l.open.set(l.open.get() + 1);
                Guard {
                    seq,
                    parent,
                    _not_send: PhantomData,
                }
            })
            .unwrap_or_else(|_| Guard::disabled())
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        if self.seq != 0 {
            self.end();
        }
    }
}

impl Guard {
    fn end(&self) {
        let _ = LOCAL.try_with(|l| {
            // Guards dropped out of order: only the innermost gives the slot back.
            if l.current.get() == self.seq {
                l.current.set(self.parent);
            }
            l.open.set(l.open.get().saturating_sub(1));
            if enabled() {
                let time = sys::monotonic_ns();
                l.push(&[buffer::header(buffer::END, 3, 0, 0), time, self.seq]);
            }
        });
    }
}

/// Records an instant of `site` with field `values`.
#[doc(hidden)]
#[inline]
pub fn mark(site: &'static Site, values: &[&dyn std::fmt::Display]) {
    let id = site.id();
    let time = sys::monotonic_ns();
    let n = values.len().min(MAX_FIELDS) as u16;
    let head = [buffer::header(buffer::MARK, 2, id, n), time];
    let mut out = [0u64; MAX_RECORD_SET];
    let len = with_fields(&head, values, &mut out);
    let _ = LOCAL.try_with(|l| l.push_opening(&out[..len]));
}

/// Records the start of a poll of task `id` on the calling thread; `name` is written the first
/// time in a session (`announced` holds the session it was last written in).
pub(crate) fn poll_begin(id: u64, name: &str, announced: &mut u64) {
    let session = session();
    let name = if *announced != session {
        *announced = session;
        name
    } else {
        ""
    };
    poll_begin_named(id, name);
}

/// The current session's number (a task records its name once per session).
pub(crate) fn session() -> u64 {
    SESSION.load(Ordering::Relaxed)
}

/// Records the start of a poll of task `id` on the calling thread, after its name unless
/// `name` is empty.
pub(crate) fn poll_begin_named(id: u64, name: &str) {
    if !name.is_empty() {
        let mut take = name.len().min(MAX_TASK_NAME);
        while !name.is_char_boundary(take) {
            take -= 1;
        }
        let mut out = [0u64; 2 + MAX_TASK_NAME / 8];
        let words = buffer::pack(&name.as_bytes()[..take], &mut out[2..]);
        out[0] = buffer::header(buffer::TASK_NAME, 2 + words, 0, take as u16);
        out[1] = id;
        let _ = LOCAL.try_with(|l| l.push(&out[..2 + words]));
    }
    let time = sys::monotonic_ns();
    let _ = LOCAL.try_with(|l| {
        let recorded = l.push_opening(&[buffer::header(buffer::POLL_BEGIN, 3, 0, 0), time, id]);
        if recorded {
            l.open.set(l.open.get() + 1);
        }
        l.polls.set(l.polls.get() << 1 | u64::from(recorded));
    });
}

/// Records the end of a poll of task `id` on the calling thread (the innermost poll begun),
/// unless its begin was refused; says whether it was recorded.
pub(crate) fn poll_end(id: u64) -> bool {
    let time = sys::monotonic_ns();
    LOCAL
        .try_with(|l| {
            let polls = l.polls.get();
            l.polls.set(polls >> 1);
            if polls & 1 == 0 {
                return false;
            }
            l.open.set(l.open.get().saturating_sub(1));
            l.push(&[buffer::header(buffer::POLL_END, 3, 0, 0), time, id])
        })
        .unwrap_or(false)
}

/// Whether the session wants to know where tasks wait: a wall mode session, whose waits are
/// time the task spent, unlike a CPU session's. One relaxed load.
pub(crate) fn awaits() -> bool {
    AWAITS.load(Ordering::Relaxed)
}

/// Records where task `id`, whose poll just ended (and was recorded) on the calling thread,
/// waits: `addrs`, return addresses innermost first (see [`sys::poll_noting_await`]). Dropped
/// and counted when the buffer lacks room beside the ends of the scopes and polls still open.
pub(crate) fn await_point(id: u64, addrs: &[u64]) {
    let n = addrs.len().min(buffer::MAX_RECORD - 2);
    let mut out = [0u64; buffer::MAX_RECORD];
    out[0] = buffer::header(buffer::AWAIT, 2 + n, 0, 0);
    out[1] = id;
    out[2..2 + n].copy_from_slice(&addrs[..n]);
    let _ = LOCAL.try_with(|l| l.write(&out[..2 + n], l.open.get() as usize * END_WORDS));
}

/// Starts recording for a session that started at `start_ns` (monotonic): events written
/// before (a previous session's stragglers) are discarded. With `awaits`, task polls note where
/// their tasks wait.
pub(crate) fn start(start_ns: u64, awaits: bool) {
    let mut rec = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let buffers = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
    for buf in buffers.iter() {
        buf.drain(|_, _| {});
        buf.take_dropped();
    }
    drop(buffers);
    *rec = Some(recording::Recording::new(start_ns));
    SESSION.fetch_add(1, Ordering::Relaxed);
    AWAITS.store(awaits, Ordering::Relaxed);
    ENABLED.store(true, Ordering::Release);
}

/// In a child forked during a session: nothing is recorded (the collector stayed in the
/// parent). An atomic store only: async-signal-safe.
pub(crate) fn forked_child() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// The session's recording so far.
static RECORDING: Mutex<Option<recording::Recording>> = Mutex::new(None);

/// Moves the events in every thread's buffer into the session's recording; forgets the buffers
/// of threads that exited. The collector calls this between its sleeps and chooses the next
/// sleep with what it returns: the most words one buffer held (of [`BUFFER_WORDS`]).
pub(crate) fn drain() -> usize {
    let mut rec = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rec) = rec.as_mut() else {
        return 0;
    };
    let mut buffers = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
    // A buffer whose thread's reference went with the thread before this drain holds the
    // thread's last events: taken now, then the buffer is forgotten.
    let gone: Vec<bool> = buffers.iter().map(|b| Arc::strong_count(b) == 1).collect();
    // `strong_count` is a relaxed load: it does not order the drain below after the exited
    // thread's last writes. The thread's `Arc` drop released them (a release decrement); this
    // fence pairs with it, so a buffer seen gone is drained with everything its thread wrote
    // before it is forgotten.
    std::sync::atomic::fence(Ordering::Acquire);
    let mut fullest = 0;
    for buf in buffers.iter() {
        fullest = fullest.max(rec.drain(buf));
    }
    let mut gone = gone.into_iter();
    buffers.retain(|_| !gone.next().unwrap_or(false));
    fullest
}

/// Stops recording new scopes, marks and polls: called as the session's end time is read.
/// A thread that saw `enabled()` just before may still write (a scope begun then, the end of
/// one open): [`recording::Recording::finish`] keeps nothing that began after the end.
pub(crate) fn disable() {
    ENABLED.store(false, Ordering::Release);
}

/// Stops recording and returns what was recorded (`None` when recording was not started).
pub(crate) fn stop() -> Option<recording::Recording> {
    disable();
    drain();
    let mut rec = RECORDING.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    rec.sites = sites();
    Some(rec)
}

/// The `static` call site of [`scope!`](crate::scope!) or [`mark!`](crate::mark!).
#[doc(hidden)]
#[macro_export]
macro_rules! __prof_site {
    ($name:literal, $kind:ident $(, $key:ident)*) => {
        $crate::scope::Site::new(
            $name,
            ::core::file!(),
            ::core::line!(),
            &[$(::core::stringify!($key)),*],
            $crate::scope::Kind::$kind,
        )
    };
}

/// Opens a scope that ends when the returned [`Guard`](crate::scope::Guard) drops:
/// `let _guard = prof::scope!("parse");`, or with fields (up to four, `Display` values,
/// evaluated only while a session runs): `prof::scope!("request", id = req.id, path = p)`.
#[macro_export]
macro_rules! scope {
    ($name:literal $(, $key:ident = $value:expr)* $(,)?) => {{
        static SITE: $crate::scope::Site = $crate::__prof_site!($name, Scope $(, $key)*);
        if $crate::scope::enabled() {
            $crate::scope::Guard::begin(&SITE, &[$(&$value as &dyn ::core::fmt::Display),*])
        } else {
            $crate::scope::Guard::disabled()
        }
    }};
}

/// Records an instant on the calling thread's timeline: `prof::mark!("gc")`, or with fields as
/// [`scope!`](crate::scope!) takes them: `prof::mark!("flush", bytes = n)`.
#[macro_export]
macro_rules! mark {
    ($name:literal $(, $key:ident = $value:expr)* $(,)?) => {{
        static SITE: $crate::scope::Site = $crate::__prof_site!($name, Mark $(, $key)*);
        if $crate::scope::enabled() {
            $crate::scope::mark(&SITE, &[$(&$value as &dyn ::core::fmt::Display),*]);
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_whose_begin_was_refused_writes_no_end_and_keeps_the_room_of_others() {
        // On a thread of its own (its own buffer); a session started by another test may
        // drain the buffer meanwhile, which changes nothing checked here.
        std::thread::spawn(|| {
            let open = || LOCAL.with(|l| l.open.get());
            // Begin polls until the buffer refuses one: each reserves room for every end.
            let mut recorded = 0u32;
            let refused = loop {
                let before = open();
                poll_begin_named(1, "");
                if open() == before {
                    break recorded;
                }
                recorded += 1;
                assert!(recorded < BUFFER_WORDS as u32, "no begin was refused");
            };
            assert_eq!(open(), refused);
            // The refused poll ends: nothing changes; the recorded ones then end one by one.
            poll_end(1);
            assert_eq!(open(), refused);
            poll_end(1);
            assert_eq!(open(), refused - 1);
        })
        .join()
        .unwrap();
    }
}
