//! speedscope 1.25 (the npm package) side by side with prof's viewer: a loopback static server for
//! speedscope's release directory and one exported profile, and a probe that marks speedscope's
//! first painted flame graph.
//!
//! The server treats speedscope as `prof serve` treats prof's page: everything is in memory, one
//! request per connection (`Connection: close`), the assets cacheable as immutable, and the
//! profile compressed once up front with gzip at the same level and sent with `no-store`. Only the
//! files of the release directory and the profile are served; no request path reaches the disk.

use flate2::{write::GzEncoder, Compression};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Where `.ci/install-tools` installs speedscope's static app.
fn release_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/node/node_modules/speedscope/dist/release")
}

/// The name the page sees the profile under.
const PROFILE: &str = "profile.speedscope.json";

/// Injected as the first script of speedscope's `index.html`, before speedscope's own bundle; it
/// changes nothing speedscope does and only observes it. speedscope draws with WebGL (from its
/// canvas context's frame callback, run by `requestAnimationFrame` or after a resize), first into
/// offscreen framebuffers (row atlas, colour pass) and then onto the page's canvas, the default
/// framebuffer. The probe follows `bindFramebuffer` to know where each draw call goes. At the
/// first draw call onto the page's canvas it queues a microtask, which runs once the JavaScript
/// that is drawing has returned: there it marks `speedscope-first-paint` (all the frame's draw
/// calls have been issued and the frame that shows them is being produced). Before a profile is
/// loaded speedscope registers no frame handlers, so nothing else draws to the screen first.
///
/// To tell speedscope's WebGL work from the rest, the probe also marks `speedscope-first-draw` at
/// its first draw call of all, offscreen ones included.
///
/// After the mark, and so outside the measured time, the probe reads the canvas back (still
/// possible before the frame is presented) and counts the colours drawn, so that the benchmark
/// can check the mark stands for a flame graph and not an empty frame.
const PROBE: &str = r#"<script>
(() => {
  let boundFramebuffer = null;
  let queued = false;
  let drew = false;
  const contexts = new WeakMap();
  const onScreenDraw = (gl) => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      performance.mark("speedscope-first-paint");
      const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight;
      const px = new Uint8Array(w * h * 4);
      gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, px);
      const colours = new Set();
      for (let i = 0; i < px.length && colours.size < 1000; i += 4) {
        colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
      }
      window.speedscopeFirstPaint = { colours: colours.size, width: w, height: h };
    });
  };
  const wrapDraws = (target, names) => {
    for (const name of names) {
      const draw = target[name];
      if (!draw) continue;
      target[name] = function (...args) {
        if (!drew) {
          drew = true;
          performance.mark("speedscope-first-draw");
        }
        if (boundFramebuffer === null) onScreenDraw(contexts.get(this) ?? this);
        return draw.apply(this, args);
      };
    }
  };
  const proto = WebGLRenderingContext.prototype;
  const bind = proto.bindFramebuffer;
  proto.bindFramebuffer = function (target, framebuffer) {
    boundFramebuffer = framebuffer;
    return bind.call(this, target, framebuffer);
  };
  wrapDraws(proto, ["drawArrays", "drawElements"]);
  const getExtension = proto.getExtension;
  proto.getExtension = function (name) {
    const ext = getExtension.call(this, name);
    if (ext && name === "ANGLE_instanced_arrays" && !contexts.has(ext)) {
      contexts.set(ext, this);
      wrapDraws(ext, ["drawArraysInstancedANGLE", "drawElementsInstancedANGLE"]);
    }
    return ext;
  };
})();
</script>"#;

/// One file the server answers with.
struct File {
    mime: &'static str,
    body: Vec<u8>,
    gzip: bool,
    cache: &'static str,
}

/// speedscope's static app and one profile, served on 127.0.0.1 until dropped.
pub struct Speedscope {
    base: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Speedscope {
    /// Serves speedscope's release directory and `profile` (speedscope JSON) on a free port.
    /// Panics with a clear message when speedscope is not installed.
    pub fn start(profile: &[u8]) -> Speedscope {
        let dir = release_dir();
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: speedscope 1.25 is missing; run .ci/install-tools (npm speedscope@1.25.0)",
                dir.display()
            )
        });
        let mut files = HashMap::new();
        for entry in entries {
            let path = entry.expect("a readable directory entry").path();
            if !path.is_file() {
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let mut body = std::fs::read(&path).expect("speedscope's files are readable");
            if name == "index.html" {
                let html = String::from_utf8(body).expect("index.html is UTF-8");
                let (head, rest) = html.split_once("<head>").expect("index.html has a <head>");
                body = format!("{head}<head>{PROBE}{rest}").into_bytes();
            }
            let file = File {
                mime: mime(&name),
                body,
                gzip: false,
                cache: "public, max-age=31536000, immutable",
            };
            files.insert(format!("/{name}"), file);
        }
        assert!(
            files.contains_key("/index.html"),
            "{} has no index.html",
            dir.display()
        );
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(profile).unwrap();
        files.insert(
            format!("/{PROFILE}"),
            File {
                mime: "application/json",
                body: gz.finish().unwrap(),
                gzip: true,
                cache: "no-store",
            },
        );

        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let files = Arc::new(files);
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let files = Arc::clone(&files);
                    std::thread::spawn(move || answer(stream, &files));
                }
            })
        };
        Speedscope {
            base,
            stop,
            thread: Some(thread),
        }
    }

    /// The URL that opens speedscope on the profile in `view` (`time-ordered`, `left-heavy` or
    /// `sandwich`), through speedscope's `#profileURL=` hash parameter.
    pub fn url(&self, view: &str) -> String {
        let profile = format!("{}/{PROFILE}", self.base);
        format!(
            "{}/index.html#profileURL={}&view={view}",
            self.base,
            percent_encode(&profile)
        )
    }
}

impl Drop for Speedscope {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.base.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers one request on `stream` and closes it.
fn answer(stream: TcpStream, files: &HashMap<String, File>) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut accepts_gzip = false;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {
                let lower = line.to_ascii_lowercase();
                if lower.starts_with("accept-encoding:") && lower.contains("gzip") {
                    accepts_gzip = true;
                }
            }
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let path = if path == "/" { "/index.html" } else { path };
    let mut out = reader.into_inner();
    let response = match files.get(path) {
        Some(file) if !file.gzip || accepts_gzip => {
            let encoding = if file.gzip {
                "Content-Encoding: gzip\r\n"
            } else {
                ""
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n{encoding}\
                 Cache-Control: {}\r\nConnection: close\r\n\r\n",
                file.mime,
                file.body.len(),
                file.cache
            );
            out.write_all(head.as_bytes())
                .and_then(|()| out.write_all(&file.body))
        }
        _ => out
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    };
    let _ = response.and_then(|()| out.flush());
}

fn mime(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript",
        "css" => "text/css",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// `text` with everything but unreserved URL characters percent-encoded, as
/// `encodeURIComponent` does.
fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
