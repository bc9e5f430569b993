//! The written file against `docs/session.schema.json`, the pinned fixture of each format
//! version, and a fuzz pass over mutated corpus files (`tests/data/session/`).
//!
//! `PROF_BLESS=1 cargo test -p prof session::file_tests` rewrites the corpus seeds; version
//! fixtures are never rewritten, since old files must keep loading as they are.
//! `PROF_FUZZ_CASES=100000` runs a longer fuzz pass than CI's.

use super::read_tests::{rich_session, to_bytes, typed_session};
use super::*;
use proptest::prelude::*;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/session")
}

fn schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let text = include_str!("../../../../docs/session.schema.json");
        let schema: Value = serde_json::from_str(text).expect("the schema is JSON");
        jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema")
    })
}

/// Panics unless `bytes` is a session file the schema accepts.
pub(crate) fn assert_matches_schema(bytes: &[u8]) {
    let value: Value = serde_json::from_slice(bytes).expect("written files are JSON");
    let errors: Vec<String> = schema()
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

/// A session with deep recursion, many threads and many stacks: a different shape for the corpus.
fn wide_session() -> Session {
    let mut b = SessionBuilder::default();
    b.meta_mut().mode = Mode::Wall;
    for t in 0..5u64 {
        let thread = b.thread(1000 + t, &format!("worker-{t}"));
        for i in 0..40u64 {
            let depth = (i % 7 + 1) as usize;
            let names: Vec<String> = (0..depth)
                .map(|d| format!("f{}", (d as u64 + i) % 9))
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            b.push_named(&names, thread, i * 1_000 + t, 1_000 + i % 3);
        }
    }
    b.finish()
}

/// A session of counted events whose rows stand for several samples each, as an import of an
/// aggregated format makes: the version 2 additions.
fn counted_session() -> Session {
    let mut b = SessionBuilder::default();
    b.meta_mut().sample_type = SampleType::new("cycles", Unit::Count);
    let main = b.thread(7, "main");
    let other = b.thread(8, "other");
    let f = b.intern_frame(&FrameSpec::named("f"));
    let g = b.intern_frame(&FrameSpec::named("g"));
    let fg = b.intern_stack_path(&[f, g]).unwrap();
    let ff = b.intern_stack_path(&[f]).unwrap();
    b.push_samples(fg, main, 0, 20_834_821, 200);
    b.push_samples(ff, other, 0, 1_000, 1);
    b.push_samples(ff, main, 10, 9_000_000, 98);
    b.finish()
}

/// A recorded session's shape with the mappings of its binary and a library (one without a
/// build ID), which frames find by address.
fn mapped_session() -> Session {
    let mut b = SessionBuilder::default();
    let main = b.thread(7, "main");
    let spec = |address| FrameSpec {
        address: Some(address),
        ..FrameSpec::named("f")
    };
    let f = b.intern_frame(&spec(0x5555_0000_1234));
    let g = b.intern_frame(&FrameSpec {
        name: "g",
        ..spec(0x7f00_0000_0042)
    });
    let fg = b.intern_stack_path(&[f, g]).unwrap();
    b.push_sample(fg, main, 0, 1_000_000);
    b.push_mapping(&MappingSpec {
        start: 0x5555_0000_1000,
        limit: 0x5555_0002_0000,
        offset: 0x1000,
        path: "/usr/bin/demo",
        build_id: Some("0123456789abcdef0123456789abcdef01234567"),
    });
    b.push_mapping(&MappingSpec {
        start: 0x7f00_0000_0000,
        limit: 0x7f00_0001_0000,
        offset: 0,
        path: "/lib/libx.so",
        build_id: None,
    });
    b.finish()
}

/// A recording of a shell and two programs it started: the version 4 process table, threads
/// in each process, one process whose command line prof could not read.
pub(crate) fn multi_process_session() -> Session {
    let mut b = SessionBuilder::default();
    let sh = b.push_process(Process {
        pid: 100,
        parent_pid: Some(99),
        name: "sh".into(),
        command_line: vec!["sh".into(), "-c".into(), "spin & spin; wait".into()],
        executable: Some("/usr/bin/dash".into()),
    });
    let first = b.push_process(Process {
        pid: 101,
        parent_pid: Some(100),
        name: "spin".into(),
        command_line: vec!["spin".into()],
        executable: Some("/opt/spin".into()),
    });
    let second = b.push_process(Process {
        pid: 102,
        parent_pid: Some(100),
        name: "spin".into(),
        command_line: Vec::new(),
        executable: None,
    });
    let f = b.intern_frame(&FrameSpec::named("f"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    for (i, (process, tid, name)) in [
        (sh, 100, "sh"),
        (first, 101, "spin"),
        (first, 103, "helper"),
        (second, 102, "spin"),
    ]
    .into_iter()
    .enumerate()
    {
        let t = b.thread_in(process, tid, name);
        b.push_sample(stack, t, 10 * i as u64 + 1, 1_000_000);
    }
    b.finish()
}

/// The seeds of the fuzz corpus: valid files of different shapes.
fn corpus_sessions() -> Vec<(&'static str, Session)> {
    vec![
        ("empty.json", SessionBuilder::default().finish()),
        ("rich.json", rich_session()),
        ("wide.json", wide_session()),
        ("counted.json", counted_session()),
        ("mapped.json", mapped_session()),
        ("typed.json", typed_session()),
        ("processes.json", multi_process_session()),
        ("scoped.json", super::scopes_tests::scoped_session()),
        ("calls.json", calls_session()),
    ]
}

fn corpus() -> &'static Vec<Vec<u8>> {
    static CORPUS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = data_dir().join("corpus");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("the corpus directory exists")
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files.iter().map(|p| std::fs::read(p).unwrap()).collect()
    })
}

#[test]
fn written_files_match_the_schema() {
    for (_, session) in corpus_sessions() {
        assert_matches_schema(&to_bytes(&session));
    }
}

#[test]
fn the_schema_is_not_vacuous() {
    let mut value: Value = serde_json::from_slice(&to_bytes(&rich_session())).unwrap();
    value["version"] = Value::from(7);
    value["samples"]["stack"] = Value::from("not base64!");
    assert_eq!(schema().iter_errors(&value).count(), 2);
}

#[test]
fn the_corpus_seeds_are_what_the_writer_writes() {
    let dir = data_dir().join("corpus");
    for (name, session) in corpus_sessions() {
        let path = dir.join(name);
        let bytes = to_bytes(&session);
        if std::env::var_os("PROF_BLESS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{}", path.display());
        assert_eq!(read(&bytes[..]).unwrap(), session);
    }
}

#[test]
fn version_1_fixture_keeps_loading() {
    let bytes = std::fs::read(data_dir().join("v1.json")).unwrap();
    assert_matches_schema(&bytes);
    let session = read(&bytes[..]).unwrap();
    assert_eq!(session, rich_session());
    assert_eq!(
        session.meta.sample_type,
        SampleType::new("cpu", Unit::Nanoseconds)
    );
}

#[test]
fn version_1_folded_imports_are_read_as_sample_counts() {
    let bytes = std::fs::read(data_dir().join("v1.json")).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let text = text.replace(r#""timer":"perf_event""#, r#""timer":"import:folded""#);
    assert!(text.contains("import:folded"));
    let session = read(text.as_bytes()).unwrap();
    assert_eq!(session.meta.sample_type, SampleType::samples());
}

#[test]
fn version_3_fixture_keeps_loading() {
    let bytes = std::fs::read(data_dir().join("v3.json")).unwrap();
    assert_matches_schema(&bytes);
    assert_eq!(read(&bytes[..]).unwrap(), typed_session());
}

#[test]
fn version_4_fixture_keeps_loading() {
    let bytes = std::fs::read(data_dir().join("v4.json")).unwrap();
    assert_matches_schema(&bytes);
    let session = read(&bytes[..]).unwrap();
    assert_eq!(session, multi_process_session());
    let table = session.process_table();
    let of = |tid: u64| {
        let t = session.threads.iter().find(|t| t.tid == tid).unwrap();
        table[t.process.index()].pid
    };
    assert_eq!((of(100), of(101), of(103), of(102)), (100, 101, 101, 102));
}

#[test]
fn version_5_fixture_keeps_loading() {
    let bytes = std::fs::read(data_dir().join("v5.json")).unwrap();
    assert_matches_schema(&bytes);
    assert_eq!(
        read(&bytes[..]).unwrap(),
        super::scopes_tests::scoped_session()
    );
}

#[test]
fn version_6_fixture_keeps_loading_and_is_what_is_written() {
    let bytes = std::fs::read(data_dir().join("v6.json")).unwrap();
    assert_matches_schema(&bytes);
    let mut session = super::scopes_tests::scoped_session();
    session.tasks.polls[0].waited_at = Some(StackId(0));
    assert_eq!(read(&bytes[..]).unwrap(), session);
    assert_eq!(to_bytes(&session), bytes.trim_ascii_end());
}

/// A session of `prof record --calls`: counted functions beside the samples.
fn calls_session() -> Session {
    let mut session = rich_session();
    session.counted = vec![
        CountedFunction {
            name: "demo::hot".into(),
            module: "/usr/bin/demo".into(),
            offset: 0x1130,
            calls: 12_345,
            inlined: Some(true),
            timed: Some(crate::session::TimedCalls {
                calls: 12_340,
                total_ns: 98_765_432,
                self_ns: 54_321_000,
            }),
        },
        CountedFunction {
            name: "memchr".into(),
            module: "/lib/x86_64-linux-gnu/libc.so.6".into(),
            offset: 0x9a4c0,
            calls: 0,
            inlined: None,
            timed: None,
        },
    ];
    session
}

#[test]
fn counted_calls_round_trip_and_a_row_missing_a_field_is_refused() {
    let session = calls_session();
    let bytes = to_bytes(&session);
    assert_eq!(read(&bytes[..]).unwrap(), session);
    let text = String::from_utf8(bytes).unwrap();
    let broken = text.replacen(r#","calls":12345"#, "", 1);
    assert_ne!(broken, text);
    let message = read(broken.as_bytes()).unwrap_err().to_string();
    assert!(message.contains("calls"), "{message}");
}

/// Files before version 4 have no process table; their threads all belong to the one
/// process their metadata describes, even where a (foreign) writer put a `process` in a row.
#[test]
fn threads_of_files_before_version_4_belong_to_the_process_meta_describes() {
    for name in ["v1.json", "v2.json", "v3.json"] {
        let bytes = std::fs::read(data_dir().join(name)).unwrap();
        let session = read(&bytes[..]).unwrap();
        assert!(session.processes.is_empty(), "{name}");
        assert_eq!(session.process_table().len(), 1, "{name}");
        assert!(session.threads.iter().all(|t| t.process == ProcessIdx(0)));
    }
    let v1 = read(&std::fs::read(data_dir().join("v1.json")).unwrap()[..]).unwrap();
    assert_eq!(
        v1.process_table()[0],
        Process {
            pid: 4242,
            parent_pid: None,
            name: "demo".into(),
            command_line: vec!["/usr/bin/demo".into(), "--fast".into()],
            executable: Some("/usr/bin/demo".into()),
        }
    );
    let text = String::from_utf8(std::fs::read(data_dir().join("v3.json")).unwrap()).unwrap();
    let foreign = text.replace(r#"{"tid":2,"name":4}"#, r#"{"tid":2,"name":4,"process":5}"#);
    assert_ne!(foreign, text);
    let session = read(foreign.as_bytes()).unwrap();
    assert!(session.threads.iter().all(|t| t.process == ProcessIdx(0)));
}

#[test]
fn a_thread_of_a_process_not_in_the_table_is_refused() {
    let text = String::from_utf8(to_bytes(&multi_process_session())).unwrap();
    let bad = text.replace(r#""process":2"#, r#""process":3"#);
    assert_ne!(bad, text);
    let err = read(bad.as_bytes()).unwrap_err().to_string();
    assert_eq!(err, "threads[3].process: 3 is out of range (3 processes)");
}

#[test]
fn version_2_fixture_keeps_loading() {
    let bytes = std::fs::read(data_dir().join("v2.json")).unwrap();
    assert_matches_schema(&bytes);
    let session = read(&bytes[..]).unwrap();
    assert_eq!(session, counted_session());
    assert_eq!(session.sample_count(), 299);
    assert_eq!(session.samples.len(), 3);
}

#[test]
fn mappings_read_back_and_bad_ones_are_refused() {
    let bytes = to_bytes(&mapped_session());
    let session = read(&bytes[..]).unwrap();
    let m = session.mapping_at(0x7f00_0000_0042).unwrap();
    assert_eq!(
        (session.str(m.path), m.build_id.as_deref()),
        ("/lib/libx.so", None)
    );
    let text = String::from_utf8(bytes).unwrap();
    let empty = text.replace(r#""limit":139637976793088"#, r#""limit":139637976727552"#);
    assert_ne!(empty, text);
    let err = read(empty.as_bytes()).unwrap_err().to_string();
    assert_eq!(
        err,
        "mappings[1]: limit 0x7f0000000000 is not above start 0x7f0000000000"
    );
}

/// Aggregating a loaded session never panics and accounts for every sample's weight, and writing
/// it again gives a file the schema accepts and that reads back the same.
fn exercise(session: &Session) {
    use crate::aggregate::{CallTree, Filter, SortBy};
    let tree = CallTree::new(session, &Filter::all());
    let total: u128 = session.samples.weight.iter().map(|&w| u128::from(w)).sum();
    if total <= u128::from(u64::MAX) {
        assert_eq!(u128::from(tree.total_weight(tree.root())), total);
    }
    tree.top(session, 5, SortBy::Total);
    tree.flame(tree.root(), 1);
    let mut out = Vec::new();
    write(session, &mut out).unwrap();
    assert_matches_schema(&out);
    assert_eq!(&read(&out[..]).unwrap(), session);
}

/// Replaces one leaf of the JSON tree, chosen by `pick`, with `new`.
fn replace_leaf(value: &mut Value, pick: usize, new: Value) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let key = map.keys().nth(pick % map.len()).unwrap().clone();
            replace_leaf(map.get_mut(&key).unwrap(), pick / 3, new);
        }
        Value::Array(items) if !items.is_empty() => {
            let len = items.len();
            replace_leaf(&mut items[pick % len], pick / 3, new);
        }
        _ => *value = new,
    }
}

/// Cases per fuzz test: 300 in CI (about a second), more with `PROF_FUZZ_CASES=N`.
/// One byte-level edit: at a position, with a byte, of a kind (0 replace, 1 insert, 2 remove,
/// 3 truncate), as the byte-damage fuzz passes generate them.
pub(crate) type ByteEdit = (prop::sample::Index, u8, u8);

/// Applies byte-level `edits` to `bytes` in order.
pub(crate) fn apply_edits(bytes: &mut Vec<u8>, edits: &[ByteEdit]) {
    for (at, byte, op) in edits {
        if bytes.is_empty() {
            break;
        }
        let i = at.index(bytes.len());
        match op {
            0 => bytes[i] = *byte,
            1 => bytes.insert(i, *byte),
            2 => {
                bytes.remove(i);
            }
            _ => bytes.truncate(i),
        }
    }
}

/// How many cases each fuzz pass runs: `PROF_FUZZ_CASES`, or 300.
pub(crate) fn fuzz_cases() -> u32 {
    std::env::var("PROF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

fn leaf_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..64).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        ".{0,8}".prop_map(Value::from),
        proptest::collection::vec(any::<u8>(), 0..24).prop_map(|bytes| {
            use base64::Engine as _;
            Value::from(base64::engine::general_purpose::STANDARD.encode(bytes))
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

    /// Byte-level damage: flips, cuts and splices anywhere in a valid file.
    #[test]
    fn mutated_bytes_are_refused_cleanly_or_load_consistently(
        seed in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..6),
    ) {
        let mut bytes = seed.get(corpus().as_slice()).clone();
        apply_edits(&mut bytes, &edits);
        match read(&bytes[..]) {
            Ok(session) => exercise(&session),
            Err(ReadError::Invalid(message)) => prop_assert!(!message.contains('\n'), "{}", message),
            Err(ReadError::Io(e)) => prop_assert!(false, "I/O error from a byte slice: {}", e),
        }
    }

    /// Structure-aware damage: one value anywhere in the JSON replaced by another of any type,
    /// including packed columns of random bytes.
    #[test]
    fn mutated_values_are_refused_cleanly_or_load_consistently(
        seed in any::<prop::sample::Index>(),
        pick in any::<usize>(),
        new in leaf_value(),
    ) {
        let mut value: Value = serde_json::from_slice(seed.get::<Vec<u8>>(corpus())).unwrap();
        replace_leaf(&mut value, pick, new);
        let bytes = serde_json::to_vec(&value).unwrap();
        match read(&bytes[..]) {
            Ok(session) => exercise(&session),
            Err(ReadError::Invalid(message)) => prop_assert!(!message.contains('\n'), "{}", message),
            Err(ReadError::Io(e)) => prop_assert!(false, "I/O error from a byte slice: {}", e),
        }
    }
}
