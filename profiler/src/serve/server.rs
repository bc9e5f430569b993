//! The HTTP server: binds, runs on a named thread and stops when its guard is dropped.

use super::routes::{Reply, SessionFile, Site};
use super::secret::new_secret;
use crate::{Error, Result};
use std::io::{ErrorKind, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The first port `prof serve` tries when no `--port` is given.
pub const DEFAULT_PORT: u16 = 7420;
/// How many ports from [`DEFAULT_PORT`] on are tried before giving up.
pub const PORT_ATTEMPTS: u16 = 64;

/// Which port to listen on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// The first free port from this one on (up to [`PORT_ATTEMPTS`] of them).
    FirstFreeFrom(u16),
    /// Exactly this port, failing if it is taken; `0` lets the operating system pick one.
    Exact(u16),
}

/// Where and how to serve.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The address to bind; loopback (127.0.0.1) by default. Anything else exposes the profile
    /// to the network (see [`exposure_warning`]).
    pub host: IpAddr,
    /// The port.
    pub port: Port,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: Port::FirstFreeFrom(DEFAULT_PORT),
        }
    }
}

impl ServeOptions {
    /// Options binding `host` on `port`.
    pub fn new(host: IpAddr, port: Port) -> Self {
        ServeOptions { host, port }
    }
}

/// A warning to show when `host` is reachable from other machines, `None` for loopback.
pub fn exposure_warning(host: IpAddr) -> Option<String> {
    (!host.is_loopback()).then(|| {
        format!(
            "serving on {host}, which other machines may reach: anyone who learns the URL can read the profile"
        )
    })
}

/// A running viewer server. It serves until dropped.
#[must_use = "the server stops when this guard is dropped"]
pub struct Server {
    url: String,
    addr: SocketAddr,
    http: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds as `options` say and starts serving the viewer with `sessions` on a background
    /// thread named `prof-serve`.
    pub fn start(sessions: Vec<SessionFile>, options: &ServeOptions) -> Result<Server> {
        let site = Site::new(new_secret()?, sessions)?;
        let listener = bind(options)?;
        let addr = listener.local_addr().map_err(|source| Error::Os {
            call: "getsockname",
            source,
        })?;
        let http = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| Error::Os {
                call: "starting the HTTP server",
                source: std::io::Error::other(e.to_string()),
            })
            .map(Arc::new)?;
        let url = format!("http://{addr}{}", site.root());
        let thread = {
            let http = Arc::clone(&http);
            let site = Arc::new(site);
            std::thread::Builder::new()
                .name("prof-serve".into())
                .spawn(move || serve(&http, &site))
                .map_err(|source| Error::Os {
                    call: "spawning the server thread",
                    source,
                })?
        };
        Ok(Server {
            url,
            addr,
            http,
            thread: Some(thread),
        })
    }

    /// The viewer's URL, secret included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Blocks the calling thread while the server runs (until the process is interrupted).
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.http.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn bind(options: &ServeOptions) -> Result<TcpListener> {
    let host = options.host;
    let bind_error = |port: u16, source: std::io::Error| Error::Os {
        call: if host.is_ipv6() { "bind [::]" } else { "bind" },
        source: std::io::Error::new(
            source.kind(),
            format!("{}: {source}", SocketAddr::new(host, port)),
        ),
    };
    match options.port {
        Port::Exact(port) => {
            TcpListener::bind(SocketAddr::new(host, port)).map_err(|source| {
                if source.kind() == ErrorKind::AddrInUse {
                    Error::InvalidOption(format!(
                        "--port {port}: {} is already in use; choose another port, or --port 0 for any free one",
                        SocketAddr::new(host, port)
                    ))
                } else {
                    bind_error(port, source)
                }
            })
        }
        Port::FirstFreeFrom(first) => {
            let last = first.saturating_add(PORT_ATTEMPTS - 1);
            for port in first..=last {
                match TcpListener::bind(SocketAddr::new(host, port)) {
                    Ok(listener) => return Ok(listener),
                    Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
                    Err(e) => return Err(bind_error(port, e)),
                }
            }
            Err(Error::InvalidOption(format!(
                "ports {first} to {last} on {host} are all in use; choose one with --port (0 for any free one)"
            )))
        }
    }
}

/// Answers requests until the server is unblocked, each on a thread of its own so a slow client
/// never holds up the others.
fn serve(http: &tiny_http::Server, site: &Arc<Site>) {
    while let Ok(request) = http.recv() {
        let site = Arc::clone(site);
        let spawned = std::thread::Builder::new()
            .name("prof-serve-request".into())
            .spawn(move || answer(request, &site));
        // Without a thread for it the request is dropped, which tiny_http answers with a 500.
        drop(spawned);
    }
}

fn answer(request: tiny_http::Request, site: &Site) {
    let accepts_gzip = request.headers().iter().any(|h| {
        h.field.equiv("Accept-Encoding")
            && h.value
                .as_str()
                .split(',')
                .any(|e| e.split(';').next().unwrap_or("").trim() == "gzip")
    });
    let head_only = request.method().as_str() == "HEAD";
    let reply = site.route(request.method().as_str(), request.url(), accepts_gzip);
    let mut writer = request.into_writer();
    // A client that went away is not the server's problem.
    let _ = write_response(&mut writer, &reply, head_only);
}

/// Writes `reply` as an HTTP/1.1 response that closes the connection.
///
/// The response is written by hand rather than with `Request::respond` for the sake of
/// `Connection: close`, which tiny_http does not let a response set: tiny_http serves each
/// kept-alive connection on a pooled thread for as long as the client keeps it open, and a burst
/// of new connections (a browser loading a page's modules) can leave one of them queued behind
/// idle keep-alive connections, so its request never gets read. One request per connection
/// frees the thread as soon as the response is out.
fn write_response(out: &mut impl Write, reply: &Reply, head_only: bool) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\
         X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: {CSP}\r\n",
        reply.status,
        reason(reply.status),
        reply.mime,
        reply.body.len(),
    );
    if reply.gzip {
        head.push_str("Content-Encoding: gzip\r\n");
    }
    if let Some(cache) = reply.cache {
        head.push_str(&format!("Cache-Control: {cache}\r\n"));
    }
    if let Some(location) = &reply.location {
        head.push_str(&format!("Location: {location}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    if !head_only {
        out.write_all(&reply.body)?;
    }
    out.flush()
}

/// The page may load only its own scripts, styles and wasm, and talk only to this server.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:";

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    /// One GET; the response is read up to its Content-Length (the server closes only once the
    /// client has).
    fn get(server: &Server, path: &str) -> String {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut bytes = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).unwrap();
            bytes.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&bytes);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|l| l.trim().parse().ok())
                    .expect("a Content-Length");
                if body.len() >= length || n == 0 {
                    return text.into_owned();
                }
            }
            assert!(n > 0, "connection closed early");
        }
    }

    fn start(port: Port) -> Result<Server> {
        Server::start(
            Vec::new(),
            &ServeOptions::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        )
    }

    #[test]
    fn serves_the_page_under_its_url_and_404_elsewhere() {
        let server = start(Port::Exact(0)).unwrap();
        assert!(server.url().starts_with("http://127.0.0.1:"));
        let path = server
            .url()
            .split_once(&server.addr().to_string())
            .unwrap()
            .1;
        let page = get(&server, path);
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
        assert!(page.contains("\r\nConnection: close\r\n"), "{page}");
        assert!(page.contains("<html"), "{page}");
        assert!(get(&server, "/").starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn an_exact_port_that_is_taken_is_a_clear_error() {
        let first = start(Port::Exact(0)).unwrap();
        let err = start(Port::Exact(first.addr().port())).unwrap_err();
        assert!(matches!(err, Error::InvalidOption(_)), "{err}");
        assert!(err.to_string().contains("already in use"), "{err}");
    }

    #[test]
    fn the_first_free_port_is_taken_when_the_wanted_one_is_busy() {
        let first = start(Port::Exact(0)).unwrap();
        let port = first.addr().port();
        if port < u16::MAX {
            let second = start(Port::FirstFreeFrom(port)).unwrap();
            assert!(second.addr().port() > port);
        }
    }

    #[test]
    fn dropping_the_server_frees_its_port() {
        let server = start(Port::Exact(0)).unwrap();
        let addr = server.addr();
        drop(server);
        // tiny_http closes its listener on its accept thread, just after the drop returns.
        let freed = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            TcpListener::bind(addr).is_ok()
        });
        assert!(freed, "{addr} is still bound");
    }

    #[test]
    fn only_non_loopback_hosts_get_a_warning() {
        assert_eq!(exposure_warning(IpAddr::V4(Ipv4Addr::LOCALHOST)), None);
        assert!(exposure_warning("::1".parse().unwrap()).is_none());
        assert!(exposure_warning("0.0.0.0".parse().unwrap()).is_some());
    }
}
