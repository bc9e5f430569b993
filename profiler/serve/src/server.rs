//! The viewer's server: binds, serves on a thread named `prof-serve`, stops when its guard is
//! dropped. The HTTP side is in [`super::http`].
//!
//! It ran on tiny_http 0.12 at first, whose defects sat inside tiny_http's own accept thread
//! and request reader, out of reach of the code that used it: it allocated a declared
//! `Content-Length` whole before reading the body (one request aborted the process), kept a
//! thread and two descriptors forever for every request with a version it did not know, never
//! timed out an idle connection, and ended its accept thread for good on the first "too many
//! open files". hyper (HTTP/1.1 only) on a single-threaded tokio runtime gives each of those a
//! setting or a place in our own accept loop, with no thread per connection.

use super::http::Serving;
use super::routes::{SessionFile, Site};
use super::secret::new_secret;
use prof_session::{Error, Result};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;

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
    /// The directory the Source view's files are read from (only files that frames of the
    /// served profiles name, and only under it); `None`: the current directory at start.
    pub source_root: Option<std::path::PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: Port::FirstFreeFrom(DEFAULT_PORT),
            source_root: None,
        }
    }
}

impl ServeOptions {
    /// Options binding `host` on `port`.
    pub fn new(host: IpAddr, port: Port) -> Self {
        ServeOptions {
            host,
            port,
            source_root: None,
        }
    }

    /// These options with source files read from under `dir` (see
    /// [`ServeOptions::source_root`]).
    pub fn with_source_root(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.source_root = Some(dir.into());
        self
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
    /// The serving thread; dropping it stops the server.
    serving: Serving,
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
        let os_err = |call| move |source| Error::Os { call, source };
        // Site::new only encodes into memory; its I/O errors cannot come from a file or socket.
        let site = Site::new(new_secret()?, sessions, options.source_root.as_deref())
            .map_err(os_err("compressing the sessions in memory"))?;
        let listener = bind(options)?;
        let addr = listener.local_addr().map_err(os_err("getsockname"))?;
        let url = format!("http://{addr}{}", site.root());
        let serving = Serving::start(listener, Arc::new(site), "prof-serve")?;
        Ok(Server { url, addr, serving })
    }

    /// The viewer's URL, secret included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Blocks the calling thread while the server runs, which is until the process is
    /// interrupted: the server does not stop by itself. Should it fail in a way it cannot recover
    /// from (its listening socket broken), this returns why.
    pub fn wait(self) -> Result<()> {
        self.serving.wait()
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
        Port::Exact(port) => TcpListener::bind(SocketAddr::new(host, port)).map_err(|source| {
            if source.kind() == ErrorKind::AddrInUse {
                Error::PortsInUse {
                    host,
                    first: port,
                    last: port,
                }
            } else {
                bind_error(port, source)
            }
        }),
        Port::FirstFreeFrom(first) => {
            let last = first.saturating_add(PORT_ATTEMPTS - 1);
            for port in first..=last {
                match TcpListener::bind(SocketAddr::new(host, port)) {
                    Ok(listener) => return Ok(listener),
                    Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
                    Err(e) => return Err(bind_error(port, e)),
                }
            }
            Err(Error::PortsInUse { host, first, last })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    /// One GET on a connection the request asks to close; the response is read to the end.
    fn get(server: &Server, path: &str) -> String {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
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
        assert!(page.contains("<html"), "{page}");
        assert!(get(&server, "/").starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn an_exact_port_that_is_taken_is_a_clear_error() {
        let first = start(Port::Exact(0)).unwrap();
        let err = start(Port::Exact(first.addr().port())).unwrap_err();
        assert!(matches!(err, Error::PortsInUse { .. }), "{err}");
        assert!(err.to_string().ends_with("is already in use"), "{err}");
        assert!(!err.to_string().contains("--"), "no flag names: {err}");
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
        // The runtime, with the listening socket, is gone when the drop returns.
        assert!(TcpListener::bind(addr).is_ok(), "{addr} is still bound");
    }

    #[test]
    fn only_non_loopback_hosts_get_a_warning() {
        assert_eq!(exposure_warning(IpAddr::V4(Ipv4Addr::LOCALHOST)), None);
        assert!(exposure_warning("::1".parse().unwrap()).is_none());
        assert!(exposure_warning("0.0.0.0".parse().unwrap()).is_some());
    }
}
