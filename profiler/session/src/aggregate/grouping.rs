//! Group by task and group by scope: session transforms that put synthetic frames
//! above each sample's stack, as `go tool pprof -tagroot` does with labels, so that every view
//! and export shows a task's or a scope's share as the total of its frame. And the exact call
//! counts of the scope frames, from the spans table.
//!
//! Both transforms share one loop ([`regroup`]): a sample's stack is copied under a prefix of
//! synthetic frames ([`Prefixes`]), each prefix node and each copied stack made once.

use super::scope_stats::{span_kept, thread_mask};
use super::tree::{CallTree, NodeId};
use super::Filter;
use crate::session::{Frame, FrameId, Session, SpanIdx, StackId, StackNode, StrId};
use std::collections::HashMap;

/// How the root frames of [`group_by_task`] are named: `task:` and the task's name.
pub const TASK_FRAME_PREFIX: &str = "task:";
/// The root frame [`group_by_task`] puts above the samples taken outside every task.
pub const NO_TASK_FRAME: &str = "task:(none)";
/// How the frames of [`group_by_scope`] are named: `scope:` and the scope's name.
pub const SCOPE_FRAME_PREFIX: &str = "scope:";
/// The root frame [`group_by_scope`] puts above the samples taken outside every scope.
pub const NO_SCOPE_FRAME: &str = "scope:(none)";

/// The session with each sample's stack moved under a root frame naming its task
/// (`task:NAME`, or [`NO_TASK_FRAME`] outside every poll), as `go tool pprof -tagroot task`
/// does: every view and export of the result shows each task name's share as that root's
/// total. Tasks of one name share a root. Everything else is kept. A session without tasks is
/// returned as it is: one `task:(none)` root above everything would say nothing.
pub fn group_by_task(session: &Session) -> Session {
    if session.tasks.tasks.is_empty() {
        return session.clone();
    }
    let mut frames = Prefixes::new(TASK_FRAME_PREFIX, NO_TASK_FRAME);
    regroup(session, |out, i| {
        let name = session.samples.task(i).map(|t| session.tasks.task(t).name);
        frames.node(out, None, name)
    })
}

/// The session with each sample's stack moved under the scopes open on its thread when it was
/// taken, as frames named `scope:NAME`, outermost first (the chain of spans from the sample's
/// innermost one up through [`Span::parent`](crate::session::Span::parent)); a sample outside
/// every scope goes under one root [`NO_SCOPE_FRAME`], as [`group_by_task`] does outside tasks,
/// so that every root is a scope and the share outside scopes reads as one row. A scope within
/// itself (recursion) is a frame within itself. Everything else is kept; a session without spans
/// is returned as it is. [`ScopeCalls`] counts the calls of each path of scope frames.
pub fn group_by_scope(session: &Session) -> Session {
    let scopes = &session.scopes;
    if scopes.spans.is_empty() {
        return session.clone();
    }
    let mut frames = Prefixes::new(SCOPE_FRAME_PREFIX, NO_SCOPE_FRAME);
    // Each span's prefix node, made on first use.
    let mut of_span: Vec<Option<StackId>> = vec![None; scopes.spans.len()];
    regroup(session, |out, i| {
        let Some(innermost) = session.samples.scope(i) else {
            return frames.node(out, None, None);
        };
        // The spans up to the first one with a node (or the outermost), then down making them.
        let mut chain = Vec::new();
        let mut parent = None;
        for s in scopes.ancestors(innermost) {
            if let Some(done) = of_span[s.index()] {
                parent = Some(done);
                break;
            }
            chain.push(s);
        }
        for &s in chain.iter().rev() {
            let name = scopes.site(scopes.span(s).site).name;
            let node = frames.node(out, parent, Some(name));
            of_span[s.index()] = Some(node);
            parent = Some(node);
        }
        parent.expect("a chain of spans has a first span")
    })
}

/// A copy of `session` with each sample's stack moved under the prefix node `prefix_of` makes
/// for the sample (in the copy, which it may grow).
fn regroup(
    session: &Session,
    mut prefix_of: impl FnMut(&mut Session, usize) -> StackId,
) -> Session {
    let mut out = session.clone();
    // (prefix, original stack) -> the copy of the original stack under that prefix.
    let mut moved: HashMap<(StackId, StackId), StackId> = HashMap::new();
    for i in 0..session.samples.len() {
        let prefix = prefix_of(&mut out, i);
        let stack = session.samples.stack[i];
        out.samples.stack[i] = move_under(&mut out.stacks, &mut moved, prefix, stack);
    }
    out
}

/// The synthetic frames above the stacks: one frame per name (`PREFIX` and the name, or the
/// frame for none) and one stack node per (caller, name), made on first use. Keyed with
/// [`NONE`] for no caller and no name: map types the wasm viewer already has cost it no code.
struct Prefixes {
    prefix: &'static str,
    none: &'static str,
    frames: HashMap<StrId, usize>,
    nodes: HashMap<(u32, StrId), u32>,
}

/// No caller, or no name, in the keys of [`Prefixes`] (no stack or string has this id: there
/// are fewer than 4 GiB of them).
const NONE: u32 = u32::MAX;

impl Prefixes {
    fn new(prefix: &'static str, none: &'static str) -> Self {
        Prefixes {
            prefix,
            none,
            frames: HashMap::new(),
            nodes: HashMap::new(),
        }
    }

    /// The node of the frame for `name` (a string of `out`; `None`: the frame for none) called
    /// from `parent`.
    fn node(&mut self, out: &mut Session, parent: Option<StackId>, name: Option<StrId>) -> StackId {
        let key = (parent.map_or(NONE, |p| p.0), name.unwrap_or(StrId(NONE)));
        if let Some(&node) = self.nodes.get(&key) {
            return StackId(node);
        }
        let frame = match self.frames.get(&key.1) {
            Some(&frame) => FrameId(frame as u32),
            None => {
                let text = match name {
                    Some(name) => format!("{}{}", self.prefix, out.str(name)),
                    None => self.none.to_owned(),
                };
                let text = out.strings.push(&text);
                let frame = FrameId(out.frames.len() as u32);
                out.frames.push(Frame {
                    name: text,
                    file: None,
                    line: None,
                    module: None,
                    address: None,
                    inlined: false,
                });
                self.frames.insert(key.1, frame.index());
                frame
            }
        };
        out.stacks.push(StackNode { parent, frame });
        let node = out.stacks.len() as u32 - 1;
        self.nodes.insert(key, node);
        StackId(node)
    }
}

/// The copy of `stack` (and its callers) under `root`, made on first use.
fn move_under(
    stacks: &mut Vec<StackNode>,
    moved: &mut HashMap<(StackId, StackId), StackId>,
    root: StackId,
    stack: StackId,
) -> StackId {
    // The path from `stack` up to the first node already moved (or the outermost one).
    let mut path = Vec::new();
    let mut at = Some(stack);
    let mut parent = root;
    while let Some(s) = at {
        if let Some(&done) = moved.get(&(root, s)) {
            parent = done;
            break;
        }
        path.push(s);
        at = stacks[s.index()].parent;
    }
    for &s in path.iter().rev() {
        stacks.push(StackNode {
            parent: Some(parent),
            frame: stacks[s.index()].frame,
        });
        parent = StackId(stacks.len() as u32 - 1);
        moved.insert((root, s), parent);
    }
    parent
}

/// Exact call counts for the frames of [`group_by_scope`]: per path of scope names (outermost
/// first), the spans whose own chain of enclosing scopes is that path, out of the spans a
/// filter keeps (by thread and start time, as [`scope_table`](super::scope_table) keeps them).
/// Counted from the spans table, not from samples: a call no sample fell in counts too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeCalls {
    /// Per string of the session, the scope name its `scope:NAME` frame names, or [`NONE`].
    name_of_frame: Vec<u32>,
    /// The paths as a trie: (parent path, name) -> path; path 0 is the empty one.
    path_of: HashMap<(u32, u32), u32>,
    /// Per path, the calls kept.
    calls: Vec<u64>,
    /// Per name, the calls kept on every path.
    calls_of_name: Vec<u64>,
}

impl ScopeCalls {
    /// The calls of every path of scopes in `session` among the spans `filter` keeps, for the
    /// frames of `session` (grouped by scope; its spans are the session's as loaded).
    /// O(spans + strings).
    pub fn count(session: &Session, filter: &Filter) -> Self {
        let scopes = &session.scopes;
        let mut names: HashMap<&str, u32> = HashMap::new();
        let site_name: Vec<u32> = scopes
            .sites
            .iter()
            .map(|site| {
                let next = names.len() as u32;
                *names.entry(session.str(site.name)).or_insert(next)
            })
            .collect();
        let name_of_frame = session
            .strings
            .iter()
            .map(|text| {
                text.strip_prefix(SCOPE_FRAME_PREFIX)
                    .and_then(|name| names.get(name).copied())
                    .unwrap_or(NONE)
            })
            .collect();
        let mut counts = ScopeCalls {
            name_of_frame,
            path_of: HashMap::new(),
            calls: vec![0],
            calls_of_name: vec![0; names.len()],
        };
        let threads = thread_mask(session, filter);
        let mut path_of_span: Vec<u32> = Vec::with_capacity(scopes.spans.len());
        for span in &scopes.spans {
            // A parent comes before its child (the reader checks it), so its path is known.
            let parent = span.parent.map_or(0, |p: SpanIdx| path_of_span[p.index()]);
            let name = site_name[span.site.index()];
            let next = counts.calls.len() as u32;
            let path = *counts.path_of.entry((parent, name)).or_insert(next);
            if path == next {
                counts.calls.push(0);
            }
            path_of_span.push(path);
            if span_kept(filter, span.thread, span.start_ns, threads.as_deref()) {
                counts.calls[path as usize] += 1;
                counts.calls_of_name[name as usize] += 1;
            }
        }
        counts
    }

    /// The scope name the frame named `func` (`scope:NAME`) stands for, if it is one.
    fn name(&self, func: StrId) -> Option<u32> {
        self.name_of_frame
            .get(func.index())
            .copied()
            .filter(|&n| n != NONE)
    }

    /// The calls of the scope frame `node` of a call tree of the session counted (grouped by
    /// scope): the spans whose chain of scopes is the node's path. `None` for a node that is
    /// not a scope frame under scope frames only (a function, the root, [`NO_SCOPE_FRAME`], or
    /// a scope frame a transform moved under a function) or whose path no span has. A
    /// transform that removes scope frames changes the paths: the counts are those of the path
    /// the tree shows.
    pub fn of_node(&self, tree: &CallTree, node: NodeId) -> Option<u64> {
        let mut path = Vec::new();
        let mut at = node;
        while let Some(parent) = tree.parent(at) {
            path.push(self.name(tree.func(at))?);
            at = parent;
        }
        let mut at = 0u32;
        for &name in path.iter().rev() {
            at = *self.path_of.get(&(at, name))?;
        }
        (at != 0).then(|| self.calls[at as usize])
    }

    /// The calls of the scope the frame named `func` (`scope:NAME`) stands for, on every path,
    /// for a table of functions; `None` for a function that is not a scope frame.
    pub fn of_function(&self, func: StrId) -> Option<u64> {
        Some(self.calls_of_name[self.name(func)? as usize])
    }
}
