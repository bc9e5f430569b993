//! Flame graph layout: the rectangles to draw, in weight units, for one root and a minimum width.

use super::tree::{CallTree, NodeId};
use crate::session::StrId;
use serde::{Deserialize, Serialize};

/// One rectangle of a flame graph. `start` and `width` are in weight units from the left edge of
/// the laid-out root; `depth` counts from that root (0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rect {
    /// The node drawn; for a merged rectangle, the first of the nodes it stands for.
    pub node: NodeId,
    /// Rows above the root.
    pub depth: u32,
    /// Left edge, in weight units.
    pub start: u64,
    /// Width, in weight units: the node's total weight (the sum, when merged).
    pub width: u64,
    /// How many sibling nodes this rectangle stands for: 1 for a node of its own, more when
    /// siblings each narrower than the minimum width were merged into it.
    pub merged: u32,
}

impl CallTree {
    /// Lays out the flame graph of the subtree at `root`.
    ///
    /// Children are placed left to right in name order from their parent's left edge; a node's
    /// self weight is the gap at the right. Children narrower than `min_width` are merged into one
    /// rectangle after the others (their callees are not laid out), so no weight is ever lost from
    /// the picture. Nodes with no weight are left out.
    pub fn flame(&self, root: NodeId, min_width: u64) -> Vec<Rect> {
        let mut rects = Vec::new();
        if root.index() >= self.len() || self.total_weight(root) == 0 {
            return rects;
        }
        let mut todo = vec![(root, 0u32, 0u64)];
        let mut wide = Vec::new();
        while let Some((node, depth, start)) = todo.pop() {
            rects.push(Rect {
                node,
                depth,
                start,
                width: self.total_weight(node),
                merged: 1,
            });
            let mut x = start;
            let mut narrow: Option<Rect> = None;
            wide.clear();
            for &child in self.children(node) {
                let width = self.total_weight(child);
                if width == 0 {
                    continue;
                }
                if width >= min_width {
                    wide.push((child, depth + 1, x));
                    x += width;
                } else if let Some(n) = &mut narrow {
                    n.width += width;
                    n.merged += 1;
                } else {
                    narrow = Some(Rect {
                        node: child,
                        depth: depth + 1,
                        start: 0,
                        width,
                        merged: 1,
                    });
                }
            }
            if let Some(mut n) = narrow {
                n.start = x;
                rects.push(n);
            }
            todo.extend(wide.iter().rev());
        }
        rects
    }
}

impl CallTree {
    /// The nodes a rectangle of [`CallTree::flame`] laid out with `min_width` stands for: its
    /// node, or for a merged rectangle every sibling narrower than `min_width` (heaviest first).
    pub fn rect_nodes(&self, rect: &Rect, min_width: u64) -> Vec<NodeId> {
        if rect.merged <= 1 {
            return vec![rect.node];
        }
        let Some(parent) = self.parent(rect.node) else {
            return vec![rect.node];
        };
        let mut nodes: Vec<NodeId> = self
            .children(parent)
            .iter()
            .copied()
            .filter(|&c| (1..min_width).contains(&self.total_weight(c)))
            .collect();
        nodes.sort_by_key(|&n| std::cmp::Reverse(self.total_weight(n)));
        nodes
    }

    /// Whether a rectangle holds a function `is_match` accepts: its own function, or for a
    /// merged rectangle any function in the subtrees it stands for (which are not drawn).
    pub fn rect_matches(
        &self,
        rect: &Rect,
        min_width: u64,
        mut is_match: impl FnMut(StrId) -> bool,
    ) -> bool {
        if rect.merged <= 1 {
            return is_match(self.func(rect.node));
        }
        let mut todo = self.rect_nodes(rect, min_width);
        while let Some(node) = todo.pop() {
            if is_match(self.func(node)) {
                return true;
            }
            todo.extend_from_slice(self.children(node));
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::Filter;
    use crate::session::{FrameSpec, Session, SessionBuilder};

    /// `main` calls `big` (1000) and `tiny_0..5` (1 each); `tiny_3` calls `needle` (1).
    fn session() -> Session {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let main = b.intern_frame(&FrameSpec::named("main"));
        let big = b.intern_frame(&FrameSpec::named("big"));
        let needle = b.intern_frame(&FrameSpec::named("needle"));
        let s = b.intern_stack_path(&[main, big]).unwrap();
        b.push_sample(s, t, 0, 1000);
        for i in 0..5 {
            let tiny = b.intern_frame(&FrameSpec::named(&format!("tiny_{i}")));
            let path = if i == 3 {
                vec![main, tiny, needle]
            } else {
                vec![main, tiny]
            };
            let s = b.intern_stack_path(&path).unwrap();
            b.push_sample(s, t, 0, 1 + u64::from(i == 1));
        }
        b.finish()
    }

    #[test]
    fn a_merged_rectangle_matches_what_its_hidden_subtrees_hold() {
        let session = session();
        let tree = CallTree::new(&session, &Filter::all());
        let rects = tree.flame(tree.root(), 10);
        let merged = rects.iter().find(|r| r.merged > 1).expect("a merged block");
        assert_eq!(merged.merged, 5);
        assert!(!rects
            .iter()
            .any(|r| tree.name(&session, r.node) == "needle"));
        let named = |name: &'static str| {
            let session = &session;
            move |f: StrId| session.str(f) == name
        };
        assert!(tree.rect_matches(merged, 10, named("needle")));
        assert!(tree.rect_matches(merged, 10, named("tiny_4")));
        assert!(!tree.rect_matches(merged, 10, named("big")));
        let big = rects
            .iter()
            .find(|r| tree.name(&session, r.node) == "big")
            .unwrap();
        assert!(tree.rect_matches(big, 10, named("big")));
        assert!(!tree.rect_matches(big, 10, named("needle")));
        let nodes = tree.rect_nodes(merged, 10);
        assert_eq!(nodes.len(), 5);
        assert_eq!(tree.name(&session, nodes[0]), "tiny_1", "heaviest first");
    }
}
