//! The `task` and `scope` labels of pprof samples (issue 22): each sample is labelled with the
//! name of the task being polled when it was taken and, once per name, the scopes open on its
//! thread (innermost first), so `go tool pprof -tagfocus scope=NAME` keeps the samples inside
//! a scope NAME and `-tags` lists them.

use crate::session::{Session, StrId};
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
    let mut index: HashMap<Context, u32> = HashMap::from([((None, Vec::new()), 0)]);
    // The scope names of each span and its ancestors, made on first use.
    let mut names_of_span: Vec<Option<Vec<StrId>>> = vec![None; scopes.spans.len()];
    let mut of_sample = Vec::with_capacity(samples.len());
    for i in 0..samples.len() {
        let task = samples.task(i).map(|t| session.tasks.task(t).name);
        let names = match samples.scope(i) {
            None => Vec::new(),
            Some(span) => names_of_span[span.index()]
                .get_or_insert_with(|| {
                    let mut names: Vec<StrId> = Vec::new();
                    for s in scopes.ancestors(span) {
                        let name = scopes.site(scopes.span(s).site).name;
                        if !names.contains(&name) {
                            names.push(name);
                        }
                    }
                    names
                })
                .clone(),
        };
        let key = (task, names);
        let next = contexts.len() as u32;
        let id = *index.entry(key.clone()).or_insert_with(|| {
            contexts.push(key);
            next
        });
        of_sample.push(id);
    }
    (of_sample, contexts)
}
