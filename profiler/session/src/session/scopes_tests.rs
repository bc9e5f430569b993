//! Scopes, marks and tasks (format version 5): round trips and the reader's refusals.

use super::read_tests::to_bytes;
use super::*;
use serde_json::Value;

/// A session with two threads, nested scopes with fields, marks, tasks polled on both threads,
/// and samples inside and outside scopes and polls: every version 5 table and column.
pub(crate) fn scoped_session() -> Session {
    let mut b = SessionBuilder::default();
    let main = b.thread(100, "main");
    let worker = b.thread(101, "worker");
    let request = b.intern_site("request", Some("src/server.rs"), Some(40), SiteKind::Scope);
    let parse = b.intern_site("parse", Some("src/parse.rs"), Some(7), SiteKind::Scope);
    let gc = b.intern_site("gc", None, None, SiteKind::Mark);
    assert_eq!(
        b.intern_site("parse", Some("src/parse.rs"), Some(7), SiteKind::Scope),
        parse
    );
    let id = b.field("id", "7");
    let outer = b.push_span(Span {
        site: request,
        thread: main,
        start_ns: 1_000,
        end_ns: 9_000,
        parent: None,
        fields: vec![id],
    });
    let inner = b.push_span(Span {
        site: parse,
        thread: main,
        start_ns: 2_000,
        end_ns: 5_000,
        parent: Some(outer),
        fields: Vec::new(),
    });
    // A span on another thread that starts before the last one (deltas per thread).
    let other = b.push_span(Span {
        site: parse,
        thread: worker,
        start_ns: 500,
        end_ns: 500,
        parent: None,
        fields: Vec::new(),
    });
    let freed = b.field("freed", "1 MB");
    b.push_mark(Mark {
        site: gc,
        thread: worker,
        time_ns: 3_000,
        fields: vec![freed],
    });
    b.push_mark(Mark {
        site: gc,
        thread: main,
        time_ns: 2_500,
        fields: Vec::new(),
    });
    b.add_dropped_events(2);
    let fetch = b.intern_task(11, "fetch");
    let store = b.intern_task(12, "store");
    b.push_poll(Poll {
        task: fetch,
        thread: main,
        start_ns: 1_500,
        end_ns: 4_000,
        waited_at: None,
    });
    b.push_poll(Poll {
        task: store,
        thread: worker,
        start_ns: 400,
        end_ns: 600,
        waited_at: None,
    });
    let f = b.intern_frame(&FrameSpec::named("work"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    b.push_sample(stack, main, 100, 10);
    b.push_sample(stack, main, 3_000, 10);
    b.set_last_sample_context(Some(inner), Some(fetch));
    b.push_sample(stack, worker, 500, 10);
    b.set_last_sample_context(Some(other), None);
    b.push_sample(stack, main, 6_000, 10);
    b.set_last_sample_context(Some(outer), None);
    b.push_sample(stack, main, 9_500, 10);
    b.finish()
}

/// The file of [`scoped_session`] as JSON, edited by `edit`, read back: the reader's one-line
/// refusal.
fn refusal(edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_slice(&to_bytes(&scoped_session())).unwrap();
    edit(&mut value);
    let bytes = serde_json::to_vec(&value).unwrap();
    match read(&bytes[..]) {
        Err(ReadError::Invalid(message)) => message,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn packed(values: &[u64]) -> Value {
    Value::from(super::packed::encode(values.iter().copied()))
}

#[test]
fn scopes_marks_tasks_and_sample_contexts_round_trip() {
    let session = scoped_session();
    assert_eq!(session.samples.scope.len(), session.samples.len());
    assert_eq!(session.samples.task.len(), session.samples.len());
    assert_eq!(session.samples.scope(0), None);
    assert_eq!(session.samples.task(1), Some(TaskIdx(0)));
    // A sample pushed after the columns exist gets a `None` row of its own.
    assert_eq!(session.samples.scope(4), None);
    let bytes = to_bytes(&session);
    super::file_tests::assert_matches_schema(&bytes);
    let back = read(&bytes[..]).unwrap();
    assert_eq!(back, session);
    assert_eq!(back.scopes.dropped_events, 2);
    assert_eq!(back.str(back.scopes.spans[0].fields[0].value), "7");
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains(r#""version":6"#));
}

#[test]
fn a_session_without_scopes_or_tasks_writes_neither() {
    let mut session = scoped_session();
    session.scopes = Scopes::default();
    session.tasks = Tasks::default();
    session.samples.scope.clear();
    session.samples.task.clear();
    let text = String::from_utf8(to_bytes(&session)).unwrap();
    for key in ["scopes", "tasks", "\"scope\"", "\"task\""] {
        assert!(!text.contains(key), "{key} in {text}");
    }
    assert_eq!(read(text.as_bytes()).unwrap(), session);
}

#[test]
fn a_span_of_a_missing_site_or_thread_is_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["site"] = packed(&[0, 5, 1])),
        "scopes.spans.site[1]: 5 is out of range (3 sites)"
    );
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["thread"] = packed(&[0, 0, 2])),
        "scopes.spans.thread[2]: 2 is out of range (2 threads)"
    );
}

#[test]
fn a_span_at_a_mark_site_and_a_mark_at_a_scope_site_are_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["site"] = packed(&[0, 2, 1])),
        "scopes.spans.site[1]: site 2 is a mark, not a scope"
    );
    assert_eq!(
        refusal(|v| v["scopes"]["marks"]["site"] = packed(&[2, 0])),
        "scopes.marks.site[1]: site 0 is a scope, not a mark"
    );
}

#[test]
fn a_span_ending_past_2_64_is_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["duration"] = packed(&[8_000, u64::MAX, 0])),
        "scopes.spans.duration[1]: the end passes 2^64 ns"
    );
    assert_eq!(
        refusal(|v| v["tasks"]["polls"]["duration"] = packed(&[u64::MAX, 0])),
        "tasks.polls.duration[0]: the end passes 2^64 ns"
    );
}

#[test]
fn a_parent_span_after_its_child_is_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["parent"] = packed(&[0, 2, 0])),
        "scopes.spans.parent[1]: offset 2 points before the first span \
         (a parent must come before its child)"
    );
}

#[test]
fn columns_of_the_wrong_length_are_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["count"] = Value::from(2)),
        "scopes.spans.site: has 3 entries, expected 2"
    );
    assert_eq!(
        refusal(|v| v["scopes"]["marks"]["time_delta"] = packed(&[1])),
        "scopes.marks.time_delta: has 1 entries, expected 2"
    );
    assert_eq!(
        refusal(|v| v["tasks"]["polls"]["thread"] = packed(&[0, 1, 1])),
        "tasks.polls.thread: has 3 entries, expected 2"
    );
    assert_eq!(
        refusal(|v| v["samples"]["scope"] = packed(&[0, 2])),
        "samples.scope: has 2 entries, expected 5"
    );
}

#[test]
fn fields_naming_missing_strings_or_miscounted_are_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["fields"]["value"] = packed(&[999])),
        format!(
            "scopes.spans.fields.value[0] (of row 0): 999 is out of range ({} strings)",
            scoped_session().strings.len()
        )
    );
    assert_eq!(
        refusal(|v| v["scopes"]["marks"]["fields"]["count"] = packed(&[2, 0])),
        "scopes.marks.fields.key: has 1 entries, expected 2"
    );
    assert_eq!(
        refusal(|v| v["scopes"]["spans"]["fields"]["key"] = packed(&[1, 1])),
        "scopes.spans.fields.key: has 2 entries, expected 1"
    );
}

#[test]
fn a_poll_of_a_missing_task_or_thread_is_refused() {
    assert_eq!(
        refusal(|v| v["tasks"]["polls"]["task"] = packed(&[0, 2])),
        "tasks.polls.task[1]: 2 is out of range (2 tasks)"
    );
    assert_eq!(
        refusal(|v| v["tasks"]["polls"]["thread"] = packed(&[0, 7])),
        "tasks.polls.thread[1]: 7 is out of range (2 threads)"
    );
    assert_eq!(
        refusal(|v| v["tasks"]["tasks"][0]["name"] = Value::from(999)),
        format!(
            "tasks.tasks[0].name: 999 is out of range ({} strings)",
            scoped_session().strings.len()
        )
    );
}

#[test]
fn a_sample_in_a_missing_span_or_task_is_refused() {
    assert_eq!(
        refusal(|v| v["samples"]["scope"] = packed(&[0, 2, 3, 1, 4])),
        "samples.scope[4]: 3 is out of range (3 spans)"
    );
    assert_eq!(
        refusal(|v| v["samples"]["task"] = packed(&[0, 3, 0, 0, 0])),
        "samples.task[1]: 2 is out of range (2 tasks)"
    );
}

#[test]
fn a_site_naming_a_missing_string_is_refused() {
    assert_eq!(
        refusal(|v| v["scopes"]["sites"][1]["file"] = Value::from(999)),
        format!(
            "scopes.sites[1].file: 999 is out of range ({} strings)",
            scoped_session().strings.len()
        )
    );
}
