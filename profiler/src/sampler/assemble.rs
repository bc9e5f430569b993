//! From raw stacks to a [`Report`]: symbolize each distinct address once, intern frames and
//! stacks root first, add threads and samples, complete the metadata.

use super::collector::RawProfile;
use crate::session::{FrameId, FrameSpec, Metadata, Mode, SampleState, SessionBuilder, StackId};
use crate::symbolize::{module_name, object_index, LoadedObject, Resolver};
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
    for s in raw.samples.iter() {
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
    // Each address's frames (inlined ones first), with whether `trim` matches each. Looked up
    // for every frame of every stack: foldhash, not SipHash (see `SessionBuilder`).
    let mut frames_of: foldhash::HashMap<(u64, bool), Vec<(FrameId, bool)>> =
        foldhash::HashMap::default();
    // Module names by object index: each is worked out once, not once per address.
    let mut modules: HashMap<Option<usize>, Option<String>> = HashMap::new();
    let mut stack_ids = Vec::with_capacity(stacks.len());
    // The previous stack's walk, root first.
    let mut levels: Vec<Level> = Vec::new();
    for stack in stacks {
        // Leaf first in the raw stack; the session wants root first. Cut at the root end when
        // deeper than max_depth (the ring already bounds it).
        let n = stack.len().min(max_depth);
        let key = |depth: usize| {
            let i = n - 1 - depth;
            (stack[i], i > 0)
        };
        // A stack mostly shares its root end with the one before it (the same callers): the
        // stacks interned for that part are taken over instead of being looked up again.
        let shared = levels
            .iter()
            .take(n)
            .enumerate()
            .take_while(|(depth, level)| level.key == key(*depth))
            .count();
        levels.truncate(shared);
        let (mut node, mut cut) = levels.last().map_or((None, false), |l| (l.node, l.cut));
        for depth in shared..n {
            if cut {
                break;
            }
            let (address, is_return) = key(depth);
            let frames = frames_of.entry((address, is_return)).or_insert_with(|| {
                let module = modules
                    .entry(object_index(objects, address))
                    .or_insert_with_key(|&i| i.and_then(|i| module_name(&objects[i])))
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
            for &(frame, trimmed) in frames.iter() {
                if trimmed {
                    // The outermost frame `trim` matches ends the stack, with all it called;
                    // it stays when it is the stack's outermost frame.
                    if node.is_none() {
                        node = Some(builder.intern_stack(None, frame));
                    }
                    cut = true;
                    break;
                }
                node = Some(builder.intern_stack(node, frame));
            }
            levels.push(Level {
                key: (address, is_return),
                node,
                cut,
            });
        }
        stack_ids.push(node);
    }
    stack_ids
}

/// Where the walk of a stack stood after one of its addresses (root first): the address and
/// whether it is a return address, the stack interned so far, and whether a frame that `trim`
/// matched ended it.
struct Level {
    key: (u64, bool),
    node: Option<StackId>,
    cut: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames of `stack` (leaf first) as the walk without shared prefixes made them: names
    /// root first, cut at the root end past `max_depth`, then at the outermost name `trim`
    /// matches (keeping at least one frame).
    fn expected(stack: &[u64], max_depth: usize, trim: &dyn Fn(&str) -> bool) -> Vec<String> {
        let n = stack.len().min(max_depth);
        let mut names: Vec<String> = stack[..n].iter().rev().map(|a| format!("{a:#x}")).collect();
        if let Some(outermost) = names.iter().position(|name| trim(name)) {
            names.truncate(outermost.max(1));
        }
        names
    }

    #[test]
    fn stacks_sharing_their_root_end_with_the_previous_one_are_interned_as_on_their_own() {
        // Addresses in no object: named by their hex value, one frame each.
        let stacks: Vec<Box<[u64]>> = [
            &[0x30, 0x20, 0x10][..],
            &[0x31, 0x20, 0x10],
            // The previous stack's prefix, but its leaf is not a return address.
            &[0x20, 0x10],
            &[0x10],
            &[0x40, 0x50, 0x20, 0x10],
            // Shares the part the trimmed frame cut.
            &[0x41, 0x50, 0x20, 0x10],
            &[0x42, 0x51, 0x20, 0x10],
            // Trimmed at its outermost frame: that frame stays.
            &[0x43, 0x60],
            &[],
            // Deeper than max_depth: cut at the root end.
            &[0x30, 0x21, 0x22, 0x23, 0x24, 0x25, 0x10],
            &[0x30, 0x21, 0x22, 0x23, 0x24, 0x26, 0x10],
            &[0x30, 0x20, 0x10],
        ]
        .iter()
        .map(|s| s.to_vec().into_boxed_slice())
        .collect();
        let trim = |name: &str| name == "0x50" || name == "0x60";
        let max_depth = 5;
        let mut builder = SessionBuilder::default();
        let ids = intern_stacks(&mut builder, &stacks, &[], max_depth, trim);
        let session = builder.finish();
        for (stack, id) in stacks.iter().zip(&ids) {
            let want = expected(stack, max_depth, &trim);
            let mut got: Vec<String> = id
                .map(|id| {
                    session
                        .stack_frames(id)
                        .map(|f| session.frame_name(f).to_owned())
                        .collect()
                })
                .unwrap_or_default();
            got.reverse();
            assert_eq!(got, want, "stack {stack:x?}");
        }
        assert_eq!(ids[0], ids[ids.len() - 1], "one stack, one id");
        assert_ne!(ids[0], ids[1]);
        assert_eq!(ids[4], ids[5], "both cut at the same frame");
        // Each distinct (parent, frame) node once.
        let mut nodes: Vec<_> = session.stacks.iter().map(|s| (s.parent, s.frame)).collect();
        let all = nodes.len();
        nodes.sort();
        nodes.dedup();
        assert_eq!(nodes.len(), all);
    }
}
