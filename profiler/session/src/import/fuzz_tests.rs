//! Property tests: any input, sniffed and read by the importer its format names (or by every
//! importer), is refused with a one-line error or yields a session every exporter can write and
//! whose session file reads back; it never panics. Random bytes, text built from the pieces of
//! `perf script` and folded lines, and damaged pprof.

use super::{read_folded, read_import, read_perf_script_with, read_pprof, sniff, LoadOptions};
use crate::export::{pprof, speedscope, write_folded};
use crate::session::file_tests::{apply_edits, fuzz_cases};
use crate::session::Session;
use proptest::prelude::*;
use std::path::Path;

/// How many cases each import pass runs: four times [`fuzz_cases`], so the four passes together
/// run a few thousand (4,800 by default) in a few seconds.
fn import_cases() -> u32 {
    fuzz_cases().saturating_mul(4)
}

/// A valid uncompressed pprof encoding of the exporters' test session.
fn pprof_bytes() -> Vec<u8> {
    use prost::Message;
    pprof::to_profile(&crate::export::fixture::session()).encode_to_vec()
}

/// Writes `session` in every pure format, and as a session file that must read back.
fn export_all(session: &Session) -> Result<(), TestCaseError> {
    write_folded(session, Vec::new()).expect("folded");
    speedscope::write_speedscope(session, Vec::new()).expect("speedscope");
    pprof::write_pprof(session, Vec::new()).expect("pprof");
    let mut file = Vec::new();
    crate::session::write(session, &mut file).expect("session");
    let back = crate::session::read(&file[..]);
    prop_assert!(
        back.is_ok(),
        "a written session is refused: {:?}",
        back.err()
    );
    prop_assert_eq!(back.unwrap().sample_count(), session.sample_count());
    Ok(())
}

fn check(result: crate::error::Result<Session>) -> Result<(), TestCaseError> {
    match result {
        Ok(session) => export_all(&session)?,
        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
    }
    Ok(())
}

/// Reads `bytes` as `load_any_with` would after sniffing, and with every importer.
fn check_everywhere(bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = Path::new("fuzz");
    let format = sniff(bytes);
    let options = LoadOptions::default();
    check(read_import(format, bytes, path, &options).map(|l| l.session))?;
    for format in [
        super::Format::Folded,
        super::Format::PerfScript,
        super::Format::Pprof,
    ] {
        check(read_import(format, bytes, path, &options).map(|l| l.session))?;
    }
    Ok(())
}

/// One line of text that looks like `perf script` output, in any of its layouts, or like a
/// folded line, or damaged.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let comm = "[a-z ]{0,6}[0-9]?";
    let tid = "([0-9]{1,5}/)?[0-9]{1,20}";
    let event = "(cpu-clock|task-clock|cycles|sched:switch)(:[upH]{1,3})?";
    let frame = "[0-9a-f]{0,17}( [a-z:<>()_]{0,8}(\\+0x[0-9a-f]{1,3})?)?( \\([/a-z.()]{0,8}\\)?)?";
    let bytes = proptest::collection::vec(any::<u8>(), 0..12);
    prop_oneof![
        (
            comm,
            tid,
            "( \\[[0-9]{3}\\])?",
            "( [0-9]{1,7}\\.[0-9]{1,12}:)?",
            "( [0-9]{1,20})?",
            event,
            "( |:)?",
            frame
        )
            .prop_map(|(c, t, cpu, time, period, e, sep, f)| {
                format!("{c} {t}{cpu}{time}{period} {e}:{sep}{f}").into_bytes()
            }),
        ("[\\t ]{0,3}", frame).prop_map(|(indent, f)| format!("{indent}{f}").into_bytes()),
        "(#.{0,8}|([a-z ]{0,4};){0,4}[a-z ]{0,4} -?[0-9.]{0,21}( [0-9]{1,3})?)"
            .prop_map(String::into_bytes),
        Just(Vec::new()),
        bytes,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: import_cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_refused_cleanly_or_import(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        check_everywhere(&bytes)?;
    }

    #[test]
    fn perf_and_folded_like_text_is_refused_cleanly_or_imports(
        lines in proptest::collection::vec(line(), 0..12),
        wanted in proptest::option::of("(cpu-clock|cycles|samples|x)"),
    ) {
        let text = lines.join(&b'\n');
        check_everywhere(&text)?;
        let options = LoadOptions {
            sample_type: wanted,
            ..LoadOptions::default()
        };
        check(read_perf_script_with(&text[..], Path::new("fuzz.perf"), &options).map(|l| l.session))?;
    }

    #[test]
    fn damaged_pprof_is_refused_cleanly_or_imports(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..6),
    ) {
        let mut bytes = pprof_bytes();
        apply_edits(&mut bytes, &edits);
        let _ = sniff(&bytes);
        check(read_pprof(&bytes, Path::new("fuzz.pb")))?;
    }

    #[test]
    fn any_text_is_refused_cleanly_or_imports_as_folded(text in "(([a-z:<> ]{0,6};){0,4}[a-z]{0,4} ?[0-9]{0,3}\n?){0,6}") {
        let _ = sniff(text.as_bytes());
        check(read_folded(text.as_bytes(), Path::new("fuzz.folded")))?;
    }
}
