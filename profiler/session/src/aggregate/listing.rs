//! The call tree and the function list as the rows of a table: children heaviest first, and
//! every function sorted by name, self or total, either way, optionally filtered by name.

use super::top::TopRow;
use super::tree::{CallTree, NodeId};
use crate::session::Session;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A column of the function table to sort by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Column {
    /// The function's name.
    Name,
    /// Weight of samples where the function is the leaf.
    #[default]
    #[serde(rename = "self")]
    SelfWeight,
    /// Weight of samples where the function is anywhere on the stack.
    Total,
}

/// How to order the function table: a column, and which way. The default is heaviest self
/// first, as `prof report` ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TableOrder {
    /// The column sorted by.
    pub column: Column,
    /// Largest (or last in name order) first.
    pub descending: bool,
}

impl Default for TableOrder {
    fn default() -> Self {
        TableOrder {
            column: Column::SelfWeight,
            descending: true,
        }
    }
}

impl CallTree {
    /// The callees of `node` that carry weight, heaviest total first; ties by self weight
    /// (heaviest first), then by name.
    pub fn children_by_weight(&self, session: &Session, node: NodeId) -> Vec<NodeId> {
        let mut children: Vec<NodeId> = self
            .children(node)
            .iter()
            .copied()
            .filter(|&c| self.total_weight(c) > 0 || self.total_count(c) > 0)
            .collect();
        crate::order::sort_by(&mut children, |&a, &b| {
            (self.total_weight(b), self.self_weight(b))
                .cmp(&(self.total_weight(a), self.self_weight(a)))
                .then_with(|| self.name(session, a).cmp(self.name(session, b)))
        });
        children
    }

    /// Every node that carries weight below the root (the root left out), depth first with each
    /// node's children heaviest first: the rows of a fully expanded call tree table.
    pub fn preorder_by_weight(&self, session: &Session) -> Vec<NodeId> {
        let mut order = Vec::with_capacity(self.len());
        let mut todo: Vec<NodeId> = self.children_by_weight(session, NodeId::ROOT);
        todo.reverse();
        while let Some(node) = todo.pop() {
            order.push(node);
            let children = self.children_by_weight(session, node);
            todo.extend(children.into_iter().rev());
        }
        order
    }

    /// Every function whose name `keep` accepts, with its self and total, in `order`. Ties on a
    /// weight are broken by the other weight (the same way), then by name ascending, so that
    /// descending by self or total lists the rows [`CallTree::top`] lists, in its order.
    pub fn function_table(
        &self,
        session: &Session,
        order: TableOrder,
        mut keep: impl FnMut(&str) -> bool,
    ) -> Vec<TopRow> {
        let mut rows = self.functions(session);
        rows.retain(|r| keep(&r.name));
        let weights = |r: &TopRow| match order.column {
            Column::Total => (r.total_weight, r.self_weight),
            _ => (r.self_weight, r.total_weight),
        };
        let compare = |a: &TopRow, b: &TopRow| -> Ordering {
            match (order.column, order.descending) {
                (Column::Name, false) => a.name.cmp(&b.name),
                (Column::Name, true) => b.name.cmp(&a.name),
                (_, true) => weights(b)
                    .cmp(&weights(a))
                    .then_with(|| a.name.cmp(&b.name)),
                (_, false) => weights(a)
                    .cmp(&weights(b))
                    .then_with(|| a.name.cmp(&b.name)),
            }
        };
        crate::order::sort_by(&mut rows, compare);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::folded_session;
    use super::super::{Filter, SortBy};
    use super::*;

    fn example() -> Session {
        folded_session(&[
            ("main;parse;lex", 30),
            ("main;parse", 10),
            ("main;eval;add", 40),
            ("main;eval;lex", 5),
            ("main;zzz", 40),
        ])
    }

    fn names<'s>(s: &'s Session, tree: &CallTree, nodes: &[NodeId]) -> Vec<&'s str> {
        nodes.iter().map(|&n| tree.name(s, n)).collect()
    }

    #[test]
    fn children_come_heaviest_first_with_ties_by_self_then_name() {
        let s = example();
        let tree = CallTree::new(&s, &Filter::all());
        let main = tree.children(tree.root())[0];
        // eval 45, parse 40 (self 10), zzz 40 (self 40): zzz before parse on self.
        assert_eq!(
            names(&s, &tree, &tree.children_by_weight(&s, main)),
            ["eval", "zzz", "parse"]
        );
        let order = tree.preorder_by_weight(&s);
        assert_eq!(
            names(&s, &tree, &order),
            ["main", "eval", "add", "lex", "zzz", "parse", "lex"]
        );
        assert_eq!(order.len(), tree.len() - 1);
    }

    #[test]
    fn nodes_without_weight_are_not_rows() {
        let s = example();
        let only_first = Filter::all().time_range(0, 1);
        let tree = CallTree::new(&s, &only_first);
        assert_eq!(
            names(&s, &tree, &tree.preorder_by_weight(&s)),
            ["main", "parse", "lex"]
        );
    }

    #[test]
    fn the_function_table_sorts_every_column_both_ways_and_filters() {
        let s = example();
        let tree = CallTree::new(&s, &Filter::all());
        let table = |column, descending| -> Vec<String> {
            tree.function_table(&s, TableOrder { column, descending }, |_| true)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        assert_eq!(
            table(Column::Name, false),
            ["add", "eval", "lex", "main", "parse", "zzz"]
        );
        assert_eq!(
            table(Column::Name, true),
            ["zzz", "parse", "main", "lex", "eval", "add"]
        );
        // Self: add 40, zzz 40 (totals equal, so by name), lex 35, parse 10, eval 0, main 0.
        assert_eq!(
            table(Column::SelfWeight, true),
            ["add", "zzz", "lex", "parse", "main", "eval"]
        );
        assert_eq!(
            table(Column::SelfWeight, false),
            ["eval", "main", "parse", "lex", "add", "zzz"]
        );
        assert_eq!(
            table(Column::Total, true),
            ["main", "eval", "add", "zzz", "parse", "lex"]
        );
        assert_eq!(
            table(Column::Total, false),
            ["lex", "parse", "add", "zzz", "eval", "main"]
        );
        // Descending by a weight lists what `top` lists.
        for (column, sort) in [
            (Column::SelfWeight, SortBy::SelfWeight),
            (Column::Total, SortBy::Total),
        ] {
            let top: Vec<String> = tree
                .top(&s, 100, sort)
                .into_iter()
                .map(|r| r.name)
                .collect();
            assert_eq!(table(column, true), top);
        }
        let filtered: Vec<String> = tree
            .function_table(&s, TableOrder::default(), |name| name.contains('e'))
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(filtered, ["lex", "parse", "eval"]);
    }
}
