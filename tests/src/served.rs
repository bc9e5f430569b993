//! `prof serve` run as a user runs it, in the background, for the browser and server tests.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `prof serve --no-open --port 0 FILE...`, killed when dropped.
#[derive(Debug)]
pub struct Served {
    child: Child,
    stderr: Arc<Mutex<String>>,
    /// The URL it printed, secret included.
    pub url: String,
}

impl Served {
    /// Starts `prof serve` on `files` with `extra` arguments and waits for its URL.
    pub fn start(files: &[&Path], extra: &[&str]) -> Served {
        let mut args: Vec<&OsStr> = vec!["serve".as_ref(), "--no-open".as_ref()];
        args.extend(extra.iter().map(OsStr::new));
        args.extend(files.iter().map(|f| f.as_os_str()));
        Served::run(&args)
    }

    /// Starts `prof` with `args` (a command that serves, such as `serve` or `demo`) and waits
    /// for the URL it prints.
    pub fn run(args: &[&OsStr]) -> Served {
        Served::run_bin(&crate::prof_bin(), args)
    }

    /// [`Served::run`] with another build of `prof` (`bin`, such as
    /// [`crate::musl_prof_bin`]).
    pub fn run_bin(bin: &Path, args: &[&OsStr]) -> Served {
        let mut command = Command::new(bin);
        command.args(args);
        Served::spawn(command)
    }

    /// Starts `prof` with `args` as [`Served::run`] does, with at most `max_files` open
    /// descriptors (`ulimit -n`, soft and hard limit).
    pub fn run_with_fd_limit(max_files: u32, args: &[&OsStr]) -> Served {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("ulimit -n \"$1\" && shift && exec \"$@\"")
            .arg("sh")
            .arg(max_files.to_string())
            .arg(crate::prof_bin())
            .args(args);
        Served::spawn(command)
    }

    fn spawn(mut command: Command) -> Served {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("prof serve starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock().expect("not poisoned").push_str(&text);
            }
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let url = match read_url(stdout) {
            Some(url) => url,
            None => {
                let _ = child.kill();
                let status = child.wait();
                panic!("prof printed no URL (exit: {status:?})");
            }
        };
        Served { child, stderr, url }
    }

    /// True once `prof serve` has written `text` to its standard error (waits up to 10 s).
    pub fn stderr_contains(&self, text: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.stderr.lock().expect("not poisoned").contains(text) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything `prof` has written to its standard error so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("not poisoned").clone()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory now (`VmRSS` in `/proc/PID/status`), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the server's /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// Opens `clients` connections that each send `GET target` and never read the response,
    /// waits `settle` for the server to write what the sockets take, and returns the growth of
    /// its resident memory (KiB) with them all open, measured from just before they connected.
    pub fn rss_growth_with_stalled_clients(
        &self,
        target: &str,
        clients: usize,
        settle: Duration,
    ) -> u64 {
        use std::io::Write;
        let before = self.rss_kib();
        let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n");
        let stalled: Vec<std::net::TcpStream> = (0..clients)
            .map(|_| {
                let mut stream =
                    std::net::TcpStream::connect_timeout(&self.addr(), Duration::from_secs(10))
                        .expect("connects");
                stream.write_all(request.as_bytes()).expect("sends");
                stream
            })
            .collect();
        std::thread::sleep(settle);
        let grown = self.rss_kib().saturating_sub(before);
        drop(stalled);
        grown
    }

    /// True while the server's process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The host and port the server listens on, for raw sockets (`0.0.0.0` becomes loopback).
    pub fn addr(&self) -> std::net::SocketAddr {
        let origin = self.origin().trim_start_matches("http://");
        let addr: std::net::SocketAddr = origin.parse().expect("the URL holds an address");
        if addr.ip().is_unspecified() {
            std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()))
        } else {
            addr
        }
    }

    /// The address part of the URL, `http://host:port`.
    pub fn origin(&self) -> &str {
        let after_scheme = self.url.find("//").map_or(0, |i| i + 2);
        let end = self.url[after_scheme..]
            .find('/')
            .map_or(self.url.len(), |i| after_scheme + i);
        &self.url[..end]
    }
}

/// Reads lines until one holds the URL (`prof viewer: http://...`), for up to a minute; the rest
/// of the output is drained in the background so the server never blocks on a full pipe.
fn read_url(stdout: ChildStdout) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        while reader.read_line(&mut line).ok()? > 0 {
            if let Some(url) = line.trim().strip_prefix("prof viewer: ") {
                let _ = tx.send(url.to_owned());
                break;
            }
            line.clear();
        }
        let mut sink = Vec::new();
        let _ = reader.read_to_end(&mut sink);
        Some(())
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
