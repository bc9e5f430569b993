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

/// The order of siblings in a flame graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlameOrder {
    /// By function name, as flamegraph.pl draws them: a function keeps its place between
    /// profiles.
    #[default]
    Name,
    /// Heaviest first ("left heavy"), ties by name: the biggest costs line up on the left.
    HeaviestFirst,
}

/// How to lay out a flame graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlameOptions {
    /// Children narrower than this (in weight units) are merged into one rectangle.
    pub min_width: u64,
    /// The order of siblings.
    pub order: FlameOrder,
    /// Only rectangles that overlap `[start, end)` (weight units from the root's left edge) are
    /// laid out, so a view zoomed into part of the graph costs only what it shows; `None` for all.
    pub window: Option<(u64, u64)>,
}

impl CallTree {
    /// Lays out the flame graph of the subtree at `root`, siblings in name order; see
    /// [`CallTree::flame_with`].
    pub fn flame(&self, root: NodeId, min_width: u64) -> Vec<Rect> {
        self.flame_with(
            root,
            &FlameOptions {
                min_width,
                ..FlameOptions::default()
            },
        )
    }

    /// Lays out the flame graph of the subtree at `root`.
    ///
    /// Children are placed left to right in `options.order` from their parent's left edge; a
    /// node's self weight is the gap at the right. Children narrower than `options.min_width` are
    /// merged into one rectangle after the others (their callees are not laid out), so no weight
    /// is ever lost from the picture. Nodes with no weight, and with a window, rectangles outside
    /// it, are left out.
    pub fn flame_with(&self, root: NodeId, options: &FlameOptions) -> Vec<Rect> {
        let min_width = options.min_width;
        let (window_start, window_end) = options.window.unwrap_or((0, u64::MAX));
        let visible = |start: u64, width: u64| start < window_end && start + width > window_start;
        let mut rects = Vec::new();
        if root.index() >= self.len() || self.total_weight(root) == 0 {
            return rects;
        }
        let mut todo = vec![(root, 0u32, 0u64)];
        let mut wide = Vec::new();
        let mut ordered: Vec<NodeId> = Vec::new();
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
            ordered.clear();
            ordered.extend_from_slice(self.children(node));
            if options.order == FlameOrder::HeaviestFirst {
                // Children are in name order already: a stable sort keeps it among equals.
                crate::order::sort_by_key(&mut ordered, |&c| {
                    std::cmp::Reverse(self.total_weight(c))
                });
            }
            for &child in &ordered {
                let width = self.total_weight(child);
                if width == 0 {
                    continue;
                }
                if width >= min_width {
                    if visible(x, width) {
                        wide.push((child, depth + 1, x));
                    }
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
                if visible(n.start, n.width) {
                    rects.push(n);
                }
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
        crate::order::sort_by_key(&mut nodes, |&n| std::cmp::Reverse(self.total_weight(n)));
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
    fn left_heavy_puts_the_heaviest_child_first_and_keeps_the_widths() {
        let session = session();
        let tree = CallTree::new(&session, &Filter::all());
        let by_name = tree.flame(tree.root(), 0);
        let heavy = tree.flame_with(
            tree.root(),
            &FlameOptions {
                order: FlameOrder::HeaviestFirst,
                ..FlameOptions::default()
            },
        );
        assert_eq!(by_name.len(), heavy.len());
        let first_child = |rects: &[Rect]| {
            let r = rects.iter().find(|r| r.depth == 2 && r.start == 0).unwrap();
            tree.name(&session, r.node).to_owned()
        };
        assert_eq!(first_child(&by_name), "big", "b before t");
        assert_eq!(first_child(&heavy), "big");
        let tiny: Vec<&str> = heavy
            .iter()
            .filter(|r| r.depth == 2)
            .map(|r| tree.name(&session, r.node))
            .collect();
        assert_eq!(
            tiny[..3],
            ["big", "tiny_1", "tiny_0"],
            "heaviest first, then by name"
        );
        let total: u64 = heavy.iter().filter(|r| r.depth == 2).map(|r| r.width).sum();
        assert_eq!(total, tree.total_weight(tree.root()));
    }

    #[test]
    fn a_window_lays_out_only_what_overlaps_it() {
        let session = session();
        let tree = CallTree::new(&session, &Filter::all());
        let all = tree.flame(tree.root(), 0);
        // big spans [0, 1000); the tiny ones follow it.
        let window = tree.flame_with(
            tree.root(),
            &FlameOptions {
                window: Some((1000, 1003)),
                ..FlameOptions::default()
            },
        );
        assert!(window.len() < all.len());
        assert!(window
            .iter()
            .all(|r| r.start < 1003 && r.start + r.width > 1000));
        let names: Vec<&str> = window.iter().map(|r| tree.name(&session, r.node)).collect();
        assert!(!names.contains(&"big"), "{names:?}");
        assert!(names.contains(&"tiny_0"), "{names:?}");
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
