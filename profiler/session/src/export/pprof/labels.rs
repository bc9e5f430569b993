//! The `task` and `scope` labels of pprof samples: each sample is labelled with the
//! name of the task being polled when it was taken and, once per name, the scopes open on its
//! thread (innermost first), so `go tool pprof -tagfocus scope=NAME` keeps the samples inside
//! a scope NAME and `-tags` lists them.

use crate::session::{Session, SpanIdx, StrId, TaskIdx};
use std::collections::HashMap;

/// What a sample's labels say beyond its thread: its task's name and its open scopes' names.
pub(super) type Context = (Option<StrId>, Vec<StrId>);

/// Each sample's context, as an index into the distinct contexts (0: no task, no scope), and
/// the contexts. Empty per-sample indices when the session has neither scopes nor tasks.
pub(super) fn sample_contexts(session: &Session) -> (Vec<u32>, Vec<Context>) {
    let samples = &session.samples;
    let mut contexts: Vec<Context> = vec![(None, Vec::new())];
    if samples.scope.is_empty() && samples.task.is_empty() {
        return (Vec::new(), contexts);
    }
    let scopes = &session.scopes;
    // Distinct contexts by content (two spans of one name are one context), looked up only the
    // first time a (task, innermost span) pair is seen: every other sample is one lookup of a
    // pair of integers.
    let mut index: HashMap<Context, u32> = HashMap::from([((None, Vec::new()), 0)]);
    let mut of_pair: foldhash::HashMap<(Option<TaskIdx>, Option<SpanIdx>), u32> =
        foldhash::HashMap::from_iter([((None, None), 0)]);
    let mut of_sample = Vec::with_capacity(samples.len());
    for i in 0..samples.len() {
        let pair = (samples.task(i), samples.scope(i));
        let id = *of_pair.entry(pair).or_insert_with(|| {
            let task = pair.0.map(|t| session.tasks.task(t).name);
            let mut names: Vec<StrId> = Vec::new();
            for s in pair.1.into_iter().flat_map(|span| scopes.ancestors(span)) {
                let name = scopes.site(scopes.span(s).site).name;
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            let next = contexts.len() as u32;
            *index.entry((task, names)).or_insert_with_key(|key| {
                contexts.push(key.clone());
                next
            })
        });
        of_sample.push(id);
    }
    (of_sample, contexts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{FrameSpec, SessionBuilder, SiteKind, Span};

    #[test]
    fn samples_of_one_task_name_and_scope_names_share_a_context() {
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let request = b.intern_site("request", None, None, SiteKind::Scope);
        let parse = b.intern_site("parse", None, None, SiteKind::Scope);
        let f = b.intern_frame(&FrameSpec::named("f"));
        let stack = b.intern_stack_path(&[f]).unwrap();
        let fetch_a = b.intern_task(1, "fetch");
        let fetch_b = b.intern_task(2, "fetch");
        let span = |b: &mut SessionBuilder, site, parent| {
            b.push_span(Span {
                site,
                thread: main,
                start_ns: 0,
                end_ns: 10,
                parent,
                fields: Vec::new(),
            })
        };
        let outer = span(&mut b, request, None);
        let inner = span(&mut b, parse, Some(outer));
        let again = span(&mut b, request, None);
        for (span, task) in [
            (Some(inner), Some(fetch_a)),
            (Some(inner), Some(fetch_a)),
            (Some(outer), Some(fetch_b)),
            (Some(again), Some(fetch_a)),
            (None, None),
            (Some(inner), Some(fetch_b)),
            (Some(inner), None),
        ] {
            b.push_sample(stack, main, 1, 1);
            b.set_last_sample_context(span, task);
        }
        let session = b.finish();
        let (of_sample, contexts) = sample_contexts(&session);
        assert_eq!(of_sample, [1, 1, 2, 2, 0, 1, 3]);
        let name = |s: StrId| session.str(s);
        let named: Vec<(Option<&str>, Vec<&str>)> = contexts
            .iter()
            .map(|(task, scopes)| (task.map(name), scopes.iter().map(|&s| name(s)).collect()))
            .collect();
        assert_eq!(
            named,
            [
                (None, vec![]),
                (Some("fetch"), vec!["parse", "request"]),
                (Some("fetch"), vec!["request"]),
                (None, vec!["parse", "request"]),
            ]
        );
    }
}
