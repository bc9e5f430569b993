//! A small synchronous WebDriver client for driving headless Chromium through `chromedriver`.
//!
//! Only what the browser tests need: open a page, run JavaScript, find and click elements, type,
//! move the pointer, read the browser's console log and take screenshots. It speaks the W3C
//! protocol over HTTP on loopback with `minreq` and `serde_json`, which build in seconds, where an
//! async client would pull in a whole runtime.

use serde_json::{json, Value};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The key under which WebDriver returns element references.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The Chromium binary the tests drive.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// The matching chromedriver.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A running chromedriver with one headless Chromium session, which a test has alone. When
/// dropped it goes back to this process's pool of idle browsers (after a test that did not
/// panic, with one window left, and at a blank page) for the next test that asks for one with
/// the same scale and arguments; otherwise both stop. Starting Chromium takes 2 to 3 s on a
/// busy machine, and with the pool a test binary starts about as many browsers as tests that
/// run at once instead of one per test.
#[derive(Debug)]
pub struct Browser {
    inner: Option<Launched>,
}

/// The browsers that no test uses now, for [`Browser::start_with`] to hand out again.
static IDLE: Mutex<Vec<Launched>> = Mutex::new(Vec::new());

/// A chromedriver and its Chromium session.
#[derive(Debug)]
struct Launched {
    driver: Child,
    /// `bash` reading a pipe that only this process holds: when the process ends, however it ends
    /// (an idle browser is never dropped), it stops chromedriver's process group (Chromium with
    /// it) and removes the profile.
    reaper: Child,
    reaper_pipe: Option<ChildStdin>,
    base: String,
    session: String,
    /// The device pixel ratio and the extra Chromium arguments it was started with.
    key: (u64, Vec<String>),
    /// Whether a test emulated a media feature ([`Browser::emulate_color_scheme`]), which the
    /// tab keeps across pages: the next test gets the browser after it is turned off.
    media_emulated: std::cell::Cell<bool>,
    _profile: crate::TempDir,
}

/// A reference to an element of the page.
#[derive(Clone, Debug)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver and a headless Chromium with a fresh profile, a `width`×`height`
    /// window and the given device pixel ratio (or takes an idle one started with that ratio,
    /// sized to `width`×`height`). Panics with a clear message when either program is missing: a
    /// missing browser is a test failure, never a skip.
    pub fn start(name: &str, width: u32, height: u32, scale: f64) -> Browser {
        Browser::start_with(name, width, height, scale, &[])
    }

    /// [`Browser::start`] with more Chromium command-line arguments.
    pub fn start_with(name: &str, width: u32, height: u32, scale: f64, extra: &[&str]) -> Browser {
        let key = (
            scale.to_bits(),
            extra.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
        );
        loop {
            let idle = {
                let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
                let found = idle.iter().position(|b| b.key == key);
                found.map(|i| idle.swap_remove(i))
            };
            let Some(launched) = idle else { break };
            let browser = Browser {
                inner: Some(launched),
            };
            if browser.fits(width, height) {
                return browser;
            }
            // Not reusable at that size: this one stops (see Drop), and the next is tried.
            browser.discard();
        }
        Browser {
            inner: Some(Launched::start(name, width, height, scale, key)),
        }
    }

    /// Resizes the window to `width`×`height` CSS pixels, as `--window-size` sizes a new one (the
    /// outer size: headless Chromium keeps room for a browser's own bars), and empties the
    /// console log; false when the window then does not measure that size.
    fn fits(&self, width: u32, height: u32) -> bool {
        let rect = json!({ "width": width, "height": height });
        if self
            .try_call("POST", &self.path("/window/rect"), Some(rect))
            .is_err()
        {
            return false;
        }
        let _ = self.console_log();
        self.try_eval("return [window.outerWidth, window.outerHeight];", json!([]))
            .is_ok_and(|size| size == json!([width, height]))
    }

    /// Resizes the window to `width`×`height` CSS pixels (the outer size, as [`Browser::start`]
    /// takes it); panics when the window then does not measure that size.
    pub fn resize(&self, width: u32, height: u32) {
        assert!(
            self.fits(width, height),
            "the window could not be resized to {width}x{height}"
        );
    }

    /// Emulates the `prefers-color-scheme` media feature: `Some("dark")` or `Some("light")`, or
    /// `None` for the browser's own again (through chromedriver's Chrome DevTools Protocol
    /// command, `Emulation.setEmulatedMedia`). The page's media queries and `matchMedia`
    /// listeners see the change at once.
    pub fn emulate_color_scheme(&self, scheme: Option<&str>) {
        let features = match scheme {
            Some(value) => json!([{ "name": "prefers-color-scheme", "value": value }]),
            None => json!([]),
        };
        self.session_call(
            "POST",
            "/goog/cdp/execute",
            Some(
                json!({ "cmd": "Emulation.setEmulatedMedia", "params": { "features": features } }),
            ),
        );
        self.launched().media_emulated.set(scheme.is_some());
    }

    /// Stops this browser rather than keeping it for another test.
    fn discard(mut self) {
        self.inner.take();
    }

    fn launched(&self) -> &Launched {
        self.inner
            .as_ref()
            .expect("a browser in use has its session")
    }

    /// `/session/ID` followed by `path`.
    fn path(&self, path: &str) -> String {
        format!("/session/{}{path}", self.launched().session)
    }
}

impl Launched {
    /// Starts chromedriver and Chromium (see [`Browser::start`]).
    fn start(name: &str, width: u32, height: u32, scale: f64, key: (u64, Vec<String>)) -> Launched {
        for tool in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(tool).exists(),
                "{tool} is missing: install Debian's chromium and chromium-driver (.ci/run does)"
            );
        }
        let port = free_port();
        // A process group of its own, which Chromium joins, for the reaper to stop.
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = crate::TempDir::new(&format!("chromium-{name}"));
        let mut reaper = Command::new("bash")
            .args([
                "-c",
                "cat >/dev/null; kill -KILL -- \"-$1\" 2>/dev/null; rm -rf \"$2\"",
                "bash",
            ])
            .arg(driver.id().to_string())
            .arg(profile.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash starts");
        let reaper_pipe = reaper.stdin.take();
        let mut launched = Launched {
            driver,
            reaper,
            reaper_pipe,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            key,
            media_emulated: std::cell::Cell::new(false),
            _profile: profile,
        };
        launched.wait_ready();
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            format!("--window-size={width},{height}"),
            format!("--force-device-scale-factor={scale}"),
            format!("--user-data-dir={}", launched._profile.path().display()),
        ];
        args.extend(launched.key.1.iter().cloned());
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
                "goog:loggingPrefs": { "browser": "ALL" },
            }}
        });
        let value = call(&launched.base, "POST", "/session", Some(caps))
            .unwrap_or_else(|e| panic!("POST /session: {e}"));
        launched.session = value["sessionId"]
            .as_str()
            .expect("chromedriver returns a session id")
            .to_owned();
        launched
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = minreq::get(format!("{}/status", self.base))
                .with_timeout(2)
                .send()
                .ok()
                .and_then(|r| serde_json::from_slice::<Value>(r.as_bytes()).ok())
                .is_some_and(|v| v["value"]["ready"] == json!(true));
            if ready {
                return;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = minreq::delete(format!("{}/session/{}", self.base, self.session))
                .with_timeout(10)
                .send();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        // The reaper stops what is left of the group and removes the profile.
        drop(self.reaper_pipe.take());
        let _ = self.reaper.wait();
    }
}

/// Sends one WebDriver command to the chromedriver at `base` and returns its `value`, or the
/// WebDriver error as text.
fn call(base: &str, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
    let url = format!("{base}{path}");
    let request = match method {
        "GET" => minreq::get(url),
        "DELETE" => minreq::delete(url),
        _ => minreq::post(url),
    }
    .with_timeout(120);
    let request = match body {
        Some(body) => request
            .with_header("Content-Type", "application/json")
            .with_body(body.to_string()),
        None => request,
    };
    let response = request.send().map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_slice(response.as_bytes())
        .map_err(|e| format!("bad JSON from chromedriver: {e}"))?;
    if response.status_code != 200 {
        return Err(format!(
            "{} {}",
            value["value"]["error"], value["value"]["message"]
        ));
    }
    Ok(value["value"].clone())
}

impl Browser {
    /// Sends one WebDriver command and returns its `value`, panicking on a WebDriver error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// Sends one WebDriver command and returns its `value`, or the WebDriver error as text.
    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        call(&self.launched().base, method, path, body)
    }

    fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call(method, &self.path(path), body)
    }

    /// Navigates to `url` and waits for the page's load event.
    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Like [`Browser::goto`], but a WebDriver error (a page that does not load in time, a
    /// crashed tab) is returned instead of panicking.
    pub fn try_goto(&self, url: &str) -> Result<(), String> {
        self.try_call("POST", &self.path("/url"), Some(json!({ "url": url })))
            .map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its result.
    pub fn eval(&self, script: &str, args: Value) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// Like [`Browser::eval`], but a WebDriver error (a script timeout while the page is busy,
    /// a crashed tab) is returned instead of panicking.
    pub fn try_eval(&self, script: &str, args: Value) -> Result<Value, String> {
        self.try_call(
            "POST",
            &self.path("/execute/sync"),
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// Polls the JavaScript expression `expr` until it is truthy, returning its value, or panics
    /// with `what` after `timeout`.
    pub fn wait_for(&self, expr: &str, timeout: Duration, what: &str) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let value = self.eval(&format!("return ({expr});"), json!([]));
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            if Instant::now() > deadline {
                let logs = self.console_log();
                panic!("timed out waiting for {what} ({expr}); console: {logs:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The first element matching the CSS `selector`.
    pub fn find(&self, selector: &str) -> Element {
        let value = self.session_call(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": selector })),
        );
        Element(
            value[ELEMENT_KEY]
                .as_str()
                .unwrap_or_else(|| panic!("no element {selector}"))
                .to_owned(),
        )
    }

    /// Clicks an element in its center.
    pub fn click(&self, element: &Element) {
        self.session_call(
            "POST",
            &format!("/element/{}/click", element.0),
            Some(json!({})),
        );
    }

    /// Types `text` into an element.
    pub fn type_into(&self, element: &Element, text: &str) {
        self.session_call(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(json!({ "text": text })),
        );
    }

    /// Moves the mouse to (`x`, `y`) CSS pixels from the top left of `element`, and clicks there
    /// when `click` is set.
    pub fn pointer_at(&self, element: &Element, x: f64, y: f64, click: bool) {
        // W3C pointer origins are element centers: measure the element to offset from its corner.
        let rect = self.session_call("GET", &format!("/element/{}/rect", element.0), None);
        let width = rect["width"].as_f64().unwrap_or(0.0);
        let height = rect["height"].as_f64().unwrap_or(0.0);
        let mut actions = vec![json!({
            "type": "pointerMove",
            "duration": 0,
            "origin": { ELEMENT_KEY: element.0 },
            "x": (x - width / 2.0).round() as i64,
            "y": (y - height / 2.0).round() as i64,
        })];
        if click {
            actions.push(json!({ "type": "pointerDown", "button": 0 }));
            actions.push(json!({ "type": "pointerUp", "button": 0 }));
        }
        self.session_call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "pointer",
                "id": "mouse",
                "parameters": { "pointerType": "mouse" },
                "actions": actions,
            }]})),
        );
    }

    /// Turns the mouse wheel by `delta_y` pixels with the pointer at (`x`, `y`) CSS pixels from
    /// the top left of `element` (positive: towards the user, which zooms out).
    pub fn wheel_at(&self, element: &Element, x: f64, y: f64, delta_y: i64) {
        let rect = self.session_call("GET", &format!("/element/{}/rect", element.0), None);
        let left = rect["x"].as_f64().unwrap_or(0.0);
        let top = rect["y"].as_f64().unwrap_or(0.0);
        self.session_call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "wheel",
                "id": "wheel",
                "actions": [{
                    "type": "scroll",
                    "x": (left + x).round() as i64,
                    "y": (top + y).round() as i64,
                    "deltaX": 0,
                    "deltaY": delta_y,
                    "duration": 0,
                }],
            }]})),
        );
    }

    /// Presses the left button at (`x`, `y`) CSS pixels from the top left of `element`, moves to
    /// (`to_x`, `to_y`) in `steps` steps and releases it there.
    pub fn drag(
        &self,
        element: &Element,
        (x, y): (f64, f64),
        (to_x, to_y): (f64, f64),
        steps: u32,
    ) {
        let rect = self.session_call("GET", &format!("/element/{}/rect", element.0), None);
        let width = rect["width"].as_f64().unwrap_or(0.0);
        let height = rect["height"].as_f64().unwrap_or(0.0);
        let at = |x: f64, y: f64| {
            json!({
                "type": "pointerMove",
                "duration": 0,
                "origin": { ELEMENT_KEY: element.0 },
                "x": (x - width / 2.0).round() as i64,
                "y": (y - height / 2.0).round() as i64,
            })
        };
        let mut actions = vec![at(x, y), json!({ "type": "pointerDown", "button": 0 })];
        for k in 1..=steps.max(1) {
            let f = f64::from(k) / f64::from(steps.max(1));
            actions.push(at(x + (to_x - x) * f, y + (to_y - y) * f));
        }
        actions.push(json!({ "type": "pointerUp", "button": 0 }));
        self.session_call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "pointer",
                "id": "mouse",
                "parameters": { "pointerType": "mouse" },
                "actions": actions,
            }]})),
        );
    }

    /// Right-clicks (a `contextmenu` click) at (`x`, `y`) CSS pixels from the top left of
    /// `element`.
    pub fn right_click_at(&self, element: &Element, x: f64, y: f64) {
        self.pointer_at(element, x, y, false);
        self.session_call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "pointer",
                "id": "mouse",
                "parameters": { "pointerType": "mouse" },
                "actions": [
                    { "type": "pointerDown", "button": 2 },
                    { "type": "pointerUp", "button": 2 },
                ],
            }]})),
        );
    }

    /// Presses and releases one key (a WebDriver key code such as `"\u{E00C}"` for Escape).
    pub fn press_key(&self, key: &str) {
        self.session_call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "key",
                "id": "keyboard",
                "actions": [
                    { "type": "keyDown", "value": key },
                    { "type": "keyUp", "value": key },
                ],
            }]})),
        );
    }

    /// Presses `keys` in order and releases them in reverse: a chord such as Shift+F10
    /// (`["\u{E008}", "\u{E03A}"]`).
    pub fn press_chord(&self, keys: &[&str]) {
        let mut actions: Vec<Value> = keys
            .iter()
            .map(|k| json!({ "type": "keyDown", "value": k }))
            .collect();
        actions.extend(
            keys.iter()
                .rev()
                .map(|k| json!({ "type": "keyUp", "value": k })),
        );
        self.session_call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": actions }]})),
        );
    }

    /// The browser console's entries since the last call, as `LEVEL message` lines.
    pub fn console_log(&self) -> Vec<String> {
        let value = self.session_call("POST", "/se/log", Some(json!({ "type": "browser" })));
        value
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| format!("{} {}", e["level"].as_str().unwrap_or("?"), e["message"]))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Saves a PNG screenshot of the window as `tests/artifacts/<name>.png` and returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        use base64::Engine as _;
        let value = self.session_call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().expect("a base64 screenshot"))
            .expect("valid base64");
        let dir = artifacts_dir();
        std::fs::create_dir_all(&dir).expect("tests/artifacts can be created");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot can be written");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.inner.is_none() || std::thread::panicking() {
            return;
        }
        // Kept for another test only when left as a new one would be: one window, at a blank
        // page, no key or button held (servers of later tests listen on other ports, so their
        // pages share no storage with this test's).
        let reusable = self
            .try_call("GET", &self.path("/window/handles"), None)
            .is_ok_and(|handles| handles.as_array().is_some_and(|h| h.len() == 1))
            && self.try_goto("about:blank").is_ok()
            && self
                .try_call("DELETE", &self.path("/actions"), None)
                .is_ok()
            && (!self.launched().media_emulated.get()
                || self
                    .try_call(
                        "POST",
                        &self.path("/goog/cdp/execute"),
                        Some(json!({ "cmd": "Emulation.setEmulatedMedia", "params": { "features": [] } })),
                    )
                    .is_ok());
        if let Some(launched) = self.inner.take().filter(|_| reusable) {
            IDLE.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(launched);
        }
    }
}

/// Where test artifacts (screenshots) go: `tests/artifacts/`, which git ignores.
pub fn artifacts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("artifacts")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port exists")
}
