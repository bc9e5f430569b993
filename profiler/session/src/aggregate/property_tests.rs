//! Property tests of the core's invariants over random small sessions (stacks from five
//! functions in two modules, three threads, times and weights): transforms keep or drop total
//! weight as their documentation says, thread and time filters partition the samples, each
//! flame graph rectangle is its children plus its own weight, and a profile diffed with itself
//! (or with itself recorded k times as long) shows no change.

use super::*;
use crate::session::{FrameSpec, Session, SessionBuilder, StrId};
use proptest::prelude::*;

/// Few cases, each a whole session: the suite stays fast (the seeds change every run).
const CASES: u32 = 64;

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
/// `a` and `b` are in the program, `c` and `d` in a library, `e` has no module.
const MODULES: [Option<&str>; 5] = [
    Some("/bin/app"),
    Some("/bin/app"),
    Some("/lib/libx.so"),
    Some("/lib/libx.so"),
    None,
];

/// One sample: its stack (indices into [`NAMES`], root first), thread (0..3), time, weight.
type SampleSpec = (Vec<usize>, usize, u64, u64);

fn build(samples: &[SampleSpec]) -> Session {
    let mut b = SessionBuilder::default();
    let frames: Vec<_> = (0..NAMES.len())
        .map(|i| {
            b.intern_frame(&FrameSpec {
                module: MODULES[i],
                ..FrameSpec::named(NAMES[i])
            })
        })
        .collect();
    let threads: Vec<_> = (0..3u64)
        .map(|t| b.thread(t + 1, &format!("t{t}")))
        .collect();
    let mut samples = samples.to_vec();
    samples.sort_by_key(|s| s.2);
    for (stack, thread, time, weight) in samples {
        let path: Vec<_> = stack.iter().map(|&i| frames[i]).collect();
        let stack = b.intern_stack_path(&path).unwrap();
        b.push_sample(stack, threads[thread], time, weight);
    }
    b.finish()
}

fn sample_specs() -> impl Strategy<Value = Vec<SampleSpec>> {
    let sample = (
        prop::collection::vec(0usize..5, 1..7),
        0usize..3,
        0u64..1_000,
        1u64..1_000,
    );
    prop::collection::vec(sample, 1..25)
}

/// A transform that keeps every sample, by index: merge, hide, collapse recursion or collapse
/// a module, of the function or module `which` picks.
fn keeping(session: &Session, kind: usize, which: usize) -> Option<Transform> {
    Some(match kind {
        0 => Transform::Merge(id(session, NAMES[which])?),
        1 => {
            let name = NAMES[which];
            Transform::hide_matching(move |n| n == name)
        }
        2 => Transform::CollapseRecursion,
        _ => Transform::CollapseModule(id(session, MODULES[which % 4].unwrap())?),
    })
}

fn id(session: &Session, name: &str) -> Option<StrId> {
    let i = session.strings.iter().position(|s| s == name)?;
    Some(StrId(i as u32))
}

fn tree(session: &Session, filter: &Filter, transforms: &[Transform]) -> CallTree {
    CallTree::build(session, &StackWeights::compute(session, filter), transforms)
}

fn total(tree: &CallTree) -> u64 {
    tree.total_weight(tree.root())
}

fn scaled(samples: &[SampleSpec], k: u64) -> Vec<SampleSpec> {
    samples
        .iter()
        .map(|(s, t, time, w)| (s.clone(), *t, *time, w * k))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn keeping_transforms_keep_the_total_and_focus_plus_ignore_split_it(
        specs in sample_specs(),
        chain in prop::collection::vec((0usize..4, 0usize..5), 0..4),
        target in 0usize..5,
    ) {
        let s = build(&specs);
        let all = specs.iter().map(|x| x.3).sum::<u64>();
        let mut transforms: Vec<Transform> =
            chain.iter().filter_map(|&(k, w)| keeping(&s, k, w)).collect();
        prop_assert_eq!(total(&tree(&s, &Filter::all(), &transforms)), all);

        // After any chain of keeping transforms, focus and ignore on one name split the total.
        let name = NAMES[target];
        let matcher = || NameMatcher::new(move |n| n == name);
        transforms.push(Transform::FocusMatching(matcher()));
        let kept = total(&tree(&s, &Filter::all(), &transforms));
        *transforms.last_mut().unwrap() = Transform::IgnoreMatching(matcher());
        let left = total(&tree(&s, &Filter::all(), &transforms));
        prop_assert_eq!(kept + left, all);

        // Drop and focus on one function split it too, the function's total going to focus.
        if let Some(f) = id(&s, name) {
            let before = tree(&s, &Filter::all(), &transforms[..transforms.len() - 1]);
            let through = before
                .functions(&s)
                .into_iter()
                .find(|x| x.func == f)
                .map_or(0, |x| x.total_weight);
            *transforms.last_mut().unwrap() = Transform::DropFunction(f);
            let dropped = total(&tree(&s, &Filter::all(), &transforms));
            *transforms.last_mut().unwrap() = Transform::FocusFunction(f);
            let focused = total(&tree(&s, &Filter::all(), &transforms));
            prop_assert_eq!(focused, through);
            prop_assert_eq!(dropped + focused, all);
        }
    }

    #[test]
    fn thread_and_time_filters_partition_the_samples(specs in sample_specs(), cut in 0u64..1_100) {
        let s = build(&specs);
        let all = total(&tree(&s, &Filter::all(), &[]));
        let per_thread: u64 = (0..s.threads.len())
            .map(|t| total(&tree(&s, &Filter::all().threads([crate::session::ThreadIdx(t as u32)]), &[])))
            .sum();
        prop_assert_eq!(per_thread, all);
        let before = total(&tree(&s, &Filter::all().time_range(0, cut), &[]));
        let after = total(&tree(&s, &Filter::all().time_range(cut, u64::MAX), &[]));
        prop_assert_eq!(before + after, all);
    }

    #[test]
    fn each_flame_rectangle_is_its_children_plus_its_own_weight(
        specs in sample_specs(),
        min_width in 0u64..400,
        heaviest_first in any::<bool>(),
    ) {
        let s = build(&specs);
        let t = tree(&s, &Filter::all(), &[Transform::CollapseRecursion]);
        let order = if heaviest_first { FlameOrder::HeaviestFirst } else { FlameOrder::Name };
        let rects = t.flame_with(t.root(), &FlameOptions { min_width, order, window: None });
        prop_assert_eq!(rects[0].width, total(&t));
        for parent in &rects {
            let end = parent.start + parent.width;
            let children: Vec<&Rect> = rects
                .iter()
                .filter(|r| r.depth == parent.depth + 1 && r.start >= parent.start && r.start < end)
                .collect();
            let covered: u64 = children.iter().map(|r| r.width).sum();
            for child in &children {
                prop_assert!(child.start + child.width <= end, "{:?} outside {:?}", child, parent);
            }
            // A rectangle narrower than `min_width` (merged with its narrow siblings or alone)
            // stands for its callees too: they are not laid out.
            let expanded = parent.depth == 0 || (parent.merged == 1 && parent.width >= min_width);
            if expanded {
                prop_assert_eq!(covered + t.self_weight(parent.node), parent.width, "{:?}", parent);
            } else {
                prop_assert_eq!(covered, 0, "{:?}", parent);
            }
        }
    }

    #[test]
    fn a_profile_diffed_with_itself_or_a_longer_recording_of_it_shows_no_change(
        specs in sample_specs(),
        k in 1u64..6,
    ) {
        let base = build(&specs);
        let same = build(&specs);
        let longer = build(&scaled(&specs, k));
        let side = |label, session| DiffSide { label, session };
        for absolute in [false, true] {
            let diff = DiffTree::between(side("base", &base), side("same", &same), absolute).unwrap();
            for i in 0..diff.len() {
                prop_assert_eq!(diff.self_change(i), 0);
            }
            let options = DiffOptions::default().absolute(absolute).top(usize::MAX);
            for by in [SortBy::SelfWeight, SortBy::Total] {
                let table = DiffTable::new(side("base", &base), side("same", &same), options.by(by)).unwrap();
                for row in table.rows() {
                    prop_assert_eq!(row.base, row.new);
                    prop_assert_eq!(table.change(row), 0.0);
                }
            }
        }
        // As shares of their own totals, a recording k times as long with the same shape is
        // unchanged too.
        let diff = DiffTree::between(side("base", &base), side("longer", &longer), false).unwrap();
        for i in 0..diff.len() {
            prop_assert_eq!(diff.self_change(i), 0);
        }
        let table = DiffTable::new(side("base", &base), side("longer", &longer), DiffOptions::default().top(usize::MAX)).unwrap();
        for row in table.rows() {
            prop_assert_eq!(table.change(row), 0.0, "{}", row.name);
        }
    }
}
