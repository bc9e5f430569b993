//! The inverted call tree ("who spends it"): its roots are the functions that have self weight,
//! and below each one its callers, then their callers, out to the outermost frames.

use super::shape::Shape;
use super::tree::{CallTree, NodeId};
use crate::session::{FrameId, Session};

const NO_FRAME: FrameId = FrameId(u32::MAX);

impl CallTree {
    /// The tree turned upside down: every stack read from its leaf outwards. A root is a
    /// function with self weight, and its total is that weight summed over all its call sites;
    /// a node below it is a caller, weighted by the part of the root's self weight spent when
    /// called through it. The roots' totals add up to this tree's total.
    ///
    /// The result's stored self weights sit at the outermost frames (where each read stack
    /// ends); what a table shows as a node's self weight is [`CallTree::inverted_self_weight`].
    pub fn inverted(&self, session: &Session) -> CallTree {
        let mut shape = Shape::new();
        let mut self_weight = vec![0u64];
        let mut self_count = vec![0u64];
        for i in 1..self.len() {
            let leaf = NodeId(i as u32);
            let (weight, count) = (self.self_weight(leaf), self.self_count(leaf));
            if weight == 0 && count == 0 {
                continue;
            }
            let mut at = 0u32;
            let mut node = leaf;
            while node != NodeId::ROOT {
                at = shape.child(at, self.func(node), self.frame(node).unwrap_or(NO_FRAME));
                node = self.parent(node).unwrap_or(NodeId::ROOT);
            }
            self_weight.resize(shape.len(), 0);
            self_count.resize(shape.len(), 0);
            let at = at as usize;
            self_weight[at] = self_weight[at].saturating_add(weight);
            self_count[at] += count;
        }
        shape.finish();
        CallTree::from_shape(shape, self_weight, self_count, session)
    }

    /// In a tree made by [`CallTree::inverted`], the self weight a table shows for `node`: a
    /// root's total (its function's self weight, spent in the function itself), and nothing for
    /// the callers below it, which spend that weight only through their callees.
    pub fn inverted_self_weight(&self, node: NodeId) -> u64 {
        if self.parent(node) == Some(NodeId::ROOT) {
            self.total_weight(node)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{folded_session, func};
    use super::super::Filter;
    use super::*;

    fn example() -> Session {
        folded_session(&[
            ("main;parse;lex", 30),
            ("main;parse", 10),
            ("main;eval;eval;eval;add", 40),
            ("main;eval;lex", 5),
            ("worker;lex", 15),
        ])
    }

    #[test]
    fn inverted_roots_are_the_functions_self_weights_and_sum_to_the_total() {
        let s = example();
        let tree = CallTree::new(&s, &Filter::all());
        let inverted = tree.inverted(&s);
        let roots = inverted.children(inverted.root());
        let sum: u64 = roots.iter().map(|&r| inverted.total_weight(r)).sum();
        assert_eq!(sum, tree.total_weight(tree.root()));
        assert_eq!(inverted.total_weight(inverted.root()), 100);
        let functions = tree.functions(&s);
        let with_self: Vec<_> = functions.iter().filter(|r| r.self_weight > 0).collect();
        assert_eq!(roots.len(), with_self.len());
        for row in with_self {
            let root = roots
                .iter()
                .find(|&&r| inverted.func(r) == row.func)
                .expect("every function with self weight is a root");
            assert_eq!(
                inverted.total_weight(*root),
                row.self_weight,
                "{}",
                row.name
            );
            assert_eq!(inverted.inverted_self_weight(*root), row.self_weight);
        }
    }

    #[test]
    fn inverted_children_are_callers_weighted_by_the_self_weight_they_lead_to() {
        let s = example();
        let tree = CallTree::new(&s, &Filter::all());
        let inverted = tree.inverted(&s);
        let lex = inverted
            .children(inverted.root())
            .iter()
            .copied()
            .find(|&r| inverted.func(r) == func(&s, "lex"))
            .unwrap();
        assert_eq!(inverted.total_weight(lex), 50);
        let callers: Vec<(&str, u64)> = inverted
            .children(lex)
            .iter()
            .map(|&c| (inverted.name(&s, c), inverted.total_weight(c)))
            .collect();
        // Children are in name order in the tree itself.
        assert_eq!(callers, [("eval", 5), ("parse", 30), ("worker", 15)]);
        let parse = inverted.children(lex)[1];
        assert_eq!(inverted.inverted_self_weight(parse), 0);
        let main = inverted.children(parse)[0];
        assert_eq!(inverted.name(&s, main), "main");
        assert_eq!(inverted.total_weight(main), 30);
        // Recursion is read as it is: add <- eval <- eval <- eval <- main.
        let add = inverted
            .children(inverted.root())
            .iter()
            .copied()
            .find(|&r| inverted.func(r) == func(&s, "add"))
            .unwrap();
        let names: Vec<&str> = inverted
            .path(
                inverted
                    .preorder()
                    .into_iter()
                    .rfind(|&n| {
                        inverted.self_weight(n) > 0 && inverted.path(n)[0] == inverted.func(add)
                    })
                    .unwrap(),
            )
            .into_iter()
            .map(|f| s.str(f))
            .collect();
        assert_eq!(names, ["add", "eval", "eval", "eval", "main"]);
    }

    #[test]
    fn an_empty_tree_inverts_to_an_empty_tree() {
        let s = folded_session(&[]);
        let tree = CallTree::new(&s, &Filter::all());
        let inverted = tree.inverted(&s);
        assert!(inverted.is_empty());
        assert_eq!(inverted.total_weight(inverted.root()), 0);
    }
}
