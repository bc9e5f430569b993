//! The server's network side: an accept loop and HTTP/1.1 connections (hyper), on a
//! single-threaded tokio runtime that the `prof-serve` thread runs.
//!
//! What it guarantees against a hostile or broken client, each pinned by a test in
//! `tests/tests/serve_hostile.rs`:
//! - a request that declares a body (`Content-Length` above 0, or `Transfer-Encoding`) is
//!   answered 413 and its connection closed, before any of the body is read or allocated for;
//! - a request head must arrive whole within [`HEAD_TIMEOUT`] (also between requests on a
//!   kept-alive connection) and fit in [`MAX_HEAD_BYTES`], or the connection is closed (431 for
//!   a head too large);
//! - a version other than HTTP/1.0 or 1.1 (`HTTP/2.0`, the HTTP/2 preface) is answered 400, or
//!   the connection is closed, and nothing stays behind;
//! - a response the client stops reading is cut off once no byte of it has been taken for
//!   [`super::stall::WRITE_STALL_TIMEOUT`], and holds a chunk of what it sends, never a copy
//!   of its own: profiles and their single-file viewers are shared buffers, source files are
//!   read 64 KiB at a time;
//! - no file operation runs on the serving thread: source files are found, opened (without
//!   blocking: a FIFO is refused, not waited on), checked and read on tokio's blocking pool,
//!   within `SOURCE_OPEN_TIMEOUT` and a limit per read;
//! - at most [`MAX_CONNECTIONS`] connections are served at once; further clients wait in the
//!   kernel's listen queue until one ends;
//! - when accepting fails for lack of descriptors or memory, the loop waits [`ACCEPT_BACKOFF`]
//!   and tries again; it ends only when asked to, or on an error that no retry can cure, which
//!   `Server::wait` returns.

use super::body::Body;
use super::encoding::accepts_gzip;
use super::reply::Reply;
use super::stall::StallGuard;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prof_session::{Error, Result};
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// How long a client has to send a whole request head, from its first byte or from the end of
/// the previous response: connections idle longer are closed.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes a request head may take (request line and headers); a larger one is
/// answered 431 and its connection closed.
pub const MAX_HEAD_BYTES: usize = 64 << 10;
/// The most connections served at once. Each takes a descriptor, so this stays well under the
/// usual limit of 1,024.
pub const MAX_CONNECTIONS: usize = 256;
/// How long the accept loop waits before trying again when the process is out of descriptors
/// or memory.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The content security policy of every response: the page may load only its own scripts,
/// styles and wasm, and talk only to this server.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:";

/// The most threads a server starts for file reads and other blocking work, beside its one
/// serving thread.
const BLOCKING_THREADS: usize = 4;

/// What a server serves: the reply to each request, from its method, its path with the query,
/// and whether the client takes gzip. Work that blocks (files, profiling sessions) belongs on
/// tokio's blocking pool, never on the serving thread that awaits this.
pub trait Handler: Send + Sync + 'static {
    /// The reply to `method path`.
    fn answer(
        &self,
        method: &str,
        path: &str,
        accepts_gzip: bool,
    ) -> impl Future<Output = Reply> + Send;
}

/// A server running on its own thread: it serves until dropped, and the drop returns once the
/// thread has ended and every connection and the listening socket are closed.
pub struct Serving {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Serving {
    /// Serves `handler` on `listener` (bound, blocking or not) from a thread named `name`.
    pub fn start<H: Handler>(
        listener: std::net::TcpListener,
        handler: Arc<H>,
        name: &str,
    ) -> Result<Serving> {
        let os_err = |call| move |source| Error::Os { call, source };
        listener
            .set_nonblocking(true)
            .map_err(os_err("making the listening socket non-blocking"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // File reads and other blocking work run on this pool, never on the serving
            // thread; a few threads do, and bound what reads stuck in a hung file system can
            // hold.
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .map_err(os_err("starting the HTTP server"))?;
        let listener = {
            let _context = runtime.enter();
            TcpListener::from_std(listener).map_err(os_err("starting the HTTP server"))?
        };
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let result = runtime.block_on(accept_loop(listener, handler, stopped));
                // Dropping the runtime closes every connection and the listening socket.
                drop(runtime);
                result
            })
            .map_err(os_err("spawning the server thread"))?;
        Ok(Serving {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Blocks while the server runs (it does not stop by itself); should it fail in a way it
    /// cannot recover from (its listening socket broken), returns why.
    #[cfg(feature = "viewer")]
    pub fn wait(mut self) -> Result<()> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_panic)) => Err(Error::Os {
                call: "serving",
                source: std::io::Error::other("the server thread panicked"),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts and serves connections until `stop` fires (or its sender is dropped).
async fn accept_loop<H: Handler>(
    listener: TcpListener,
    site: Arc<H>,
    mut stop: oneshot::Receiver<()>,
) -> Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        // The read buffer's cap alone does not bound a head that arrives in one read (the
        // buffer may hold more than it asks for): a 100,000-byte head was answered 200.
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_HEAD_BYTES);
    loop {
        let slot = tokio::select! {
            _ = &mut stop => return Ok(()),
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let accepted = tokio::select! {
            _ = &mut stop => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(serve_connection(
                    stream,
                    Arc::clone(&site),
                    http.clone(),
                    slot,
                ));
            }
            Err(e) => match retry_after(&e) {
                Some(pause) => {
                    drop(slot);
                    tokio::select! {
                        _ = &mut stop => return Ok(()),
                        () = tokio::time::sleep(pause) => {}
                    }
                }
                None => {
                    return Err(Error::Os {
                        call: "accepting connections",
                        source: e,
                    })
                }
            },
        }
    }
}

/// How long to wait before accepting again after `e`, or `None` when retrying cannot help (the
/// listening socket itself is broken).
fn retry_after(e: &std::io::Error) -> Option<Duration> {
    match e.raw_os_error() {
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT) => None,
        // Out of descriptors or memory: wait for connections to end.
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => Some(ACCEPT_BACKOFF),
        // A connection that failed before it was accepted (ECONNABORTED, and the network errors
        // accept(2) passes on): only that client is affected.
        _ => Some(Duration::ZERO),
    }
}

/// Serves one connection until the client closes it, a timeout closes it, or the server stops;
/// `_slot` is its place among the [`MAX_CONNECTIONS`].
async fn serve_connection<H: Handler>(
    stream: TcpStream,
    site: Arc<H>,
    http: http1::Builder,
    _slot: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let site = Arc::clone(&site);
        async move { Ok::<_, Infallible>(respond(&*site, request).await) }
    });
    // A connection that fails (a reset, a malformed request, a timeout) concerns only its client.
    let io = StallGuard::new(TokioIo::new(stream));
    let _ = http.serve_connection(io, service).await;
}

/// The response to `request`. Its body is never read: when it dropped, hyper discards what
/// arrived of it, or closes the connection.
async fn respond<H: Handler>(site: &H, request: Request<Incoming>) -> Response<Body> {
    let headers = request.headers();
    if declares_body(headers) {
        let mut response = response(Reply::text(413, "this server takes no request bodies"));
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    let gzip = accepts_gzip(
        headers
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .map(HeaderValue::as_bytes),
    );
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    response(site.answer(request.method().as_str(), path, gzip).await)
}

/// True when the request says a body follows: any `Transfer-Encoding`, or a `Content-Length`
/// other than 0. The viewer takes only GET and HEAD, which have none.
fn declares_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get_all(header::CONTENT_LENGTH)
            .iter()
            .any(|length| length.as_bytes().trim_ascii() != b"0")
}

fn response(reply: Reply) -> Response<Body> {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(reply.mime));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(reply.body.len()));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    if reply.gzip {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if reply.vary_encoding {
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    if let Some(cache) = reply.cache {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    }
    if let Some(location) = reply.location.and_then(|l| HeaderValue::try_from(l).ok()) {
        headers.insert(header::LOCATION, location);
    }
    if let Some(name) = reply.attachment {
        // Only characters that need no quoting or encoding in the header reach the file name.
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if let Ok(value) = HeaderValue::try_from(format!("attachment; filename=\"{safe}\"")) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    let mut response = Response::new(reply.body.into_body());
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    *response.headers_mut() = headers;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    header::HeaderName::from_static(k),
                    HeaderValue::from_static(v),
                )
            })
            .collect()
    }

    #[test]
    fn a_body_is_declared_by_a_length_above_zero_or_any_transfer_encoding() {
        assert!(!declares_body(&headers(&[])));
        assert!(!declares_body(&headers(&[("content-length", "0")])));
        assert!(declares_body(&headers(&[(
            "content-length",
            "99999999999"
        )])));
        assert!(declares_body(&headers(&[("content-length", "1")])));
        assert!(declares_body(&headers(&[("transfer-encoding", "chunked")])));
        assert!(declares_body(&headers(&[(
            "transfer-encoding",
            "identity"
        )])));
    }

    #[test]
    fn only_a_broken_listener_stops_the_accept_loop() {
        let os = std::io::Error::from_raw_os_error;
        assert_eq!(retry_after(&os(libc::EMFILE)), Some(ACCEPT_BACKOFF));
        assert_eq!(retry_after(&os(libc::ENFILE)), Some(ACCEPT_BACKOFF));
        assert_eq!(retry_after(&os(libc::ECONNABORTED)), Some(Duration::ZERO));
        assert_eq!(retry_after(&os(libc::EPROTO)), Some(Duration::ZERO));
        assert_eq!(retry_after(&os(libc::EBADF)), None);
        assert_eq!(retry_after(&os(libc::EINVAL)), None);
    }
}
