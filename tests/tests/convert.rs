//! `prof convert` end to end: every export opened by the tool made to read it (`go tool pprof`,
//! speedscope's own JSON schema, an XML parser, Graphviz `dot`), and imports round-tripped.
//!
//! The tools are installed by `.ci/run`; a test fails (never skips) when one is missing.

use prof::aggregate::{CallTree, Filter, SortBy};
use prof::session::{FrameSpec, Metadata, Session, SessionBuilder};
use prof_e2e::{prof, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/data/import/<name>`.
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/import")
        .join(name)
}

/// A session like a recording: named threads, modules, addresses, lines, an inlined frame and
/// distinct self weights so rankings have no ties.
fn recorded_session() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "/usr/bin/demo".into(),
        args: vec!["--iterations".into(), "10".into()],
        requested_interval_ns: 1_000_000,
        achieved_interval_ns: 1_000_000,
        duration_ns: 2_000_000_000,
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let mut address = 0x5000;
    let mut frame = |b: &mut SessionBuilder, name: &str, inlined: bool| {
        address += 0x40;
        b.intern_frame(&FrameSpec {
            name,
            file: Some("src/demo.rs"),
            line: Some(10 + (address as u32 & 0xff)),
            module: Some("/usr/bin/demo"),
            address: Some(address),
            inlined,
        })
    };
    let main = frame(&mut b, "main", false);
    let run = frame(&mut b, "demo::run", false);
    let hash = frame(&mut b, "demo::hash", false);
    let write = frame(&mut b, "core::hash::Hasher::write", true);
    let parse = frame(&mut b, "demo::parse", false);
    let utf8 = frame(&mut b, "core::str::from_utf8", false);
    let spin = frame(&mut b, "demo::worker::spin", false);
    let start = frame(&mut b, "thread_start", false);
    let stacks = [
        (vec![main, run, hash, write], 0, 900),
        (vec![main, run, hash], 0, 350),
        (vec![main, run, parse, utf8], 0, 610),
        (vec![main, run, parse], 0, 120),
        (vec![main, run], 0, 40),
        (vec![start, spin], 1, 470),
    ];
    let threads = [b.thread(100, "main"), b.thread(101, "worker-1")];
    let mut time = 0;
    // Interleave the stacks so that each appears several times.
    for round in 0..5u64 {
        for (path, thread, ms) in &stacks {
            let leaf = b.intern_stack_path(path).unwrap();
            time += 1_000_000;
            b.push_sample(leaf, threads[*thread], time, ms * 1_000_000 / 5 + round);
        }
    }
    b.finish()
}

/// Saves the recorded session in `dir` and returns its path.
fn saved_session(dir: &TempDir) -> (Session, PathBuf) {
    let session = recorded_session();
    let path = dir.join("demo.json.gz");
    prof::session::save(&session, &path).unwrap();
    (session, path)
}

/// Saves the recorded session in a directory of its own for `test` and converts it to `output`
/// there (format inferred from the name): the directory, the session and the output's path.
fn exported(test: &str, output: &str) -> (TempDir, Session, PathBuf) {
    let dir = TempDir::new(test);
    let (session, path) = saved_session(&dir);
    let out = dir.join(output);
    convert(&[path.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    (dir, session, out)
}

fn convert(args: &[&str]) -> std::process::Output {
    let out = prof(&[&["convert"], args].concat());
    assert!(
        out.status.success(),
        "prof convert {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `input` converted to folded stacks by `prof convert`.
fn to_folded(input: &Path) -> String {
    let out = convert(&[input.to_str().unwrap(), "--to", "folded", "-o", "-"]);
    String::from_utf8(out.stdout).unwrap()
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

fn run_tool(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} could not run ({e}): run .ci/run's install step"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The function names of `go tool pprof -top`, in its order (by flat weight).
fn pprof_top(file: &Path) -> Vec<String> {
    let text = run_tool(
        Command::new("go")
            .args(["tool", "pprof", "-top", "-nodefraction=0"])
            .arg(file),
    );
    let rows = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"));
    rows.skip(1)
        .map(|l| l.split_whitespace().skip(5).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn go_tool_pprof_ranks_functions_as_prof_does() {
    let (_dir, session, out) = exported("pprof-top", "demo.pb.gz");
    let tree = CallTree::new(&session, &Filter::all());
    let ours: Vec<String> = tree
        .top(&session, 100, SortBy::SelfWeight)
        .into_iter()
        .filter(|row| row.self_weight > 0)
        .map(|row| row.name)
        .collect();
    let theirs = pprof_top(&out);
    // pprof marks functions inlined at every call site.
    let theirs: Vec<&str> = theirs
        .iter()
        .map(|n| n.trim_end_matches(" (inline)"))
        .collect();
    assert_eq!(
        theirs[..ours.len()],
        ours[..],
        "go tool pprof -top:\n{theirs:#?}"
    );
    // Threads are sample labels.
    let tags = run_tool(
        Command::new("go")
            .args(["tool", "pprof", "-tags"])
            .arg(&out),
    );
    assert!(
        tags.contains("thread: ") && tags.contains("worker-1"),
        "{tags}"
    );
}

#[test]
fn a_pprof_rewritten_by_go_tool_pprof_imports_to_the_same_stacks() {
    let (dir, _, ours) = exported("pprof-import", "ours.pb.gz");
    let path = dir.join("demo.json.gz");
    // go tool pprof -proto re-encodes the profile with Go's own writer.
    let theirs = dir.join("theirs.pb.gz");
    let mut go = Command::new("go");
    go.args(["tool", "pprof", "-proto", "-output"])
        .arg(&theirs)
        .arg(&ours);
    run_tool(&mut go);
    let direct = sorted_lines(&to_folded(&path));
    assert_eq!(sorted_lines(&to_folded(&theirs)), direct);
    assert_eq!(direct.len(), 6, "{direct:#?}");
}

#[test]
fn speedscope_export_matches_speedscopes_own_schema() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node/node_modules/speedscope/dist/release/file-format-schema.json");
    let schema = std::fs::read(&schema_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: run .ci/run's install step (npm speedscope 1.25)",
            schema_path.display()
        )
    });
    let schema: serde_json::Value = serde_json::from_slice(&schema).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let dir = TempDir::new("speedscope");
    let (_, path) = saved_session(&dir);
    for (input, output) in [
        (path, "demo.speedscope.json"),
        (data("sample.perf.txt"), "perf.speedscope.json"),
    ] {
        let out = dir.join(output);
        convert(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&file)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{output}: {errors:#?}");
        let frames = file["shared"]["frames"].as_array().unwrap();
        let mut names: Vec<&str> = frames.iter().map(|f| f["name"].as_str().unwrap()).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "{output}: duplicate frames");
        assert_eq!(
            file["profiles"].as_array().unwrap().len(),
            2,
            "{output}: one per thread"
        );
    }
}

#[test]
fn the_svg_is_well_formed_xml_with_a_frame_per_function() {
    use quick_xml::events::Event;
    let (_dir, session, out) = exported("svg", "demo.svg");
    let svg = std::fs::read_to_string(&out).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    let (mut in_title, mut titles, mut in_script) = (false, Vec::new(), false);
    loop {
        match reader.read_event() {
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) => {
                in_title = e.name().as_ref() == b"title";
                in_script |= e.name().as_ref() == b"script";
            }
            Ok(Event::Text(t)) if in_title => titles.push(t.decode().unwrap().into_owned()),
            Ok(_) => {}
            Err(e) => panic!("not well-formed at {}: {e}", reader.error_position()),
        }
    }
    assert!(in_script, "the zoom and search script is embedded");
    for frame in session.frames.iter() {
        let name = session.str(frame.name);
        assert!(
            titles.iter().any(|t| t.starts_with(&format!("{name} ("))),
            "{name} has no frame: {titles:#?}"
        );
    }
    assert!(svg.contains("demo --iterations 10"), "the session title");
}

#[test]
fn graphviz_lays_out_the_dot_call_graph() {
    let (_dir, _, out) = exported("dot", "demo.dot");
    // Graphviz 2.42 crashed on edge weights above 2^31 (raw nanoseconds) before they were scaled.
    let svg = run_tool(Command::new("dot").arg("-Tsvg").arg(&out));
    assert!(
        svg.contains("demo::hash") && svg.contains("class=\"edge\""),
        "{svg}"
    );
}

#[test]
fn folded_stacks_round_trip() {
    let original = std::fs::read_to_string(data("sample.folded")).unwrap();
    let converted = to_folded(&data("sample.folded"));
    assert_eq!(sorted_lines(&converted), sorted_lines(&original));
}

#[test]
fn perf_script_converts_to_the_expected_folded_stacks() {
    let got = to_folded(&data("sample.perf.txt"));
    let expected = data("sample.perf.folded");
    if std::env::var_os("PROF_BLESS").is_some() {
        std::fs::write(&expected, &got).unwrap();
    }
    assert_eq!(
        got,
        std::fs::read_to_string(&expected).unwrap(),
        "PROF_BLESS=1 rewrites it"
    );
}

/// `tests/data/import/perf-reference-rules.perf` holds one sample per rule by which
/// stackcollapse-perf.pl and inferno's collapse-perf name frames (unknown frames, JVM classes,
/// argument lists, Go methods, `(inlined)`, `->` inlining, half-demangled Rust, process names in
/// the chain, blank symbols, `;` in names, a sample without frames, names that sort differently
/// by bytes than depth first); the expected file is their output, sorted as they sort it.
#[test]
fn perf_script_folds_as_the_reference_collapsers_fold_it() {
    let input = data("perf-reference-rules.perf");
    let expected = std::fs::read_to_string(data("perf-reference-rules.folded")).unwrap();
    let out = convert(&[
        input.to_str().unwrap(),
        "--to",
        "folded",
        "--process-root",
        "-o",
        "-",
    ]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    // Without the option: the same stacks without their process root, but for the sample that
    // had no frame, which keeps its weight under its process name.
    let mut without: Vec<String> = expected
        .lines()
        .map(|l| l.split_once(';').map_or(l, |(_, rest)| rest).to_owned())
        .collect();
    without.sort();
    assert_eq!(sorted_lines(&to_folded(&input)), without);
}

#[test]
fn imports_convert_to_session_files_that_load() {
    let dir = TempDir::new("to-session");
    for input in ["sample.folded", "sample.perf.txt"] {
        let out = dir.join(&format!("{input}.json.gz"));
        convert(&[data(input).to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let session = prof::session::load(&out).unwrap();
        assert!(session.meta.timer.starts_with("import:"), "{input}");
        assert!(session.total_weight() > 0);
    }
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_file() {
    let dir = TempDir::new("convert-bad");
    let bad = dir.join("bad.folded");
    std::fs::write(&bad, "main;work 12\nmain;oops 1.5\n").unwrap();
    let out = prof(&[
        "convert",
        bad.to_str().unwrap(),
        "-o",
        dir.join("x.svg").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.folded: line 2: weight `1.5` is fractional"),
        "{err}"
    );
    assert!(!dir.join("x.svg").exists());

    let out = prof(&[
        "convert",
        data("sample.folded").to_str().unwrap(),
        "-o",
        "out.unknown",
    ]);
    assert_eq!(out.status.code(), Some(2), "no format given or implied");

    let unwritable = dir.join("no/such/dir/out.svg");
    let out = prof(&[
        "convert",
        data("sample.folded").to_str().unwrap(),
        "-o",
        unwritable.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn prof_report_reads_every_imported_format() {
    let (_dir, _, pprof) = exported("report-imports", "demo.pb.gz");
    for input in [data("sample.perf.txt"), data("sample.folded"), pprof] {
        let out = prof(&["report", input.to_str().unwrap(), "--top", "3"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}: {}",
            input.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("hash"), "{}: {text}", input.display());
    }
}

/// A function name as `go tool pprof` prints it: with every `<...>` group (generic arguments,
/// `<T as Trait>` qualifiers) removed.
fn as_pprof_shows(name: &str) -> String {
    let mut depth = 0;
    name.chars()
        .filter(|&c| {
            match c {
                '<' => depth += 1,
                '>' if depth > 0 => {
                    depth -= 1;
                    return false;
                }
                _ => {}
            }
            depth == 0
        })
        .collect()
}

#[inline(never)]
fn busy_hashing(rounds: u64) -> u64 {
    (0..rounds).fold(0xcbf2_9ce4_8422_2325_u64, |h, i| {
        (h ^ std::hint::black_box(i)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn a_recorded_profile_opens_in_go_tool_pprof_without_resymbolization() {
    let report = prof::profile(prof::Options::default(), || {
        let start = std::time::Instant::now();
        let mut x = 0;
        while start.elapsed() < std::time::Duration::from_millis(400) {
            x ^= busy_hashing(100_000);
        }
        x
    })
    .unwrap();
    let dir = TempDir::new("recorded-pprof");
    let path = dir.join("recorded.json.gz");
    report.save(&path).unwrap();
    let out = dir.join("recorded.pb.gz");
    convert(&[path.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let mut go = Command::new("go");
    go.args(["tool", "pprof", "-top", "-nodefraction=0"])
        .arg(&out);
    let result = go.output().expect("go runs");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    // Mappings say they are symbolized, so pprof does not look for the binary.
    assert!(!stderr.contains("symboliz"), "{stderr}");
    // The start time and duration come across from the session's metadata.
    let stdout = String::from_utf8_lossy(&result.stdout);
    let start = report.session().meta.start_time_ns.unwrap();
    let year = &prof::session::rfc3339_utc(start)[..4];
    let time_line = stdout.lines().find(|l| l.starts_with("Time: "));
    assert!(time_line.is_some_and(|l| l.contains(year)), "{stdout}");
    assert!(stdout.contains("Duration: "), "{stdout}");
    // pprof's heaviest function is one of prof's heaviest (samples of other test threads can tie).
    let ours = report.top(usize::MAX);
    let theirs = pprof_top(&out);
    // pprof drops a name's file suffix (prof's "spec_next<u64> (range.rs)" shows as
    // "spec_next") when it also drops template arguments, and keeps it otherwise.
    let first = theirs[0].trim_end_matches(" (inline)");
    let shows_as_first = |name: &str| {
        let shown = as_pprof_shows(name);
        shown == first
            || shown
                .strip_prefix(first)
                .is_some_and(|rest| rest.starts_with(" (") && name.contains('<'))
    };
    let row = ours.iter().find(|r| shows_as_first(&r.name));
    assert!(
        row.is_some_and(|r| r.self_weight == ours[0].self_weight),
        "pprof: {theirs:#?}\nprof: {:#?}",
        &ours[..ours.len().min(5)]
    );
    assert!(
        theirs.iter().any(|name| name.ends_with("busy_hashing")),
        "{theirs:#?}"
    );
}

#[test]
fn an_overflowing_import_never_becomes_a_session_file_report_refuses() {
    let dir = TempDir::new("convert-overflow");
    let input = dir.join("overflow.folded");
    std::fs::write(
        &input,
        "main;a 18446744073709551615\nmain;b 18446744073709551615\n",
    )
    .unwrap();
    let out_path = dir.join("out.json");
    let out = prof(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "session",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the weights add up to more than 2^64 - 1"),
        "{err}"
    );
    assert!(!out_path.exists());
}

#[test]
fn convert_takes_the_sample_type_and_perf_keeps_every_sample() {
    let dir = TempDir::new("convert-type");
    let out_path = dir.join("heap.json");
    let out = convert(&[
        data("go-heap.pb.gz").to_str().unwrap(),
        "--type",
        "alloc_space",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let session = prof::session::load(&out_path).unwrap();
    assert_eq!(session.meta.sample_type.name, "alloc_space");
    // A perf import keeps one row per sample, with its time from the first sample.
    let out_path = dir.join("perf.json");
    convert(&[
        data("perf-task-clock-callchains.perf").to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let session = prof::session::load(&out_path).unwrap();
    assert_eq!(session.samples.len(), 31);
    assert_eq!(session.sample_count(), 31);
    assert_eq!(session.samples.time_ns[0], 0);
    assert!(session.samples.time_ns.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(session.meta.sample_type.name, "task-clock");
}

/// Regression: pprof mappings were the first to last address seen, at offset 0, without a build
/// ID and named by the file's base name only, so `go tool pprof -disasm` found no binary to read.
/// With the real mappings it opens the recorded binary and prints its instructions with their
/// weights.
///
/// The program is `src/bin/record_hashing.rs`, a fixed-address executable: Go's bundled
/// `go tool pprof` disassembles no position-independent one (it compares sampled addresses with
/// the file's symbol addresses unrelocated), and reads no build IDs, so it also refuses copies on
/// `PPROF_BINARY_PATH` of a binary whose mapping has one; upstream pprof does both.
#[test]
fn go_tool_pprof_disassembles_a_recorded_binary() {
    let dir = TempDir::new("pprof-disasm");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("record_hashing");
    std::fs::copy(env!("CARGO_BIN_EXE_record_hashing"), &exe).unwrap();
    let recorded = dir.join("recorded.json");
    run_tool(Command::new(&exe).arg(&recorded));
    let session = prof::session::load(&recorded).unwrap();
    let main = &session.mappings[0];
    assert_eq!(session.str(main.path), exe.to_str().unwrap());
    assert!(main.build_id.is_some(), "a GNU build ID");
    let out = dir.join("recorded.pb.gz");
    convert(&[recorded.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let nowhere = dir.join("no-binaries-here");
    std::fs::create_dir_all(&nowhere).unwrap();
    let text = run_tool(
        Command::new("go")
            .args(["tool", "pprof", "-disasm=hash_rounds"])
            .arg(&out)
            .current_dir(dir.path())
            .env("PPROF_BINARY_PATH", &nowhere),
    );
    assert!(text.contains("ROUTINE ="), "{text}");
    // Instruction lines: `flat cum address: instruction`, a weight where samples fell.
    let weighed = text
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (flat, cum, address) = (words.next()?, words.next()?, words.next()?);
            let address = address.strip_suffix(':')?;
            u64::from_str_radix(address, 16).ok()?;
            Some((flat, cum))
        })
        .filter(|&(flat, cum)| flat != "." || cum != ".")
        .count();
    assert!(weighed > 0, "no instruction has a weight:\n{text}");
}
