//! Graphviz dot call graph, like stackprof's dotgraph: one box per function, sized by its self
//! weight and labelled with self and total weight, and an arrow from caller to callee labelled with
//! the weight that flowed through that call.
//!
//! Function weights come from the aggregation core's [`CallTree::functions`]; an edge's weight
//! counts each sample once even when the call repeats on the stack (recursion).

use crate::aggregate::{format_weight, CallTree, Filter, NodeId, SortBy};
use crate::error::{Error, Result};
use crate::session::{Session, StrId};
use std::collections::HashMap;
use std::io::Write;

/// The default [`DotOptions::max_nodes`].
pub const DEFAULT_MAX_NODES: usize = 80;
/// The default [`DotOptions::min_edge_fraction`]: edges under 0.5 % of all weight are left out.
pub const DEFAULT_MIN_EDGE_FRACTION: f64 = 0.005;

/// What the call graph shows.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DotOptions {
    /// Keep only this many functions, the heaviest by total weight ([`DEFAULT_MAX_NODES`]).
    pub max_nodes: usize,
    /// Leave out edges lighter than this fraction of the session's weight
    /// ([`DEFAULT_MIN_EDGE_FRACTION`]).
    pub min_edge_fraction: f64,
}

impl Default for DotOptions {
    fn default() -> Self {
        DotOptions {
            max_nodes: DEFAULT_MAX_NODES,
            min_edge_fraction: DEFAULT_MIN_EDGE_FRACTION,
        }
    }
}

/// Writes the call graph of every sample of `session` as a Graphviz `digraph`.
pub fn write_dot(session: &Session, options: &DotOptions, out: impl Write) -> Result<()> {
    dot(session, options, out).map_err(Error::Write)
}

fn dot(session: &Session, options: &DotOptions, mut out: impl Write) -> std::io::Result<()> {
    let tree = CallTree::new(session, &Filter::all());
    let all = tree.total_weight(NodeId::ROOT);
    // The heaviest by total, then self weight, then name; named only once chosen (a million
    // functions' names would be a million copies).
    let functions = tree.top(session, options.max_nodes, SortBy::Total);
    let node_of: HashMap<StrId, usize> = functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.func, i))
        .collect();
    let label = |w: u64| format_weight(&session.meta.sample_type, w);
    let pct = |w: u64| {
        if all == 0 {
            0.0
        } else {
            100.0 * w as f64 / all as f64
        }
    };
    writeln!(out, "digraph profile {{")?;
    writeln!(
        out,
        "  graph [label=\"{}\\l{} total, {} samples\\l\", labelloc=t, fontsize=20];",
        escape(&super::title(session)),
        label(all),
        tree.total_count(NodeId::ROOT)
    )?;
    writeln!(out, "  node [shape=box, fontname=\"Helvetica\"];")?;
    for (i, f) in functions.iter().enumerate() {
        // Font size grows with the share of self weight, as in stackprof (8 to 56 points).
        let size = 8.0 + 48.0 * (pct(f.self_weight) / 100.0).sqrt();
        writeln!(
            out,
            "  n{i} [fontsize={size:.1}, label=\"{}\\n{} ({:.1}%)\\rof {} ({:.1}%)\\r\"];",
            escape(&f.name),
            label(f.self_weight),
            pct(f.self_weight),
            label(f.total_weight),
            pct(f.total_weight)
        )?;
    }
    let min_edge = (options.min_edge_fraction * all as f64).ceil() as u64;
    let mut edges: Vec<((usize, usize), u64)> = call_edges(&tree, |f| node_of.contains_key(&f))
        .into_iter()
        .filter(|&(_, w)| w > 0 && w >= min_edge)
        .filter_map(|((from, to), w)| Some(((*node_of.get(&from)?, *node_of.get(&to)?), w)))
        .collect();
    edges.sort();
    for ((from, to), w) in edges {
        let width = 1.0 + 4.0 * pct(w) / 100.0;
        // Graphviz wants a small integer weight (it crashes on raw nanoseconds): per mille.
        let permille = (pct(w) * 10.0).round().max(1.0) as u32;
        writeln!(
            out,
            "  n{from} -> n{to} [label=\"{}\", weight={permille}, penwidth={width:.2}];",
            label(w)
        )?;
    }
    writeln!(out, "}}")?;
    Ok(())
}

/// The weight of each (caller, callee) pair of functions that are both `shown`: the total weight
/// of the call-tree nodes where the callee is called from the caller, counting only the
/// outermost such call on a path. Pairs not shown are not tallied (there may be a million).
fn call_edges(tree: &CallTree, shown: impl Fn(StrId) -> bool) -> HashMap<(StrId, StrId), u64> {
    let mut edges: HashMap<(StrId, StrId), u64> = HashMap::new();
    let mut on_path: HashMap<(StrId, StrId), u32> = HashMap::new();
    let mut todo: Vec<(NodeId, bool)> = tree
        .children(NodeId::ROOT)
        .iter()
        .map(|&c| (c, true))
        .collect();
    while let Some((node, entering)) = todo.pop() {
        let parent = tree.parent(node).filter(|&p| p != NodeId::ROOT);
        let edge = parent
            .map(|p| (tree.func(p), tree.func(node)))
            .filter(|&(from, to)| shown(from) && shown(to));
        if !entering {
            if let Some(edge) = edge {
                *on_path.get_mut(&edge).expect("entered before") -= 1;
            }
            continue;
        }
        if let Some(edge) = edge {
            let depth = on_path.entry(edge).or_default();
            if *depth == 0 {
                *edges.entry(edge).or_default() += tree.total_weight(node);
            }
            *depth += 1;
        }
        todo.push((node, false));
        todo.extend(tree.children(node).iter().map(|&c| (c, true)));
    }
    edges
}

/// A string safe inside a double-quoted dot label.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionBuilder;

    fn dot(session: &Session) -> String {
        let mut out = Vec::new();
        write_dot(session, &DotOptions::default(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn node_id<'a>(dot: &'a str, name: &str) -> &'a str {
        let line = dot
            .lines()
            .find(|l| l.contains(&format!("label=\"{name}\\n")))
            .unwrap();
        line.trim_start().split(' ').next().unwrap()
    }

    #[test]
    fn functions_are_boxes_and_calls_are_weighted_arrows() {
        let out = dot(&crate::export::fixture::session());
        assert!(out.starts_with("digraph profile {"), "{out}");
        assert!(out.trim_end().ends_with('}'));
        let (main, work, hash) = (
            node_id(&out, "main"),
            node_id(&out, "work"),
            node_id(&out, "hash"),
        );
        let edge = |from: &str, to: &str| {
            out.lines()
                .find(|l| l.trim_start().starts_with(&format!("{from} -> {to} ")))
                .map(str::to_owned)
        };
        // work is reached with 420 (hot) + 80 (other line) = 500 ns of 550: 909 per mille.
        let main_work = edge(main, work).unwrap();
        assert!(main_work.contains("label=\"500 ns\", weight=909,"), "{out}");
        assert!(
            edge(work, hash).unwrap().contains("weight=764,"),
            "420 of 550: {out}"
        );
        assert_eq!(edge(hash, main), None);
    }

    #[test]
    fn recursion_counts_an_edge_once_per_sample() {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["main", "f", "f", "f"], t, 0, 10);
        let out = dot(&b.finish());
        let f = node_id(&out, "f");
        let line = out
            .lines()
            .find(|l| l.contains(&format!("{f} -> {f} ")))
            .unwrap();
        assert!(
            line.contains("weight=1000,"),
            "all of the weight, once: {line}"
        );
    }

    #[test]
    fn names_are_escaped_for_dot() {
        assert_eq!(escape("a \"b\" \\c"), "a \\\"b\\\" \\\\c");
    }
}
