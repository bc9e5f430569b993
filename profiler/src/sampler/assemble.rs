//! From raw stacks to a [`Report`]: symbolize each distinct address once, intern frames and
//! stacks root first, add threads and samples, complete the metadata.

use super::collector::RawProfile;
use crate::session::{FrameId, FrameSpec, Metadata, Mode, SampleState, SessionBuilder, StackId};
use crate::symbolize::LoadedObject;
use crate::symbolize::{module_of, Resolver};
use crate::{Options, Report};
use std::collections::HashMap;

/// Builds the report. `dropped_in_handler` counts samples the handler could not store.
pub fn build(
    raw: RawProfile,
    mut meta: Metadata,
    dropped_in_handler: u64,
    options: Options,
) -> Report {
    meta.dropped_samples = dropped_in_handler + raw.dropped;
    let total_weight: u64 = raw.samples.iter().map(|s| s.raw.weight).sum();
    meta.achieved_interval_ns = if raw.samples.is_empty() {
        0
    } else {
        total_weight / raw.samples.len() as u64
    };
    let wall = meta.mode == Mode::Wall;
    let mut builder = SessionBuilder::new(meta);
    super::mappings::add_mappings(&mut builder, &raw.objects);
    let stack_ids = intern_stacks(
        &mut builder,
        &raw.stacks,
        &raw.objects,
        options.max_depth,
        |_| false,
    );
    let mut threads = HashMap::new();
    for s in &raw.samples {
        let Some(stack) = stack_ids[s.stack as usize] else {
            continue;
        };
        let tid = s.raw.tid;
        let thread = *threads.entry(tid).or_insert_with(|| {
            let name = raw.names.get(&tid).map(String::as_str).unwrap_or("");
            builder.thread(u64::from(tid), name)
        });
        // Wall mode says whether each thread was running (signalled) or waiting (unwound by
        // the collector while blocked); CPU samples are all of running threads.
        let state = wall.then_some(if s.waiting {
            SampleState::Waiting
        } else {
            SampleState::Running
        });
        builder.push_sample_full(stack, thread, s.raw.time_ns, &[s.raw.weight], 1, state);
    }
    Report::new(builder.finish())
}

/// Symbolizes raw stacks (addresses leaf first, the first the interrupted instruction, the others
/// return addresses) and interns them root first, cut at the root end past `max_depth`; each
/// distinct address is resolved once. The outermost frame whose function `trim` matches is left
/// out with every frame it called (keeping at least the outermost frame of the stack): how the
/// allocator's own frames are cut from allocation samples. `None` for an empty stack.
pub fn intern_stacks(
    builder: &mut SessionBuilder,
    stacks: &[Box<[u64]>],
    objects: &[LoadedObject],
    max_depth: usize,
    trim: impl Fn(&str) -> bool,
) -> Vec<Option<StackId>> {
    let mut resolver = Resolver::new(objects);
    // Each address's frames (inlined ones first), with whether `trim` matches each.
    let mut frames_of: HashMap<(u64, bool), Vec<(FrameId, bool)>> = HashMap::new();
    let mut modules: HashMap<u64, Option<String>> = HashMap::new();
    let mut stack_ids = Vec::with_capacity(stacks.len());
    let mut path = Vec::new();
    let mut ids = Vec::new();
    for stack in stacks {
        path.clear();
        // Leaf first in the raw stack; the session wants root first. Cut at the root end when
        // deeper than max_depth (the ring already bounds it).
        let n = stack.len().min(max_depth);
        for (i, &address) in stack[..n].iter().enumerate().rev() {
            let is_return = i > 0;
            let ids = frames_of.entry((address, is_return)).or_insert_with(|| {
                let module = modules
                    .entry(address)
                    .or_insert_with(|| module_of(objects, address))
                    .clone();
                let lookup = if is_return { address - 1 } else { address };
                resolver
                    .symbols(address, is_return)
                    .iter()
                    .map(|s| {
                        let id = builder.intern_frame(&FrameSpec {
                            name: &s.name,
                            file: s.file.as_deref(),
                            line: s.line,
                            module: module.as_deref(),
                            address: Some(lookup),
                            inlined: s.inlined,
                        });
                        (id, trim(&s.name))
                    })
                    .collect()
            });
            path.extend_from_slice(ids);
        }
        if let Some(outermost) = path.iter().position(|&(_, trimmed)| trimmed) {
            path.truncate(outermost.max(1));
        }
        ids.clear();
        ids.extend(path.iter().map(|&(f, _)| f));
        stack_ids.push(builder.intern_stack_path(&ids));
    }
    stack_ids
}
