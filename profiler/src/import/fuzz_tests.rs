//! Property tests: damaged pprof and folded input is refused with a one-line error or yields a
//! session every exporter can write; it never panics.

use super::{read_folded, read_pprof, sniff};
use crate::export::{pprof, speedscope, write_folded};
use crate::session::file_tests::{apply_edits, fuzz_cases};
use crate::session::Session;
use proptest::prelude::*;
use std::path::Path;

/// A valid uncompressed pprof encoding of the exporters' test session.
fn pprof_bytes() -> Vec<u8> {
    use prost::Message;
    pprof::to_profile(&crate::export::fixture::session()).encode_to_vec()
}

/// Writes `session` in every pure format; each must succeed.
fn export_all(session: &Session) {
    write_folded(session, Vec::new()).expect("folded");
    speedscope::write_speedscope(session, Vec::new()).expect("speedscope");
    pprof::write_pprof(session, Vec::new()).expect("pprof");
}

fn check(result: crate::Result<Session>) -> Result<(), TestCaseError> {
    match result {
        Ok(session) => export_all(&session),
        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

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
