//! Transforms that rewrite the call tree before weights are summed: focus, merge, hide, collapse.
//!
//! Each transform maps the nodes of one [`Shape`] to nodes of a new one (or to nothing, which drops
//! their samples). Because a parent always precedes its children, one pass in index order suffices,
//! so a transform costs O(nodes), not O(samples).

use super::tree::Shape;
use crate::session::{Session, StrId};
use regex::Regex;
use std::sync::Arc;

/// A test on function names, for [`Transform::Hide`]: any predicate, so the wasm viewer can match
/// with a smaller regex engine than the `regex` crate the command line uses.
#[derive(Clone)]
pub struct NameMatcher(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl NameMatcher {
    /// A matcher from any predicate.
    pub fn new(matches: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        NameMatcher(Arc::new(matches))
    }

    /// True when `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        (self.0)(name)
    }
}

impl std::fmt::Debug for NameMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NameMatcher(..)")
    }
}

/// One rewrite of the call tree. Functions are named by their name's [`StrId`] in the session.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Transform {
    /// Keep only samples that pass through the function, rooted at its outermost call: the
    /// function's callees, merged over all its call sites.
    FocusFunction(StrId),
    /// Keep only samples under this exact call path (outermost first), rooted at its last function.
    FocusSubtree(Vec<StrId>),
    /// Remove the function's frames, charging its time to its callers.
    Merge(StrId),
    /// Remove every frame whose function name matches, charging its time to its callers.
    Hide(NameMatcher),
    /// Turn direct recursion (a function calling itself) into one node.
    CollapseRecursion,
}

impl Transform {
    /// A [`Transform::Hide`] for a regular expression (`regex` crate syntax), or the reason it is
    /// not one.
    pub fn hide(pattern: &str) -> Result<Transform, regex::Error> {
        let re = Regex::new(pattern)?;
        Ok(Transform::Hide(NameMatcher::new(move |name| {
            re.is_match(name)
        })))
    }

    /// A [`Transform::Hide`] for any predicate on function names.
    pub fn hide_matching(matches: impl Fn(&str) -> bool + Send + Sync + 'static) -> Transform {
        Transform::Hide(NameMatcher::new(matches))
    }

    /// The rewritten shape and, for each node of `shape`, its node in the new one.
    pub(crate) fn apply(&self, shape: &Shape, session: &Session) -> (Shape, Vec<Option<u32>>) {
        match self {
            Transform::FocusFunction(f) => focus_function(shape, *f),
            Transform::FocusSubtree(path) => focus_subtree(shape, path),
            Transform::Merge(f) => merge(shape, |func| func == *f),
            Transform::Hide(matcher) => {
                let mut verdict: Vec<Option<bool>> = vec![None; session.strings.len()];
                merge(shape, |func| {
                    *verdict[func.index()].get_or_insert_with(|| matcher.matches(session.str(func)))
                })
            }
            Transform::CollapseRecursion => collapse_recursion(shape),
        }
    }
}

fn merge(shape: &Shape, mut drop: impl FnMut(StrId) -> bool) -> (Shape, Vec<Option<u32>>) {
    let mut out = Shape::new();
    let mut map = vec![Some(0); shape.len()];
    for i in 1..shape.len() {
        map[i] = map[shape.parent[i] as usize].map(|p| {
            if drop(shape.func[i]) {
                p
            } else {
                out.child(p, shape.func[i], shape.frame[i])
            }
        });
    }
    (out, map)
}

fn collapse_recursion(shape: &Shape) -> (Shape, Vec<Option<u32>>) {
    let mut out = Shape::new();
    let mut map = vec![Some(0); shape.len()];
    for i in 1..shape.len() {
        map[i] = map[shape.parent[i] as usize].map(|p| {
            if p != 0 && out.func[p as usize] == shape.func[i] {
                p
            } else {
                out.child(p, shape.func[i], shape.frame[i])
            }
        });
    }
    (out, map)
}

/// Where a node stands while focusing: not yet inside the focus, or at a node of the new shape.
#[derive(Clone, Copy)]
enum Place {
    Outside(usize),
    Dropped,
    Inside(u32),
}

fn finish(places: Vec<Place>) -> Vec<Option<u32>> {
    places
        .into_iter()
        .map(|p| match p {
            Place::Inside(n) => Some(n),
            Place::Outside(_) | Place::Dropped => None,
        })
        .collect()
}

fn focus_function(shape: &Shape, f: StrId) -> (Shape, Vec<Option<u32>>) {
    let mut out = Shape::new();
    let mut places = vec![Place::Outside(0); shape.len()];
    for i in 1..shape.len() {
        let (func, frame) = (shape.func[i], shape.frame[i]);
        places[i] = match places[shape.parent[i] as usize] {
            Place::Inside(p) => Place::Inside(out.child(p, func, frame)),
            _ if func == f => Place::Inside(out.child(0, func, frame)),
            other => other,
        };
    }
    (out, finish(places))
}

fn focus_subtree(shape: &Shape, path: &[StrId]) -> (Shape, Vec<Option<u32>>) {
    let mut out = Shape::new();
    let mut places = vec![Place::Outside(0); shape.len()];
    if path.is_empty() {
        // The empty path is the root: everything stays.
        return merge(shape, |_| false);
    }
    for i in 1..shape.len() {
        let (func, frame) = (shape.func[i], shape.frame[i]);
        places[i] = match places[shape.parent[i] as usize] {
            Place::Inside(p) => Place::Inside(out.child(p, func, frame)),
            Place::Dropped => Place::Dropped,
            Place::Outside(matched) if path[matched] != func => Place::Dropped,
            Place::Outside(matched) if matched + 1 == path.len() => {
                Place::Inside(out.child(0, func, frame))
            }
            Place::Outside(matched) => Place::Outside(matched + 1),
        };
    }
    (out, finish(places))
}
