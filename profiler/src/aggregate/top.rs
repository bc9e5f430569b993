//! Top-N functions by self or total weight.
//!
//! A function's total counts each sample once even when the function is on the stack several
//! times (recursion): only its outermost calls are summed.

use super::tree::{CallTree, NodeId};
use crate::session::{Session, StrId};
use serde::{Deserialize, Serialize};

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
        self.tally(session, |func| TopRow {
            func,
            name: session.str(func).to_owned(),
            self_weight: 0,
            total_weight: 0,
            self_count: 0,
            total_count: 0,
        })
    }

    /// The figures of every function, each in a row that `new` makes: a top-N table makes
    /// rows without names, as it needs names only for its N rows (a million functions' names
    /// would be a million copies).
    fn tally<R: Figures>(&self, session: &Session, new: impl Fn(StrId) -> R) -> Vec<R> {
        let mut slot: Vec<u32> = vec![u32::MAX; session.strings.len()];
        let mut rows: Vec<R> = Vec::new();
        let mut on_path: Vec<u32> = vec![0; session.strings.len()];
        // Depth-first walk; a node is visited on entry (Some) and left on exit (None).
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
            if slot[func.index()] == u32::MAX {
                slot[func.index()] = rows.len() as u32;
                rows.push(new(func));
            }
            let (self_weight, total_weight, self_count, total_count) =
                rows[slot[func.index()] as usize].figures();
            *self_weight += self.self_weight(node);
            *self_count += self.self_count(node);
            if on_path[func.index()] == 0 {
                *total_weight += self.total_weight(node);
                *total_count += self.total_count(node);
            }
            on_path[func.index()] += 1;
            todo.push((node, false));
            todo.extend(self.children(node).iter().map(|&c| (c, true)));
        }
        rows
    }

    /// The `n` heaviest functions by `sort`, heaviest first; ties by the other weight, then name.
    pub fn top(&self, session: &Session, n: usize, sort: SortBy) -> Vec<TopRow> {
        let mut rows = self.tally(session, |func| Weights {
            func,
            self_weight: 0,
            total_weight: 0,
            self_count: 0,
            total_count: 0,
        });
        let key = |r: &Weights| match sort {
            SortBy::SelfWeight => (r.self_weight, r.total_weight),
            SortBy::Total => (r.total_weight, r.self_weight),
        };
        // Functions have distinct names, so the order is total and needs no stable sort (whose
        // buffer is half the rows); only the `n` first are sorted.
        let order = |a: &Weights, b: &Weights| {
            key(b)
                .cmp(&key(a))
                .then_with(|| session.str(a.func).cmp(session.str(b.func)))
        };
        if n < rows.len() {
            rows.select_nth_unstable_by(n, order);
            rows.truncate(n);
        }
        rows.sort_unstable_by(order);
        rows.into_iter().map(|w| w.row(session)).collect()
    }
}

/// A [`TopRow`] without its name.
struct Weights {
    func: StrId,
    self_weight: u64,
    total_weight: u64,
    self_count: u64,
    total_count: u64,
}

/// A row of figures [`CallTree::tally`] adds to.
trait Figures {
    /// Self weight, total weight, self count, total count.
    fn figures(&mut self) -> (&mut u64, &mut u64, &mut u64, &mut u64);
}

impl Figures for TopRow {
    fn figures(&mut self) -> (&mut u64, &mut u64, &mut u64, &mut u64) {
        (
            &mut self.self_weight,
            &mut self.total_weight,
            &mut self.self_count,
            &mut self.total_count,
        )
    }
}

impl Figures for Weights {
    fn figures(&mut self) -> (&mut u64, &mut u64, &mut u64, &mut u64) {
        (
            &mut self.self_weight,
            &mut self.total_weight,
            &mut self.self_count,
            &mut self.total_count,
        )
    }
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
