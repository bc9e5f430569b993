//! From a session's recording (see [`super::recording`]) to its scope and task tables, and each
//! sample's scope and task.

use super::recording::Recording;
use super::Kind;
use prof_session::session::{
    Mark, Poll, SessionBuilder, SiteIdx, SiteKind, Span, SpanIdx, StackId, TaskIdx, ThreadIdx,
};
use std::collections::HashMap;

/// The recording's tables as added to a session: what samples need to find their scope and task.
pub(crate) struct Added<'a> {
    rec: &'a Recording,
    /// Each thread's spans' indexes in the session, by tid.
    spans: HashMap<u32, Vec<Option<SpanIdx>>>,
    tasks: HashMap<u64, TaskIdx>,
}

/// Where tasks waited after their polls: stacks by thread id and the poll's index in the
/// thread's [`super::recording::ThreadEvents::polls`].
pub(crate) type Waits = HashMap<(u32, usize), StackId>;

/// Adds `rec`'s sites, spans, marks, tasks and polls to `builder`, each poll with its stack in
/// `waits`. `thread` gives a thread's index in the session (adding it when it has no sample).
pub(crate) fn add<'a>(
    builder: &mut SessionBuilder,
    rec: &'a Recording,
    waits: &Waits,
    mut thread: impl FnMut(&mut SessionBuilder, u32) -> ThreadIdx,
) -> Added<'a> {
    builder.add_dropped_events(rec.dropped);
    let mut sites: Vec<Option<SiteIdx>> = vec![None; rec.sites.len()];
    let mut site = |builder: &mut SessionBuilder, i: u32| -> Option<SiteIdx> {
        let slot = sites.get_mut(i as usize)?;
        let s = &rec.sites[i as usize];
        Some(*slot.get_or_insert_with(|| {
            let kind = match s.kind {
                Kind::Scope => SiteKind::Scope,
                Kind::Mark => SiteKind::Mark,
            };
            builder.intern_site(s.name, Some(s.file), Some(s.line), kind)
        }))
    };
    let fields = |builder: &mut SessionBuilder, site: u32, values: &[(u16, String)]| {
        let keys = rec.sites.get(site as usize).map_or(&[][..], |s| s.keys);
        values
            .iter()
            .filter_map(|(k, v)| Some(builder.field(keys.get(usize::from(*k))?, v)))
            .collect::<Vec<_>>()
    };
    let mut spans = HashMap::new();
    let mut tasks = HashMap::new();
    for t in &rec.threads {
        if t.spans.is_empty() && t.marks.is_empty() && t.polls.is_empty() {
            continue;
        }
        let thread_idx = thread(builder, t.tid);
        // By the thread's span index; `None` for a span of a site unknown at stop (which
        // cannot be: a site is registered before its first event).
        let mut ids: Vec<Option<SpanIdx>> = Vec::with_capacity(t.spans.len());
        for s in &t.spans {
            let Some(site_idx) = site(builder, s.site) else {
                ids.push(None);
                continue;
            };
            let span = Span {
                site: site_idx,
                thread: thread_idx,
                start_ns: s.start_ns,
                end_ns: s.end_ns.unwrap_or(s.start_ns),
                parent: s.parent.and_then(|p| ids.get(p).copied().flatten()),
                fields: fields(builder, s.site, &s.fields),
            };
            ids.push(Some(builder.push_span(span)));
        }
        for m in &t.marks {
            let Some(site_idx) = site(builder, m.site) else {
                continue;
            };
            let mark = Mark {
                site: site_idx,
                thread: thread_idx,
                time_ns: m.time_ns,
                fields: fields(builder, m.site, &m.fields),
            };
            builder.push_mark(mark);
        }
        for (i, p) in t.polls.iter().enumerate() {
            let task = *tasks.entry(p.task).or_insert_with(|| {
                let name = rec.task_names.get(&p.task).map_or("", String::as_str);
                builder.intern_task(p.task, name)
            });
            builder.push_poll(Poll {
                task,
                thread: thread_idx,
                start_ns: p.start_ns,
                end_ns: p.end_ns,
                waited_at: waits.get(&(t.tid, i)).copied(),
            });
        }
        spans.insert(t.tid, ids);
    }
    Added { rec, spans, tasks }
}

impl Added<'_> {
    /// The innermost span open and the task polled on thread `tid` at `time_ns`.
    pub fn context(&self, tid: u32, time_ns: u64) -> (Option<SpanIdx>, Option<TaskIdx>) {
        let Some(t) = self.rec.thread(tid) else {
            return (None, None);
        };
        let scope = t
            .scope_at(time_ns)
            .and_then(|i| self.spans.get(&tid)?.get(i).copied().flatten());
        let task = t
            .task_at(time_ns)
            .and_then(|id| self.tasks.get(&id).copied());
        (scope, task)
    }
}
