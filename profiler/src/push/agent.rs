//! The agent's two threads: `prof-push-sampler` runs the sampler in windows and encodes each
//! into a request; `prof-push-sender` sends them, retrying with backoff. They share a queue of
//! at most [`QUEUE_WINDOWS`] requests and the [`Stats`] under one mutex, taken once or twice a
//! window: nothing the program does waits on either.

use super::http::{self, Outcome};
use super::request::{self, Request};
use super::{Config, Stats, FIRST_BACKOFF, MAX_ATTEMPTS, QUEUE_WINDOWS, WINDOW_MAX_SAMPLES};
use crate::options::Options;
use crate::sampler::Sampler;
use bytes::Bytes;
use prof_session::export::pprof::{write_pprof_with, GoHeap, GoHeapIndex, PprofOptions};
use prof_session::{Mode, Result};
use std::collections::VecDeque;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How much longer than the timeout [`Agent::stop`] waits for the sender before leaving it.
const STOP_SLACK: Duration = Duration::from_millis(200);

/// A running push agent. [`Agent::stop`] ends it (dropping it does too).
#[must_use = "the agent pushes until stopped or dropped"]
pub struct Agent {
    shared: Arc<Shared>,
    sampler: Option<JoinHandle<()>>,
    sender: Option<(JoinHandle<()>, mpsc::Receiver<()>)>,
    timeout: Duration,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Window>,
    stats: Stats,
    /// Stop was asked for.
    stopping: bool,
    /// The sampler thread queued its last window.
    sampler_done: bool,
    /// From stop: the time by which the sender must be done.
    deadline: Option<Instant>,
    /// The sender is sending a window (taken off the queue).
    in_flight: bool,
    /// Stop gave up waiting for the sender, counting what it held: it must count nothing more.
    abandoned: bool,
}

struct Window {
    request: Request,
    body: Bytes,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Agent {
    pub(crate) fn start(config: Config) -> Result<Agent> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let (started_tx, started_rx) = mpsc::sync_channel::<Result<()>>(1);
        let spawn_error = |source| prof_session::Error::Os {
            call: "spawn the push agent's thread",
            source,
        };
        let sampler = {
            let (shared, config) = (Arc::clone(&shared), config.clone());
            std::thread::Builder::new()
                .name("prof-push-sampler".into())
                .spawn(move || run_sampler(&config, &shared, started_tx))
                .map_err(spawn_error)?
        };
        match started_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = sampler.join();
                return Err(e);
            }
            Err(_) => {
                let _ = sampler.join();
                return Err(spawn_error(std::io::Error::other(
                    "the sampler thread ended at start",
                )));
            }
        }
        let (done_tx, done_rx) = mpsc::sync_channel::<()>(1);
        let sender = {
            let (shared, config) = (Arc::clone(&shared), config.clone());
            std::thread::Builder::new()
                .name("prof-push-sender".into())
                .spawn(move || {
                    run_sender(&config, &shared);
                    drop(done_tx);
                })
        };
        let mut agent = Agent {
            shared,
            sampler: Some(sampler),
            sender: None,
            timeout: config.timeout,
        };
        match sender {
            Ok(handle) => {
                agent.sender = Some((handle, done_rx));
                Ok(agent)
            }
            Err(e) => {
                agent.shutdown();
                Err(spawn_error(e))
            }
        }
    }

    /// What the agent did so far.
    pub fn stats(&self) -> Stats {
        self.shared.lock().stats.clone()
    }

    /// Ends the window under way and pushes it with the windows still queued, then returns the
    /// final counts. Returns within the agent's timeout (plus stopping the sampler and encoding
    /// that window, and 200 ms): what is not sent by then is counted dropped (queued) or failed
    /// (in flight), and the sender thread, left to end within the timeout, counts nothing more.
    pub fn stop(mut self) -> Stats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
        let deadline = Instant::now() + self.timeout;
        {
            let mut st = self.shared.lock();
            st.sampler_done = true;
            st.deadline = Some(deadline);
        }
        self.shared.wake.notify_all();
        let Some((sender, done)) = self.sender.take() else {
            return;
        };
        match done.recv_timeout(self.timeout + STOP_SLACK) {
            Err(RecvTimeoutError::Timeout) => {
                let mut st = self.shared.lock();
                st.abandoned = true;
                st.stats.dropped += st.queue.len() as u64;
                st.queue.clear();
                if st.in_flight {
                    st.stats.failed += 1;
                    st.in_flight = false;
                }
            }
            _ => {
                let _ = sender.join();
            }
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.sampler.is_some() || self.sender.is_some() {
            self.shutdown();
        }
    }
}

/// The sampler thread: one session per window, each encoded and queued as it ends.
fn run_sampler(config: &Config, shared: &Shared, started: mpsc::SyncSender<Result<()>>) {
    let options = Options::default()
        .mode(config.mode)
        .interval(config.interval)
        .max_samples(WINDOW_MAX_SAMPLES);
    let mut profiler = match Sampler::start(options.clone()) {
        Ok(p) => {
            let _ = started.send(Ok(()));
            Some(p)
        }
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let pprof_options = pprof_options(&options);
    let auth = config.auth.as_deref();
    let mut from = SystemTime::now();
    let mut window_start = Instant::now();
    let mut seq = 0u64;
    loop {
        let stopping = wait_until(shared, window_start + config.window);
        let until = SystemTime::now();
        let stopped_at = Instant::now();
        // The sampler is process-wide: from its stop to the next start nothing is sampled, and
        // that time is counted (`Stats::unsampled`). The window is symbolized after the start.
        let stopped = profiler.take().map(Sampler::stop_deferred);
        if !stopping {
            match Sampler::start(options.clone()) {
                Ok(p) => profiler = Some(p),
                Err(e) => note_error(shared, format!("cannot restart the sampler: {e}")),
            }
        }
        let restarted_at = Instant::now();
        let next_from = SystemTime::now();
        let session = stopped.map(|stopped| stopped.and_then(|build| build()));
        match session {
            Some(Ok(session)) => {
                let mut pprof = Vec::new();
                match write_pprof_with(&session, &pprof_options, &mut pprof) {
                    Ok(()) => {
                        drop(session);
                        let request = request::build(config, auth, pprof, from, until, seq);
                        seq += 1;
                        enqueue(shared, request);
                    }
                    Err(e) => note_error(shared, format!("cannot encode a window: {e}")),
                }
            }
            Some(Err(e)) => note_error(shared, format!("the sampler failed: {e}")),
            None => {}
        }
        if stopping {
            break;
        }
        if profiler.is_some() {
            shared.lock().stats.unsampled += restarted_at - stopped_at;
        } else {
            // No session this time (another one runs in the process): the window is not sampled.
            shared.lock().stats.unsampled += config.window;
        }
        from = next_from;
        window_start = restarted_at;
    }
    shared.lock().sampler_done = true;
    shared.wake.notify_all();
}

/// How a window sampled with `options` is written: an allocation window in Go's heap shape, the
/// `alloc_space`/`inuse_space` names profiling backends read (a window is a delta, so what was
/// allocated in it is shown first), with the sampling interval as its period.
fn pprof_options(options: &Options) -> PprofOptions {
    match options.mode {
        Mode::Alloc => PprofOptions::default().go_heap(GoHeap {
            default: GoHeapIndex::AllocSpace,
            interval_bytes: options.alloc_interval_bytes,
        }),
        // Cpu and Wall, and any mode the session model adds: no heap shape.
        _ => PprofOptions::default(),
    }
}

/// Waits until `until` or stop; true when stop was asked for.
fn wait_until(shared: &Shared, until: Instant) -> bool {
    let mut st = shared.lock();
    loop {
        if st.stopping {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        st = shared
            .wake
            .wait_timeout(st, until - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

fn note_error(shared: &Shared, message: String) {
    shared.lock().stats.last_error = Some(message);
}

/// Queues a window, pushing the oldest out when the queue is full.
fn enqueue(shared: &Shared, request: Request) {
    let mut request = request;
    let body = Bytes::from(std::mem::take(&mut request.body));
    let mut st = shared.lock();
    st.stats.windows += 1;
    if st.queue.len() >= QUEUE_WINDOWS {
        st.queue.pop_front();
        st.stats.dropped += 1;
    }
    st.queue.push_back(Window { request, body });
    drop(st);
    shared.wake.notify_all();
}

/// The sender thread: takes windows off the queue and sends each until accepted, refused or
/// out of tries; after stop, until the queue is empty or the deadline passed.
fn run_sender(config: &Config, shared: &Shared) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            note_error(shared, format!("cannot start the push runtime: {e}"));
            return fail_all(shared);
        }
    };
    while let Some(window) = next_window(shared) {
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let Some(timeout) = time_left(shared, config.timeout) else {
                let mut st = shared.lock();
                if !st.abandoned {
                    st.stats.failed += 1;
                    st.in_flight = false;
                }
                drop(st);
                return fail_all(shared);
            };
            let outcome = runtime.block_on(http::post(
                &config.target,
                &window.request,
                window.body.clone(),
                timeout,
            ));
            let mut st = shared.lock();
            if st.abandoned {
                return;
            }
            let message = match outcome {
                Outcome::Accepted => {
                    st.stats.pushed += 1;
                    st.stats.bytes_sent += window.body.len() as u64;
                    st.in_flight = false;
                    break;
                }
                Outcome::Refused(message) => {
                    st.stats.failed += 1;
                    st.stats.last_error = Some(message);
                    st.in_flight = false;
                    break;
                }
                Outcome::Retry(message) => message,
            };
            st.stats.last_error = Some(message);
            if attempt >= MAX_ATTEMPTS {
                st.stats.failed += 1;
                st.in_flight = false;
                break;
            }
            // Waits out the backoff, or less when stop comes (then one more try within the
            // deadline).
            let until = Instant::now() + backoff;
            while !st.stopping && Instant::now() < until {
                let wait = until.saturating_duration_since(Instant::now());
                st = shared
                    .wake
                    .wait_timeout(st, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            st.stats.retried += 1;
            attempt += 1;
            backoff *= 2;
        }
    }
}

/// The next window to send (marked in flight), waiting for one; `None` once the sampler is done
/// and the queue empty.
fn next_window(shared: &Shared) -> Option<Window> {
    let mut st = shared.lock();
    loop {
        if st.abandoned {
            return None;
        }
        if let Some(window) = st.queue.pop_front() {
            st.in_flight = true;
            return Some(window);
        }
        if st.sampler_done {
            return None;
        }
        st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
    }
}

/// The time one request may take: the timeout, cut to what is left before stop's deadline;
/// `None` when nothing is.
fn time_left(shared: &Shared, timeout: Duration) -> Option<Duration> {
    match shared.lock().deadline {
        None => Some(timeout),
        Some(deadline) => {
            let left = deadline.saturating_duration_since(Instant::now());
            (!left.is_zero()).then(|| left.min(timeout))
        }
    }
}

/// Counts every window still queued as dropped (the sender cannot send them).
fn fail_all(shared: &Shared) {
    let mut st = shared.lock();
    if st.abandoned {
        return;
    }
    st.stats.dropped += st.queue.len() as u64;
    st.queue.clear();
    // Later windows would wait forever: stop taking them.
    st.abandoned = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocation windows were pushed with prof's column names
    /// (`alloc_bytes`, `inuse_bytes`), not the `alloc_space`/`inuse_space` of Go's heap profile
    /// that backends read, and a heap period of the default interval whatever was used.
    #[test]
    fn allocation_windows_are_pushed_in_go_heap_shape() {
        let alloc = Options::default()
            .mode(Mode::Alloc)
            .alloc_interval_bytes(64 * 1024);
        let heap = pprof_options(&alloc).go_heap.expect("Go's heap shape");
        assert_eq!(heap.default, GoHeapIndex::AllocSpace);
        assert_eq!(heap.interval_bytes, 64 * 1024);
        assert_eq!(pprof_options(&Options::default()), PprofOptions::default());
        assert_eq!(
            pprof_options(&Options::default().mode(Mode::Wall)),
            PprofOptions::default()
        );
    }
}
