//! Weights per source line: for a whole session (`prof convert --to source`) or for the frames of
//! one function over the samples a view selects (the viewer's Source view, `prof report
//! --source`).
//!
//! A line's `total` counts each sample once if the line is anywhere among the counted frames of
//! its stack; its `self` counts the sample when the line is where the sample's time is charged:
//! the leaf frame for a whole session, the function's innermost frame when the function is the
//! leaf of the (transformed) stack for one function. A file's `total` counts each sample once if
//! the file holds any counted frame of its stack.

use super::filter::StackWeights;
use super::shape::Shape;
use super::transform::Transform;
use crate::session::{FrameId, Session, StackId, StrId};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The weights of one source file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileWeights {
    /// The file as the session names it.
    pub file: String,
    /// Weight of samples with this file anywhere among the counted frames (each sample once).
    pub total: u64,
    /// Line number → (self, total) weight.
    pub lines: BTreeMap<u32, (u64, u64)>,
}

/// Sums per file and line, one stack at a time.
#[derive(Default)]
struct Lines {
    files: HashMap<StrId, FileWeights>,
    seen_lines: HashSet<(StrId, u32)>,
    seen_files: HashSet<StrId>,
}

impl Lines {
    /// Adds `weight` for the `frames` of one stack, each with whether it is charged the self
    /// weight.
    fn add(
        &mut self,
        session: &Session,
        weight: u64,
        frames: impl Iterator<Item = (FrameId, bool)>,
    ) {
        self.seen_lines.clear();
        self.seen_files.clear();
        for (frame, is_self) in frames {
            let frame = session.frame(frame);
            let Some(file) = frame.file else { continue };
            let entry = self.files.entry(file).or_insert_with(|| FileWeights {
                file: session.str(file).to_owned(),
                ..FileWeights::default()
            });
            if self.seen_files.insert(file) {
                entry.total = entry.total.saturating_add(weight);
            }
            let Some(line) = frame.line else { continue };
            let cell = entry.lines.entry(line).or_default();
            if is_self {
                cell.0 = cell.0.saturating_add(weight);
            }
            if self.seen_lines.insert((file, line)) {
                cell.1 = cell.1.saturating_add(weight);
            }
        }
    }

    /// The files, heaviest first (then by name).
    fn finish(self) -> Vec<FileWeights> {
        let mut files: Vec<FileWeights> = self.files.into_values().collect();
        crate::order::sort_by(&mut files, |a, b| {
            b.total.cmp(&a.total).then_with(|| a.file.cmp(&b.file))
        });
        files
    }
}

/// The per-line weights of every source file over `weights` (every frame of every stack),
/// heaviest file first.
pub fn line_weights(session: &Session, weights: &StackWeights) -> Vec<FileWeights> {
    let mut lines = Lines::default();
    for (stack, &weight) in weights.weight.iter().enumerate() {
        // Stacks no kept sample ends at (a zero weight still counts as a sample).
        if weights.count[stack] == 0 {
            continue;
        }
        let frames = session.stack_frames(StackId(stack as u32));
        lines.add(
            session,
            weight,
            frames.enumerate().map(|(depth, f)| (f, depth == 0)),
        );
    }
    lines.finish()
}

/// The per-line weights of the frames of function `func` (its name's string id), over the
/// samples of `weights` that `transforms` keep and whose transformed stack still passes through
/// `func`, heaviest file first: every file the function has lines in (inlined into several
/// files, it has several). A line's self weight is the weight of the samples whose transformed
/// leaf is `func`, charged to the line of its innermost frame, so the lines' self weights add up
/// to the function's self weight in the call tree (less the samples whose frame has no line).
pub fn function_lines(
    session: &Session,
    weights: &StackWeights,
    transforms: &[Transform],
    func: StrId,
) -> Vec<FileWeights> {
    let mut lines = Lines::default();
    function_stacks(
        session,
        weights,
        transforms,
        func,
        &mut |stack, weight, _, charge_self| {
            let mut charge_self = charge_self;
            let frames = session
                .stack_frames(stack)
                .filter(|&f| session.frame(f).name == func)
                .map(|f| (f, std::mem::take(&mut charge_self)));
            lines.add(session, weight, frames);
        },
    );
    lines.finish()
}

/// Calls `visit(stack, weight, count, is_self)` for each stack of `weights` with samples that
/// `transforms` keep and whose transformed stack passes through `func`: `is_self` when `func`
/// is the transformed leaf, so that the stack's innermost frame of `func` is charged its self
/// weight. What the Source and Assembly views share (by line, by address); `dyn`, so that the
/// wasm module holds one copy of it, not one per view.
pub(crate) fn function_stacks(
    session: &Session,
    weights: &StackWeights,
    transforms: &[Transform],
    func: StrId,
    visit: &mut dyn FnMut(StackId, u64, u64, bool),
) {
    let (mut shape, mut map) = Shape::of_session(session);
    for transform in transforms {
        let (next, step) = transform.apply(&shape, session);
        for slot in &mut map {
            *slot = slot.and_then(|n| step[n as usize]);
        }
        shape = next;
    }
    // For each node of the transformed shape: whether `func` is on its path.
    let mut through = vec![false; shape.len()];
    for i in 1..shape.len() {
        through[i] = through[shape.parent[i] as usize] || shape.func[i] == func;
    }
    for (stack, &weight) in weights.weight.iter().enumerate() {
        let Some(node) = map.get(stack).copied().flatten() else {
            continue;
        };
        let node = node as usize;
        let count = weights.count[stack];
        if count == 0 || !through[node] {
            continue;
        }
        visit(
            StackId(stack as u32),
            weight,
            count,
            shape.func[node] == func,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{CallTree, Filter};
    use crate::session::{FrameSpec, SessionBuilder, ThreadIdx};

    /// `main (a.rs:1) → work (a.rs:10) → hash (b.rs:5, inlined into work)` weight 7 on thread 0,
    /// `main → work (a.rs:11)` weight 3 on thread 1, `main → work (a.rs:10) → work (a.rs:11)`
    /// (recursion) weight 2 on thread 0, `main → idle` (no file) weight 4 on thread 1.
    fn session() -> (Session, [StrId; 3]) {
        let mut b = SessionBuilder::default();
        let at = |name, file, line| FrameSpec {
            name,
            file: Some(file),
            line: Some(line),
            ..FrameSpec::default()
        };
        let main = b.intern_frame(&at("main", "a.rs", 1));
        let work10 = b.intern_frame(&at("work", "a.rs", 10));
        let work11 = b.intern_frame(&at("work", "a.rs", 11));
        let hash = b.intern_frame(&at("hash", "b.rs", 5));
        let idle = b.intern_frame(&FrameSpec::named("idle"));
        let t0 = b.thread(1, "main");
        let t1 = b.thread(2, "worker");
        let hot = b.intern_stack_path(&[main, work10, hash]).unwrap();
        let other = b.intern_stack_path(&[main, work11]).unwrap();
        let recursive = b.intern_stack_path(&[main, work10, work11]).unwrap();
        let idle = b.intern_stack_path(&[main, idle]).unwrap();
        b.push_sample(hot, t0, 0, 7);
        b.push_sample(other, t1, 10, 3);
        b.push_sample(recursive, t0, 20, 2);
        b.push_sample(idle, t1, 30, 4);
        let session = b.finish();
        let id = |name| {
            let mut names = session.frames.iter().map(|f| f.name);
            names.find(|&n| session.str(n) == name).unwrap()
        };
        let ids = [id("main"), id("work"), id("hash")];
        (session, ids)
    }

    fn all(session: &Session) -> StackWeights {
        StackWeights::compute(session, &Filter::all())
    }

    #[test]
    fn whole_session_counts_the_leaf_line_as_self_and_each_line_once() {
        let (session, _) = session();
        let files = line_weights(&session, &all(&session));
        assert_eq!(files.len(), 2);
        let a = &files[0];
        assert_eq!((a.file.as_str(), a.total), ("a.rs", 7 + 3 + 2 + 4));
        assert_eq!(a.lines[&1], (0, 16));
        assert_eq!(a.lines[&10], (0, 7 + 2));
        assert_eq!(a.lines[&11], (3 + 2, 3 + 2));
        assert_eq!(files[1].lines[&5], (7, 7));
    }

    #[test]
    fn a_function_has_lines_in_every_file_it_is_in_and_only_its_own() {
        let (session, [main, work, hash]) = session();
        let weights = all(&session);
        let work_lines = function_lines(&session, &weights, &[], work);
        assert_eq!(work_lines.len(), 1, "{work_lines:?}");
        let a = &work_lines[0];
        assert_eq!(a.total, 7 + 3 + 2);
        // Line 10: the hot stack (not self: hash is the leaf) and the outer recursive frame.
        assert_eq!(a.lines[&10], (0, 7 + 2));
        // Line 11: the leaf of two stacks; the recursive one charges its innermost frame only.
        assert_eq!(a.lines[&11], (3 + 2, 3 + 2));
        assert!(!a.lines.contains_key(&1), "main's line is not work's");
        let hash_lines = function_lines(&session, &weights, &[], hash);
        assert_eq!(hash_lines[0].file, "b.rs");
        assert_eq!(hash_lines[0].lines[&5], (7, 7));
        let main_lines = function_lines(&session, &weights, &[], main);
        assert_eq!(main_lines[0].lines[&1], (0, 16));
    }

    #[test]
    fn self_weights_add_up_to_the_call_trees_self_weight() {
        let (session, [_, work, _]) = session();
        let weights = StackWeights::compute(&session, &Filter::all().threads([ThreadIdx(0)]));
        for transforms in [vec![], vec![Transform::CollapseRecursion]] {
            let tree = CallTree::build(&session, &weights, &transforms);
            let tree_self: u64 = (0..tree.len())
                .map(|i| crate::aggregate::NodeId(i as u32))
                .filter(|&n| n != tree.root() && tree.func(n) == work)
                .map(|n| tree.self_weight(n))
                .sum();
            let lines = function_lines(&session, &weights, &transforms, work);
            let line_self: u64 = lines[0].lines.values().map(|&(s, _)| s).sum();
            assert_eq!(line_self, tree_self, "{transforms:?}");
            assert_eq!(line_self, 2, "thread 0 only: the recursive stack");
        }
    }

    #[test]
    fn transforms_move_self_weight_and_drop_samples() {
        let (session, [_, work, hash]) = session();
        let weights = all(&session);
        // Merging hash charges its time to work, at the line that called it.
        let merged = function_lines(&session, &weights, &[Transform::Merge(hash)], work);
        assert_eq!(merged[0].lines[&10], (7, 7 + 2));
        // Dropping the samples through hash leaves work's other stacks.
        let dropped = function_lines(&session, &weights, &[Transform::DropFunction(hash)], work);
        assert_eq!(dropped[0].total, 3 + 2);
        assert_eq!(dropped[0].lines[&10], (0, 2));
        // Merging work itself leaves it no frames to show.
        assert!(function_lines(&session, &weights, &[Transform::Merge(work)], work).is_empty());
    }

    #[test]
    fn the_filter_selects_the_samples() {
        let (session, [_, work, _]) = session();
        let weights = StackWeights::compute(&session, &Filter::all().time_range(10, 21));
        let lines = function_lines(&session, &weights, &[], work);
        assert_eq!(lines[0].total, 3 + 2);
        assert_eq!(lines[0].lines[&11], (5, 5));
        assert_eq!(lines[0].lines[&10], (0, 2));
        let none = StackWeights::compute(&session, &Filter::all().time_range(30, 40));
        assert!(function_lines(&session, &none, &[], work).is_empty());
    }
}
