//! Go's `net/http/pprof` endpoint in the program itself (feature `debug-http`): the paths that
//! `go tool pprof`, Parca, Grafana Alloy's `pyroscope.scrape` and other continuous-profiling
//! scrapers already know.
//!
//! ```no_run
//! # fn main() -> prof::Result<()> {
//! let server = prof::debug::serve("127.0.0.1:0")?; // serves until dropped
//! println!("{}", server.local_addr()); // the bound address, port 0 resolved
//! # Ok(())
//! # }
//! ```
//!
//! | path | answer |
//! |---|---|
//! | `/debug/pprof/` | an HTML page listing the profiles |
//! | `/debug/pprof/profile?seconds=N` | a CPU profile of the next `N` seconds (default 30), 100 Hz |
//! | `/debug/pprof/wall?seconds=N` | a wall-clock profile (prof's own: where threads run *or wait*), 100 Hz |
//! | `/debug/pprof/heap?seconds=N` | allocations of the next `N` seconds, `inuse_space` by default |
//! | `/debug/pprof/allocs?seconds=N` | the same profile, `alloc_space` by default |
//!
//! Profiles are gzipped pprof (`application/octet-stream`, `attachment; filename="NAME"`, as
//! Go's). `seconds` is a whole number from 1 to [`MAX_SECONDS`]; anything else is a 400 saying
//! so, and other query parameters (Go's `debug=1`, `gc=1`) are ignored. One profile is taken at
//! a time: a request while another runs, or while the program's own [`Profiler`] session runs,
//! is answered 409 with the reason (prof samples one session per process). A client that
//! disconnects ends its session.
//!
//! The heap and allocs profiles need [`prof::alloc::Sampling`](crate::alloc::Sampling) as the
//! program's global allocator (otherwise they are a 404 saying so). prof tracks allocations only
//! during an allocation session, so unlike Go's they cover a window, not the program's life
//! since start: `alloc_*` is what was allocated during the `N` seconds, `inuse_*` what of it was
//! still allocated at the end. A session kept running from start would have given Go's meaning,
//! but would have held the one session a process may run and turned every CPU profile away.
//!
//! The server is the one behind `prof serve` (see `serve::http` for what it guarantees against
//! hostile clients: no request bodies, head timeouts and size limits, a bound on connections,
//! responses cut off from clients that stop reading). It has no secret in its URLs: anyone who
//! can connect can profile the program, so bind loopback (`127.0.0.1`) unless the network in
//! between is trusted.

use crate::options::Options;
use crate::profiler::Profiler;
use bytes::Bytes;
use prof_serve::Reply;
use prof_serve::{Handler, Serving};
use prof_session::export::pprof::{write_pprof_with, GoHeap, GoHeapIndex, PprofOptions};
use prof_session::{Error, Mode, Result};
use std::future::Future;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a profile lasts when the request gives no `seconds` (Go's default too).
pub const DEFAULT_SECONDS: u64 = 30;
/// The longest profile a request may ask for: an hour.
pub const MAX_SECONDS: u64 = 3600;
/// The sampling interval of the CPU and wall profiles: 100 Hz, as Go's and the fleet tools'.
pub const INTERVAL: Duration = Duration::from_millis(10);
/// Where every path starts.
const PREFIX: &str = "/debug/pprof/";
/// No request is taking a profile.
const IDLE: u8 = 0;
/// A request is starting its session.
const STARTING: u8 = 1;
/// A request's session is sampling.
const SAMPLING: u8 = 2;

/// A running `/debug/pprof` server. It serves until dropped; the drop stops the server thread,
/// ends any profile a request was taking, and returns once the thread has ended.
#[must_use = "the server stops when this guard is dropped"]
pub struct DebugServer {
    addr: SocketAddr,
    /// The serving thread; dropping it stops the server.
    _serving: Serving,
}

impl std::fmt::Debug for DebugServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl DebugServer {
    /// The address the server listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Binds `addr` and serves Go's `/debug/pprof` paths from a background thread named
/// `prof-debug` until the returned guard is dropped. Give a loopback address
/// (`"127.0.0.1:6060"`, or port 0 for any free one): any other one lets every machine that
/// reaches it profile the program and read its function names. Fails with [`Error::Os`] when the
/// address cannot be resolved or bound (taken, not this machine's).
pub fn serve(addr: impl ToSocketAddrs) -> Result<DebugServer> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|source| Error::Os {
            call: "resolving the address to serve on",
            source,
        })?
        .collect();
    let listener = TcpListener::bind(&addrs[..]).map_err(|source| Error::Os {
        call: "bind",
        source: match addrs.first() {
            // As `prof serve` says it: which address could not be bound.
            Some(first) => std::io::Error::new(source.kind(), format!("{first}: {source}")),
            None => source,
        },
    })?;
    let addr = listener.local_addr().map_err(|source| Error::Os {
        call: "getsockname",
        source,
    })?;
    let alloc = crate::sampler::alloc::check(&Options::default().mode(Mode::Alloc)).is_ok();
    let endpoint = Endpoint {
        busy: Arc::new(AtomicU8::new(IDLE)),
        alloc,
    };
    let serving = Serving::start(listener, Arc::new(endpoint), "prof-debug")?;
    Ok(DebugServer {
        addr,
        _serving: serving,
    })
}

/// What a profile request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `profile`: CPU time.
    Cpu,
    /// `wall`: wall-clock time.
    Wall,
    /// `heap`: allocations, `inuse_space` first.
    Heap,
    /// `allocs`: allocations, `alloc_space` first.
    Allocs,
}

impl Kind {
    /// The file name a client saves the profile as.
    fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "profile",
            Kind::Wall => "wall",
            Kind::Heap => "heap",
            Kind::Allocs => "allocs",
        }
    }

    fn options(self) -> Options {
        match self {
            Kind::Cpu => Options::default().interval(INTERVAL),
            Kind::Wall => Options::default().interval(INTERVAL).mode(Mode::Wall),
            Kind::Heap | Kind::Allocs => Options::default().mode(Mode::Alloc),
        }
    }

    /// How the profile is written: the heap and allocs profiles with Go's heap sample types,
    /// `inuse_space` or `alloc_space` first, as `go tool pprof` expects from these paths.
    fn pprof_options(self) -> PprofOptions {
        let default = match self {
            Kind::Cpu | Kind::Wall => return PprofOptions::default(),
            Kind::Heap => GoHeapIndex::InuseSpace,
            Kind::Allocs => GoHeapIndex::AllocSpace,
        };
        PprofOptions::default().go_heap(GoHeap {
            default,
            interval_bytes: self.options().alloc_interval_bytes,
        })
    }
}

/// Where a request leads.
#[derive(Debug)]
enum Route {
    /// This reply.
    Now(Reply),
    /// A profile of `seconds`.
    Profile(Kind, u64),
}

/// The handler: which profile is being taken, and whether allocation profiles exist here.
struct Endpoint {
    /// [`IDLE`], or what the request taking a profile is doing.
    busy: Arc<AtomicU8>,
    /// True when the global allocator is `prof::alloc::Sampling`.
    alloc: bool,
}

impl Handler for Endpoint {
    fn answer(
        &self,
        method: &str,
        path: &str,
        _accepts_gzip: bool,
    ) -> impl Future<Output = Reply> + Send {
        let route = route(method, path, self.alloc, self.busy.load(Ordering::Acquire));
        let busy = Arc::clone(&self.busy);
        async move {
            match route {
                Route::Now(reply) => reply,
                Route::Profile(kind, seconds) => take(busy, kind, seconds).await,
            }
        }
    }
}

fn text(status: u16, text: String) -> Reply {
    Reply::shared_text(status, Bytes::from(text))
}

/// Where `method path` leads (`path` with its query); `alloc` says whether allocation profiles
/// exist in this program, `busy` whether a profile is being taken now ([`IDLE`] or not).
fn route(method: &str, path: &str, alloc: bool, busy: u8) -> Route {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    if path == PREFIX.trim_end_matches('/') {
        let mut reply = Reply::text(301, "moved");
        reply.location = Some(PREFIX.into());
        return Route::Now(reply);
    }
    let Some(name) = path.strip_prefix(PREFIX) else {
        return Route::Now(Reply::text(404, "not found: prof serves /debug/pprof/"));
    };
    let kind = match name {
        "" => {
            if method != "GET" && method != "HEAD" {
                return Route::Now(Reply::text(405, "method not allowed: use GET"));
            }
            return Route::Now(index(alloc, busy));
        }
        "profile" => Kind::Cpu,
        "wall" => Kind::Wall,
        "heap" => Kind::Heap,
        "allocs" => Kind::Allocs,
        _ => {
            return Route::Now(text(
                404,
                format!(
                    "unknown profile: prof serves profile, wall, heap and allocs (see {PREFIX})\n"
                ),
            ))
        }
    };
    if method != "GET" {
        return Route::Now(Reply::text(405, "method not allowed: use GET"));
    }
    if matches!(kind, Kind::Heap | Kind::Allocs) && !alloc {
        return Route::Now(Reply::text(
            404,
            "no allocation profile: make prof::alloc::Sampling this program's #[global_allocator] to enable it\n",
        ));
    }
    match seconds(query) {
        Ok(seconds) => Route::Profile(kind, seconds),
        Err(why) => Route::Now(text(400, why)),
    }
}

/// The `seconds` parameter of `query` ([`DEFAULT_SECONDS`] without one, or an empty one), or
/// why it cannot be used. Other parameters are ignored; of several `seconds`, the first counts
/// (as Go's `FormValue`).
fn seconds(query: &str) -> std::result::Result<u64, String> {
    let Some(value) = query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find_map(|(key, value)| (key == "seconds").then_some(value))
    else {
        return Ok(DEFAULT_SECONDS);
    };
    if value.is_empty() {
        return Ok(DEFAULT_SECONDS);
    }
    match value.parse::<u64>() {
        Ok(n) if (1..=MAX_SECONDS).contains(&n) => Ok(n),
        _ => {
            // What the client sent, cut short and without control characters.
            let shown: String = value
                .chars()
                .take(32)
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            Err(format!(
                "bad seconds={shown}: a whole number of seconds from 1 to {MAX_SECONDS}\n"
            ))
        }
    }
}

/// The index page: the profiles, with what each is, as Go's `/debug/pprof/` lists them, and
/// whether one is being taken now (`busy`).
fn index(alloc: bool, busy: u8) -> Reply {
    let now = match busy {
        IDLE => "No profile is being taken now.",
        STARTING => "A profile is being started now: another request gets a 409 until it ends.",
        _ => "A profile is being taken now: another request gets a 409 until it ends.",
    };
    let heap_note = if alloc {
        ""
    } else {
        " (not in this program: it needs <code>prof::alloc::Sampling</code> as its global allocator)"
    };
    let row = |name: &str, what: &str| {
        format!("<tr><td><a href=\"{name}?seconds={DEFAULT_SECONDS}\">{name}</a></td><td>{what}</td></tr>\n")
    };
    let rows = [
        row(
            "profile",
            "CPU profile: where the program spends CPU time, sampled at 100 Hz. <code>seconds</code> sets its length (default 30).",
        ),
        row(
            "wall",
            "Wall-clock profile (prof's own): where threads run or wait, at 100 Hz. <code>seconds</code> as above.",
        ),
        row(
            "heap",
            &format!("Allocations during <code>seconds</code>, by default what of them is still in use at the end (<code>inuse_space</code>){heap_note}."),
        ),
        row(
            "allocs",
            &format!("The same allocations, by default all bytes allocated (<code>alloc_space</code>){heap_note}."),
        ),
    ]
    .concat();
    let page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>/debug/pprof/</title></head><body>\n\
         <p>/debug/pprof/ (prof {version})</p>\n\
         <p>Profiles are gzipped pprof: <code>go tool pprof http://HOST{PREFIX}profile?seconds=10</code>. One is taken at a time.</p>\n\
         <p id=\"now\">{now}</p>\n\
         <table>\n<tr><th>Profile</th><th>What it is</th></tr>\n{rows}</table>\n</body></html>\n",
        version = prof_session::VERSION,
    );
    let mut reply = Reply::shared_text(200, Bytes::from(page));
    reply.mime = "text/html; charset=utf-8";
    reply.cache = Some("no-store");
    reply
}

/// Releases the one-profile-at-a-time flag when dropped.
struct Slot(Arc<AtomicU8>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.store(IDLE, Ordering::Release);
    }
}

/// A session a request runs, with its slot. Dropped before it is stopped (its client went away,
/// the server stopped), it stops the session on the blocking pool and then frees the slot.
struct Window(Option<(Profiler, Slot)>);

impl Window {
    /// Stops sampling (on the calling thread: a blocking one) and frees the slot; the closure
    /// returned builds the report, so the next request can start profiling while this one's
    /// is symbolized.
    fn stop(mut self) -> Result<Box<dyn FnOnce() -> Result<crate::report::Report>>> {
        let (profiler, slot) = self.0.take().expect("a window is stopped once");
        let build = profiler.stop_deferred();
        drop(slot);
        build
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        let Some(running) = self.0.take() else {
            return;
        };
        // Stopping joins the collector thread: not on the serving thread when it can be
        // avoided. While the runtime shuts down, the task is not run, and dropping it stops
        // the session here.
        let stop = move || drop(running);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(stop)),
            Err(_) => stop(),
        }
    }
}

/// Takes a profile of `kind` for `seconds` and replies with it, or with why it could not.
async fn take(busy: Arc<AtomicU8>, kind: Kind, seconds: u64) -> Reply {
    if busy
        .compare_exchange(IDLE, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Reply::text(
            409,
            "another profile is being taken: one at a time, try again when it ends\n",
        );
    }
    let slot = Slot(busy);
    let started = tokio::task::spawn_blocking(move || (Profiler::start(kind.options()), slot));
    let (profiler, slot) = match started.await {
        Ok((Ok(profiler), slot)) => (profiler, slot),
        Ok((Err(Error::AlreadyRunning), _)) => {
            return Reply::text(
                409,
                "the program is running its own profiling session: prof runs one at a time, try again when it ends\n",
            )
        }
        Ok((Err(e), _)) => return text(500, format!("could not start profiling: {e}\n")),
        Err(e) => return text(500, format!("could not start profiling: {e}\n")),
    };
    slot.0.store(SAMPLING, Ordering::Release);
    let window = Window(Some((profiler, slot)));
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let built = tokio::task::spawn_blocking(move || {
        let report = window.stop()?()?;
        let mut pprof = Vec::new();
        write_pprof_with(report.session(), &kind.pprof_options(), &mut pprof)?;
        Ok::<_, Error>(pprof)
    });
    match built.await {
        Ok(Ok(pprof)) => {
            let mut reply = Reply::shared_text(200, Bytes::from(pprof));
            reply.mime = "application/octet-stream";
            reply.cache = Some("no-store");
            reply.attachment = Some(kind.name().into());
            reply
        }
        Ok(Err(e)) => text(500, format!("could not build the profile: {e}\n")),
        Err(e) => text(500, format!("could not build the profile: {e}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_serve::Payload;

    fn status(route: Route) -> u16 {
        match route {
            Route::Now(reply) => reply.status,
            Route::Profile(..) => 200,
        }
    }

    fn body(route: Route) -> String {
        match route {
            Route::Now(Reply {
                body: Payload::Bytes(b),
                ..
            }) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("{other:?}"),
        }
    }

    /// Starts a session, waiting out the other unit tests' (one runs per process).
    fn start_when_free() -> Profiler {
        let since = std::time::Instant::now();
        loop {
            match Profiler::start(Options::default()) {
                Err(Error::AlreadyRunning) if since.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                started => return started.unwrap(),
            }
        }
    }

    #[test]
    fn the_next_profile_can_start_while_one_is_symbolized() {
        let busy = Arc::new(AtomicU8::new(SAMPLING));
        let window = Window(Some((start_when_free(), Slot(Arc::clone(&busy)))));
        let build = window.stop().unwrap();
        assert_eq!(busy.load(Ordering::Acquire), IDLE);
        let next = start_when_free();
        assert!(build().is_ok());
        assert!(next.stop().is_ok());
    }

    #[test]
    fn a_taken_port_is_an_error_naming_the_address() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = serve(addr).unwrap_err().to_string();
        assert!(err.contains(&addr.to_string()), "{err}");
        let server = serve("127.0.0.1:0").unwrap();
        assert_ne!(server.local_addr().port(), 0);
        drop(server);
    }

    #[test]
    fn seconds_is_bounded_and_other_parameters_are_ignored() {
        assert_eq!(seconds(""), Ok(DEFAULT_SECONDS));
        assert_eq!(seconds("debug=1"), Ok(DEFAULT_SECONDS));
        assert_eq!(seconds("seconds="), Ok(DEFAULT_SECONDS));
        assert_eq!(seconds("seconds=2"), Ok(2));
        assert_eq!(seconds("debug=1&seconds=5&gc=1"), Ok(5));
        assert_eq!(seconds("seconds=7&seconds=9"), Ok(7));
        assert_eq!(seconds(&format!("seconds={MAX_SECONDS}")), Ok(MAX_SECONDS));
        for bad in [
            "0",
            "-1",
            "abc",
            "99999999",
            "2.5",
            "18446744073709551616",
            "1e3",
        ] {
            let why = seconds(&format!("seconds={bad}")).unwrap_err();
            assert!(why.contains(bad) && why.contains("from 1 to 3600"), "{why}");
        }
        let long = "9".repeat(1000);
        assert!(seconds(&format!("seconds={long}")).unwrap_err().len() < 100);
    }

    #[test]
    fn go_paths_lead_to_their_profiles() {
        let profile = |path| match route("GET", path, true, IDLE) {
            Route::Profile(kind, s) => (kind, s),
            Route::Now(reply) => panic!("{path}: {reply:?}"),
        };
        assert_eq!(profile("/debug/pprof/profile"), (Kind::Cpu, 30));
        assert_eq!(profile("/debug/pprof/profile?seconds=2"), (Kind::Cpu, 2));
        assert_eq!(profile("/debug/pprof/wall?seconds=3"), (Kind::Wall, 3));
        assert_eq!(profile("/debug/pprof/heap?gc=1"), (Kind::Heap, 30));
        assert_eq!(profile("/debug/pprof/allocs?debug=0"), (Kind::Allocs, 30));
        assert_eq!(status(route("GET", "/debug/pprof", true, IDLE)), 301);
        assert_eq!(status(route("GET", "/debug/pprof/", true, IDLE)), 200);
        assert_eq!(status(route("HEAD", "/debug/pprof/", true, IDLE)), 200);
        assert_eq!(
            status(route("GET", "/debug/pprof/goroutine", true, IDLE)),
            404
        );
        assert_eq!(status(route("GET", "/", true, IDLE)), 404);
        assert_eq!(
            status(route("POST", "/debug/pprof/profile", true, IDLE)),
            405
        );
        assert_eq!(
            status(route("HEAD", "/debug/pprof/profile", true, IDLE)),
            405
        );
        assert_eq!(
            status(route("GET", "/debug/pprof/profile?seconds=0", true, IDLE)),
            400
        );
    }

    #[test]
    fn allocation_profiles_need_the_sampling_allocator() {
        for path in ["/debug/pprof/heap", "/debug/pprof/allocs?seconds=1"] {
            let why = body(route("GET", path, false, IDLE));
            assert!(why.contains("prof::alloc::Sampling"), "{why}");
            assert_eq!(why.lines().count(), 1);
            assert_eq!(status(route("GET", path, false, IDLE)), 404);
        }
        let page = body(route("GET", "/debug/pprof/", false, IDLE));
        assert!(page.contains("needs <code>prof::alloc::Sampling"), "{page}");
        let page = body(route("GET", "/debug/pprof/", true, IDLE));
        assert!(!page.contains("needs <code>"), "{page}");
        assert!(page.contains("No profile is being taken now"), "{page}");
        let busy = body(route("GET", "/debug/pprof/", true, SAMPLING));
        assert!(busy.contains("A profile is being taken now"), "{busy}");
        let starting = body(route("GET", "/debug/pprof/", true, STARTING));
        assert!(
            starting.contains("A profile is being started now"),
            "{starting}"
        );
        for name in ["profile", "wall", "heap", "allocs"] {
            assert!(
                page.contains(&format!("href=\"{name}?seconds=30\"")),
                "{page}"
            );
        }
    }
}
