//! Searching a call tree by function name: which functions match, and how much of the weight
//! runs through them.

use super::tree::{CallTree, NodeId};
use crate::session::{Session, StrId};

/// What a name search found in a [`CallTree`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchMatch {
    /// The matching functions (their name ids), each once, in id order.
    pub functions: Vec<StrId>,
    /// The weight of the samples with at least one matching function on the stack, each
    /// sample counted once however many matches its stack holds.
    pub weight: u64,
    /// The number of those samples.
    pub count: u64,
}

/// Whether `func` is marked in a highlight mask: one byte per function name id, 1 for marked
/// (what the viewer's search hands to the layouts, the timeline and the stack chart).
pub fn is_marked(mask: &[u8], func: StrId) -> bool {
    mask.get(func.index()) == Some(&1)
}

/// Whether `name` holds `part`, ASCII letters matching in either case: the Top functions
/// table's filter. Other letters match only as written (Unicode case folding would cost the wasm
/// viewer its case tables for a filter on code names, nearly all ASCII).
pub fn name_contains(name: &str, part: &str) -> bool {
    part.is_empty()
        || name
            .as_bytes()
            .windows(part.len())
            .any(|w| w.eq_ignore_ascii_case(part.as_bytes()))
}

impl CallTree {
    /// The functions whose names `matches` accepts (e.g. a regex's `is_match`), and the weight of
    /// the samples that pass through any of them. Each name is tested once.
    pub fn search(&self, session: &Session, mut matches: impl FnMut(&str) -> bool) -> SearchMatch {
        let mut is_match: Vec<Option<bool>> = vec![None; session.strings.len()];
        let mut found = SearchMatch::default();
        // (node, inside an already matching caller)
        let mut todo: Vec<(NodeId, bool)> = self
            .children(self.root())
            .iter()
            .map(|&n| (n, false))
            .collect();
        while let Some((node, inside)) = todo.pop() {
            let func = self.func(node);
            let hit = *is_match[func.index()].get_or_insert_with(|| matches(session.str(func)));
            if hit && !inside {
                found.weight += self.total_weight(node);
                found.count += self.total_count(node);
            }
            let inside = inside || hit;
            todo.extend(self.children(node).iter().map(|&c| (c, inside)));
        }
        found.functions = is_match
            .iter()
            .enumerate()
            .filter(|(_, m)| **m == Some(true))
            .map(|(i, _)| StrId(i as u32))
            .collect();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::Filter;
    use crate::session::{FrameSpec, SessionBuilder};
    use regex::Regex;

    fn session() -> Session {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        for (path, weight) in [
            (&["main", "parse", "parse"][..], 3),
            (&["main", "compute"][..], 5),
            (&["main", "parse", "lex"][..], 2),
            (&["main"][..], 1),
        ] {
            let frames: Vec<_> = path
                .iter()
                .map(|n| b.intern_frame(&FrameSpec::named(n)))
                .collect();
            let stack = b.intern_stack_path(&frames).unwrap();
            b.push_sample(stack, t, 0, weight);
        }
        b.finish()
    }

    #[test]
    fn a_name_holds_a_part_in_either_case_of_its_ascii_letters() {
        assert!(name_contains("std::io::Read", "READ"));
        assert!(name_contains("std::io::Read", "io::r"));
        assert!(name_contains("anything", ""));
        assert!(!name_contains("std::io::Read", "write"));
        assert!(!name_contains("ab", "abc"));
        // Non-ASCII letters match as written.
        assert!(name_contains("größe", "GRöß"));
        assert!(!name_contains("größe", "GRÖß"));
    }

    #[test]
    fn a_sample_counts_once_however_many_matches_its_stack_holds() {
        let s = session();
        let tree = CallTree::new(&s, &Filter::all());
        let re = Regex::new("^(parse|lex)$").unwrap();
        let found = tree.search(&s, |name| re.is_match(name));
        assert_eq!(found.weight, 5);
        assert_eq!(found.count, 2);
        let names: Vec<&str> = found.functions.iter().map(|&f| s.str(f)).collect();
        assert_eq!(names.len(), 2);
        assert!(names.contains(&"parse") && names.contains(&"lex"));
    }

    #[test]
    fn no_match_is_zero() {
        let s = session();
        let tree = CallTree::new(&s, &Filter::all());
        assert_eq!(tree.search(&s, |_| false), SearchMatch::default());
        assert_eq!(tree.search(&s, |_| true).weight, 11);
    }
}
