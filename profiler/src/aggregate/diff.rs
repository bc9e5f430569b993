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
