//! Folded stacks: `root;...;leaf weight`, one line per distinct stack, the input format of
//! flamegraph.pl, inferno and speedscope.

use crate::aggregate::{CallTree, DiffTree, Filter, NodeId};
use crate::session::Session;
use crate::{Error, Result};
use std::io::Write;

/// Writes every sample of `session` as folded stacks (stacks merged by function name, weights in
/// the session's unit).
pub fn write_folded(session: &Session, out: impl Write) -> Result<()> {
    write_folded_tree(&CallTree::new(session, &Filter::all()), session, out)
}

/// Writes a (possibly filtered or transformed) call tree as folded stacks: one line per node
/// with self weight, in depth-first name order. A `;` inside a function name becomes `:` and
/// line breaks become spaces, so every line parses back to the same frames.
pub fn write_folded_tree(tree: &CallTree, session: &Session, out: impl Write) -> Result<()> {
    folded_tree(tree, session, out).map_err(Error::Write)
}

fn folded_tree(tree: &CallTree, session: &Session, out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    let mut path: Vec<String> = Vec::new();
    // Depth-first, keeping the names from the root to the current node in `path`.
    let mut todo: Vec<NodeId> = tree.children(tree.root()).iter().rev().copied().collect();
    while let Some(node) = todo.pop() {
        path.truncate(tree.depth(node) as usize - 1);
        path.push(clean(tree.name(session, node)));
        if tree.self_weight(node) > 0 {
            writeln!(out, "{} {}", path.join(";"), tree.self_weight(node))?;
        }
        todo.extend(tree.children(node).iter().rev());
    }
    out.flush()?;
    Ok(())
}

/// Writes a [`DiffTree`] as differential folded stacks, `root;...;leaf before after`, the input
/// of inferno's and flamegraph.pl's differential flame graphs.
pub fn write_folded_diff(diff: &DiffTree, out: impl Write) -> Result<()> {
    folded_diff(diff, out).map_err(Error::Write)
}

fn folded_diff(diff: &DiffTree, out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    for delta in diff.stacks() {
        let path: Vec<String> = delta.path.iter().map(|n| clean(n)).collect();
        writeln!(out, "{} {} {}", path.join(";"), delta.before, delta.after)?;
    }
    out.flush()?;
    Ok(())
}

fn clean(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionBuilder;

    #[test]
    fn differential_folded_has_two_weight_columns() {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["main", "x;y"], t, 0, 3);
        let before = b.finish();
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["main"], t, 0, 2);
        let after = b.finish();
        let (tb, ta) = (
            CallTree::new(&before, &Filter::all()),
            CallTree::new(&after, &Filter::all()),
        );
        let mut out = Vec::new();
        write_folded_diff(&DiffTree::new((&before, &tb), (&after, &ta)), &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "main 0 2\nmain;x:y 3 0\n");
    }

    #[test]
    fn folded_lines_are_root_first_with_weights_and_no_stray_semicolons() {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["main", "a;b", "leaf"], t, 0, 7);
        b.push_named(&["main", "a;b", "leaf"], t, 1, 3);
        b.push_named(&["main"], t, 2, 5);
        b.push_named(&["main", "z"], t, 3, 1);
        let mut out = Vec::new();
        write_folded(&b.finish(), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "main 5\nmain;a:b;leaf 10\nmain;z 1\n"
        );
    }
}
