//! Tests of the aggregation core on small sessions whose answers can be worked out by hand.

use super::*;
use crate::session::{Session, SessionBuilder, StrId};

/// A session from `(folded stack, weight)` pairs, one sample each, all on one thread.
pub(crate) fn folded_session(lines: &[(&str, u64)]) -> Session {
    let mut b = SessionBuilder::default();
    let t = b.thread(1, "main");
    for (i, (stack, weight)) in lines.iter().enumerate() {
        let names: Vec<&str> = stack.split(';').collect();
        b.push_named(&names, t, i as u64 * 10, *weight);
    }
    b.finish()
}

pub(crate) fn func(session: &Session, name: &str) -> StrId {
    StrId(
        session
            .strings
            .iter()
            .position(|s| s == name)
            .expect("name exists") as u32,
    )
}

/// The tree as `path weight` lines for nodes with self weight, like folded stacks.
fn folded(tree: &CallTree, session: &Session) -> Vec<String> {
    tree.preorder()
        .into_iter()
        .filter(|&n| tree.self_weight(n) > 0)
        .map(|n| {
            let names: Vec<&str> = tree.path(n).into_iter().map(|f| session.str(f)).collect();
            format!("{} {}", names.join(";"), tree.self_weight(n))
        })
        .collect()
}

fn example() -> Session {
    folded_session(&[
        ("main;parse;lex", 30),
        ("main;parse", 10),
        ("main;eval;eval;eval;add", 40),
        ("main;eval;lex", 5),
        ("main;parse;lex", 15),
    ])
}

fn tree_with(session: &Session, transforms: &[Transform]) -> CallTree {
    CallTree::build(
        session,
        &StackWeights::compute(session, &Filter::all()),
        transforms,
    )
}

#[test]
fn the_call_tree_has_self_and_total_weights() {
    let s = example();
    let tree = CallTree::new(&s, &Filter::all());
    assert_eq!(tree.total_weight(tree.root()), 100);
    let main = tree.children(tree.root())[0];
    assert_eq!(tree.name(&s, main), "main");
    assert_eq!(tree.total_weight(main), 100);
    let names: Vec<&str> = tree
        .children(main)
        .iter()
        .map(|&c| tree.name(&s, c))
        .collect();
    assert_eq!(names, ["eval", "parse"], "children are sorted by name");
    let parse = tree.children(main)[1];
    assert_eq!(
        (tree.self_weight(parse), tree.total_weight(parse)),
        (10, 55)
    );
    assert_eq!(tree.total_count(parse), 3);
    assert_eq!(
        folded(&tree, &s),
        [
            "main;eval;eval;eval;add 40",
            "main;eval;lex 5",
            "main;parse 10",
            "main;parse;lex 45"
        ]
    );
}

#[test]
fn top_counts_recursive_functions_once_in_total() {
    let s = example();
    let tree = CallTree::new(&s, &Filter::all());
    let by_total = tree.top(&s, 3, SortBy::Total);
    let row = |name: &str| by_total.iter().find(|r| r.name == name).cloned();
    assert_eq!(by_total[0].name, "main");
    assert_eq!(row("parse").unwrap().total_weight, 55);
    let eval = tree
        .functions(&s)
        .into_iter()
        .find(|r| r.name == "eval")
        .unwrap();
    assert_eq!(
        (eval.self_weight, eval.total_weight, eval.total_count),
        (0, 45, 2)
    );
    let by_self = tree.top(&s, 2, SortBy::SelfWeight);
    let names: Vec<&str> = by_self.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["lex", "add"]);
    assert_eq!(by_self[0].self_weight, 50);
}

#[test]
fn flame_layout_places_children_left_to_right_and_merges_narrow_ones() {
    let s = example();
    let tree = CallTree::new(&s, &Filter::all());
    let rects = tree.flame(tree.root(), 0);
    let at = |name: &str, depth: u32| {
        rects
            .iter()
            .find(|r| r.depth == depth && tree.name(&s, r.node) == name)
            .copied()
            .unwrap()
    };
    assert_eq!(rects.len(), tree.len());
    assert_eq!((at("main", 1).start, at("main", 1).width), (0, 100));
    assert_eq!((at("eval", 2).start, at("eval", 2).width), (0, 45));
    assert_eq!((at("parse", 2).start, at("parse", 2).width), (45, 55));
    assert_eq!((at("lex", 3).start, at("lex", 3).width), (40, 5));

    // With a minimum width of 6, eval's callees `eval` (40) stays and `lex` (5) is merged alone;
    // under parse, `lex` (45) stays.
    let rects = tree.flame(tree.root(), 6);
    let lex_under_eval = rects
        .iter()
        .find(|r| r.depth == 3 && r.start == 40)
        .unwrap();
    assert_eq!((lex_under_eval.width, lex_under_eval.merged), (5, 1));
    // Widths at every depth still add up: nothing is lost.
    let depth3: u64 = rects.iter().filter(|r| r.depth == 3).map(|r| r.width).sum();
    assert_eq!(depth3, 90);
}

#[test]
fn many_narrow_siblings_become_one_rectangle() {
    let lines: Vec<(String, u64)> = (0..50).map(|i| (format!("main;f{i:02}"), 1)).collect();
    let lines: Vec<(&str, u64)> = lines.iter().map(|(s, w)| (s.as_str(), *w)).collect();
    let s = folded_session(&lines);
    let tree = CallTree::new(&s, &Filter::all());
    let main = tree.children(tree.root())[0];
    let rects = tree.flame(main, 2);
    assert_eq!(rects.len(), 2);
    assert_eq!(
        (rects[1].depth, rects[1].width, rects[1].merged),
        (1, 50, 50)
    );
    assert_eq!(tree.flame(NodeId(9999), 0), []);
}

#[test]
fn focus_on_a_function_roots_its_calls_together() {
    let s = example();
    let tree = tree_with(&s, &[Transform::FocusFunction(func(&s, "lex"))]);
    assert_eq!(folded(&tree, &s), ["lex 50"]);
    let tree = tree_with(&s, &[Transform::FocusFunction(func(&s, "eval"))]);
    assert_eq!(folded(&tree, &s), ["eval;eval;eval;add 40", "eval;lex 5"]);
}

#[test]
fn focus_on_a_subtree_keeps_only_that_path() {
    let s = example();
    let path = vec![func(&s, "main"), func(&s, "parse")];
    let tree = tree_with(&s, &[Transform::FocusSubtree(path)]);
    assert_eq!(folded(&tree, &s), ["parse 10", "parse;lex 45"]);
    let tree = tree_with(&s, &[Transform::FocusSubtree(vec![func(&s, "parse")])]);
    assert_eq!(
        tree.total_weight(tree.root()),
        0,
        "parse is never outermost"
    );
    let tree = tree_with(&s, &[Transform::FocusSubtree(vec![])]);
    assert_eq!(tree.total_weight(tree.root()), 100);
}

#[test]
fn merge_and_hide_charge_callers() {
    let s = example();
    let tree = tree_with(&s, &[Transform::Merge(func(&s, "parse"))]);
    assert_eq!(
        folded(&tree, &s),
        [
            "main 10",
            "main;eval;eval;eval;add 40",
            "main;eval;lex 5",
            "main;lex 45"
        ]
    );
    let tree = tree_with(&s, &[Transform::hide("^(lex|add)$").unwrap()]);
    assert_eq!(
        folded(&tree, &s),
        ["main;eval 5", "main;eval;eval;eval 40", "main;parse 55"]
    );
    assert!(Transform::hide("(").is_err());
    let tree = tree_with(
        &s,
        &[Transform::hide_matching(|name| name.starts_with('p'))],
    );
    assert_eq!(folded(&tree, &s)[3], "main;lex 45");
}

#[test]
fn collapse_recursion_then_focus_compose_in_order() {
    let s = example();
    let tree = tree_with(&s, &[Transform::CollapseRecursion]);
    assert!(folded(&tree, &s).contains(&"main;eval;add 40".to_owned()));
    let tree = tree_with(
        &s,
        &[
            Transform::CollapseRecursion,
            Transform::FocusFunction(func(&s, "eval")),
        ],
    );
    assert_eq!(folded(&tree, &s), ["eval;add 40", "eval;lex 5"]);
}

#[test]
fn sandwich_shows_callers_inverted_and_callees_merged() {
    let s = example();
    let tree = CallTree::new(&s, &Filter::all());
    let lex = func(&s, "lex");
    let callers = tree.callers(&s, lex);
    assert_eq!(
        folded(&callers, &s),
        ["lex;eval;main 5", "lex;parse;main 45"]
    );
    assert_eq!(callers.total_weight(callers.root()), 50);
    let eval = func(&s, "eval");
    let callers = tree.callers(&s, eval);
    assert_eq!(
        folded(&callers, &s),
        ["eval;main 45"],
        "recursion counts once"
    );
    let callees = tree.callees(&s, eval);
    assert_eq!(
        folded(&callees, &s),
        ["eval;eval;eval;add 40", "eval;lex 5"]
    );
}

#[test]
fn diff_matches_paths_by_name_across_sessions() {
    let before = folded_session(&[("main;a", 10), ("main;b", 5)]);
    let after = folded_session(&[("main;b", 8), ("main;c;d", 2), ("main;a", 10)]);
    let tb = CallTree::new(&before, &Filter::all());
    let ta = CallTree::new(&after, &Filter::all());
    let diff = DiffTree::new((&before, &tb), (&after, &ta));
    let rows: Vec<(String, u64, u64)> = diff
        .stacks()
        .into_iter()
        .map(|d| (d.path.join(";"), d.before, d.after))
        .collect();
    assert_eq!(
        rows,
        [
            ("main;a".to_owned(), 10, 10),
            ("main;b".to_owned(), 5, 8),
            ("main;c;d".to_owned(), 0, 2)
        ]
    );
    assert_eq!(diff.total_weight(0), (15, 20));
    assert_eq!(diff.name(1), "main");
}

#[test]
fn a_normalized_diff_scales_the_base_to_the_new_total() {
    let before = folded_session(&[("main;a", 30), ("main;b", 10)]);
    let after = folded_session(&[("main;a", 60), ("main;b", 20)]);
    let tb = CallTree::new(&before, &Filter::all());
    let ta = CallTree::new(&after, &Filter::all());
    let diff = DiffTree::new((&before, &tb), (&after, &ta)).normalized();
    // Twice as long, the same shape: no change anywhere.
    assert_eq!(diff.total_weight(0), (80, 80));
    for d in diff.stacks() {
        assert_eq!(d.before, d.after, "{:?}", d.path);
    }
    let empty = folded_session(&[]);
    let te = CallTree::new(&empty, &Filter::all());
    let diff = DiffTree::new((&empty, &te), (&after, &ta)).normalized();
    assert_eq!(diff.total_weight(0), (0, 80));
}

/// Top-N sums weights by name id, keeps its candidates in a buffer of at most twice N
/// (1,024 at least) that it cuts as it goes, and counts samples in a second walk. On 3,000
/// functions (recursive ones, ties of weight, functions with samples of no weight) its rows
/// equal every function's figures ranked and cut, for N below, at and above the buffer's size.
#[test]
fn top_n_equals_every_function_ranked_and_cut() {
    let names: Vec<String> = (0..3000)
        .map(|i| format!("f{:04}", (i * 7919) % 3000))
        .collect();
    let mut lines: Vec<(String, u64)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let caller = &names[i / 3];
        // Weights with ties (i % 50), a recursion (name twice), and some of weight 0.
        lines.push((format!("main;{caller};{name};{name}"), (i % 50) as u64));
        lines.push((format!("main;{name}"), (i % 7) as u64 + 1));
    }
    let borrowed: Vec<(&str, u64)> = lines.iter().map(|(s, w)| (s.as_str(), *w)).collect();
    let session = folded_session(&borrowed);
    let tree = CallTree::new(&session, &Filter::all());
    for sort in [SortBy::SelfWeight, SortBy::Total] {
        let mut all = tree.functions(&session);
        let key = |r: &TopRow| match sort {
            SortBy::SelfWeight => (r.self_weight, r.total_weight),
            SortBy::Total => (r.total_weight, r.self_weight),
        };
        all.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
        for n in [0, 1, 10, 511, 1024, 2047, 2999, 3001, 5000] {
            let expected: Vec<TopRow> = all.iter().take(n).cloned().collect();
            assert_eq!(tree.top(&session, n, sort), expected, "{sort:?}, n = {n}");
        }
    }
}
