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
    let mut span = |b: &mut SessionBuilder, site, thread, start_ns, parent| {
        b.push_span(Span {
            site,
            thread,
            start_ns,
            end_ns: start_ns + 10_000,
            parent,
            fields: Vec::new(),
        })
    };
    let mut sample = |b: &mut SessionBuilder, thread, at, scope: Option<SpanIdx>| {
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

#[test]
fn scope_calls_count_the_spans_of_each_path_of_scopes() {
    let session = nested();
    let calls = ScopeCalls::count(&session, &Filter::all());
    assert_eq!(calls.of_path(["request"]), Some(2));
    // Two in the first request and one in the second, whether a sample fell in them or not.
    assert_eq!(calls.of_path(["request", "parse"]), Some(3));
    assert_eq!(calls.of_path(["parse"]), Some(1));
    assert_eq!(calls.of_path(["parse", "request"]), None);
    assert_eq!(calls.of_path(["nowhere"]), None);
    assert_eq!(calls.of_path([]), None);
    // A recursive scope: one call at each depth.
    assert_eq!(calls.of_path(["walk"]), Some(1));
    assert_eq!(calls.of_path(["walk", "walk"]), Some(1));
    assert_eq!(calls.of_path(["walk", "walk", "walk"]), Some(1));
    assert_eq!(calls.of_path(["walk", "walk", "walk", "walk"]), None);
    // A function table's row: every path.
    assert_eq!(calls.of_function("scope:parse"), Some(4));
    assert_eq!(calls.of_function("scope:walk"), Some(3));
    assert_eq!(calls.of_function("parse"), None);
    assert_eq!(calls.of_function(NO_SCOPE_FRAME), None);
}

#[test]
fn scope_calls_keep_the_spans_the_filter_keeps() {
    let session = nested();
    let main_only = ScopeCalls::count(&session, &Filter::all().threads([ThreadIdx(0)]));
    assert_eq!(main_only.of_path(["parse"]), Some(0));
    assert_eq!(main_only.of_path(["request", "parse"]), Some(3));
    // Spans kept by their start: the second request and its parse.
    let later = ScopeCalls::count(&session, &Filter::all().time_range(20_000, 30_000));
    assert_eq!(later.of_path(["request"]), Some(1));
    assert_eq!(later.of_path(["request", "parse"]), Some(1));
    assert_eq!(later.of_function("scope:parse"), Some(1));
}

#[test]
fn scope_calls_of_call_tree_nodes_follow_the_nodes_paths() {
    let session = nested();
    let grouped = group_by_scope(&session);
    let tree = CallTree::new(&grouped, &Filter::all());
    let calls = ScopeCalls::count(&grouped, &Filter::all());
    let node = |path: &[&str]| {
        let mut at = tree.root();
        for name in path {
            at = *tree
                .children(at)
                .iter()
                .find(|&&c| tree.name(&grouped, c) == *name)
                .unwrap_or_else(|| panic!("no {name} under {path:?}"));
        }
        at
    };
    let of = |path: &[&str]| calls.of_node(&grouped, &tree, node(path));
    assert_eq!(of(&["scope:request"]), Some(2));
    assert_eq!(of(&["scope:request", "scope:parse"]), Some(3));
    assert_eq!(of(&["scope:parse"]), Some(1));
    assert_eq!(of(&["scope:walk", "scope:walk", "scope:walk"]), Some(1));
    assert_eq!(tree.total_weight(node(&["scope:walk"])), 1_000);
    // Functions, the root and the samples outside scopes have no calls.
    assert_eq!(of(&["scope:request", "main"]), None);
    assert_eq!(of(&[NO_SCOPE_FRAME]), None);
    assert_eq!(of(&[]), None);
}
