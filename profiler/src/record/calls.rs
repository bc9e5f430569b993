//! Timed calls on the session's timeline (`prof record --calls-timed`): each call kept by the
//! [`CallTimer`] becomes a span of the scopes model (its site the counted function, named as
//! its frames are and placed in its file), nested in the timed call open on the same thread
//! when it started, so the Scopes view, `prof report --scopes` and the timeline show them; and
//! each sample is put in the innermost call open on its thread.

use prof_capture::timed_calls::CallTimer;
use prof_session::session::{CountedFunction, SessionBuilder, SiteKind, Span, SpanIdx, ThreadIdx};
use std::cmp::Reverse;
use std::collections::HashMap;

/// One thread's spans, in the order they started.
#[derive(Default)]
struct ThreadSpans {
    /// Start and end (`CLOCK_MONOTONIC`), the span, and the index here of its parent.
    spans: Vec<(u64, u64, SpanIdx, Option<usize>)>,
    /// The spans open at the last one added, outermost first (indices here).
    open: Vec<usize>,
}

/// The spans added, by thread, to find the call a sample was taken in.
#[derive(Default)]
pub(super) struct CallSpans {
    threads: HashMap<u32, ThreadSpans>,
}

impl CallSpans {
    /// The innermost span open on thread `tid` at `time` (`CLOCK_MONOTONIC`).
    pub(super) fn innermost(&self, tid: u32, time: u64) -> Option<SpanIdx> {
        let thread = self.threads.get(&tid)?;
        let started = thread.spans.partition_point(|s| s.0 <= time);
        // The last span started by then holds `time`, or one of its enclosing spans does, or
        // none does (the spans of a thread nest).
        let mut at = started.checked_sub(1);
        while let Some(i) = at {
            let (_, end, span, parent) = thread.spans[i];
            if end >= time {
                return Some(span);
            }
            at = parent;
        }
        None
    }
}

/// Adds the calls `timer` kept as spans of `builder`, a site per function of `counted`, with
/// times since `first`; `thread_of` gives a thread's index in the session.
pub(super) fn add_spans(
    builder: &mut SessionBuilder,
    timer: &CallTimer,
    counted: &[CountedFunction],
    first: u64,
    thread_of: &mut impl FnMut(&mut SessionBuilder, u32) -> ThreadIdx,
) -> CallSpans {
    let sites: Vec<_> = counted
        .iter()
        .map(|c| builder.intern_site(&c.name, Some(&c.module), None, SiteKind::Scope))
        .collect();
    let mut spans = timer.spans().to_vec();
    // An enclosing call first: it starts no later, and ends no earlier.
    spans.sort_by_key(|s| (s.start, Reverse(s.end)));
    let mut out = CallSpans::default();
    for call in spans {
        let Some(&site) = sites.get(call.function as usize) else {
            continue;
        };
        let thread = thread_of(builder, call.tid);
        let spans = out.threads.entry(call.tid).or_default();
        while let Some(&top) = spans.open.last() {
            let (start, end, _, _) = spans.spans[top];
            if start <= call.start && call.end <= end {
                break;
            }
            spans.open.pop();
        }
        let parent = spans.open.last().copied();
        let idx = builder.push_span(Span {
            site,
            thread,
            start_ns: call.start.saturating_sub(first),
            end_ns: call.end.saturating_sub(first),
            parent: parent.map(|p| spans.spans[p].2),
            fields: Vec::new(),
        });
        spans.spans.push((call.start, call.end, idx, parent));
        spans.open.push(spans.spans.len() - 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_become_nested_spans_and_a_sample_lands_in_the_innermost_open_one() {
        let mut timer = CallTimer::new(2, 100);
        // outer [100, 200] calls inner [110, 120] and [150, 160]; another thread's inner.
        timer.entered(1, 0, 100, None, None);
        timer.entered(1, 1, 110, None, None);
        timer.returned(1, 1, 120, None);
        timer.entered(1, 1, 150, None, None);
        timer.returned(1, 1, 160, None);
        timer.returned(1, 0, 200, None);
        timer.entered(2, 1, 130, None, None);
        timer.returned(2, 1, 140, None);
        let counted: Vec<CountedFunction> = ["outer", "inner"]
            .iter()
            .map(|name| CountedFunction {
                name: (*name).into(),
                module: "/bin/app".into(),
                ..CountedFunction::default()
            })
            .collect();
        let mut builder = SessionBuilder::default();
        let mut threads = HashMap::new();
        let mut thread_of = |b: &mut SessionBuilder, tid: u32| {
            *threads
                .entry(tid)
                .or_insert_with(|| b.thread(u64::from(tid), ""))
        };
        let spans = add_spans(&mut builder, &timer, &counted, 100, &mut thread_of);
        let session = builder.finish();
        let scopes = &session.scopes;
        assert_eq!(scopes.spans.len(), 4);
        let described: Vec<(&str, u64, u64, Option<&str>)> = scopes
            .spans
            .iter()
            .map(|s| {
                (
                    session.str(scopes.site(s.site).name),
                    s.start_ns,
                    s.end_ns,
                    s.parent
                        .map(|p| session.str(scopes.site(scopes.span(p).site).name)),
                )
            })
            .collect();
        assert_eq!(
            described,
            [
                ("outer", 0, 100, None),
                ("inner", 10, 20, Some("outer")),
                ("inner", 30, 40, None),
                ("inner", 50, 60, Some("outer")),
            ]
        );
        let name = |span: Option<SpanIdx>| {
            span.map(|s| {
                (
                    session.str(scopes.site(scopes.span(s).site).name),
                    scopes.span(s).start_ns,
                )
            })
        };
        assert_eq!(name(spans.innermost(1, 115)), Some(("inner", 10)));
        assert_eq!(name(spans.innermost(1, 135)), Some(("outer", 0)));
        assert_eq!(name(spans.innermost(1, 155)), Some(("inner", 50)));
        assert_eq!(name(spans.innermost(2, 135)), Some(("inner", 30)));
        assert_eq!(spans.innermost(1, 99), None);
        assert_eq!(spans.innermost(1, 250), None);
        assert_eq!(spans.innermost(3, 150), None);
    }
}
