//! Top-N functions by self or total weight.
//!
//! A function's total counts each sample once even when the function is on the stack several
//! times (recursion): only its outermost calls are summed.

use super::tree::{CallTree, NodeId};
use crate::order::sort_by;
use crate::session::{Session, StrId};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// How many rows a top-N table has unless asked for another count: `prof report`, `prof
/// diff` and `Display` for `Report` print this many.
pub const DEFAULT_TOP: usize = 10;

/// What to rank functions by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    /// Weight of samples where the function is the leaf.
    #[default]
    #[serde(rename = "self")]
    SelfWeight,
    /// Weight of samples where the function is anywhere on the stack.
    Total,
}

/// One function's line in a top-N table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopRow {
    /// The function's name id in the session.
    pub func: StrId,
    /// The function's name.
    pub name: String,
    /// Weight of samples where it is the leaf.
    pub self_weight: u64,
    /// Weight of samples where it is on the stack.
    pub total_weight: u64,
    /// Number of samples where it is the leaf.
    pub self_count: u64,
    /// Number of samples where it is on the stack.
    pub total_count: u64,
}

impl CallTree {
    /// Self and total weight and count of every function in the tree, in no particular order.
    pub fn functions(&self, session: &Session) -> Vec<TopRow> {
        let mut slot: Vec<u32> = vec![u32::MAX; session.strings.len()];
        let mut rows: Vec<TopRow> = Vec::new();
        self.walk(session, &mut |node, func, outermost| {
            if slot[func.index()] == u32::MAX {
                slot[func.index()] = rows.len() as u32;
                rows.push(TopRow {
                    func,
                    name: session.str(func).to_owned(),
                    self_weight: 0,
                    total_weight: 0,
                    self_count: 0,
                    total_count: 0,
                });
            }
            let row = &mut rows[slot[func.index()] as usize];
            row.self_weight += self.self_weight(node);
            row.self_count += self.self_count(node);
            if outermost {
                row.total_weight += self.total_weight(node);
                row.total_count += self.total_count(node);
            }
        });
        rows
    }

    /// Visits every node that has samples, depth first, with its function and whether it is
    /// the outermost call of that function on its path (a function's total counts only those).
    fn walk(&self, session: &Session, visit: &mut dyn FnMut(NodeId, StrId, bool)) {
        let mut on_path: Vec<u32> = vec![0; session.strings.len()];
        // Depth-first walk; a node is visited on entry (true) and left on exit (false).
        let mut todo: Vec<(NodeId, bool)> = vec![(NodeId::ROOT, true)];
        while let Some((node, entering)) = todo.pop() {
            let func = self.func(node);
            if node == NodeId::ROOT {
                todo.extend(self.children(node).iter().map(|&c| (c, true)));
                continue;
            }
            if !entering {
                on_path[func.index()] -= 1;
                continue;
            }
            if self.total_count(node) == 0 && self.total_weight(node) == 0 {
                // Nodes whose samples were all filtered out.
                continue;
            }
            visit(node, func, on_path[func.index()] == 0);
            on_path[func.index()] += 1;
            todo.push((node, false));
            todo.extend(self.children(node).iter().map(|&c| (c, true)));
        }
    }

    /// The `n` heaviest functions by `sort`, heaviest first; ties by the other weight, then name.
    ///
    /// Two walks over the tree keep it small on a million functions: the first sums
    /// each function's weights in two columns indexed by its name's id (16 bytes a string; a
    /// row of four figures per function took 40 and a slot of 4), the second counts the samples
    /// of the `n` chosen ones only.
    pub fn top(&self, session: &Session, n: usize, sort: SortBy) -> Vec<TopRow> {
        let strings = session.strings.len();
        let mut self_weight = vec![0u64; strings];
        let mut total_weight = vec![0u64; strings];
        let mut seen = vec![false; strings];
        self.walk(session, &mut |node, func, outermost| {
            let f = func.index();
            seen[f] = true;
            self_weight[f] += self.self_weight(node);
            if outermost {
                total_weight[f] += self.total_weight(node);
            }
        });
        let weights = |f: StrId| Weights {
            func: f,
            self_weight: self_weight[f.index()],
            total_weight: total_weight[f.index()],
            self_count: 0,
            total_count: 0,
        };
        let key = |r: &Weights| match sort {
            SortBy::SelfWeight => (r.self_weight, r.total_weight),
            SortBy::Total => (r.total_weight, r.self_weight),
        };
        // Functions have distinct names, so the order is total. Only the `n` first are kept: a
        // buffer of at most twice as many is sorted and cut to `n` when full, and from then on
        // a function that would come after the `n`th kept one cannot be among them. The sort is
        // `order::sort_by`, not `select_nth_unstable_by` and `sort_unstable_by`: in wasm each
        // of those was a copy of its own (22 kB with the timeline's unstable sort).
        let order = |a: &Weights, b: &Weights| {
            key(b)
                .cmp(&key(a))
                .then_with(|| session.str(a.func).cmp(session.str(b.func)))
        };
        let mut rows: Vec<Weights> = Vec::new();
        let room = n.saturating_mul(2).max(1024);
        let mut nth: Option<Weights> = None;
        for f in (0..strings).filter(|&f| seen[f]) {
            let row = weights(StrId(f as u32));
            if nth.is_some_and(|nth| order(&row, &nth) == Ordering::Greater) {
                continue;
            }
            rows.push(row);
            if rows.len() >= room && n < rows.len() {
                sort_by(&mut rows, order);
                rows.truncate(n);
                nth = rows.last().copied();
            }
        }
        sort_by(&mut rows, order);
        rows.truncate(n);
        drop((self_weight, total_weight, seen));
        let mut chosen: Vec<u32> = vec![u32::MAX; strings];
        for (i, row) in rows.iter().enumerate() {
            chosen[row.func.index()] = i as u32;
        }
        self.walk(session, &mut |node, func, outermost| {
            let Some(row) = rows.get_mut(chosen[func.index()] as usize) else {
                return;
            };
            row.self_count += self.self_count(node);
            if outermost {
                row.total_count += self.total_count(node);
            }
        });
        rows.into_iter().map(|w| w.row(session)).collect()
    }
}

/// A [`TopRow`] without its name.
#[derive(Clone, Copy)]
struct Weights {
    func: StrId,
    self_weight: u64,
    total_weight: u64,
    self_count: u64,
    total_count: u64,
}

impl Weights {
    fn row(self, session: &Session) -> TopRow {
        TopRow {
            func: self.func,
            name: session.str(self.func).to_owned(),
            self_weight: self.self_weight,
            total_weight: self.total_weight,
            self_count: self.self_count,
            total_count: self.total_count,
        }
    }
}
