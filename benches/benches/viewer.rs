//! The browser viewer on a big profile, in headless Chromium: 1M samples over 100k distinct
//! stacks. Measures the time from navigation to the first painted flame graph (and its parts),
//! a hover redraw, a zoom (new layout from the wasm module plus redraw), and the size of the
//! wasm and JavaScript the page loads. Then the same on 10M samples (generated once into
//! `target/bench-data/`): first paint, the wasm module's memory against the JSON size, and the
//! re-aggregation and redraw after a thread or range change; and the single-file HTML
//! (`prof convert --to html`) of the 1M-sample session opened from disk. And the page's floor:
//! its first paint on 1,000 samples, alternated with the 1M-sample session.
//!
//! Side by side, in the same browser: speedscope 1.25 (the npm package) loading the same session
//! exported with prof's speedscope exporter, in its "left heavy" view (the aggregated flame graph,
//! the picture prof's viewer shows). "First paint" means, for both, that the first complete flame
//! graph's drawing commands have been issued to its canvas and the frame showing them is being
//! produced: prof marks it in the animation frame after its synchronous canvas draw; for
//! speedscope an observer injected into its `index.html` marks it when the JavaScript that made
//! the first WebGL draw call onto the page's canvas returns (see `viewer/speedscope.rs`). Both
//! are `performance` marks, read as milliseconds since navigation start.
//!
//! Run with `cargo bench -p prof-benches --bench viewer`; `-- 10m` (or `1m`, `redraw`,
//! `single`, `floor`, several allowed) runs only those parts. Needs `chromium`, `chromedriver` and
//! speedscope's npm package in `tests/node` (`.ci/install-tools` installs all three).

#[path = "viewer/speedscope.rs"]
mod speedscope;

use prof::serve::{self, Port, ServeOptions, Server};
use prof::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};
use prof_e2e::webdriver::Browser;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

const SAMPLES: usize = 1_000_000;
/// The smaller session compared too, should speedscope fail on the big one.
const SMALL_SAMPLES: usize = 100_000;
const STACKS: usize = 100_000;
const FUNCTIONS: usize = 5_000;

/// A deterministic pseudo-random sequence (64-bit LCG), so every run profiles the same data.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below
    }
}

/// `stacks` distinct stacks (`STACKS` for the benchmark) grown as a tree (each new stack extends
/// an earlier one or starts from a few roots), then `samples` samples (1M for the benchmark)
/// drawn with a skew towards the early, hot stacks.
fn session_of(samples: usize, stacks: usize) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "bench-app".into(),
        mode: Mode::Cpu,
        timer: "perf_event".into(),
        duration_ns: samples as u64 * 100_000,
        achieved_interval_ns: 100_000,
        ..Metadata::default()
    });
    let names: Vec<String> = (0..FUNCTIONS)
        .map(|i| format!("bench_app::module{}::function_{i}", i % 97))
        .collect();
    let frames: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut spec = FrameSpec::named(name);
            spec.file = Some("src/lib.rs");
            spec.line = Some(i as u32 + 1);
            b.intern_frame(&spec)
        })
        .collect();
    let mut rng = Lcg(42);
    let mut leaves = Vec::with_capacity(stacks);
    let mut seen = std::collections::HashSet::new();
    let roots: Vec<_> = (0..4).map(|i| b.intern_stack(None, frames[i])).collect();
    while leaves.len() < stacks {
        let parent = if leaves.is_empty() || rng.next(10) == 0 {
            roots[rng.next(roots.len())]
        } else {
            leaves[rng.next(leaves.len())]
        };
        let leaf = b.intern_stack(Some(parent), frames[4 + rng.next(FUNCTIONS - 4)]);
        if seen.insert(leaf) {
            leaves.push(leaf);
        }
    }
    let threads: Vec<_> = (0..4)
        .map(|i| b.thread(1000 + i, &format!("worker-{i}")))
        .collect();
    for i in 0..samples {
        // Half the samples on the first 1% of stacks, the rest spread over all of them.
        let stack = if i % 2 == 0 {
            leaves[rng.next(stacks.div_ceil(100))]
        } else {
            leaves[rng.next(stacks)]
        };
        b.push_sample(
            stack,
            threads[i % threads.len()],
            i as u64 * 100_000,
            100_000,
        );
    }
    b.finish()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A session as prof's JSON and as speedscope JSON (prof's own exporter).
struct Files {
    /// What the session is, for the output: "1M samples".
    label: String,
    prof: Vec<u8>,
    speedscope: Vec<u8>,
    session: Session,
}

fn files(samples: usize) -> Files {
    let t = Instant::now();
    let session = session_of(samples, STACKS);
    let mut prof = Vec::new();
    prof::session::write(&session, &mut prof).unwrap();
    let mut speedscope = Vec::new();
    prof::export::speedscope::write_speedscope(&session, &mut speedscope).unwrap();
    println!(
        "session: {} samples, {} stacks, {} frames, {} threads; {:.1} MB of prof JSON, {:.1} MB \
         of speedscope JSON (made in {:.1} s)",
        session.sample_count(),
        session.stacks.len(),
        session.frames.len(),
        session.threads.len(),
        prof.len() as f64 / 1e6,
        speedscope.len() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let label = if samples.is_multiple_of(1_000_000) {
        format!("{}M samples", samples / 1_000_000)
    } else {
        format!("{}k samples", samples / 1000)
    };
    Files {
        label,
        prof,
        speedscope,
        session,
    }
}

fn prof_server(json: Vec<u8>) -> Server {
    Server::start(
        vec![serve::SessionFile::new("big.json", json)],
        &ServeOptions::new(IpAddr::V4(Ipv4Addr::LOCALHOST), Port::Exact(0)),
    )
    .unwrap()
}

/// Loads prof's viewer and returns navigation to first paint, in ms.
fn prof_first_paint(browser: &Browser, url: &str, label: &str) -> f64 {
    prof_marks(browser, url, label)[MARKS.len() - 1]
}

/// Loads prof's viewer and returns its `MARKS`, in ms since navigation (-1 for one the page did
/// not set).
fn prof_marks(browser: &Browser, url: &str, label: &str) -> [f64; MARKS.len()] {
    browser.goto("about:blank");
    browser.goto(url);
    browser.wait_for(
        "performance.getEntriesByName('prof-first-paint').length > 0",
        Duration::from_secs(120),
        "the page to load",
    );
    let names: Vec<&str> = MARKS.iter().map(|(name, _)| *name).collect();
    let marks = browser.eval(
        "return arguments[0].map(n => Math.round(performance.getEntriesByName(n)[0]?.startTime ?? -1));",
        json!([names]),
    );
    let what: Vec<&str> = MARKS.iter().map(|(_, what)| *what).collect();
    println!("  prof {label}: {} at {marks} ms", what.join(" / "));
    std::array::from_fn(|i| marks[i].as_f64().unwrap())
}

/// The `performance` marks the page sets while it loads, and what each says, in their order
/// (the last is the first paint).
const MARKS: [(&str, &str); 5] = [
    ("prof-compiled", "wasm compiled"),
    ("prof-fetched", "session fetched"),
    ("prof-decoded", "decoded in the worker"),
    ("prof-parsed", "answer in the page"),
    ("prof-first-paint", "first paint"),
];

/// The page's floor: first paint of a session of 1,000 samples over 100 stacks, which costs
/// nothing to fetch or decode, alternated in one browser with the 1M-sample session. What the
/// small one takes is what the page costs whatever the profile (its modules, the worker, the wasm
/// module's compilation, one layout and draw); the difference is what the profile's size costs.
/// Each run starts a new server for each session, as a new `prof serve` is, and loads its page
/// twice: the first load is a user's ("cold": a new origin, nothing in the browser's caches), the
/// second a reload ("warm": the page's code from the HTTP cache, the wasm module's compiled code
/// from V8's cache once it has it).
fn floor() {
    let small = session_of(1_000, 100);
    let (mut small_json, mut big_json) = (Vec::new(), Vec::new());
    prof::session::write(&small, &mut small_json).unwrap();
    prof::session::write(&session_of(SAMPLES, STACKS), &mut big_json).unwrap();
    let browser = Browser::start("bench-floor", 1280, 800, 1.0);
    // The loads' marks by how (cold, warm), then by session (1k, 1M).
    let mut loads: [[Vec<[f64; MARKS.len()]>; 2]; 2] = Default::default();
    for run in 0..FLOOR_RUNS {
        for (i, (json, what)) in [(&small_json, "1k"), (&big_json, "1M")]
            .into_iter()
            .enumerate()
        {
            let server = prof_server(json.clone());
            for (j, how) in ["cold", "warm"].into_iter().enumerate() {
                let label = format!("{what} samples, {how}, run {run}");
                loads[j][i].push(prof_marks(&browser, server.url(), &label));
            }
        }
    }
    println!(
        "the page's floor: medians of {FLOOR_RUNS}, ms from navigation, 1k samples against 1M, \
         a new server's page (cold) and its reload (warm)"
    );
    for (i, (_, mark)) in MARKS.iter().enumerate() {
        let of = |runs: &[[f64; MARKS.len()]]| median(runs.iter().map(|m| m[i]).collect());
        let [[cold_1k, cold_1m], [warm_1k, warm_1m]] =
            loads.each_ref().map(|l| l.each_ref().map(|r| of(r)));
        println!(
            "  {mark}: cold {cold_1k:.0} against {cold_1m:.0}, warm {warm_1k:.0} against {warm_1m:.0}"
        );
    }
}

/// Page loads of each session in the floor's comparison.
const FLOOR_RUNS: usize = 9;

/// How long speedscope may take before a load counts as failed.
const SPEEDSCOPE_TIMEOUT: Duration = Duration::from_secs(300);

/// Loads speedscope on its profile and returns navigation to first paint in ms, or what went
/// wrong (an error shown in the page, a crashed tab, a timeout).
fn speedscope_first_paint(browser: &Browser, url: &str, label: &str) -> Result<f64, String> {
    browser.try_goto("about:blank")?;
    browser.try_goto(url)?;
    let deadline = Instant::now() + SPEEDSCOPE_TIMEOUT;
    let probe = "const m = performance.getEntriesByName('speedscope-first-paint')[0];
        const d = performance.getEntriesByName('speedscope-first-draw')[0];
        if (m && window.speedscopeFirstPaint) return { ms: m.startTime, draw: d.startTime, ...window.speedscopeFirstPaint };
        if (document.body.innerText.includes('Something went wrong')) return { failed: document.body.innerText };
        return null;";
    loop {
        // While speedscope parses, the page cannot run the probe: WebDriver reports a script
        // timeout, which only means "not yet".
        match browser.try_eval(probe, json!([])) {
            Ok(Value::Null) => {}
            Ok(v) if v.get("failed").is_some() => {
                return Err(format!(
                    "speedscope shows an error: {}; console: {:?}",
                    v["failed"],
                    browser.console_log()
                ))
            }
            Ok(v) => {
                // speedscope times its import (fetch, parse, build the profiles) with
                // `console.time("import")`.
                let import = browser
                    .console_log()
                    .iter()
                    .find_map(|l| {
                        let ms = l.split("import: ").nth(1)?.split(" ms").next()?;
                        ms.parse::<f64>().ok()
                    })
                    .map_or("?".to_owned(), |ms| format!("{ms:.0}"));
                println!(
                    "  speedscope {label}: import (fetch, parse, build) took {import} ms; first WebGL \
                     draw call at {:.0} ms, first paint at {:.0} ms; {} colours on its {}x{} canvas",
                    v["draw"].as_f64().unwrap(),
                    v["ms"].as_f64().unwrap(),
                    v["colours"],
                    v["width"],
                    v["height"],
                );
                let colours = v["colours"].as_u64().unwrap_or(0);
                if colours < 5 {
                    return Err(format!("the first frame drawn is not a flame graph: {v}"));
                }
                return Ok(v["ms"].as_f64().unwrap());
            }
            Err(e) if e.contains("timeout") => {}
            Err(e) => return Err(e),
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no flame graph after {} s; console: {:?}",
                SPEEDSCOPE_TIMEOUT.as_secs(),
                browser.console_log()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Loads prof's viewer and speedscope on the same session `RUNS` times each, alternating, and
/// prints the medians and their ratio. Returns false when speedscope could not show it.
fn compare(browser: &Browser, files: Files) -> bool {
    let what = files.label;
    let prof = prof_server(files.prof);
    let scope = speedscope::Speedscope::start(&files.speedscope);
    let url = scope.url("left-heavy");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        ours.push(prof_first_paint(browser, prof.url(), &format!("run {run}")));
        match speedscope_first_paint(browser, &url, &format!("run {run}")) {
            Ok(ms) => theirs.push(ms),
            Err(e) => {
                println!("  speedscope run {run} FAILED on {what}: {e}");
                return false;
            }
        }
        if run == 0 {
            browser.screenshot(&format!("bench-speedscope-{}", what.replace(' ', "-")));
        }
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "{what}: navigation to first painted flame graph, median of {RUNS}: prof {ours:.0} ms, \
         speedscope 1.25 {theirs:.0} ms: prof is {:.1}x faster",
        theirs / ours
    );
    true
}

const RUNS: usize = 3;

/// Whether the part `name` runs: every part when none is named on the command line.
fn runs(name: &str) -> bool {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    named.is_empty() || named.iter().any(|n| n == name)
}

fn main() {
    if runs("floor") {
        floor();
    }
    if !["1m", "redraw", "single"].iter().any(|p| runs(p)) {
        if runs("10m") {
            ten_million();
        }
        return;
    }
    let big = files(SAMPLES);
    let prof_json = big.prof.clone();
    let html = standalone_html(&big.session);

    // Every module of the page's own JavaScript (the wasm-bindgen glue is counted apart).
    let size: usize = prof_serve::assets::paths()
        .filter(|p| p.ends_with(".js") && !p.starts_with("pkg/"))
        .map(|p| prof_serve::assets::get(&p).unwrap().data.len())
        .sum();
    let wasm = prof_serve::assets::get("pkg/prof_viewer_bg.wasm")
        .unwrap()
        .data
        .len();
    let glue = prof_serve::assets::get("pkg/prof_viewer.js")
        .unwrap()
        .data
        .len();
    println!(
        "page code: wasm {:.0} kB + wasm-bindgen JS {:.0} kB + page JS {:.0} kB = {:.0} kB",
        wasm as f64 / 1e3,
        glue as f64 / 1e3,
        size as f64 / 1e3,
        (wasm + glue + size) as f64 / 1e3
    );

    let browser = Browser::start("bench", 1280, 800, 1.0);
    let webgl = browser.eval(
        "const gl = document.createElement('canvas').getContext('webgl');
         const info = gl && gl.getExtension('WEBGL_debug_renderer_info');
         return gl ? (info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : 'WebGL without renderer info') : 'no WebGL';",
        json!([]),
    );
    println!("WebGL renderer in this Chromium: {webgl}");
    let loaded = !runs("1m") || compare(&browser, big);
    // A crashed tab can leave the session unusable, and each Chromium holds on to memory: a
    // fresh browser for what follows.
    drop(browser);
    if !loaded {
        println!(
            "speedscope could not show the 1M-sample session; comparing on {SMALL_SAMPLES} samples"
        );
        let browser = Browser::start("bench-small", 1280, 800, 1.0);
        compare(&browser, files(SMALL_SAMPLES));
    }

    if runs("redraw") {
        redraws(prof_json);
    }
    if runs("single") {
        single_file(&html);
    }
    if runs("10m") {
        ten_million();
    }
}

/// Redraw and zoom on the 1M-sample session in prof's viewer, and its memory.
fn redraws(prof_json: Vec<u8>) {
    let json_len = prof_json.len();
    let server = prof_server(prof_json);
    let browser = Browser::start("bench-redraw", 1280, 800, 1.0);
    let first = prof_first_paint(&browser, server.url(), "for redraws");
    println!("navigation to first painted flame graph in a fresh browser: {first:.0} ms");
    let timings = browser.eval(
        "const v = window.profViewer, out = { redraw: [], zoom: [] };
         const l = v.layout;
         let widest = -1;
         for (let i = 0; i < l.count; i++) if (l.depth[i] === 3 && (widest < 0 || l.width[i] > l.width[widest])) widest = i;
         for (let k = 0; k < 20; k++) {
           let t = performance.now(); v.flame.draw(); out.redraw.push(performance.now() - t);
         }
         // Zooms ask the worker for a layout: the time includes the round trip.
         return (async () => {
           const path = await v.page.backend.call('namePath', { node: l.node[widest] });
           for (let k = 0; k < 10; k++) {
             let t = performance.now(); await v.zoomTo(path); out.zoom.push(performance.now() - t);
             t = performance.now(); await v.zoomTo([]); out.zoom.push(performance.now() - t);
           }
           out.rects = l.count;
           return out;
         })();",
        json!([]),
    );
    let ms = |key: &str| -> Vec<f64> {
        timings[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    println!(
        "redraw (hover): median {:.1} ms over {} rectangles; zoom (layout + redraw): median {:.1} ms",
        median(ms("redraw")),
        timings["rects"],
        median(ms("zoom"))
    );
    report_memory(&browser, json_len);
}

/// The wasm module's memory (its peak: it never shrinks) against the JSON's size.
fn report_memory(browser: &Browser, json_bytes: usize) {
    let bytes = browser
        .eval(
            "return window.profViewer.page.backend.call('memoryBytes');",
            json!([]),
        )
        .as_f64()
        .unwrap();
    println!(
        "wasm memory after loading: {:.0} MB for {:.0} MB of JSON ({:.1}x)",
        bytes / 1e6,
        json_bytes as f64 / 1e6,
        bytes / json_bytes as f64
    );
}

/// Where generated inputs are kept between runs.
fn data_dir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The single-file page of `session`, written to `target/bench-data/`.
fn standalone_html(session: &Session) -> std::path::PathBuf {
    let path = data_dir().join("viewer-1M.html");
    let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    serve::write_standalone_html(session, "big.json", file).unwrap();
    path
}

/// Opens the single-file page of the 1M-sample session from disk.
fn single_file(html: &std::path::Path) {
    let size = std::fs::metadata(html).unwrap().len();
    let browser = Browser::start("bench-standalone", 1280, 800, 1.0);
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    let runs: Vec<f64> = (0..RUNS)
        .map(|run| prof_first_paint(&browser, &url, &format!("single file, run {run}")))
        .collect();
    println!(
        "single-file HTML of 1M samples ({:.1} MB), opened from disk: navigation to first paint, \
         median of {RUNS}: {:.0} ms",
        size as f64 / 1e6,
        median(runs)
    );
}

const TEN_MILLION: usize = 10_000_000;

/// The 10M-sample session's JSON, generated on the first run and kept in `target/bench-data/`.
fn ten_million_json() -> Vec<u8> {
    let path = data_dir().join("viewer-10M.json");
    if let Ok(json) = std::fs::read(&path) {
        return json;
    }
    let t = Instant::now();
    let session = session_of(TEN_MILLION, STACKS);
    let mut json = Vec::new();
    prof::session::write(&session, &mut json).unwrap();
    std::fs::write(&path, &json).unwrap();
    println!(
        "generated {} ({:.0} MB) in {:.0} s",
        path.display(),
        json.len() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    json
}

/// prof's viewer on 10M samples: first paint, memory, re-aggregation after thread and range
/// changes (worker: filter + call tree + layout; page: redraw), hover and zoom.
fn ten_million() {
    let json = ten_million_json();
    let json_bytes = json.len();
    println!(
        "10M samples: {:.0} MB of prof JSON",
        json_bytes as f64 / 1e6
    );
    let server = prof_server(json);
    let browser = Browser::start("bench-10M", 1280, 800, 1.0);
    let runs: Vec<f64> = (0..RUNS)
        .map(|run| prof_first_paint(&browser, server.url(), &format!("10M, run {run}")))
        .collect();
    println!(
        "10M samples: navigation to first painted flame graph, median of {RUNS}: {:.0} ms",
        median(runs)
    );
    report_memory(&browser, json_bytes);
    let timings = browser.eval(
        "const v = window.profViewer, out = { thread: [], range: [], all: [], redraw: [], zoom: [], parts: {} };
         // Where the time of each change went: the worker's questions, by method.
         const spent = async (kind) => {
           const parts = out.parts[kind] ??= {};
           for (const [method, ms] of await v.page.backend.call('spent')) (parts[method] ??= []).push(ms);
         };
         return (async () => {
           await v.page.backend.call('spent');
           for (let k = 0; k < 5; k++) {
             let t = performance.now(); await v.update({ threads: [k % 4] }); out.thread.push(performance.now() - t);
             await spent('thread');
             t = performance.now(); await v.update({ threads: null }); out.all.push(performance.now() - t);
             await spent('all');
           }
           const span = 10_000_000 * 100_000;
           for (let k = 0; k < 5; k++) {
             const from = Math.floor(span * k / 10), to = from + Math.floor(span / 3);
             let t = performance.now(); await v.update({ range: [from, to] }); out.range.push(performance.now() - t);
             await spent('range');
           }
           await v.update({ range: null });
           for (let k = 0; k < 20; k++) {
             const t = performance.now(); v.flame.draw(); out.redraw.push(performance.now() - t);
           }
           const l = v.layout;
           let widest = -1;
           for (let i = 0; i < l.count; i++) if (l.depth[i] === 3 && (widest < 0 || l.width[i] > l.width[widest])) widest = i;
           const path = await v.page.backend.call('namePath', { node: l.node[widest] });
           for (let k = 0; k < 5; k++) {
             let t = performance.now(); await v.zoomTo(path); out.zoom.push(performance.now() - t);
             t = performance.now(); await v.zoomTo([]); out.zoom.push(performance.now() - t);
           }
           return out;
         })();",
        json!([]),
    );
    let ms = |key: &str| -> f64 {
        median(
            timings[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect(),
        )
    };
    println!(
        "10M samples, medians (re-aggregate in the worker, new layout, redraw): one thread {:.0} ms, \
         all threads again {:.0} ms, a third of the time range {:.0} ms; hover redraw {:.1} ms; \
         zoom {:.0} ms",
        ms("thread"),
        ms("all"),
        ms("range"),
        ms("redraw"),
        ms("zoom")
    );
    for kind in ["thread", "all", "range"] {
        let Some(parts) = timings["parts"][kind].as_object() else {
            continue;
        };
        let parts: Vec<String> = parts
            .iter()
            .map(|(method, ms)| {
                let ms: Vec<f64> = ms
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                format!("{method} {:.1} ms (x{})", median(ms.clone()), ms.len())
            })
            .collect();
        println!(
            "  {kind}: the worker's questions, medians: {}",
            parts.join(", ")
        );
    }
}
