//! Flame graph SVG drawn by the `inferno` crate (native only): searchable (Ctrl+F) and zoomable
//! (click a frame) in a browser, titled with the session's program and arguments.

use crate::aggregate::thousands;
use crate::session::{Session, Unit};
use crate::{Error, Result};
use inferno::flamegraph::{self, Options};
use std::io::Write;

/// Writes `session` as an interactive flame graph SVG: the same stacks as
/// [`write_folded`](super::write_folded), widths in the session's weight unit.
pub fn write_svg(session: &Session, out: impl Write) -> Result<()> {
    let mut folded = Vec::new();
    super::write_folded(session, &mut folded)?;
    let folded = String::from_utf8_lossy(&folded);
    if folded.is_empty() {
        return Err(Error::Write(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the session has no samples to draw",
        )));
    }
    let mut options = Options::default();
    options.title = super::title(session);
    options.subtitle = Some(subtitle(session));
    options.count_name = match session.meta.sample_type.unit {
        Unit::Count => session.meta.sample_type.name.clone(),
        unit => unit.name().to_owned(),
    };
    flamegraph::from_lines(&mut options, folded.lines(), out)?;
    Ok(())
}

/// `cpu profile, 1234 samples, 3 threads` and the start time when known.
fn subtitle(session: &Session) -> String {
    let meta = &session.meta;
    let mut text = format!(
        "{} profile, {} samples, {} threads",
        meta.mode.name(),
        thousands(session.sample_count()),
        session.threads.len()
    );
    if !meta.start_time.is_empty() {
        text.push_str(", started ");
        text.push_str(&meta.start_time);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_svg_is_titled_and_has_a_frame_per_function() {
        let mut out = Vec::new();
        write_svg(&crate::export::fixture::session(), &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(svg.contains("demo --fast"), "title");
        assert!(
            svg.contains("cpu profile, 6 samples, 2 threads"),
            "subtitle"
        );
        for name in ["main", "work", "hash", "idle"] {
            assert!(svg.contains(&format!("<title>{name} (")), "{name}");
        }
    }

    #[test]
    fn an_empty_session_is_an_error_not_an_empty_picture() {
        let err = write_svg(&Session::default(), Vec::new()).unwrap_err();
        assert!(err.to_string().contains("no samples"), "{err}");
    }
}
