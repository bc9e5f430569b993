//! The browser viewer on a big profile, in headless Chromium: 1M samples over 100k distinct
//! stacks. Measures the time from navigation to the first painted flame graph (and its parts),
//! a hover redraw, a zoom (new layout from the wasm module plus redraw), and the size of the
//! wasm and JavaScript the page loads.
//!
//! Run with `cargo bench -p prof-benches --bench viewer`. Needs `chromium` and `chromedriver`.

use prof::serve::{self, Port, ServeOptions, Server};
use prof::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};
use prof_e2e::webdriver::Browser;
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

const SAMPLES: usize = 1_000_000;
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

/// 100k distinct stacks grown as a tree (each new stack extends an earlier one or starts from a
/// few roots), then 1M samples drawn with a skew towards the early, hot stacks.
fn big_session() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "bench-app".into(),
        mode: Mode::Cpu,
        timer: "perf_event".into(),
        duration_ns: SAMPLES as u64 * 100_000,
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
    let mut leaves = Vec::with_capacity(STACKS);
    let mut seen = std::collections::HashSet::new();
    let roots: Vec<_> = (0..4).map(|i| b.intern_stack(None, frames[i])).collect();
    while leaves.len() < STACKS {
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
    for i in 0..SAMPLES {
        // Half the samples on the first 1% of stacks, the rest spread over all of them.
        let stack = if i % 2 == 0 {
            leaves[rng.next(STACKS / 100)]
        } else {
            leaves[rng.next(STACKS)]
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

fn main() {
    let t = Instant::now();
    let session = big_session();
    let mut json = Vec::new();
    prof::session::write(&session, &mut json).unwrap();
    println!(
        "session: {} samples, {} stacks, {} frames; {:.1} MB of JSON (made in {:.1} s)",
        session.sample_count(),
        session.stacks.len(),
        session.frames.len(),
        json.len() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let server = Server::start(
        vec![serve::SessionFile {
            name: "big.json".into(),
            json,
        }],
        &ServeOptions::new(IpAddr::V4(Ipv4Addr::LOCALHOST), Port::Exact(0)),
    )
    .unwrap();

    let mut size = 0;
    for asset in ["app.js", "flame.js", "table.js", "header.js", "format.js"] {
        size += serve::assets::get(asset).unwrap().data.len();
    }
    let wasm = serve::assets::get("pkg/prof_viewer_bg.wasm")
        .unwrap()
        .data
        .len();
    let glue = serve::assets::get("pkg/prof_viewer.js").unwrap().data.len();
    println!(
        "page code: wasm {:.0} kB + wasm-bindgen JS {:.0} kB + page JS {:.0} kB = {:.0} kB",
        wasm as f64 / 1e3,
        glue as f64 / 1e3,
        size as f64 / 1e3,
        (wasm + glue + size) as f64 / 1e3
    );

    let browser = Browser::start("bench", 1280, 800, 1.0);
    let mut first_paint = Vec::new();
    for run in 0..3 {
        browser.goto(server.url());
        browser.wait_for(
            "performance.getEntriesByName('prof-first-paint').length > 0",
            Duration::from_secs(120),
            "the page to load",
        );
        let marks = browser.eval(
            "return ['prof-wasm-ready', 'prof-fetched', 'prof-parsed', 'prof-first-paint']
               .map(n => performance.getEntriesByName(n)[0]?.startTime ?? -1);",
            json!([]),
        );
        println!("run {run}: wasm ready / session fetched / parsed / first paint at {marks} ms");
        first_paint.push(marks[3].as_f64().unwrap());
    }
    println!(
        "navigation to first painted flame graph: median {:.0} ms",
        median(first_paint)
    );

    let timings = browser.eval(
        "const v = window.profViewer, out = { redraw: [], zoom: [] };
         const l = v.state.layout;
         let widest = -1;
         for (let i = 0; i < l.count; i++) if (l.depth[i] === 3 && (widest < 0 || l.width[i] > l.width[widest])) widest = i;
         for (let k = 0; k < 20; k++) {
           let t = performance.now(); v.flame.draw(); out.redraw.push(performance.now() - t);
         }
         const node = l.node[widest];
         for (let k = 0; k < 10; k++) {
           let t = performance.now(); v.zoomTo(node); out.zoom.push(performance.now() - t);
           t = performance.now(); v.zoomTo(v.state.profile.rootNode()); out.zoom.push(performance.now() - t);
         }
         out.rects = v.state.layout.count;
         return out;",
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
}
