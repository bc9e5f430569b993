//! Transforms that rewrite the call tree before weights are summed: focus, merge, drop, hide,
//! collapse (the Firefox Profiler's set, and pprof's `-focus`, `-ignore` and `-hide`).
//!
//! Each transform maps the nodes of one [`Shape`] to nodes of a new one (or to nothing, which drops
//! their samples). Because a parent always precedes its children, one pass in index order suffices,
//! so a transform costs O(nodes), not O(samples).
//!
//! Some transforms keep every sample (the total weight stays the same: only where it is charged
//! changes) and some drop samples (the total shrinks by exactly the weight of the dropped
//! samples); each variant of [`Transform`] says which. [`TransformSpec`](super::TransformSpec) is
//! the same set described by names and patterns, as the command line and the page hold them.

use super::shape::Shape;
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
    /// function's callees, merged over all its call sites. Drops the other samples' weight.
    FocusFunction(StrId),
    /// Keep only samples under this exact call path (outermost first), rooted at its last function.
    /// Drops the other samples' weight.
    FocusSubtree(Vec<StrId>),
    /// Remove the function's frames, charging its time to its callers. Keeps every sample.
    Merge(StrId),
    /// Remove every frame whose function name matches, charging its time to its callers
    /// (pprof's `-hide`). Keeps every sample.
    Hide(NameMatcher),
    /// Turn direct recursion (a function calling itself) into one node. Keeps every sample.
    CollapseRecursion,
    /// Drop every sample whose stack passes through the function. Drops weight: the total
    /// shrinks by the function's total.
    DropFunction(StrId),
    /// Turn each run of consecutive frames of this module (a `Frame::module`: a binary or
    /// library) into one frame named after the module; the frames it calls stay below it.
    /// Keeps every sample.
    CollapseModule(StrId),
    /// Keep only samples whose stack has a frame whose function name matches, stacks kept whole
    /// (pprof's `-focus`). Drops weight: the samples with no matching frame.
    FocusMatching(NameMatcher),
    /// Drop samples whose stack has a frame whose function name matches (pprof's `-ignore`).
    /// Drops weight: exactly what [`Transform::FocusMatching`] would keep.
    IgnoreMatching(NameMatcher),
    /// Charge the samples taken in the kernel's scheduler (a thread switched out, blocked or
    /// preempted: its frames from a [`SCHEDULER_FUNCTIONS`](super::SCHEDULER_FUNCTIONS) one
    /// down) to the user frame that entered the kernel, removing their kernel frames; the
    /// other kernel frames keep their own samples. What a wall session's views start with
    /// (see [`default_transforms`](super::default_transforms)). Keeps every sample.
    FoldScheduler,
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
        let (mut out, map) = match self {
            Transform::FocusFunction(f) => focus_function(shape, *f),
            Transform::FocusSubtree(path) => focus_subtree(shape, path),
            Transform::Merge(f) => merge(shape, |func| func == *f),
            Transform::Hide(matcher) => merge(shape, verdicts(matcher, session)),
            Transform::CollapseRecursion => collapse_recursion(shape),
            Transform::DropFunction(f) => ignore(shape, |func| func == *f),
            Transform::CollapseModule(module) => collapse_module(shape, session, *module),
            Transform::FocusMatching(matcher) => focus_matching(shape, verdicts(matcher, session)),
            Transform::IgnoreMatching(matcher) => ignore(shape, verdicts(matcher, session)),
            Transform::FoldScheduler => super::scheduler::fold(shape, session),
        };
        out.finish();
        (out, map)
    }
}

/// `matcher` on function ids, asked once per name.
fn verdicts<'a>(matcher: &'a NameMatcher, session: &'a Session) -> impl FnMut(StrId) -> bool + 'a {
    let mut verdict: Vec<Option<bool>> = vec![None; session.strings.len()];
    move |func| *verdict[func.index()].get_or_insert_with(|| matcher.matches(session.str(func)))
}

/// Drops the nodes of matching functions and everything below them.
fn ignore(shape: &Shape, mut hit: impl FnMut(StrId) -> bool) -> (Shape, Vec<Option<u32>>) {
    let mut out = Shape::new();
    let mut map = vec![Some(0); shape.len()];
    for i in 1..shape.len() {
        map[i] = match map[shape.parent[i] as usize] {
            Some(_) if hit(shape.func[i]) => None,
            Some(p) => Some(out.child(p, shape.func[i], shape.frame[i])),
            None => None,
        };
    }
    (out, map)
}

/// Keeps the samples at or below a matching node, with their whole stacks: the nodes above a
/// match stay in the shape (so the stacks keep their callers) but their own samples are dropped.
fn focus_matching(shape: &Shape, mut hit: impl FnMut(StrId) -> bool) -> (Shape, Vec<Option<u32>>) {
    let n = shape.len();
    let mut matched = vec![false; n];
    for i in 1..n {
        matched[i] = matched[shape.parent[i] as usize] || hit(shape.func[i]);
    }
    // A node is needed when it or a node below it matched: children come after their parents,
    // so one backward pass carries that up.
    let mut needed = matched.clone();
    for i in (1..n).rev() {
        if needed[i] {
            needed[shape.parent[i] as usize] = true;
        }
    }
    let mut out = Shape::new();
    let mut node = vec![0u32; n];
    let mut map = vec![None; n];
    for i in 1..n {
        if needed[i] {
            node[i] = out.child(
                node[shape.parent[i] as usize],
                shape.func[i],
                shape.frame[i],
            );
            if matched[i] {
                map[i] = Some(node[i]);
            }
        }
    }
    (out, map)
}

fn collapse_module(shape: &Shape, session: &Session, module: StrId) -> (Shape, Vec<Option<u32>>) {
    let mut out = Shape::new();
    // Whether each node of `out` stands for a run of the module's frames.
    let mut is_module = vec![false];
    let mut map = vec![Some(0); shape.len()];
    for i in 1..shape.len() {
        let (func, frame) = (shape.func[i], shape.frame[i]);
        let in_module = session.frames.get(frame.index()).and_then(|f| f.module) == Some(module);
        map[i] = map[shape.parent[i] as usize].map(|p| {
            if in_module && is_module[p as usize] {
                return p;
            }
            let (func, flag) = if in_module {
                (module, true)
            } else {
                (func, false)
            };
            let child = out.child(p, func, frame);
            if child as usize == is_module.len() {
                is_module.push(flag);
            }
            child
        });
    }
    (out, map)
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
