//! Group by scope and its call counts, on sessions built with the session builder.

use super::*;
use crate::session::{FrameSpec, Session, SessionBuilder, SiteKind, Span, SpanIdx, ThreadIdx};

/// On `main`: two `request` calls, the first with two `parse` calls in it and the second with
/// one; one `walk` within `walk` within `walk` (a recursive scope). On `worker`: one `parse` at
/// the top. A sample (weight 1 000, stack `main;work`) in each innermost span but the second
/// `parse` of the first request, one in the second `request` alone, and one outside every scope.
fn nested() -> Session {
    let mut b = SessionBuilder::default();
    let main = b.thread(1, "main");
    let worker = b.thread(2, "worker");
    let request = b.intern_site("request", None, None, SiteKind::Scope);
    let parse = b.intern_site("parse", None, None, SiteKind::Scope);
    let walk = b.intern_site("walk", None, None, SiteKind::Scope);
    let f = b.intern_frame(&FrameSpec::named("main"));
    let g = b.intern_frame(&FrameSpec::named("work"));
    let stack = b.intern_stack_path(&[f, g]).unwrap();
    let span = |b: &mut SessionBuilder, site, thread, start_ns, parent| {
        b.push_span(Span {
            site,
            thread,
            start_ns,
            end_ns: start_ns + 10_000,
            parent,
            fields: Vec::new(),
        })
    };
    let sample = |b: &mut SessionBuilder, thread, at, scope: Option<SpanIdx>| {
        b.push_sample(stack, thread, at, 1_000);
        b.set_last_sample_context(scope, None);
    };
    let first = span(&mut b, request, main, 0, None);
    let p = span(&mut b, parse, main, 1_000, Some(first));
    sample(&mut b, main, 2_000, Some(p));
    span(&mut b, parse, main, 3_000, Some(first));
    let second = span(&mut b, request, main, 20_000, None);
    sample(&mut b, main, 20_500, Some(second));
    let p = span(&mut b, parse, main, 21_000, Some(second));
    sample(&mut b, main, 22_000, Some(p));
    let w1 = span(&mut b, walk, main, 40_000, None);
    let w2 = span(&mut b, walk, main, 41_000, Some(w1));
    let w3 = span(&mut b, walk, main, 42_000, Some(w2));
    sample(&mut b, main, 43_000, Some(w3));
    let p = span(&mut b, parse, worker, 1_000, None);
    sample(&mut b, worker, 2_000, Some(p));
    sample(&mut b, main, 60_000, None);
    b.finish()
}

/// The frame names of sample `i`'s stack, outermost first.
fn frames_of(session: &Session, i: usize) -> Vec<&str> {
    let mut names: Vec<&str> = session
        .stack_frames(session.samples.stack[i])
        .map(|f| session.str(session.frame(f).name))
        .collect();
    names.reverse();
    names
}

#[test]
fn grouping_by_scope_puts_each_samples_open_scopes_above_its_stack_outermost_first() {
    let session = nested();
    let grouped = group_by_scope(&session);
    assert_eq!(
        frames_of(&grouped, 0),
        ["scope:request", "scope:parse", "main", "work"]
    );
    assert_eq!(frames_of(&grouped, 1), ["scope:request", "main", "work"]);
    assert_eq!(
        frames_of(&grouped, 3),
        ["scope:walk", "scope:walk", "scope:walk", "main", "work"]
    );
    assert_eq!(frames_of(&grouped, 4), ["scope:parse", "main", "work"]);
    // Outside every scope: one root for all of them.
    assert_eq!(frames_of(&grouped, 5), [NO_SCOPE_FRAME, "main", "work"]);
    assert_eq!(grouped.total_weight(), session.total_weight());
    assert_eq!(grouped.scopes, session.scopes);
    // One frame per name, however many paths use it.
    let scope_frames = grouped
        .frames
        .iter()
        .filter(|f| grouped.str(f.name).starts_with(SCOPE_FRAME_PREFIX))
        .count();
    assert_eq!(scope_frames, 4);
}

#[test]
fn grouping_by_scope_a_session_without_spans_changes_nothing() {
    let mut b = SessionBuilder::default();
    let main = b.thread(1, "main");
    b.push_named(&["main"], main, 0, 1_000);
    let session = b.finish();
    assert_eq!(group_by_scope(&session), session);
}

/// The session grouped by scope, its call tree, and the node at a path of names.
struct Grouped {
    session: Session,
    tree: CallTree,
}

impl Grouped {
    fn of(session: &Session) -> Self {
        let session = group_by_scope(session);
        let tree = CallTree::new(&session, &Filter::all());
        Grouped { session, tree }
    }

    fn node(&self, path: &[&str]) -> NodeId {
        let mut at = self.tree.root();
        for name in path {
            at = *self
                .tree
                .children(at)
                .iter()
                .find(|&&c| self.tree.name(&self.session, c) == *name)
                .unwrap_or_else(|| panic!("no {name} under {path:?}"));
        }
        at
    }

    /// The calls of the node at `path` among the spans `filter` keeps.
    fn calls(&self, filter: &Filter, path: &[&str]) -> Option<u64> {
        ScopeCalls::count(&self.session, filter).of_node(&self.tree, self.node(path))
    }

    /// The calls of the function of the node at `path`, on every path.
    fn function_calls(&self, filter: &Filter, path: &[&str]) -> Option<u64> {
        let func = self.tree.func(self.node(path));
        ScopeCalls::count(&self.session, filter).of_function(func)
    }
}

#[test]
fn scope_calls_count_the_spans_of_each_path_of_scopes() {
    let g = Grouped::of(&nested());
    let all = Filter::all();
    assert_eq!(g.calls(&all, &["scope:request"]), Some(2));
    // Two in the first request and one in the second, whether a sample fell in them or not.
    assert_eq!(g.calls(&all, &["scope:request", "scope:parse"]), Some(3));
    assert_eq!(g.calls(&all, &["scope:parse"]), Some(1));
    // A recursive scope: one call at each depth.
    assert_eq!(g.calls(&all, &["scope:walk"]), Some(1));
    assert_eq!(g.calls(&all, &["scope:walk", "scope:walk"]), Some(1));
    let walk3 = ["scope:walk", "scope:walk", "scope:walk"];
    assert_eq!(g.calls(&all, &walk3), Some(1));
    assert_eq!(g.tree.total_weight(g.node(&walk3)), 1_000);
    // Functions, the root and the samples outside scopes have no calls.
    assert_eq!(g.calls(&all, &["scope:request", "main"]), None);
    assert_eq!(g.calls(&all, &[NO_SCOPE_FRAME]), None);
    assert_eq!(g.calls(&all, &[]), None);
    // A function table's row: every path.
    assert_eq!(g.function_calls(&all, &["scope:parse"]), Some(4));
    assert_eq!(g.function_calls(&all, &walk3), Some(3));
    assert_eq!(g.function_calls(&all, &["scope:parse", "main"]), None);
    assert_eq!(g.function_calls(&all, &[NO_SCOPE_FRAME]), None);
    // Counted on a session not grouped, no frame is a scope's.
    let plain = nested();
    let tree = CallTree::new(&plain, &Filter::all());
    let calls = ScopeCalls::count(&plain, &Filter::all());
    assert!(tree
        .preorder()
        .iter()
        .all(|&n| calls.of_node(&tree, n).is_none()));
}

#[test]
fn scope_calls_keep_the_spans_the_filter_keeps() {
    let g = Grouped::of(&nested());
    let main_only = Filter::all().threads([ThreadIdx(0)]);
    assert_eq!(g.calls(&main_only, &["scope:parse"]), Some(0));
    assert_eq!(
        g.calls(&main_only, &["scope:request", "scope:parse"]),
        Some(3)
    );
    // Spans kept by their start: the second request and its parse.
    let later = Filter::all().time_range(20_000, 30_000);
    assert_eq!(g.calls(&later, &["scope:request"]), Some(1));
    assert_eq!(g.calls(&later, &["scope:request", "scope:parse"]), Some(1));
    assert_eq!(g.function_calls(&later, &["scope:parse"]), Some(1));
}
