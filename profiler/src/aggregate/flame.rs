//! Flame graph layout: the rectangles to draw, in weight units, for one root and a minimum width.

use super::tree::{CallTree, NodeId};
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
