//! From the collector's raw stacks to the sampler's [`Session`](crate::session::Session): the
//! stacks interned by the capture core's assembly, threads and samples added, the scopes and
//! the stacks where tasks waited joined in, the metadata completed.

use super::collector::RawProfile;
use crate::options::Options;
use prof_capture::assemble::{add_mappings, intern_stacks, own_process, Cut};
use prof_capture::symbolize::{AddressSpace, LoadedObject};
use prof_session::session::Session;
use prof_session::session::{Metadata, Mode, SampleState, SessionBuilder, ThreadIdx};
use std::collections::HashMap;

/// Builds the report. `dropped_in_handler` counts samples the handler could not store.
pub fn build(
    raw: RawProfile,
    mut meta: Metadata,
    dropped_in_handler: u64,
    options: Options,
    scopes: Option<crate::scope::recording::Recording>,
) -> Session {
    meta.dropped_samples = dropped_in_handler + raw.dropped;
    meta.sampling_ended = raw.sampling_ended.clone();
    let total_weight: u64 = raw.samples.iter().map(|s| s.raw.weight).sum();
    meta.achieved_interval_ns = if raw.samples.is_empty() {
        0
    } else {
        total_weight / raw.samples.len() as u64
    };
    let wall = meta.mode == Mode::Wall;
    let process = own_process(&meta);
    let mut builder = SessionBuilder::new(meta);
    builder.push_process(process);
    add_mappings(&mut builder, &raw.objects);
    let stack_ids = intern_stacks(
        &mut builder,
        &raw.stacks,
        &raw.objects,
        AddressSpace::Own,
        Cut::depth(options.max_depth),
    );
    let mut threads = Threads::new(
        &mut builder,
        &raw.names,
        scopes.as_ref(),
        &raw.objects,
        options.max_depth,
    );
    for s in raw.samples.iter() {
        let Some(stack) = stack_ids[s.stack as usize] else {
            continue;
        };
        let tid = s.raw.tid;
        let thread = threads.idx(&mut builder, tid);
        // Wall mode says whether each thread was running (signalled) or waiting (unwound by
        // the collector while blocked); CPU samples are all of running threads.
        let state = wall.then_some(if s.waiting {
            SampleState::Waiting
        } else {
            SampleState::Running
        });
        builder.push_sample_full(stack, thread, s.raw.time_ns, &[s.raw.weight], 1, state);
        threads.set_context(&mut builder, tid, s.raw.time_ns);
    }
    builder.finish()
}

/// A session's threads as samples and scopes meet them, and the scope and task of each sample.
pub(crate) struct Threads<'a> {
    /// Names by thread id, as the collector last saw them.
    names: &'a HashMap<u32, String>,
    idx: HashMap<u32, ThreadIdx>,
    scopes: Option<crate::scope::join::Added<'a>>,
}

impl<'a> Threads<'a> {
    /// Adds `scopes`' tables (sites, spans, marks, tasks, polls) to `builder`, and their
    /// threads; `names` are the collector's. The stacks where tasks waited are symbolized in
    /// `objects` and interned as samples' are, cut past `max_depth`.
    pub fn new(
        builder: &mut SessionBuilder,
        names: &'a HashMap<u32, String>,
        scopes: Option<&'a crate::scope::recording::Recording>,
        objects: &[LoadedObject],
        max_depth: usize,
    ) -> Threads<'a> {
        let mut threads = Threads {
            names,
            idx: HashMap::new(),
            scopes: None,
        };
        let added = scopes.map(|rec| {
            let waits = intern_awaits(builder, rec, objects, max_depth);
            crate::scope::join::add(builder, rec, &waits, |b, tid| threads.idx(b, tid))
        });
        threads.scopes = added;
        threads
    }

    /// Thread `tid`'s index in the session, added on first use with the name the collector saw,
    /// else the one it has now (a thread met only through its scopes), else none.
    pub fn idx(&mut self, builder: &mut SessionBuilder, tid: u32) -> ThreadIdx {
        *self.idx.entry(tid).or_insert_with(|| {
            let name = self.names.get(&tid).cloned();
            let name = name.unwrap_or_else(|| super::threads::thread_name(tid));
            builder.thread(u64::from(tid), &name)
        })
    }

    /// Gives the sample just pushed, of thread `tid` at `time_ns`, its scope and task.
    pub fn set_context(&self, builder: &mut SessionBuilder, tid: u32, time_ns: u64) {
        if let Some(added) = &self.scopes {
            let (scope, task) = added.context(tid, time_ns);
            builder.set_last_sample_context(scope, task);
        }
    }
}

/// Interns the stacks where `rec`'s tasks waited after their polls: the stack ids by thread id
/// and index in the thread's polls. Each goes from the leaf future up to the task's own: the
/// wrapper's poll and its callers are cut (the stack is kept whole when no frame names the
/// wrapper), so the session holds no stack that no poll has.
fn intern_awaits(
    builder: &mut SessionBuilder,
    rec: &crate::scope::recording::Recording,
    objects: &[LoadedObject],
    max_depth: usize,
) -> crate::scope::join::Waits {
    let mut keys = Vec::new();
    let mut stacks: Vec<Box<[u64]>> = Vec::new();
    for t in &rec.threads {
        for (i, p) in t.polls.iter().enumerate() {
            let Some(addrs) = p.waited_at.as_deref().filter(|a| !a.is_empty()) else {
                continue;
            };
            // All return addresses; the first of a stack is read as the instruction it is
            // at, so it is moved into the call that returns to it.
            let mut stack: Box<[u64]> = addrs.into();
            stack[0] = stack[0].saturating_sub(1);
            keys.push((t.tid, i));
            stacks.push(stack);
        }
    }
    if stacks.is_empty() {
        return HashMap::new();
    }
    let cut = Cut {
        root: Some(&|name: &str| name.contains(AWAIT_WRAPPER)),
        ..Cut::depth(max_depth)
    };
    let ids = intern_stacks(builder, &stacks, objects, AddressSpace::Own, cut);
    keys.into_iter()
        .zip(ids)
        .filter_map(|(key, id)| Some((key, id?)))
        .collect()
}

/// The function that polls a task's future with the waker that notes where it waits
/// ([`prof_capture::sys::poll_noting_await`]): the outermost frame of an await stack kept.
const AWAIT_WRAPPER: &str = "poll_noting_await";
