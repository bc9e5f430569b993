//! The difference of two profiles: both call trees merged by function-name path, each node
//! carrying its weight before and after.
//!
//! The two sessions have separate string tables, so nodes are matched by name, not by id.

use super::tree::{CallTree, NodeId};
use crate::session::Session;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One call path's weight in both profiles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackDelta {
    /// Function names, outermost first.
    pub path: Vec<String>,
    /// Self weight of the path in the first ("before") profile.
    pub before: u64,
    /// Self weight of the path in the second ("after") profile.
    pub after: u64,
}

/// Two call trees merged. Node 0 is the root; a parent comes before its children.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffTree {
    parent: Vec<u32>,
    name: Vec<u32>,
    names: Vec<String>,
    self_weight: [Vec<u64>; 2],
    total_weight: [Vec<u64>; 2],
}

struct Merger<'a> {
    tree: DiffTree,
    names: HashMap<&'a str, u32>,
    nodes: HashMap<(u32, u32), u32>,
}

impl<'a> Merger<'a> {
    fn node(&mut self, parent: u32, name: &'a str) -> u32 {
        let next_name = self.names.len() as u32;
        let name_id = *self.names.entry(name).or_insert(next_name);
        if name_id == next_name {
            self.tree.names.push(name.to_owned());
        }
        let next = self.tree.parent.len() as u32;
        let id = *self.nodes.entry((parent, name_id)).or_insert(next);
        if id == next {
            self.tree.parent.push(parent);
            self.tree.name.push(name_id);
            for side in 0..2 {
                self.tree.self_weight[side].push(0);
                self.tree.total_weight[side].push(0);
            }
        }
        id
    }

    fn add(&mut self, side: usize, session: &'a Session, tree: &CallTree) {
        let mut map = vec![0u32; tree.len()];
        for i in 1..tree.len() {
            let node = NodeId(i as u32);
            if tree.total_weight(node) == 0 {
                continue;
            }
            let parent = map[tree.parent(node).unwrap_or(NodeId::ROOT).index()];
            let merged = self.node(parent, tree.name(session, node));
            map[i] = merged;
            let weight = &mut self.tree.self_weight[side][merged as usize];
            *weight = weight.saturating_add(tree.self_weight(node));
        }
    }
}

impl DiffTree {
    /// Merges the call trees of a `before` and an `after` profile.
    pub fn new(before: (&Session, &CallTree), after: (&Session, &CallTree)) -> Self {
        let mut merger = Merger {
            tree: DiffTree::default(),
            names: HashMap::new(),
            nodes: HashMap::new(),
        };
        merger.node(0, "");
        merger.tree.parent[0] = 0;
        merger.add(0, before.0, before.1);
        merger.add(1, after.0, after.1);
        let mut tree = merger.tree;
        tree.sum_totals();
        tree
    }

    /// Totals from the self weights: a node's own plus its descendants'.
    fn sum_totals(&mut self) {
        for side in 0..2 {
            self.total_weight[side] = self.self_weight[side].clone();
            for i in (1..self.parent.len()).rev() {
                let p = self.parent[i] as usize;
                self.total_weight[side][p] =
                    self.total_weight[side][p].saturating_add(self.total_weight[side][i]);
            }
        }
    }

    /// The tree with the before profile scaled to the after profile's total (each self weight
    /// rounded to the nearest unit), so both sides are shares of their own totals and a longer
    /// recording does not read as growth everywhere. Unchanged when either total is 0.
    pub fn normalized(mut self) -> Self {
        let (before, after) = self.total_weight(0);
        if before == 0 || after == 0 {
            return self;
        }
        let (before, after) = (u128::from(before), u128::from(after));
        for w in &mut self.self_weight[0] {
            // At most `after`, as every self weight is at most the before total.
            *w = ((u128::from(*w) * after + before / 2) / before) as u64;
        }
        self.sum_totals();
        self
    }

    /// The number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when neither profile has any weight.
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    /// The function name of node `i` ("" for the root, 0).
    pub fn name(&self, i: usize) -> &str {
        &self.names[self.name[i] as usize]
    }

    /// The parent of node `i` (`None` for the root).
    pub fn parent(&self, i: usize) -> Option<usize> {
        (i != 0).then(|| self.parent[i] as usize)
    }

    /// Self weight of node `i` before and after.
    pub fn self_weight(&self, i: usize) -> (u64, u64) {
        (self.self_weight[0][i], self.self_weight[1][i])
    }

    /// Total weight of node `i` before and after.
    pub fn total_weight(&self, i: usize) -> (u64, u64) {
        (self.total_weight[0][i], self.total_weight[1][i])
    }

    /// Every call path with self weight in either profile, with both weights, in node order.
    pub fn stacks(&self) -> Vec<StackDelta> {
        (1..self.len())
            .filter(|&i| self.self_weight(i) != (0, 0))
            .map(|i| {
                let mut path = Vec::new();
                let mut at = Some(i);
                while let Some(n) = at.filter(|&n| n != 0) {
                    path.push(self.name(n).to_owned());
                    at = self.parent(n);
                }
                path.reverse();
                let (before, after) = self.self_weight(i);
                StackDelta {
                    path,
                    before,
                    after,
                }
            })
            .collect()
    }
}

/// The colour of a frame in a differential flame graph, as `[r, g, b]`: red when its weight grew
/// (`change > 0`), blue when it shrank, near-white when unchanged, the deeper the larger
/// `|change|` is against `max`, the largest change of any frame (at least 1). The scale of
/// `prof convert --to svg --diff` (inferno's differential colours), so the page and the SVG
/// agree on every frame.
pub fn diff_color(change: i128, max: u128) -> [u8; 3] {
    let max = max.max(1);
    let size = change.unsigned_abs().min(max);
    // 100 for the largest change, 250 for none.
    let c = (100 + 150 * (max - size) / max) as u8;
    match change.signum() {
        0 => [250, 250, 250],
        1 => [255, c, c],
        _ => [c, c, 255],
    }
}

/// How a share changed, in points of each side's total, as `prof diff` prints it: `before` of
/// `before_whole` to `after` of `after_whole` (`+15.0%`, `0.0%`).
pub fn format_share_change(before: u64, before_whole: u64, after: u64, after_whole: u64) -> String {
    use super::format::{format_percent_change, percent};
    format_percent_change(percent(after, after_whole) - percent(before, before_whole))
}

impl DiffTree {
    /// How node `i`'s self weight changed: after minus before.
    pub fn self_change(&self, i: usize) -> i128 {
        let (before, after) = self.self_weight(i);
        i128::from(after) - i128::from(before)
    }

    /// The largest change of any node's self weight, at least 1: the scale of [`diff_color`].
    pub fn max_self_change(&self) -> u128 {
        (0..self.len())
            .map(|i| self.self_change(i).unsigned_abs())
            .max()
            .unwrap_or(0)
            .max(1)
    }

    /// The colour of node `i`'s frame in a differential flame graph ([`diff_color`] of its self
    /// weight's change): a frame's own change, as in `prof convert --to svg --diff`, where a
    /// frame with no self weight on either side is unchanged whatever its callees did.
    pub fn color(&self, i: usize) -> [u8; 3] {
        diff_color(self.self_change(i), self.max_self_change())
    }

    /// For each node of `tree` (a call tree of `session`, one side of this diff), the node of
    /// this tree with the same function-name path, if any (`None` for paths without weight
    /// here).
    pub fn nodes_of(&self, session: &Session, tree: &CallTree) -> Vec<Option<usize>> {
        let mut children: HashMap<(usize, &str), usize> = HashMap::with_capacity(self.len());
        for i in 1..self.len() {
            children.insert((self.parent[i] as usize, self.name(i)), i);
        }
        let mut out = vec![None; tree.len()];
        out[0] = Some(0);
        // A parent comes before its children in both trees.
        for i in 1..tree.len() {
            let node = NodeId(i as u32);
            let parent = tree.parent(node).unwrap_or(NodeId::ROOT).index();
            out[i] =
                out[parent].and_then(|p| children.get(&(p, tree.name(session, node))).copied());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::Filter;
    use crate::session::SessionBuilder;

    fn session(stacks: &[(&[&str], u64)]) -> Session {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        for (i, (stack, weight)) in stacks.iter().enumerate() {
            b.push_named(stack, t, i as u64, *weight);
        }
        b.finish()
    }

    #[test]
    fn colours_are_red_for_growth_blue_for_shrinkage_and_deeper_for_more() {
        assert_eq!(diff_color(0, 10), [250, 250, 250]);
        assert_eq!(diff_color(10, 10), [255, 100, 100]);
        assert_eq!(diff_color(-10, 10), [100, 100, 255]);
        assert_eq!(diff_color(5, 10), [255, 175, 175]);
        assert_eq!(diff_color(-1, 3), [200, 200, 255]);
        // Weights near u64::MAX do not overflow.
        let max = u128::from(u64::MAX);
        assert_eq!(diff_color(i128::from(u64::MAX), max), [255, 100, 100]);
    }

    #[test]
    fn a_share_change_is_in_points_of_each_total() {
        assert_eq!(format_share_change(3, 4, 9, 10), "+15.0%");
        assert_eq!(format_share_change(1, 4, 1, 10), "-15.0%");
        assert_eq!(format_share_change(1, 2, 5, 10), "0.0%");
        assert_eq!(format_share_change(0, 0, 1, 1), "+100.0%");
    }

    #[test]
    fn a_frame_is_coloured_by_its_own_change_against_the_largest() {
        // The base scaled to the new total (10): work 3 of 4 -> 8 (7.5 rounded), then 9: +1;
        // parse 1 of 4 -> 3 (2.5 rounded), then 1: -2. main has no self weight on either side.
        let base = session(&[(&["main", "work"], 3), (&["main", "parse"], 1)]);
        let new = session(&[(&["main", "work"], 9), (&["main", "parse"], 1)]);
        let trees = [&base, &new].map(|s| CallTree::new(s, &Filter::all()));
        let diff = DiffTree::new((&base, &trees[0]), (&new, &trees[1])).normalized();
        let map = diff.nodes_of(&new, &trees[1]);
        let by_name = |name: &str| {
            let node = (1..trees[1].len())
                .find(|&i| trees[1].name(&new, NodeId(i as u32)) == name)
                .unwrap();
            map[node].unwrap()
        };
        let (work, parse, main) = (by_name("work"), by_name("parse"), by_name("main"));
        assert_eq!(diff.self_weight(work), (8, 9));
        assert_eq!(diff.self_weight(parse), (3, 1));
        assert_eq!(diff.max_self_change(), 2);
        assert_eq!(diff.color(work), [255, 175, 175]);
        assert_eq!(diff.color(parse), [100, 100, 255]);
        assert_eq!(diff.color(main), [250, 250, 250]);
        assert_eq!(diff.name(main), "main");
    }

    #[test]
    fn every_path_of_either_side_has_its_diff_node() {
        let base = session(&[(&["main", "old"], 3)]);
        let new = session(&[(&["main", "fresh"], 2)]);
        let trees = [&base, &new].map(|s| CallTree::new(s, &Filter::all()));
        let diff = DiffTree::new((&base, &trees[0]), (&new, &trees[1]));
        // Every node of either side has its node in the diff, with its own name.
        for (s, t) in [(&base, &trees[0]), (&new, &trees[1])] {
            let map = diff.nodes_of(s, t);
            for (i, d) in map.iter().enumerate().skip(1) {
                let d = d.expect("every weighted path is in the diff");
                assert_eq!(diff.name(d), t.name(s, NodeId(i as u32)));
            }
        }
        let fresh = (0..diff.len()).find(|&i| diff.name(i) == "fresh").unwrap();
        assert_eq!(diff.self_weight(fresh), (0, 2));
        // +2 against the largest change, old's -3.
        assert_eq!(diff.color(fresh), [255, 150, 150]);
    }
}
