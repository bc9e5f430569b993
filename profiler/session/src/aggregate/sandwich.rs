//! The sandwich view of one function: who calls it (callers, inverted) and what it calls (callees).
//!
//! Both are call trees whose root's only child is the function, and both count every sample that
//! passes through it once, at its outermost call, so their totals equal the function's total.

use super::shape::Shape;
use super::transform::Transform;
use super::tree::{CallTree, NodeId};
use crate::session::{FrameId, Session, StrId};

const NO_FRAME: FrameId = FrameId(u32::MAX);

impl CallTree {
    /// The tree's shape (no weights), node for node.
    fn shape(&self) -> Shape {
        let mut shape = Shape::new();
        for i in 1..self.len() {
            let node = NodeId(i as u32);
            let parent = self.parent(node).unwrap_or(NodeId::ROOT);
            shape.child(
                parent.0,
                self.func(node),
                self.frame(node).unwrap_or(NO_FRAME),
            );
        }
        shape.finish();
        shape
    }

    /// For each node, whether `func` is one of its strict ancestors.
    fn below(&self, func: StrId) -> Vec<bool> {
        let mut below = vec![false; self.len()];
        for i in 1..self.len() {
            let parent = self.parent(NodeId(i as u32)).unwrap_or(NodeId::ROOT);
            below[i] =
                below[parent.index()] || (parent != NodeId::ROOT && self.func(parent) == func);
        }
        below
    }

    /// What `func` calls: its subtrees merged over all its outermost calls.
    pub fn callees(&self, session: &Session, func: StrId) -> CallTree {
        let (shape, map) = Transform::FocusFunction(func).apply(&self.shape(), session);
        let mut self_weight = vec![0u64; shape.len()];
        let mut self_count = vec![0u64; shape.len()];
        for (i, node) in map.iter().enumerate() {
            if let Some(n) = node {
                let n = *n as usize;
                let old = NodeId(i as u32);
                self_weight[n] = self_weight[n].saturating_add(self.self_weight(old));
                self_count[n] += self.self_count(old);
            }
        }
        CallTree::from_shape(shape, self_weight, self_count, session)
    }

    /// Who calls `func`: an inverted tree from the function out to the outermost frames, each path
    /// weighted by the total of the calls it leads to.
    pub fn callers(&self, session: &Session, func: StrId) -> CallTree {
        let below = self.below(func);
        let mut shape = Shape::new();
        let mut self_weight = vec![0u64];
        let mut self_count = vec![0u64];
        for (i, &nested) in below.iter().enumerate().skip(1) {
            let node = NodeId(i as u32);
            if self.func(node) != func || nested || self.total_count(node) == 0 {
                continue;
            }
            let mut at = shape.child(0, func, self.frame(node).unwrap_or(NO_FRAME));
            let mut caller = self.parent(node).unwrap_or(NodeId::ROOT);
            while caller != NodeId::ROOT {
                at = shape.child(
                    at,
                    self.func(caller),
                    self.frame(caller).unwrap_or(NO_FRAME),
                );
                caller = self.parent(caller).unwrap_or(NodeId::ROOT);
            }
            self_weight.resize(shape.len(), 0);
            self_count.resize(shape.len(), 0);
            let at = at as usize;
            self_weight[at] = self_weight[at].saturating_add(self.total_weight(node));
            self_count[at] += self.total_count(node);
        }
        shape.finish();
        CallTree::from_shape(shape, self_weight, self_count, session)
    }
}
