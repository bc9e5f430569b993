//! The Assembly view (issue 39, as `go tool pprof -http`'s disasm and the Firefox Profiler's
//! assembly view) in a real headless Chromium against `prof serve`, on a session `prof record`
//! made of a small C program built here (`cc -O2`): the selected function's instructions, read
//! by the server from the recorded binary, with the hottest one's weight and sample count equal
//! to what the session's own samples say; and the same session claiming another machine shows
//! one line saying why there is no code. Screenshots go to `tests/artifacts/assembly-*`.
//!
//! A missing browser or C compiler fails this test: it never skips.

use prof::aggregate::{format_percent, format_weight, thousands};
use prof::session::Session;
use prof_e2e::page::{console_problems, eventually, open_ok, LOAD};
use prof_e2e::recorded::{compile, record};
use prof_e2e::served::Served;
use prof_e2e::webdriver::Browser;
use prof_e2e::{sessions, TempDir};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A hot loop in a function of its own (several instructions, so the samples spread over them).
const HOT_C: &str = r#"#include <stdio.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long hot(unsigned long n) {
  unsigned long x = 1;
  for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005UL + (x >> 7) + i;
  return x;
}
int main(void) {
  sink = hot(600000000UL);
  printf("%lu\n", sink);
  return 0;
}
"#;

/// What the samples whose leaf frame is `name` say, by the file offset of the sampled
/// instruction (through the session's mapping of the address): (weight, samples).
fn leaf_weights(session: &Session, name: &str) -> BTreeMap<u64, (u64, u64)> {
    let mut by_offset = BTreeMap::new();
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        let leaf = session.frame(session.stack(stack).frame);
        if session.str(leaf.name) != name {
            continue;
        }
        let address = leaf.address.expect("a recorded frame has its address");
        let mapping = session
            .mapping_at(address)
            .expect("the program's code is in a mapping");
        let offset = mapping.offset + (address - mapping.start);
        let cell: &mut (u64, u64) = by_offset.entry(offset).or_default();
        cell.0 += session.samples.weight[i];
        cell.1 += 1;
    }
    by_offset
}

/// The Assembly view's sampled rows once drawn.
fn shown_rows(browser: &Browser) -> Vec<Value> {
    let rows = browser.eval(
        "return window.profViewer.views.get('assembly').rows();",
        json!([]),
    );
    rows.as_array().unwrap().clone()
}

#[test]
fn the_hottest_instruction_of_a_recorded_c_function_weighs_what_its_samples_say() {
    let dir = TempDir::new("browser-assembly");
    let source = dir.join("hot.c");
    std::fs::write(&source, HOT_C).unwrap();
    let exe = compile("cc", &["-O2"], &source, &dir.join("hot"));
    let (out, session) = record(&dir, &["--", exe.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded = dir.join("out.json.gz");
    let by_offset = leaf_weights(&session, "hot");
    assert!(
        by_offset.len() >= 2,
        "the samples of hot spread over its loop: {by_offset:?}"
    );
    // The hottest instruction: the most weight, of equal ones the first.
    let (&offset, &(weight, samples)) = by_offset
        .iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| b.0.cmp(a.0)))
        .unwrap();
    let whole = session.total_weight();
    let sample_type = &session.meta.sample_type;

    // The same session, as if recorded on another machine.
    let mut elsewhere = session.clone();
    elsewhere.meta.hostname = "another-machine".into();
    let elsewhere_file = dir.join("elsewhere.json");
    sessions::save(&elsewhere, &elsewhere_file);

    let served = Served::start(&[&recorded, &elsewhere_file], &["--port", "0"]);
    let browser = Browser::start("assembly", 1200, 700, 1.0);
    open_ok(&browser, &served.url);
    browser.eval(
        "window.profViewer.state.update({selected: 'hot'});",
        json!([]),
    );
    browser.click(&browser.find("#tabs button[data-view=assembly]"));
    let mut rows = Vec::new();
    eventually("the sampled instructions of hot", || {
        rows = shown_rows(&browser);
        rows.iter().any(|r| r["hottest"] == json!(true))
    });
    let hottest = rows.iter().find(|r| r["hottest"] == json!(true)).unwrap();
    assert_eq!(hottest["offset"], json!(offset), "{hottest}");
    assert_eq!(
        hottest["self"],
        json!(format!(
            "{} {}",
            format_weight(sample_type, weight),
            format_percent(weight, whole)
        ))
    );
    assert_eq!(hottest["samples"], json!(thousands(samples)));
    assert!(!hottest["text"].as_str().unwrap().is_empty());
    // Every instruction a sample was taken at shows its own samples' count; the others shown
    // are where hot was interrupted into the kernel (a total, no samples of its own).
    for (at, &(_, count)) in &by_offset {
        let row = rows.iter().find(|r| r["offset"] == json!(at));
        let row = row.unwrap_or_else(|| panic!("offset {at} in {rows:?}"));
        assert_eq!(row["samples"], json!(thousands(count)), "{row}");
    }
    for row in &rows {
        let at = row["offset"].as_u64().unwrap();
        if !by_offset.contains_key(&at) {
            assert_eq!(row["samples"], json!("0"), "{row}");
        }
    }
    // The listing is the function's, with the symbol's name over it, scrolled to the hottest.
    let heading = browser.eval(
        "return document.querySelector('.asm-code h3 .path').textContent;",
        json!([]),
    );
    assert_eq!(heading, json!("hot"));
    let current = browser.eval(
        "return document.querySelector('.asm-listing tr.current')?.dataset.offset ?? null;",
        json!([]),
    );
    assert_eq!(current, json!(offset.to_string()));
    browser.screenshot("assembly-recorded");

    // Another machine's session: one line saying why, no listing.
    browser.eval("window.profViewer.state.update({file: 1});", json!([]));
    browser.wait_for(
        "document.querySelector('.asm-empty').textContent.includes('another-machine')",
        LOAD,
        "the refusal for another machine's session",
    );
    let why = browser.eval(
        "return document.querySelector('.asm-empty').textContent;",
        json!([]),
    );
    let why = why.as_str().unwrap();
    assert!(
        why.starts_with("Assembly not available: recorded on another-machine, not on this machine"),
        "{why}"
    );
    assert_eq!(why.lines().count(), 1, "{why}");
    let listing_hidden = browser.eval(
        "return document.querySelector('.asm-listing').hidden;",
        json!([]),
    );
    assert_eq!(listing_hidden, json!(true));
    browser.screenshot("assembly-elsewhere");
    // The one expected entry: Chromium logs the 404 that refuses the other machine's binary.
    let problems: Vec<String> = console_problems(&browser)
        .into_iter()
        .filter(|p| !(p.contains("disasm?session=1") && p.contains("404")))
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
}
