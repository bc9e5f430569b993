//! `prof report` on session files, good and bad, as a user runs it.

use prof::session::{save, Session, SessionBuilder};
use prof_e2e::{prof, sessions, TempDir};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// Two threads: `main` spends 60 ms in `parse`, `worker` 30 ms in `work` and 10 ms in itself.
fn session() -> Session {
    let mut b = SessionBuilder::default();
    b.meta_mut().program = "demo".into();
    let main = b.thread(1, "main");
    let worker = b.thread(2, "worker");
    for i in 0..6 {
        b.push_named(&["main", "parse"], main, i * 10_000_000, 10_000_000);
    }
    for i in 0..3 {
        b.push_named(&["start", "work"], worker, i * 10_000_000, 10_000_000);
    }
    b.push_named(&["start"], worker, 40_000_000, 10_000_000);
    b.finish()
}

fn saved(dir: &TempDir, name: &str) -> PathBuf {
    let path = dir.join(name);
    save(&session(), &path).unwrap();
    path
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The FRAME column of the table, in order.
fn frames(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().last().unwrap().to_owned())
        .collect()
}

#[test]
fn report_prints_the_top_functions_by_self_weight() {
    let dir = TempDir::new("report-self");
    for name in ["s.json", "s.json.gz"] {
        let out = prof(&["report", saved(&dir, name).to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.starts_with("demo: cpu mode, 10 samples, showing cpu (nanoseconds), 100 ms total"),
            "{text}"
        );
        assert_eq!(frames(&out), ["parse", "work", "start", "main"]);
        let parse: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(
            parse,
            ["60.0", "ms", "60.0%", "60.0", "ms", "60.0%", "parse"]
        );
    }
}

#[test]
fn report_sorts_by_total_limits_rows_and_filters_threads() {
    let dir = TempDir::new("report-options");
    let file = saved(&dir, "s.json");
    let file = file.to_str().unwrap();
    let out = prof(&["report", file, "--sort", "total", "--top", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Both have 60 ms in total; the tie goes to the one with more self weight.
    assert_eq!(frames(&out), ["parse", "main"]);
    let out = prof(&["report", file, "--thread", "worker"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(frames(&out), ["work", "start"]);
    assert!(
        stdout(&out).contains("4 samples, showing cpu (nanoseconds), 40.0 ms total"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_unknown_thread_or_sort_is_a_usage_error() {
    let dir = TempDir::new("report-usage");
    let file = saved(&dir, "s.json");
    let out = prof(&["report", file.to_str().unwrap(), "--thread", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no thread named \"nobody\""),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("main, worker"), "{}", stderr(&out));
    let out = prof(&["report", file.to_str().unwrap(), "--sort", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let out = prof(&["report", "/nonexistent/session.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("prof: /nonexistent/session.json: "),
        "{}",
        stderr(&out)
    );
}

/// Runs `prof report` on `path`, expecting one line on stderr that names the file and contains
/// `expected`, exit code 2, well within seconds.
fn refused(path: &Path, expected: &str) {
    let start = Instant::now();
    let out = prof(&["report", path.to_str().unwrap()]);
    let took = start.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("prof: {}: ", path.display())),
        "{err}"
    );
    assert!(err.contains(expected), "{expected:?} not in {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn session_text() -> String {
    let mut bytes = Vec::new();
    prof::session::write(&session(), &mut bytes).unwrap();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn broken_files_get_one_line_and_exit_code_2() {
    let dir = TempDir::new("report-broken");
    let text = session_text();
    refused(&write(&dir, "empty.json", b""), "empty file");
    refused(
        &write(&dir, "cut.json", &text.as_bytes()[..text.len() / 2]),
        "EOF while parsing",
    );
    refused(
        &write(
            &dir,
            "types.json",
            text.replacen("\"pid\":0", "\"pid\":[]", 1).as_bytes(),
        ),
        "invalid type: sequence, expected u32 at line 1 column",
    );
    refused(
        &write(
            &dir,
            "newer.json",
            text.replacen("\"version\":6", "\"version\":7", 1)
                .as_bytes(),
        ),
        "version 7 is newer than this prof reads (version 6)",
    );
    refused(
        &write(
            &dir,
            "index.json",
            text.replacen("{\"name\":1}", "{\"name\":77}", 1).as_bytes(),
        ),
        "frames[0].name: 77 is out of range",
    );
    refused(
        // Folded stacks are read from any other name; a `.json` name means a session file.
        &write(&dir, "text.json", b"main;parse 10\n"),
        "not a prof session: starts with byte 0x6d",
    );
}

#[test]
fn report_reads_profiles_from_other_tools() {
    let dir = TempDir::new("report-folded");
    let folded = write(&dir, "stacks.folded", b"main;parse 10\nmain;parse;lex 30\n");
    let out = prof(&["report", folded.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(frames(&out), ["lex", "parse", "main"]);
    // Folded weights are counts of unknown unit: shown as numbers, not as milliseconds.
    let text = stdout(&out);
    let lex: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!(lex, ["30", "75.0%", "30", "75.0%", "lex"]);
}

#[test]
fn the_version_1_fixture_reports() {
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/session/v1.json");
    let out = prof(&["report", v1.to_str().unwrap(), "--thread", "worker"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("worker [101] of /usr/bin/demo: cpu mode, 3 samples"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_gigabyte_of_random_bytes_fails_fast() {
    let dir = TempDir::new("report-random");
    let path = dir.join("random.json");
    let mut file = std::fs::File::create(&path).unwrap();
    // The first MiB is random (xorshift); the rest of the gigabyte is a sparse tail, which a
    // reader that stops at the first bad byte never reaches.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let chunk: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect();
    file.write_all(&chunk).unwrap();
    file.set_len(1 << 30).unwrap();
    drop(file);
    refused(&path, "not a prof session: starts with byte");
    // A gigabyte that starts like JSON is refused by its size, before it is read.
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all(b"{").unwrap();
    drop(file);
    refused(&path, "the file is 1024 MiB, larger than 256 MiB");
    // A mebibyte of random bytes under a name that is not a session's is sniffed (as pprof, being
    // binary) and refused; after a `{`, the JSON parser gives up with a position.
    refused(&write(&dir, "random.bin", &chunk), "");
    let mut bytes = chunk;
    bytes[0] = b'{';
    refused(&write(&dir, "brace.json", &bytes), "line 1 column");
    // Valid UTF-8 after a `{` is read as a session, and the JSON parser gives the position.
    let text: Vec<u8> = bytes[1..].iter().map(|b| b'a' + b % 26).collect();
    refused(
        &write(&dir, "letters.json", &[b"{".as_slice(), &text].concat()),
        "line 1 column 2",
    );
}

#[test]
fn a_gzip_bomb_is_refused_at_the_size_limit() {
    let bomb = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/session/bomb.json.gz");
    refused(&bomb, "larger than 256 MiB of JSON");
}

/// The rows of the table, each as its words joined by one space.
fn rows(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// `prof report` on [`sessions::transforms`] with `args`.
fn report_transforms(args: &[&str]) -> Output {
    let dir = TempDir::new("report-transforms");
    let file = dir.join("t.json");
    sessions::save(&sessions::transforms(), &file);
    let mut all = vec!["report", file.to_str().unwrap()];
    all.extend_from_slice(args);
    prof(&all)
}

/// The summary line of the table.
fn summary(out: &Output) -> String {
    stdout(out).lines().next().unwrap_or_default().to_owned()
}

#[test]
fn focus_keeps_the_samples_with_a_matching_frame() {
    let out = report_transforms(&["--focus", "^lex$"]);
    assert!(summary(&out).contains("5 samples"), "{}", summary(&out));
    assert_eq!(
        rows(&out),
        [
            "50.0 ms 100.0% 35.0 ms 70.0% lex",
            "15.0 ms 30.0% 15.0 ms 30.0% _int_malloc",
            "50.0 ms 100.0% 0 ns 0.0% main",
            "30.0 ms 60.0% 0 ns 0.0% parse",
            "15.0 ms 30.0% 0 ns 0.0% malloc",
            "5.00 ms 10.0% 0 ns 0.0% eval",
        ]
    );
}

#[test]
fn ignore_drops_the_samples_with_a_matching_frame() {
    let out = report_transforms(&["--ignore", "^(lex|work)$"]);
    assert_eq!(
        rows(&out),
        [
            "40.0 ms 80.0% 40.0 ms 80.0% add",
            "10.0 ms 20.0% 10.0 ms 20.0% parse",
            "50.0 ms 100.0% 0 ns 0.0% main",
            "40.0 ms 80.0% 0 ns 0.0% eval",
        ]
    );
}

#[test]
fn hide_and_merge_charge_the_callers_and_keep_the_total() {
    let out = report_transforms(&["--hide", "^(eval|parse)$"]);
    assert!(summary(&out).contains("12 samples"), "{}", summary(&out));
    assert_eq!(
        rows(&out),
        [
            "40.0 ms 33.3% 40.0 ms 33.3% add",
            "50.0 ms 41.7% 35.0 ms 29.2% lex",
            "20.0 ms 16.7% 20.0 ms 16.7% work",
            "15.0 ms 12.5% 15.0 ms 12.5% _int_malloc",
            "100 ms 83.3% 10.0 ms 8.3% main",
            "15.0 ms 12.5% 0 ns 0.0% malloc",
        ]
    );
    let out = report_transforms(&["--merge", "parse"]);
    assert!(rows(&out).contains(&"100 ms 83.3% 10.0 ms 8.3% main".to_owned()));
    assert!(!rows(&out).iter().any(|r| r.ends_with(" parse")));
}

#[test]
fn collapse_recursion_counts_a_recursive_run_once() {
    let out = report_transforms(&["--focus-function", "eval", "--collapse-recursion"]);
    assert_eq!(
        rows(&out),
        [
            "40.0 ms 88.9% 40.0 ms 88.9% add",
            "5.00 ms 11.1% 5.00 ms 11.1% lex",
            "45.0 ms 100.0% 0 ns 0.0% eval",
        ]
    );
}

#[test]
fn threads_repeat_and_from_to_choose_a_time_range() {
    let out = report_transforms(&[
        "--thread", "main", "--thread", "worker", "--from", "0.1", "--to", "0.35",
    ]);
    assert!(summary(&out).contains("6 samples"), "{}", summary(&out));
    assert_eq!(
        rows(&out),
        [
            "40.0 ms 72.7% 40.0 ms 72.7% add",
            "10.0 ms 18.2% 10.0 ms 18.2% parse",
            "5.00 ms 9.1% 5.00 ms 9.1% lex",
            "55.0 ms 100.0% 0 ns 0.0% main",
            "45.0 ms 81.8% 0 ns 0.0% eval",
        ]
    );
    let both = report_transforms(&["--thread", "main", "--thread", "worker"]);
    assert_eq!(rows(&both), rows(&report_transforms(&[])));
}

#[test]
fn drop_removes_the_samples_through_a_function() {
    let out = report_transforms(&["--drop", "eval"]);
    assert!(summary(&out).contains("75.0 ms total"), "{}", summary(&out));
    assert_eq!(
        rows(&out),
        [
            "45.0 ms 60.0% 30.0 ms 40.0% lex",
            "20.0 ms 26.7% 20.0 ms 26.7% work",
            "15.0 ms 20.0% 15.0 ms 20.0% _int_malloc",
            "40.0 ms 53.3% 10.0 ms 13.3% parse",
            "55.0 ms 73.3% 0 ns 0.0% main",
            "15.0 ms 20.0% 0 ns 0.0% malloc",
        ]
    );
}

#[test]
fn collapse_module_shows_a_library_as_one_frame() {
    let out = report_transforms(&["--collapse-module", "libc.so.6"]);
    let rows = rows(&out);
    assert!(rows.contains(&"15.0 ms 12.5% 15.0 ms 12.5% /lib/libc.so.6".to_owned()));
    assert!(!rows.iter().any(|r| r.ends_with("malloc")), "{rows:?}");
    assert_eq!(rows.len(), 7);
}

#[test]
fn bad_regexes_unknown_functions_and_ranges_are_one_line_and_exit_2() {
    for (args, expected) in [
        (
            &["--focus", "("][..],
            "invalid option: Focus /(/: invalid regex",
        ),
        (
            &["--hide", "[z-a]"],
            "invalid option: Hide /[z-a]/: invalid regex",
        ),
        (
            &["--merge", "nope"],
            "invalid option: Merge: nope: no function named \"nope\" in the profile",
        ),
        (&["--drop", "main "], "no function named \"main \""),
        (
            &["--collapse-module", "libz.so"],
            "no module named \"libz.so\"",
        ),
        (
            &["--from", "0.3", "--to", "0.2"],
            "--from/--to: the range from 0.3 s to 0.2 s ends before it starts",
        ),
        (
            &["--from=-1"],
            "--from/--to: the range's start -1 is not a number of seconds",
        ),
    ] {
        let out = report_transforms(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("prof: ") && err.contains(expected),
            "{args:?}: {err}"
        );
    }
}

/// `prof report` of `path` (with `extra` arguments) that must succeed: its stdout's header line.
fn header(path: &Path, extra: &[&str]) -> String {
    let out = prof(&[&["report", path.to_str().unwrap()], extra].concat());
    assert!(out.status.success(), "{}: {}", path.display(), stderr(&out));
    stdout(&out).lines().next().unwrap_or_default().to_owned()
}

/// `tests/data/import/<name>`: real files of other tools.
fn import_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/import")
        .join(name)
}

/// A protobuf field: `tag` holding the bytes `body` (a message or a string).
fn pb_bytes(field: u64, body: &[u8]) -> Vec<u8> {
    let mut out = pb_varint(field, body.len() as u64);
    out[0] = (field << 3 | 2) as u8;
    out.extend_from_slice(body);
    out
}

/// A protobuf field: `tag` with a varint `value`.
fn pb_varint(field: u64, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for mut v in [field << 3, value] {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// A pprof profile of one `cpu/nanoseconds` column with a sample per value, each at `main`.
fn pprof_with_values(values: &[i64]) -> Vec<u8> {
    let mut p = pb_bytes(1, &[pb_varint(1, 1), pb_varint(2, 2)].concat());
    for &v in values {
        p.extend(pb_bytes(
            2,
            &[pb_varint(1, 1), pb_varint(2, v as u64)].concat(),
        ));
    }
    p.extend(pb_bytes(
        4,
        &[pb_varint(1, 1), pb_bytes(4, &pb_varint(1, 1))].concat(),
    ));
    p.extend(pb_bytes(5, &[pb_varint(1, 1), pb_varint(2, 3)].concat()));
    for s in ["", "cpu", "nanoseconds", "main"] {
        p.extend(pb_bytes(6, s.as_bytes()));
    }
    p
}

#[test]
fn a_10_mb_folded_line_stays_within_10x_its_size() {
    let dir = TempDir::new("report-deep-line");
    let mut line = "ab;".repeat(3_333_333);
    line.push_str("leaf 1\n");
    let path = write(&dir, "deep.folded", line.as_bytes());
    // GNU time reports the peak resident set of the command in KiB.
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "peak %M"])
        .arg(prof_e2e::prof_bin())
        .args(["report", path.to_str().unwrap(), "--top", "2"])
        .output()
        .expect("/usr/bin/time runs");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("1 stack deeper than 4096 frames was cut at the root end"),
        "{err}"
    );
    let peak_kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("peak "))
        .and_then(|k| k.trim().parse().ok())
        .expect("time printed the peak");
    assert!(
        peak_kib < 100 << 10,
        "peak {peak_kib} KiB for a 10 MB input"
    );
    assert_eq!(frames(&out), ["leaf", "ab"]);
}

#[test]
fn empty_overflowing_and_negative_inputs_are_refused_in_every_format() {
    let dir = TempDir::new("report-refused-imports");
    let good = write(&dir, "good.pb", &pprof_with_values(&[5, 7]));
    assert!(header(&good, &[]).contains("2 samples, showing cpu (nanoseconds), 12 ns total"));
    let cases: [(&str, &[u8], &str); 8] = [
        ("empty.folded", b"", "empty file"),
        ("comments.folded", b"# only a comment\n", "no stacks found"),
        (
            "none.perf",
            b"\t    55aa01 hash+0x10 (/usr/bin/demo)\n",
            "a frame line before any event line",
        ),
        (
            "none.pb",
            &pprof_with_values(&[]),
            "the profile has no samples",
        ),
        (
            "negative.pb",
            &pprof_with_values(&[5, -5]),
            "sample 1 has a negative cpu value (-5)",
        ),
        (
            "overflow.folded",
            b"main;a 18446744073709551615\nmain;b 18446744073709551615\n",
            "line 2: the weights add up to more than 2^64 - 1",
        ),
        (
            "diff.folded",
            b"main;work 3 5\nmain 1 2\n",
            "compare the two profiles with `prof diff BASE NEW`",
        ),
        (
            "fraction.folded",
            b"main;work 31.5\n",
            "weight `31.5` is fractional",
        ),
    ];
    for (name, bytes, expected) in cases {
        refused(&write(&dir, name, bytes), expected);
    }
}

#[test]
fn every_perf_script_layout_reads() {
    let dir = TempDir::new("report-perf-layouts");
    // Real `perf record -e cpu-clock` without -g: the frame is on the (indented) event line.
    let out = prof(&[
        "report",
        import_data("perf-cpu-clock-no-callchain.perf")
            .to_str()
            .unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(frames(&out), ["hot", "cold"]);
    assert!(stdout(&out).contains("31 samples"), "{}", stdout(&out));
    let unindented = write(
        &dir,
        "old.perf",
        b"java 19983 cycles:\nffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n7f0000001000 main (/usr/bin/java)\n\n",
    );
    let out = prof(&["report", unindented.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(frames(&out), ["native_write_msr_safe", "main"]);
    // One byte that is not UTF-8 keeps a text file text, shown as U+FFFD.
    let perf = write(
        &dir,
        "byte.perf",
        b"burn 26036  7992.386479:    1001001 cpu-clock:pppH: \n\t            1226 hot70+0x55 (/opt/app/burn)\n\t            141d ma\xffin+0x39 (/opt/app/burn)\n\n",
    );
    let out = prof(&["report", perf.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(frames(&out), ["hot70", "ma\u{fffd}in"]);
    let folded = write(&dir, "byte.folded", b"main;w\xffork 3\n");
    let out = prof(&["report", folded.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(frames(&out), ["w\u{fffd}ork", "main"]);
}

#[test]
fn folded_comments_are_skipped_and_bad_lines_counted_on_one_warning_line() {
    let dir = TempDir::new("report-folded-lines");
    let path = write(
        &dir,
        "mixed.folded",
        b"# austin: 3.3.0\n# mode: wall\nmain;work 3\nmain;oops twelve\nnoweight\nmain 1\n",
    );
    let out = prof(&["report", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("4 samples"), "{}", stdout(&out));
    assert_eq!(frames(&out), ["work", "main"]);
    assert_eq!(
        stderr(&out),
        format!(
            "prof: warning: {}: skipped 2 lines that are not `frames weight` (first: line 4: \
             weight `twelve` is not a whole number)\n",
            path.display()
        )
    );
}

#[test]
fn go_profiles_count_samples_and_heap_types_are_a_choice() {
    // Go's runtime/pprof CPU profile: 24 samples in 6 rows.
    let cpu = import_data("go-cpu.pb.gz");
    let text = header(&cpu, &[]);
    assert!(
        text.contains("24 samples, showing cpu (nanoseconds), 240 ms total"),
        "{text}"
    );
    // A Go heap profile shows what `go tool pprof` shows by default: inuse_space.
    let heap = import_data("go-heap.pb.gz");
    let text = header(&heap, &[]);
    assert!(
        text.contains("alloc mode, 15 samples, showing inuse_space (bytes), 8.00 MiB total"),
        "{text}"
    );
    let text = header(&heap, &["--type", "alloc_space"]);
    assert!(
        text.contains("showing alloc_space (bytes), 15.8 MiB total"),
        "{text}"
    );
    let text = header(&heap, &["--type", "alloc_objects"]);
    assert!(text.contains("showing alloc_objects (count)"), "{text}");
    let out = prof(&["report", heap.to_str().unwrap(), "--type", "space"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "prof: {}: no sample type `space` (available: alloc_objects, alloc_space, \
             inuse_objects, inuse_space)\n",
            heap.display()
        )
    );
}

#[test]
fn perf_files_of_several_events_show_one_and_say_so() {
    // Real `perf record -e task-clock -e cpu-clock` output (cycles fall back to cpu-clock here).
    let path = import_data("perf-mixed-events.perf");
    let out = prof(&["report", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("3 samples, showing cpu-clock"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        stderr(&out),
        format!(
            "prof: warning: {}: the file holds samples of other events too, left out: \
             task-clock (3); choose one as the sample type\n",
            path.display()
        )
    );
    let text = header(&path, &["--type", "task-clock"]);
    assert!(text.contains("showing task-clock (nanoseconds)"), "{text}");
    let out = prof(&["report", path.to_str().unwrap(), "--type", "cycles"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).ends_with("no sample type `cycles` (available: cpu-clock, task-clock)\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn perf_script_headers_count_samples_in_the_events_unit() {
    let dir = TempDir::new("report-perf-units");
    let sample = "burn 1/1 [000] 1.0: 1000 cpu-clock:\n\t    55aa01 hot+0x10 (/bin/burn)\n\t    55aa03 main+0x30 (/bin/burn)\n\n";
    let identical = write(&dir, "identical.perf", sample.repeat(3).as_bytes());
    assert!(
        header(&identical, &[]).starts_with(
            "burn: cpu mode, 3 samples, showing cpu-clock (nanoseconds), 3.00 µs total"
        ),
        "{}",
        header(&identical, &[])
    );
    let cycles = write(
        &dir,
        "cycles.perf",
        b"swapper     0 [012] 2281339.604067:   20834821 cycles:\n        ffffffffc09ace93 idle_loop+0xb80 ([kernel.kallsyms])\n\n",
    );
    let text = header(&cycles, &[]);
    assert!(
        text.contains("1 samples, showing cycles (count), 20,834,821 total"),
        "{text}"
    );
    let out = prof(&["report", cycles.to_str().unwrap()]);
    let row: Vec<String> = stdout(&out)
        .lines()
        .nth(2)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        row,
        ["20,834,821", "100.0%", "20,834,821", "100.0%", "idle_loop"]
    );
    // Real `perf record -e task-clock -c 1000000 -g` output: 31 samples of 1 ms.
    let text = header(&import_data("perf-task-clock-callchains.perf"), &[]);
    assert!(
        text.contains("31 samples, showing task-clock (nanoseconds), 31.0 ms total"),
        "{text}"
    );
    // Real `perf script -F comm,tid,time,event,ip,sym` output has no period: one count each.
    let text = header(&import_data("perf-no-period.perf"), &[]);
    assert!(
        text.contains("31 samples, showing samples (count), 31 total"),
        "{text}"
    );
}

/// A regression test: `--waits` on files of other tools (folded stacks, perf script, pprof), which have
/// no tasks: one line saying so and exit code 2, from `report` and `convert` alike, and no file
/// written.
#[test]
fn waits_of_a_file_from_another_tool_is_one_line_and_exit_2() {
    let dir = TempDir::new("report-waits-import");
    let written = dir.join("waits.folded");
    let to = written.to_str().unwrap();
    for name in [
        "sample.folded",
        "perf-task-clock-callchains.perf",
        "go-cpu.pb.gz",
    ] {
        let path = import_data(name);
        let path = path.to_str().unwrap();
        // The file reads without --waits.
        header(Path::new(path), &[]);
        let report = ["report", path, "--waits"];
        let convert = ["convert", path, "--waits", "--to", "folded", "-o", to];
        for args in [&report[..], &convert[..]] {
            let out = prof(args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(
                err.starts_with("prof: invalid option: --waits: no task in ") && err.contains(name),
                "{args:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        }
        assert!(!written.exists(), "{name}: convert wrote {to}");
    }
}

/// `sh` (pid 10) and `node` (pid 40) with three threads all named `node`, thread 41 spending
/// 10 ms in `f41`, 42 20 ms in `f42`, 43 40 ms in `f43`.
fn same_named_threads() -> Session {
    use prof::session::Process;
    let mut b = SessionBuilder::default();
    b.meta_mut().program = "sh".into();
    let process = |pid, name: &str| Process {
        pid,
        name: name.into(),
        ..Process::default()
    };
    let sh = b.push_process(process(10, "sh"));
    let node = b.push_process(process(40, "node"));
    let t = b.thread_in(sh, 10, "sh");
    b.push_named(&["main", "wait"], t, 0, 10_000_000);
    for (tid, ms) in [(41, 1), (42, 2), (43, 4)] {
        let t = b.thread_in(node, tid, "node");
        let function = format!("f{tid}");
        for i in 0..ms {
            b.push_named(&["start", &function], t, i * 10_000_000, 10_000_000);
        }
    }
    b.finish()
}

#[test]
fn report_tid_keeps_exactly_one_of_several_same_named_threads_and_the_header_names_it() {
    let dir = TempDir::new("report-tid");
    let file = dir.join("node.json");
    save(&same_named_threads(), &file).unwrap();
    let file = file.to_str().unwrap();
    let report = |args: &[&str]| {
        let all = [&["report", file][..], args].concat();
        let out = prof(&all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        out
    };
    let out = report(&["--tid", "42"]);
    assert_eq!(frames(&out), ["f42", "start"]);
    assert!(
        stdout(&out).starts_with("node [42] of node [40]: cpu mode, 2 samples"),
        "{}",
        stdout(&out)
    );
    // A list, or the option repeated: the same two threads.
    for args in [&["--tid", "41,43"][..], &["--tid", "43", "--tid", "41"][..]] {
        let out = report(args);
        assert_eq!(frames(&out), ["f43", "f41", "start"], "{args:?}");
        assert!(
            stdout(&out).starts_with("node [41], node [43] of node [40]: cpu mode, 5 samples"),
            "{}",
            stdout(&out)
        );
    }
    // The name keeps all three; the header names what is shown, not the first process.
    let out = report(&["--thread", "node"]);
    assert_eq!(frames(&out), ["f43", "f42", "f41", "start"]);
    assert!(stdout(&out).starts_with("node [40]: cpu mode, 7 samples"));
    let out = report(&["--process", "node"]);
    assert!(stdout(&out).starts_with("node [40]: cpu mode, 7 samples"));
    let out = report(&[]);
    assert!(stdout(&out).starts_with("sh and 1 other process: cpu mode, 8 samples"));
    // An id no thread has: one line naming those there are.
    let out = prof(&["report", file, "--tid", "99"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "prof: invalid option: --tid: no thread 99 in {file} \
             (threads: 10 sh, 41 node, 42 node, 43 node)"
        )
    );
}

/// A prof allocation session (prof's type names) with two sites of known bytes.
fn prof_alloc_session() -> Session {
    use prof::session::{FrameSpec, Metadata, Mode, SampleType, Unit};
    let mut b = SessionBuilder::new(Metadata {
        program: "allocs".into(),
        mode: Mode::Alloc,
        ..Metadata::default()
    });
    b.set_sample_types(
        SampleType::new("alloc_bytes", Unit::Bytes),
        vec![
            SampleType::new("alloc_objects", Unit::Count),
            SampleType::new("inuse_bytes", Unit::Bytes),
            SampleType::new("inuse_objects", Unit::Count),
        ],
    );
    let t = b.thread(1, "main");
    let main = b.intern_frame(&FrameSpec::named("main"));
    let big = b.intern_frame(&FrameSpec::named("big_site"));
    let small = b.intern_frame(&FrameSpec::named("small_site"));
    let s_big = b.intern_stack_path(&[main, big]).unwrap();
    let s_small = b.intern_stack_path(&[main, small]).unwrap();
    b.push_sample_full(s_big, t, 0, &[3 << 20, 3, 1 << 20, 1], 1, None);
    b.push_sample_full(s_small, t, 1, &[1 << 20, 1024, 0, 0], 1, None);
    b.finish()
}

#[test]
fn allocation_profiles_carry_gos_heap_names_to_go_tool_pprof_and_both_names_choose_a_type() {
    let dir = TempDir::new("alloc-go-names");
    let path = dir.join("allocs.json");
    save(&prof_alloc_session(), &path).unwrap();
    let s = path.to_str().unwrap();
    let pb = dir.join("allocs.pb.gz");
    let out = prof(&["convert", s, "-o", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // What `/debug/pprof/allocs` names them, so go tool pprof's own names work on the file.
    for (index, total) in [
        ("alloc_space", "4MB"),
        ("inuse_space", "1MB"),
        ("alloc_objects", "1027"),
    ] {
        let out = std::process::Command::new("go")
            .args(["tool", "pprof", "-top", &format!("-sample_index={index}")])
            .arg(&pb)
            .output()
            .expect("go tool pprof runs (installed by .ci/run)");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{index}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(&format!("{total} total")), "{index}:\n{text}");
    }
    // Standard output carries the same bytes as the file (go tool pprof itself cannot read a
    // pipe, its own profiles included: it reads its input twice).
    let piped = prof(&["convert", s, "-o", "-", "--to", "pprof"]);
    assert!(piped.status.success());
    assert_eq!(piped.stdout, std::fs::read(&pb).unwrap());
    // prof report takes Go's name and prof's for one type.
    let go = prof(&["report", s, "--type", "alloc_space"]);
    let ours = prof(&["report", s, "--type", "alloc_bytes"]);
    assert!(go.status.success(), "{}", stderr(&go));
    assert_eq!(go.stdout, ours.stdout);
    let inuse = String::from_utf8(prof(&["report", s, "--type", "inuse_space"]).stdout).unwrap();
    assert!(
        inuse.contains("showing inuse_bytes (bytes), 1.00 MiB total"),
        "{inuse}"
    );
}
