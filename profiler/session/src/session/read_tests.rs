//! Round trips and refusals of the session reader and writer.

use super::*;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write as _;

/// A session exercising every field: optional frame fields, two threads interleaved, times that
/// go back between threads, weights that go down.
pub(crate) fn rich_session() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "/usr/bin/demo".into(),
        args: vec!["--fast".into()],
        pid: 4242,
        hostname: "box".into(),
        os: "linux".into(),
        arch: "x86_64".into(),
        start_time_ns: Some(1_795_348_800_000_000_000),
        duration_ns: 2_000_000_000,
        mode: Mode::Cpu,
        requested_interval_ns: 1_000_000,
        achieved_interval_ns: 1_010_000,
        timer: "perf_event".into(),
        dropped_samples: 3,
        sampling_ended: None,
        sample_type: SampleType::new("cpu", Unit::Nanoseconds),
        extra_sample_types: vec![],
        prof_version: "0.1.0".into(),
    });
    let main = b.intern_frame(&FrameSpec {
        file: Some("src/main.rs"),
        line: Some(10),
        module: Some("/usr/bin/demo"),
        address: Some(0x5555_0000_1234),
        ..FrameSpec::named("demo::main")
    });
    let inl = b.intern_frame(&FrameSpec {
        inlined: true,
        address: Some(0x5555_0000_1234),
        ..FrameSpec::named("demo::helper")
    });
    let hot = b.intern_frame(&FrameSpec::named("demo::hot"));
    let s1 = b.intern_stack_path(&[main, inl]).unwrap();
    let s2 = b.intern_stack_path(&[main, hot]).unwrap();
    let t1 = b.thread(100, "main");
    let t2 = b.thread(101, "worker");
    b.push_sample(s1, t1, 5_000_000, 1_000_000);
    b.push_sample(s2, t2, 1_000_000, 900_000);
    b.push_sample(s2, t1, 6_000_000, 1_100_000);
    b.push_sample(s1, t2, 2_000_000, u64::MAX / 2);
    b.push_sample(s1, t2, 2_000_000, 0);
    b.finish()
}

pub(crate) fn to_bytes(session: &Session) -> Vec<u8> {
    let mut out = Vec::new();
    write(session, &mut out).unwrap();
    out
}

fn invalid(bytes: &[u8]) -> String {
    match read(bytes) {
        Err(ReadError::Invalid(message)) => message,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// The file as JSON text with one replacement made (which must apply).
fn edited(from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(to_bytes(&rich_session())).unwrap();
    assert!(text.contains(from), "{from} not in {text}");
    text.replacen(from, to, 1).into_bytes()
}

#[test]
fn a_session_round_trips_through_json_and_gzip() {
    let session = rich_session();
    let bytes = to_bytes(&session);
    assert_eq!(read(&bytes[..]).unwrap(), session);
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&bytes).unwrap();
    assert_eq!(read(&gz.finish().unwrap()[..]).unwrap(), session);
    let empty = SessionBuilder::default().finish();
    assert_eq!(read(&to_bytes(&empty)[..]).unwrap(), empty);
}

#[test]
fn when_and_why_sampling_ended_early_round_trips_and_older_readers_may_skip_it() {
    let mut session = rich_session();
    session.meta.sampling_ended = Some(crate::session::SamplingEnded {
        at_ns: 1_500_000_000,
        reason: "the program replaced prof's SIGPROF handler".into(),
    });
    let bytes = to_bytes(&session);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(r#""sampling_ended":{"at_ns":1500000000,"reason":"#));
    assert_eq!(read(&bytes[..]).unwrap(), session);
    // Optional and additive: the file's version stays, and without it the field is None.
    assert!(!to_bytes(&rich_session())
        .windows(14)
        .any(|w| w == b"sampling_ended"));
}

#[test]
fn the_json_only_reader_reads_json_and_refuses_gzip_and_sizes_past_its_limit() {
    let session = rich_session();
    let bytes = to_bytes(&session);
    assert_eq!(
        read_json_bytes(&bytes, ReadOptions::default()).unwrap(),
        session
    );
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&bytes).unwrap();
    let message = read_json_bytes(&gz.finish().unwrap(), ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(message.starts_with("gzip-compressed"), "{message}");
    let small = ReadOptions::default().max_bytes(bytes.len() as u64 - 1);
    let message = read_json_bytes(&bytes, small).unwrap_err().to_string();
    // Natively (`fs`) the message names the command line's way to lift the limit; in the
    // page, whose limit is the browser's, it does not.
    let limit = if cfg!(feature = "fs") {
        "(the limit for a session file, which `--max-input MIB` lifts)"
    } else {
        "(the limit for a session file)"
    };
    assert!(message.ends_with(limit), "{message}");
}

#[test]
fn the_file_starts_with_format_and_version() {
    let text = String::from_utf8(to_bytes(&rich_session())).unwrap();
    assert!(
        text.starts_with(r#"{"format":"prof-session","version":6,"meta":{"#),
        "{text}"
    );
}

#[test]
fn a_newer_version_names_both_versions() {
    let message = invalid(&edited(r#""version":6"#, r#""version":7"#));
    assert!(
        message.contains("version 7") && message.contains("version 6"),
        "{message}"
    );
}

#[test]
fn another_format_or_no_format_is_refused() {
    let message = invalid(&edited(
        r#""format":"prof-session""#,
        r#""format":"speedscope""#,
    ));
    assert!(message.contains("not a prof session"), "{message}");
    let message = invalid(&edited(r#""format":"prof-session","#, ""));
    assert!(message.contains("not a prof session"), "{message}");
}

#[test]
fn empty_garbage_and_truncated_inputs_say_what_is_wrong() {
    assert_eq!(invalid(b""), "empty file");
    assert!(invalid(b"\x8f\x00garbage").contains("starts with byte 0x8f"));
    let bytes = to_bytes(&rich_session());
    let message = invalid(&bytes[..bytes.len() / 2]);
    assert!(
        message.contains("EOF") && message.contains("line 1"),
        "{message}"
    );
    let message = invalid(&[0x1f, 0x8b, 8, 0, 0, 0]);
    assert!(message.contains("gzip"), "{message}");
}

#[test]
fn wrong_types_name_the_position() {
    let message = invalid(&edited(r#""pid":4242"#, r#""pid":"many""#));
    assert!(
        message.contains("invalid type") && message.contains("column"),
        "{message}"
    );
}

#[test]
fn out_of_range_indices_name_the_entry() {
    let message = invalid(&edited(r#"{"name":1,"#, r#"{"name":99,"#));
    assert_eq!(message, "frames[0].name: 99 is out of range (8 strings)");
    let message = invalid(&edited(
        r#"{"tid":100,"name":"#,
        r#"{"tid":100,"name":1000,"x":"#,
    ));
    assert!(message.contains("unknown field"), "{message}");
}

#[test]
fn a_parent_after_its_child_is_refused() {
    // Stack parents are offsets back; 5 from the first stack points before the table.
    let bad = super::packed::encode([5, 1, 2]);
    let text = String::from_utf8(to_bytes(&rich_session())).unwrap();
    let start = text.find(r#""stacks":{"parent":""#).unwrap() + r#""stacks":{"parent":""#.len();
    let end = start + text[start..].find('"').unwrap();
    let text = format!("{}{bad}{}", &text[..start], &text[end..]);
    let message = invalid(text.as_bytes());
    assert!(
        message.starts_with("stacks.parent[0]: offset 5"),
        "{message}"
    );
}

#[test]
fn a_gzip_bomb_stops_at_the_limit() {
    // 4 MiB of spaces inside a valid start compresses to a few KiB.
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(br#"{"format":"prof-session","strings":[""#)
        .unwrap();
    gz.write_all(&vec![b' '; 4 << 20]).unwrap();
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 64 << 10);
    let options = ReadOptions::default().max_bytes(1 << 20);
    let message = match read_with(&bomb[..], options) {
        Err(ReadError::Invalid(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(message.contains("larger than 1 MiB"), "{message}");
}

/// The file as JSON text with the packed column that follows `key` (e.g. `"thread":"`, the
/// first such key after `after`) replaced by `column`.
fn with_column(after: &str, key: &str, column: &str) -> Vec<u8> {
    let text = String::from_utf8(to_bytes(&rich_session())).unwrap();
    let from = text.find(after).unwrap();
    let start = from + text[from..].find(key).unwrap() + key.len();
    let end = start + text[start..].find('"').unwrap();
    format!("{}{column}{}", &text[..start], &text[end..]).into_bytes()
}

#[test]
fn sample_columns_of_the_wrong_length_name_the_column_and_both_lengths() {
    // rich_session has 5 samples on threads 0 and 1.
    let short = super::packed::encode([0, 1, 0]);
    let message = invalid(&with_column(r#""samples""#, r#""thread":""#, &short));
    assert_eq!(message, "samples.thread: has 3 entries, expected 5");
    let long = super::packed::encode([0; 7]);
    let message = invalid(&with_column(r#""samples""#, r#""time_delta":""#, &long));
    assert_eq!(message, "samples.time_delta: has 7 entries, expected 5");
    // rich_session has 3 stacks.
    let two = super::packed::encode([0, 1]);
    let message = invalid(&with_column(r#""stacks""#, r#""frame":""#, &two));
    assert_eq!(message, "stacks.frame: has 2 entries, expected 3");
}

#[test]
fn broken_packed_columns_name_the_column() {
    let message = invalid(&with_column(r#""samples""#, r#""weight_delta":""#, "!!!!"));
    assert!(
        message.starts_with("samples.weight_delta: not base64"),
        "{message}"
    );
    let truncated = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [0x80]);
    let message = invalid(&with_column(r#""samples""#, r#""stack":""#, &truncated));
    assert_eq!(message, "samples.stack: broken varint at decoded byte 0");
}

#[test]
fn a_huge_sample_count_is_refused_without_reserving_for_it() {
    // The count sizes the columns' reservation only up to what the columns can hold.
    let bytes = edited(r#""count":5"#, r#""count":18446744073709551615"#);
    let message = invalid(&bytes);
    assert!(
        message.starts_with("samples.thread: has 5 entries, expected 18446744073709551615"),
        "{message}"
    );
}

#[test]
fn escaped_column_strings_read_like_plain_ones() {
    // JSON may escape any character, "/" included: such a column cannot be borrowed from the
    // input and is unescaped into its own string instead.
    let session = rich_session();
    let text = String::from_utf8(to_bytes(&session)).unwrap();
    // Re-escape the first character of the samples' stack column.
    let at = text.find(r#""samples""#).unwrap();
    let start = at + text[at..].find(r#""stack":""#).unwrap() + r#""stack":""#.len();
    let first = text[start..].chars().next().unwrap();
    let escaped_text = format!(
        "{}\\u{:04x}{}",
        &text[..start],
        first as u32,
        &text[start + 1..]
    );
    assert!(escaped_text.contains(r#""stack":"\u00"#), "{escaped_text}");
    assert_eq!(read_bytes(escaped_text.as_bytes()).unwrap(), session);
    assert_eq!(read(escaped_text.as_bytes()).unwrap(), session);
}

#[test]
fn reading_from_memory_equals_reading_a_stream() {
    let session = rich_session();
    let json = to_bytes(&session);
    assert_eq!(read_bytes(&json).unwrap(), session);
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&json).unwrap();
    assert_eq!(read_bytes(&gz.finish().unwrap()).unwrap(), session);
    let small = ReadOptions::default().max_bytes(100);
    match read_bytes_with(&json, small) {
        Err(ReadError::Invalid(m)) => assert!(m.contains("larger than 0 MiB"), "{m}"),
        other => panic!("{other:?}"),
    }
    match read_bytes(b"garbage") {
        Err(ReadError::Invalid(m)) => assert!(m.contains("starts with byte 0x67"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// A session with several sample types (one a plain sample count, one stored) and per-sample
/// thread states, as wall and alloc modes record.
pub(crate) fn typed_session() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        mode: Mode::Wall,
        ..Metadata::default()
    });
    b.set_sample_types(
        SampleType::new("wall", Unit::Nanoseconds),
        vec![SampleType::samples(), SampleType::new("waits", Unit::Count)],
    );
    let f = b.intern_frame(&FrameSpec::named("f"));
    let g = b.intern_frame(&FrameSpec::named("g"));
    let sf = b.intern_stack_path(&[f]).unwrap();
    let sg = b.intern_stack_path(&[f, g]).unwrap();
    let t1 = b.thread(1, "main");
    let t2 = b.thread(2, "io");
    b.push_sample_full(sf, t1, 10, &[1_000, 0], 1, Some(SampleState::Running));
    b.push_sample_full(sg, t2, 12, &[3_000, 7], 3, Some(SampleState::Waiting));
    b.push_sample_full(sg, t1, 20, &[500, 2], 1, Some(SampleState::Waiting));
    b.finish()
}

#[test]
fn several_sample_types_and_states_round_trip() {
    let session = typed_session();
    assert_eq!(session.samples.extra_weights, [None, Some(vec![0, 7, 2])]);
    let bytes = to_bytes(&session);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"extra_weight_delta\":[null,"), "{text}");
    assert_eq!(read(&bytes[..]).unwrap(), session);
    let names: Vec<&str> = session
        .sample_types()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["wall", "samples", "waits"]);
    assert_eq!(
        session.samples.state,
        [
            SampleState::Running,
            SampleState::Waiting,
            SampleState::Waiting
        ]
    );
}

#[test]
fn selecting_a_sample_type_makes_it_the_weight_and_keeps_the_others() {
    let mut s = typed_session();
    s.select_sample_type("samples").unwrap();
    assert_eq!(s.samples.weight, [1, 3, 1]);
    assert_eq!(s.meta.sample_type, SampleType::samples());
    let names: Vec<&str> = s.sample_types().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["samples", "wall", "waits"]);
    assert_eq!(s.samples.extra_weight(0, 1), 3_000);
    s.select_sample_type("waits").unwrap();
    assert_eq!(s.total_weight(), 9);
    // The sample count, no longer primary, is again stored as no column at all.
    assert_eq!(s.samples.extra_weights[0], None);
    s.select_sample_type("wall").unwrap();
    assert_eq!(s.total_weight(), 4_500);
    let bytes = to_bytes(&s);
    assert_eq!(read(&bytes[..]).unwrap(), s);
    let err = s.select_sample_type("cpu").unwrap_err().to_string();
    assert_eq!(
        err,
        "no sample type `cpu` (available: wall, waits, samples)"
    );
}

#[test]
fn bad_extra_columns_and_states_are_refused_with_their_field() {
    let text = String::from_utf8(to_bytes(&typed_session())).unwrap();
    let fewer = text.replacen(
        "\"extra_weight_delta\":[null,",
        "\"extra_weight_delta\":[",
        1,
    );
    assert!(
        matches!(read(fewer.as_bytes()), Err(ReadError::Invalid(m)) if m.contains("has 1 columns")),
    );
    let mut bad = typed_session();
    bad.samples.state.clear();
    let state = String::from_utf8(to_bytes(&typed_session())).unwrap();
    // A state of 2 (varint 2 is base64 "Ag==" for one value; the column holds three).
    let start = state.find("\"state\":\"").unwrap() + 9;
    let end = start + state[start..].find('"').unwrap();
    let broken = format!("{}AgIC{}", &state[..start], &state[end..]);
    match read(broken.as_bytes()) {
        Err(ReadError::Invalid(m)) => assert!(m.starts_with("samples.state[0]: 2 is not"), "{m}"),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// Found by `file_tests::mutated_values_are_refused_cleanly_or_load_consistently`: a session whose
/// sample type name was empty loaded, and the file written back broke the schema.
#[test]
fn an_empty_sample_type_name_is_refused_with_its_field() {
    let text = String::from_utf8(to_bytes(&typed_session())).unwrap();
    for (field, from, to) in [
        (
            "meta.sample_type.name",
            r#""sample_type":{"name":"wall""#,
            r#""sample_type":{"name":"""#,
        ),
        (
            "meta.extra_sample_types[0].name",
            r#""extra_sample_types":[{"name":"samples""#,
            r#""extra_sample_types":[{"name":"""#,
        ),
    ] {
        assert!(text.contains(from), "{from} in {text}");
        match read(text.replacen(from, to, 1).as_bytes()) {
            Err(ReadError::Invalid(m)) => assert!(m.starts_with(field), "{m}"),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }
}

/// A fuzz run: a unit written `n\noseconds` (a JSON escape) made serde's "unknown
/// variant" message quote a line break, and the one-line error took two lines.
#[test]
fn an_error_quoting_the_file_stays_on_one_line() {
    let message = invalid(&edited(r#""nanoseconds""#, r#""n\noseconds\u0007""#));
    assert!(
        message.contains(r"n\noseconds\u{7}") && !message.chars().any(char::is_control),
        "{message}"
    );
}

/// Room for a gzipped session's JSON is reserved from its gzip trailer, which a
/// forged file could set to 4 GiB: the hint never exceeds what deflate makes of the file's
/// bytes (1032 to 1).
#[test]
fn a_forged_gzip_trailer_reserves_no_more_than_deflate_can_make() {
    use super::io::{gzip_bytes_size_hint, gzip_size_hint};
    assert_eq!(gzip_size_hint([0xff; 4], 100), 103_200);
    assert_eq!(gzip_size_hint(42u32.to_le_bytes(), 100), 42);
    let json = vec![b' '; 5000];
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&json).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(gzip_bytes_size_hint(&gz), 5000);
    assert_eq!(gzip_bytes_size_hint(b"{\"format\": 1}"), 0);
    assert_eq!(gzip_bytes_size_hint(&[0x1f, 0x8b]), 0);
}

#[test]
fn times_that_start_at_zero_or_are_all_zero_round_trip() {
    // The builder and the reader keep no time column until a time other than 0 comes (a
    // session without times gets its zeros at the end, in one untouched allocation): rows
    // of time 0 before the first timed one must keep their place.
    for times in [[0, 0, 0, 0], [0, 0, 5, 7], [3, 0, 0, 0]] {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let t = b.thread(1, "main");
        for (i, &time) in times.iter().enumerate() {
            b.push_sample(s, t, time, i as u64 + 1);
        }
        let session = b.finish();
        assert_eq!(session.samples.time_ns, times);
        assert_eq!(session.samples.weight, [1, 2, 3, 4]);
        assert_eq!(read(&to_bytes(&session)[..]).unwrap(), session, "{times:?}");
    }
}

/// The start time is held as nanoseconds and written as RFC 3339 text, as every version wrote
/// it: any RFC 3339 time reads (an offset, no fraction), and text that is none is refused in
/// one line naming the field, where it used to be kept as it was.
#[test]
fn start_times_read_from_any_rfc3339_text_and_other_text_is_refused() {
    let text = String::from_utf8(to_bytes(&rich_session())).unwrap();
    assert!(
        text.contains(r#""start_time":"2026-11-22T12:00:00.000Z""#),
        "{text}"
    );
    let with = |start: &str| {
        text.replace(
            r#""start_time":"2026-11-22T12:00:00.000Z""#,
            &format!(r#""start_time":"{start}""#),
        )
    };
    let read_start = |start: &str| read(with(start).as_bytes()).map(|s| s.meta.start_time_ns);
    assert_eq!(
        read_start("2026-11-22T13:00:00+01:00").unwrap(),
        Some(1_795_348_800_000_000_000)
    );
    assert_eq!(
        read_start("2026-11-22T12:00:00Z").unwrap(),
        Some(1_795_348_800_000_000_000)
    );
    assert_eq!(read_start("").unwrap(), None);
    let err = read_start("yesterday").unwrap_err().to_string();
    assert!(
        err.contains(r#"start_time "yesterday" is not an RFC 3339 time"#),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
