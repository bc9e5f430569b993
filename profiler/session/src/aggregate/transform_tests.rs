//! Tests of the transforms added for the viewer's transform stack and `prof report`'s options:
//! drop, collapse module, regex focus / ignore, and their text form [`TransformSpec`].

use super::tests::{folded_session, func};
use super::*;
use crate::session::{FrameSpec, Session, SessionBuilder};
use proptest::prelude::*;

fn tree_with(session: &Session, transforms: &[Transform]) -> CallTree {
    CallTree::build(
        session,
        &StackWeights::compute(session, &Filter::all()),
        transforms,
    )
}

fn spec_tree(session: &Session, specs: &[TransformSpec]) -> CallTree {
    tree_with(
        session,
        &TransformSpec::resolve_all(specs, session).unwrap(),
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

fn total(tree: &CallTree) -> u64 {
    tree.total_weight(tree.root())
}

fn example() -> Session {
    folded_session(&[
        ("main;parse;lex", 30),
        ("main;parse", 10),
        ("main;eval;eval;eval;add", 40),
        ("main;eval;lex", 5),
        ("main;lex", 15),
    ])
}

fn focus(pattern: &str) -> TransformSpec {
    TransformSpec::Focus {
        pattern: pattern.into(),
    }
}

fn ignore(pattern: &str) -> TransformSpec {
    TransformSpec::Ignore {
        pattern: pattern.into(),
    }
}

#[test]
fn drop_function_removes_every_sample_through_it() {
    let s = example();
    let tree = tree_with(&s, &[Transform::DropFunction(func(&s, "lex"))]);
    assert_eq!(
        folded(&tree, &s),
        ["main;eval;eval;eval;add 40", "main;parse 10"]
    );
    assert_eq!(total(&tree), 100 - 50);
}

#[test]
fn regex_focus_keeps_whole_stacks_with_a_matching_frame() {
    let s = example();
    let tree = spec_tree(&s, &[focus("^pa")]);
    // Not rooted at `parse` (that is focus-function): the stacks keep `main`.
    assert_eq!(folded(&tree, &s), ["main;parse 10", "main;parse;lex 30"]);
    // A match below a node keeps only the samples at or below the match.
    let tree = spec_tree(&s, &[focus("^add$")]);
    assert_eq!(folded(&tree, &s), ["main;eval;eval;eval;add 40"]);
    assert_eq!(tree.self_weight(tree.children(tree.root())[0]), 0);
}

#[test]
fn regex_ignore_drops_stacks_with_a_matching_frame() {
    let s = example();
    let tree = spec_tree(&s, &[ignore("^(add|parse)$")]);
    assert_eq!(folded(&tree, &s), ["main;eval;lex 5", "main;lex 15"]);
}

#[test]
fn hide_keeps_the_weight_and_charges_callers() {
    let s = example();
    let hide = TransformSpec::Hide {
        pattern: "^eval$".into(),
    };
    let tree = spec_tree(&s, &[hide]);
    assert_eq!(
        folded(&tree, &s),
        [
            "main;add 40",
            "main;lex 20",
            "main;parse 10",
            "main;parse;lex 30"
        ]
    );
    assert_eq!(total(&tree), 100);
}

fn with_modules() -> Session {
    let mut b = SessionBuilder::default();
    let t = b.thread(1, "main");
    let frame = |b: &mut SessionBuilder, name: &str, module: &str| {
        b.intern_frame(&FrameSpec {
            name,
            module: Some(module),
            ..FrameSpec::default()
        })
    };
    let main = frame(&mut b, "main", "/bin/app");
    let malloc = frame(&mut b, "malloc", "/usr/lib/libc.so.6");
    let int_malloc = frame(&mut b, "_int_malloc", "/usr/lib/libc.so.6");
    let qsort = frame(&mut b, "qsort", "/usr/lib/libc.so.6");
    let cmp = frame(&mut b, "cmp", "/bin/app");
    for (path, w) in [
        (vec![main, malloc, int_malloc], 7),
        (vec![main, malloc], 3),
        (vec![main, qsort, cmp], 5),
        (vec![main, qsort, cmp, malloc], 2),
        (vec![main], 1),
    ] {
        let stack = b.intern_stack_path(&path).unwrap();
        b.push_sample(stack, t, 0, w);
    }
    b.finish()
}

#[test]
fn collapse_module_turns_each_run_of_its_frames_into_one() {
    let s = with_modules();
    let spec = TransformSpec::CollapseModule {
        module: "libc.so.6".into(),
    };
    let tree = spec_tree(&s, &[spec]);
    let libc = "/usr/lib/libc.so.6";
    assert_eq!(
        folded(&tree, &s),
        [
            "main 1".to_owned(),
            format!("main;{libc} 10"),
            format!("main;{libc};cmp 5"),
            format!("main;{libc};cmp;{libc} 2"),
        ]
    );
    assert_eq!(total(&tree), 18);
    // The full name works too; a module the session lacks is an error that says so.
    let full = TransformSpec::CollapseModule {
        module: libc.into(),
    };
    assert_eq!(spec_tree(&s, std::slice::from_ref(&full)), tree);
    // The collapsed frame is named after the module, and later transforms can name it (`qsort`
    // is in libc too, so only `main`'s own sample is left).
    let drop = TransformSpec::Drop {
        function: libc.into(),
    };
    assert_eq!(folded(&spec_tree(&s, &[full, drop]), &s), ["main 1"]);
    let missing = TransformSpec::CollapseModule {
        module: "libm.so".into(),
    };
    assert_eq!(
        missing.resolve(&s).unwrap_err(),
        "no module named \"libm.so\" in the profile"
    );
}

#[test]
fn specs_name_unknown_functions_and_bad_regexes_in_one_line() {
    let s = example();
    let unknown = TransformSpec::Merge {
        function: "nope".into(),
    };
    assert_eq!(
        TransformSpec::resolve_all(&[TransformSpec::CollapseRecursion, unknown], &s).unwrap_err(),
        "Merge: nope: no function named \"nope\" in the profile"
    );
    // The thread's name is a string of the session but not a function.
    let thread = TransformSpec::FocusFunction {
        function: "main".into(),
    };
    assert!(thread.resolve(&s).is_ok());
    let err = TransformSpec::resolve_all(&[focus("(")], &s).unwrap_err();
    assert!(err.starts_with("Focus /(/: invalid regex"), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn specs_round_trip_through_json_and_resolve_like_transforms() {
    let s = example();
    let specs = vec![
        TransformSpec::CollapseRecursion,
        TransformSpec::FocusSubtree {
            path: vec!["main".into(), "eval".into()],
        },
        TransformSpec::Drop {
            function: "lex".into(),
        },
    ];
    let json = serde_json::to_string(&specs).unwrap();
    assert_eq!(
        json,
        r#"[{"kind":"collapse-recursion"},{"kind":"focus-subtree","path":["main","eval"]},{"kind":"drop","function":"lex"}]"#
    );
    let back: Vec<TransformSpec> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, specs);
    let by_ids = tree_with(
        &s,
        &[
            Transform::CollapseRecursion,
            Transform::FocusSubtree(vec![func(&s, "main"), func(&s, "eval")]),
            Transform::DropFunction(func(&s, "lex")),
        ],
    );
    assert_eq!(spec_tree(&s, &specs), by_ids);
    assert_eq!(folded(&by_ids, &s), ["eval;add 40"]);
}

/// Small random sessions: stacks of up to five frames from five names, with weights.
fn sessions() -> impl Strategy<Value = Session> {
    let stack = prop::collection::vec(0usize..5, 1..6);
    prop::collection::vec((stack, 1u64..100), 1..20).prop_map(|lines| {
        let names = ["a", "b", "c", "d", "e"];
        let folded: Vec<(String, u64)> = lines
            .iter()
            .map(|(stack, w)| {
                let path: Vec<&str> = stack.iter().map(|&i| names[i]).collect();
                (path.join(";"), *w)
            })
            .collect();
        let borrowed: Vec<(&str, u64)> = folded.iter().map(|(p, w)| (p.as_str(), *w)).collect();
        folded_session(&borrowed)
    })
}

/// The weight of the samples with `name` anywhere on their stack.
fn weight_through(session: &Session, name: &str) -> u64 {
    (0..session.samples.len())
        .filter(|&i| {
            session
                .stack_frames(session.samples.stack[i])
                .any(|f| session.frame_name(f) == name)
        })
        .map(|i| session.samples.weight[i])
        .sum()
}

proptest! {
    #[test]
    fn weight_kept_or_dropped_as_documented(s in sessions(), which in 0usize..5) {
        let name = ["a", "b", "c", "d", "e"][which];
        let all = session_total(&s);
        let through = weight_through(&s, name);
        // Transforms that keep every sample.
        let keeping = [
            TransformSpec::Hide { pattern: format!("^{name}$") },
            TransformSpec::CollapseRecursion,
        ];
        for spec in keeping {
            prop_assert_eq!(total(&spec_tree(&s, &[spec])), all);
        }
        if through > 0 {
            let merge = TransformSpec::Merge { function: name.into() };
            prop_assert_eq!(total(&spec_tree(&s, &[merge])), all);
            let drop = TransformSpec::Drop { function: name.into() };
            prop_assert_eq!(total(&spec_tree(&s, &[drop])), all - through);
            let focus_fn = TransformSpec::FocusFunction { function: name.into() };
            prop_assert_eq!(total(&spec_tree(&s, &[focus_fn])), through);
        }
        // Regex focus and ignore split the samples in two.
        let pattern = format!("^{name}$");
        let kept = total(&spec_tree(&s, &[focus(&pattern)]));
        let left = total(&spec_tree(&s, &[ignore(&pattern)]));
        prop_assert_eq!(kept, through);
        prop_assert_eq!(kept + left, all);
    }
}

fn session_total(s: &Session) -> u64 {
    s.samples.weight.iter().sum()
}

/// `TransformSpec` is read through a struct of optional fields instead of serde's
/// internally tagged enum (29 kB of the wasm viewer); its JSON form reads as it did.
#[test]
fn transform_specs_read_their_json_form_as_before() {
    let specs = vec![
        TransformSpec::FocusFunction {
            function: "parse".into(),
        },
        TransformSpec::FocusSubtree {
            path: vec!["main".into(), "run".into()],
        },
        TransformSpec::Merge {
            function: "lex".into(),
        },
        TransformSpec::Drop {
            function: "gc".into(),
        },
        TransformSpec::CollapseRecursion,
        TransformSpec::CollapseModule {
            module: "libc.so.6".into(),
        },
        TransformSpec::Focus {
            pattern: "^a".into(),
        },
        TransformSpec::Ignore {
            pattern: "b$".into(),
        },
        TransformSpec::Hide {
            pattern: "^std::".into(),
        },
    ];
    let json = serde_json::to_string(&specs).unwrap();
    let back: Vec<TransformSpec> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, specs, "{json}");
    // The tag anywhere, fields a kind does not use ignored.
    let spec: TransformSpec =
        serde_json::from_str(r#"{"function":"parse","pattern":"x","kind":"merge"}"#).unwrap();
    assert_eq!(
        spec,
        TransformSpec::Merge {
            function: "parse".into()
        }
    );
    let missing = serde_json::from_str::<TransformSpec>(r#"{"kind":"hide"}"#).unwrap_err();
    assert!(
        missing.to_string().contains("missing field `pattern`"),
        "{missing}"
    );
    let unknown = serde_json::from_str::<TransformSpec>(r#"{"kind":"fold"}"#).unwrap_err();
    assert!(
        unknown.to_string().contains("unknown variant `fold`"),
        "{unknown}"
    );
    assert!(serde_json::from_str::<TransformSpec>(r#"{"function":"f"}"#).is_err());
}

/// The viewer reads transforms with [`Json`](crate::json::Json) (no serde_json
/// deserializer in the wasm module): the same forms, the same errors as the serde form.
#[test]
fn transform_specs_read_with_the_json_reader_as_with_serde() {
    use crate::json::Json;
    let read = |text: &str| Json::parse(text.as_bytes(), TransformSpec::read_json);
    let specs = [
        r#"{"kind":"focus-function","function":"parse"}"#,
        r#"{"kind":"focus-subtree","path":["main","run"]}"#,
        r#"{"kind":"merge","function":"lex"}"#,
        r#"{"kind":"drop","function":"gc"}"#,
        r#"{"kind":"collapse-recursion"}"#,
        r#"{"kind":"collapse-module","module":"libc.so.6"}"#,
        r#"{"kind":"focus","pattern":"^a"}"#,
        r#"{"kind":"ignore","pattern":"b$"}"#,
        r#"{"function":"parse","pattern":"x","kind":"merge","extra":[1,{}]}"#,
        r#"{"kind":"hide","pattern":"^std::","function":null}"#,
    ];
    for text in specs {
        let serde: TransformSpec = serde_json::from_str(text).unwrap();
        assert_eq!(read(text), Ok(serde), "{text}");
    }
    for (text, error) in [
        (r#"{"kind":"hide"}"#, "missing field `pattern`"),
        (r#"{"kind":"fold"}"#, "unknown variant `fold`"),
        (r#"{"function":"f"}"#, "missing field `kind`"),
        (
            r#"{"kind":"drop","function":"f","function":"g"}"#,
            "duplicate field `function`",
        ),
        (
            r#"{"kind":"drop","function":7}"#,
            "invalid type: integer `7`",
        ),
        (
            r#"[]"#,
            "invalid type: sequence, expected struct SpecFields",
        ),
    ] {
        let message = read(text).unwrap_err();
        assert!(message.starts_with(error), "{text}: {message}");
        let serde = serde_json::from_str::<TransformSpec>(text).unwrap_err();
        assert!(
            serde.to_string().contains(error.split(',').next().unwrap()) || text == "[]",
            "{text}: {serde}"
        );
    }
}
