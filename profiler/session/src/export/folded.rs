//! Folded stacks: `root;...;leaf weight`, one line per distinct stack, the input format of
//! flamegraph.pl, inferno and speedscope.

use crate::aggregate::{CallTree, DiffTree, Filter, NodeId};
use crate::error::{Error, Result};
use crate::session::Session;
use std::io::Write;

/// Writes every sample of `session` as folded stacks (stacks merged by function name, weights in
/// the session's unit).
pub fn write_folded(session: &Session, out: impl Write) -> Result<()> {
    let tree = CallTree::new(session, &Filter::all());
    let lines = Lines::of(&tree, session).map_err(Error::Write)?;
    // The lines carry their weights: the tree (32 bytes a node) is not kept while they are
    // sorted and written.
    drop(tree);
    lines.write(out).map_err(Error::Write)
}

/// Writes a (possibly filtered or transformed) call tree as folded stacks: one line per node
/// with self weight, sorted by the bytes of the stack as `stackcollapse-perf.pl` and inferno sort
/// theirs. A `;` inside a function name becomes `:` and line breaks become spaces, so every line
/// parses back to the same frames; stacks that read the same after that are one line.
pub fn write_folded_tree(tree: &CallTree, session: &Session, out: impl Write) -> Result<()> {
    Lines::of(tree, session)
        .and_then(|lines| lines.write(out))
        .map_err(Error::Write)
}

/// Bits of a line's length in its place (the rest, 36 bits, are its start: 64 GiB of text).
const LEN_BITS: u32 = 28;

/// The most bytes of names one line's stack may take (256 MiB).
const MAX_LINE: usize = (1 << LEN_BITS) - 1;

/// A tree's folded lines: every stack's text in one buffer (one allocation rather than one per
/// line, so a million distinct stacks stay small) and each line's place in it and weight, 16
/// bytes a line.
struct Lines {
    text: String,
    /// Each line's start in `text` (the high 36 bits) and length (the low [`LEN_BITS`]), and
    /// its weight.
    lines: Vec<(u64, u64)>,
}

impl Lines {
    /// The lines of every node of `tree` with self weight, in depth-first order.
    fn of(tree: &CallTree, session: &Session) -> std::io::Result<Lines> {
        let mut text = String::new();
        let mut lines: Vec<(u64, u64)> = Vec::new();
        // Where each name on the current path ends in `path`.
        let mut path = String::new();
        let mut ends: Vec<usize> = Vec::new();
        // Depth-first, keeping the names from the root to the current node in `path`, with one
        // entry per node on the current path (the node and its next child to visit): the nodes
        // waiting to be visited took 4 bytes each, 4 MB for a node of a million children.
        let mut on_path: Vec<(NodeId, usize)> = vec![(tree.root(), 0)];
        while let Some((parent, next)) = on_path.last_mut() {
            let Some(&node) = tree.children(*parent).get(*next) else {
                on_path.pop();
                continue;
            };
            *next += 1;
            // The root's children are at depth 0.
            let depth = on_path.len() - 1;
            ends.truncate(depth);
            path.truncate(ends.last().copied().unwrap_or(0));
            if depth > 0 {
                path.push(';');
            }
            push_clean(&mut path, tree.name(session, node));
            ends.push(path.len());
            let weight = tree.self_weight(node);
            if weight > 0 {
                if path.len() > MAX_LINE {
                    return Err(std::io::Error::other(
                        "a stack of more than 256 MiB of names",
                    ));
                }
                lines.push(((text.len() as u64) << LEN_BITS | path.len() as u64, weight));
                text.push_str(&path);
            }
            on_path.push((node, 0));
        }
        let mut folded = Lines { text, lines };
        let mut lines = std::mem::take(&mut folded.lines);
        lines.sort_unstable_by(|a, b| folded.stack(a.0).cmp(folded.stack(b.0)));
        folded.lines = lines;
        Ok(folded)
    }

    /// The stack text of the line placed at `place`.
    fn stack(&self, place: u64) -> &[u8] {
        let (start, len) = (
            (place >> LEN_BITS) as usize,
            (place & MAX_LINE as u64) as usize,
        );
        &self.text.as_bytes()[start..][..len]
    }

    /// Writes the lines, the weights of lines that read the same summed into one.
    fn write(&self, out: impl Write) -> std::io::Result<()> {
        let lines = &self.lines;
        let mut out = std::io::BufWriter::new(out);
        let mut i = 0;
        while i < lines.len() {
            let stack = self.stack(lines[i].0);
            let mut weight = lines[i].1;
            let mut j = i + 1;
            while j < lines.len() && self.stack(lines[j].0) == stack {
                weight = weight.saturating_add(lines[j].1);
                j += 1;
            }
            out.write_all(stack)?;
            writeln!(out, " {weight}")?;
            i = j;
        }
        out.flush()
    }
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
    let mut out = String::with_capacity(name.len());
    push_clean(&mut out, name);
    out
}

/// Appends `name` with `;` as `:` and line breaks as spaces.
fn push_clean(out: &mut String, name: &str) {
    out.extend(name.chars().map(|c| match c {
        ';' => ':',
        '\n' | '\r' => ' ',
        c => c,
    }));
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

    #[test]
    fn lines_are_sorted_by_their_bytes_as_the_reference_collapsers_sort_them() {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["fn_1", "x"], t, 0, 1);
        b.push_named(&["fn_10"], t, 0, 2);
        b.push_named(&["fn_1"], t, 0, 3);
        // Two names that read the same once `;` is `:` are one line.
        b.push_named(&["a;b"], t, 0, 4);
        b.push_named(&["a:b"], t, 0, 5);
        let mut out = Vec::new();
        write_folded(&b.finish(), &mut out).unwrap();
        // Depth-first order would put `fn_1;x` before `fn_10` (`0` sorts before `;`).
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a:b 9\nfn_1 3\nfn_10 2\nfn_1;x 1\n"
        );
    }
}
