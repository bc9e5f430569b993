//! Scope bars: each thread's spans as nested bars and its marks as ticks, and one lane per task
//! name with its polls, over a time window, for the timeline and the stack chart. The aggregation
//! core lays them out (`aggregate::ScopeLayout`, over the per-session `ScopeIndex`); this is
//! their wasm face: the page draws the bars as they come and asks about one (its tooltip, the
//! time a click selects) by its position.

use crate::json_out::JsonOut;
use crate::profile::Profile;
use crate::time::{range_text, thread_label, time_text, window};
use prof_session::aggregate::{
    format_time_at, thousands, wait_after, BarKind, ScopeIndex, ScopeLayout, MERGED,
};
use prof_session::session::{Session, StackId};
use wasm_bindgen::prelude::*;

/// The most frames of an await stack a poll's tooltip names.
const AWAIT_FRAMES: usize = 4;

/// How long a task waited and where: `12.0 ms at serve → nap → sleep`, the await stack's
/// outermost frames first (the task's own future), `→ …` when it has more than
/// [`AWAIT_FRAMES`].
fn await_text(session: &Session, at: StackId, wait_ns: u64) -> String {
    let mut frames: Vec<&str> = session
        .stack_frames(at)
        .map(|f| session.frame_name(f))
        .collect();
    frames.reverse();
    let more = frames.len() > AWAIT_FRAMES;
    frames.truncate(AWAIT_FRAMES);
    let tail = if more { " → …" } else { "" };
    format!("{} at {}{tail}", time_text(wait_ns), frames.join(" → "))
}

/// The scope bars, marks and task lanes of a window, laid out for the page (by the
/// aggregation core's [`ScopeLayout`]).
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct ScopeBars {
    layout: ScopeLayout,
}

/// The values per bar in [`ScopeBars::columns`].
const STRIDE: usize = 7;

#[wasm_bindgen]
impl ScopeBars {
    /// The bars, `STRIDE` (7) numbers each: kind (0 span, 1 poll, 2 mark), row (the thread
    /// index, or the task lane), depth, left edge and width (fractions of the window; 0 wide
    /// for a mark), label (the site index for spans and marks, the task lane for polls;
    /// `u32::MAX` for merged bars) and how many intervals the bar stands for.
    pub fn columns(&self) -> Vec<f64> {
        let span = self.layout.to.saturating_sub(self.layout.from).max(1) as f64;
        let mut out = Vec::with_capacity(self.layout.drawn.len() * STRIDE);
        for d in &self.layout.drawn {
            let b = &d.bar;
            let label = match d.kind {
                BarKind::Poll if b.id != MERGED => d.row,
                _ => b.label,
            };
            let width = if d.kind == BarKind::Mark {
                0.0
            } else {
                (b.end - b.start) as f64 / span
            };
            out.extend_from_slice(&[
                d.kind as u8 as f64,
                d.row as f64,
                d.depth as f64,
                (b.start - self.layout.from) as f64 / span,
                width,
                label as f64,
                b.count as f64,
            ]);
        }
        out
    }

    /// The lanes each thread takes (by thread index; 0: none), the depths of spans deeper than
    /// its lanes (by thread index), and the texts: each call site's name (by site index), each
    /// task lane's name and what it holds, and how many task names are not shown, as JSON
    /// `{lanes, deeper, sites, tasks: [{name, text}], moreText}`.
    #[wasm_bindgen(js_name = textsJson)]
    pub fn texts_json(&self, profile: &Profile) -> String {
        let session = &profile.session;
        let index = profile.scope_index();
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("lanes")
            .u64s(self.layout.lanes.iter().map(|&n| u64::from(n)));
        w.key("deeper")
            .u64s(self.layout.deeper.iter().map(|&n| u64::from(n)));
        w.key("sites").strings(
            session
                .scopes
                .sites
                .iter()
                .map(|site| session.str(site.name)),
        );
        w.key("tasks").begin_array();
        for t in &index.task_lanes()[..self.layout.task_lanes as usize] {
            let text = format!(
                "{} tasks, {} polls, {} polled",
                thousands(t.tasks),
                thousands(t.polls() as u64),
                time_text(t.polled_ns)
            );
            w.begin_object();
            w.key("name").string(session.str(t.name));
            w.key("text").string(&text);
            w.end_object();
        }
        w.end_array();
        let more = match self.layout.more_tasks {
            0 => None,
            n => Some(format!("+{} more task names", thousands(u64::from(n)))),
        };
        w.key("moreText").opt_string(more.as_deref());
        w.end_object();
        w.finish()
    }

    /// What bar `i` is, for its tooltip, and the time a click on it selects, as JSON `{name,
    /// lines: [label, text, label, text, ...], from, to}` (`from` and `to` null for a mark).
    #[wasm_bindgen(js_name = barJson)]
    pub fn bar_json(&self, profile: &Profile, i: usize) -> Result<String, JsError> {
        let d = self
            .layout
            .drawn
            .get(i)
            .ok_or_else(|| JsError::new(&format!("no bar {i}")))?;
        let session = &profile.session;
        let b = &d.bar;
        let mut lines: Vec<String> = Vec::new();
        let mut line = |label: &str, text: String| {
            lines.push(label.to_owned());
            lines.push(text);
        };
        let name = if b.id == MERGED {
            let what = match d.kind {
                BarKind::Span => "spans",
                BarKind::Poll => "polls",
                BarKind::Mark => "marks",
            };
            line("Time", range_text(b.start, b.end));
            format!(
                "{} {what}, each narrower than a pixel",
                thousands(u64::from(b.count))
            )
        } else {
            let (name, fields, thread) = match d.kind {
                BarKind::Span => {
                    let s = &session.scopes.spans[b.id as usize];
                    line("Duration", time_text(s.duration_ns()));
                    line("Time", range_text(s.start_ns, s.end_ns));
                    (session.scopes.site(s.site).name, &s.fields[..], s.thread)
                }
                BarKind::Mark => {
                    let m = &session.scopes.marks[b.id as usize];
                    line("At", format_time_at(m.time_ns, 1_000));
                    (session.scopes.site(m.site).name, &m.fields[..], m.thread)
                }
                BarKind::Poll => {
                    let p = &session.tasks.polls[b.id as usize];
                    let task = session.tasks.task(p.task);
                    line("Task", format!("id {}", task.id));
                    line("Poll", time_text(p.end_ns.saturating_sub(p.start_ns)));
                    line("Time", range_text(p.start_ns, p.end_ns));
                    if let Some((at, wait_ns)) = wait_after(session, b.id as usize) {
                        line("Then waited", await_text(session, at, wait_ns));
                    }
                    (task.name, &[][..], p.thread)
                }
            };
            line("Thread", thread_label(session, thread));
            for f in fields {
                line(session.str(f.key), session.str(f.value).to_owned());
            }
            session.str(name).to_owned()
        };
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("name").string(&name);
        w.key("lines").strings(lines.iter().map(String::as_str));
        match self.layout.selection(d, session) {
            Some((from, to)) => {
                w.key("from").u64(from);
                w.key("to").u64(to);
            }
            None => {
                w.key("from").null();
                w.key("to").null();
            }
        }
        w.end_object();
        Ok(w.finish())
    }
}

impl Profile {
    /// The session's spans, marks and polls indexed for drawing (built on first use).
    fn scope_index(&self) -> &ScopeIndex {
        self.scope_index
            .get_or_init(|| ScopeIndex::of(&self.session))
    }
}

#[wasm_bindgen]
impl Profile {
    /// The scope bars over the window `[from, to)` (`from` negative: the whole session) for
    /// `pixels` pixels: of every thread, or of the shown threads (`shown`, in thread order, as
    /// the stack chart has them), at most `max_depth` lanes per thread, and the polls of the
    /// first `task_lanes` task names (the longest polled first).
    #[wasm_bindgen(js_name = scopeBars)]
    pub fn scope_bars(
        &self,
        from: f64,
        to: f64,
        pixels: f64,
        shown: bool,
        max_depth: u32,
        task_lanes: u32,
    ) -> ScopeBars {
        let session = &self.session;
        let mut threads: Vec<usize> = match (&self.view.threads, shown) {
            (Some(t), true) => t.iter().map(|&t| t as usize).collect(),
            _ => (0..session.threads.len()).collect(),
        };
        // A thread named twice has its bars once.
        prof_session::order::sort_by_key(&mut threads, |&t| t);
        threads.dedup();
        let layout = ScopeLayout::compute(
            self.scope_index(),
            &threads,
            window(session, from, to),
            pixels,
            max_depth,
            task_lanes,
        );
        ScopeBars { layout }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::export::fixture::scopes_session as session;
    use prof_session::session::{FrameSpec, Poll, SessionBuilder};

    #[test]
    fn a_polls_tooltip_says_how_long_its_task_then_waited_and_where() {
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let f = |b: &mut SessionBuilder, n: &str| b.intern_frame(&FrameSpec::named(n));
        let path: Vec<_> = ["serve", "handle", "nap", "sleep", "poll"]
            .iter()
            .map(|n| f(&mut b, n))
            .collect();
        let deep = b.intern_stack_path(&path).unwrap();
        let short = b.intern_stack_path(&path[..2]).unwrap();
        let task = b.intern_task(1, "fetch");
        for (start_ns, end_ns, waited_at) in [(0, 10, Some(deep)), (50, 60, Some(short))] {
            b.push_poll(Poll {
                task,
                thread: main,
                start_ns,
                end_ns,
                waited_at,
            });
        }
        b.meta_mut().duration_ns = 100;
        b.push_sample(short, main, 5, 1);
        let profile = Profile::of(b.finish());
        let bars = profile.scope_bars(-1.0, -1.0, 101.0, false, 8, 8);
        let lines: Vec<serde_json::Value> = (0..2)
            .map(|i| {
                let bar: serde_json::Value =
                    serde_json::from_str(&bars.bar_json(&profile, i).unwrap()).unwrap();
                bar["lines"].clone()
            })
            .collect();
        let waited = |l: &serde_json::Value| {
            let l = l.as_array().unwrap();
            let i = l.iter().position(|x| x == "Then waited").unwrap();
            l[i + 1].as_str().unwrap().to_owned()
        };
        assert_eq!(
            waited(&lines[0]),
            "40 ns at serve → handle → nap → sleep → …"
        );
        // The last poll: until the session's end.
        assert_eq!(waited(&lines[1]), "40 ns at serve → handle");
    }

    #[test]
    fn a_bar_tells_what_it_is_and_selects_its_time() {
        let profile = Profile::of(session());
        let bars = profile.scope_bars(-1.0, -1.0, 401.0, false, 8, 8);
        let json = |i| -> serde_json::Value {
            serde_json::from_str(&bars.bar_json(&profile, i).unwrap()).unwrap()
        };
        let parse = json(2);
        assert_eq!(parse["name"], "parse");
        assert_eq!(
            parse["lines"],
            serde_json::json!([
                "Duration",
                "30 ns",
                "Time",
                range_text(10, 40),
                "Thread",
                "main [1]",
                "id",
                "7"
            ])
        );
        assert_eq!(
            (parse["from"].as_u64(), parse["to"].as_u64()),
            (Some(10), Some(41))
        );
        let mark = json(4);
        assert_eq!(
            (mark["name"].as_str(), mark["from"].is_null()),
            (Some("gc"), true)
        );
        let poll = json(6);
        assert_eq!(poll["name"], "fetch");
        assert_eq!(
            (poll["lines"][0].as_str(), poll["lines"][1].as_str()),
            (Some("Task"), Some("id 2"))
        );
        assert_eq!(
            (poll["from"].as_u64(), poll["to"].as_u64()),
            (Some(0), Some(31))
        );
        let texts: serde_json::Value = serde_json::from_str(&bars.texts_json(&profile)).unwrap();
        assert_eq!(texts["lanes"], serde_json::json!([3, 1, 0]));
        assert_eq!(
            texts["sites"],
            serde_json::json!(["request", "parse", "lex", "gc"])
        );
        assert_eq!(texts["tasks"][0]["name"], "fetch");
        assert_eq!(texts["tasks"][0]["text"], "2 tasks, 2 polls, 70 ns polled");
        assert!(texts["moreText"].is_null());
        // Merged: the time the bar covers.
        let narrow = profile.scope_bars(-1.0, -1.0, 4.0, false, 8, 8);
        let merged = narrow
            .layout
            .drawn
            .iter()
            .position(|d| d.bar.id == MERGED)
            .expect("a merged bar at 4 pixels");
        let m: serde_json::Value =
            serde_json::from_str(&narrow.bar_json(&profile, merged).unwrap()).unwrap();
        assert!(
            m["name"]
                .as_str()
                .unwrap()
                .contains("each narrower than a pixel"),
            "{m}"
        );
        let d = narrow.layout.drawn[merged].bar;
        assert_eq!(
            (m["from"].as_u64(), m["to"].as_u64()),
            (Some(d.start), Some(d.end))
        );
    }

    #[test]
    fn the_stack_chart_gets_the_bars_of_the_shown_threads_only() {
        let mut profile = Profile::of(session());
        profile.view.threads = Some(vec![1, 1]);
        let bars = profile.scope_bars(-1.0, -1.0, 401.0, true, 8, 0);
        assert_eq!(bars.layout.lanes, [0, 1, 0]);
        let drawn: Vec<_> = bars
            .layout
            .drawn
            .iter()
            .map(|d| (d.kind, d.row, d.bar.start, d.bar.end))
            .collect();
        assert_eq!(
            drawn,
            [(BarKind::Mark, 1, 60, 61)],
            "once, though named twice"
        );
    }
}
