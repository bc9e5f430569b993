//! Flame graph SVG drawn by the `inferno` crate (native only): searchable (Ctrl+F) and zoomable
//! (click a frame) in a browser, titled with the session's program and arguments.

use crate::aggregate::{thousands, DiffSide, DiffTree};
use crate::error::{Error, Result};
use crate::session::{Session, Unit};
use inferno::flamegraph::{self, Options};
use std::io::Write;

/// Writes `session` as an interactive flame graph SVG: the same stacks as
/// [`write_folded`](super::write_folded), widths in the session's weight unit.
pub fn write_svg(session: &Session, out: impl Write) -> Result<()> {
    FlameGraph::of(session)?.write(out)
}

/// What a flame graph SVG of a session is drawn from: its folded stacks and titles, made
/// first so that the session can be dropped before inferno draws (a million distinct stacks:
/// the session and inferno's frames at once passed 114 MiB).
pub struct FlameGraph {
    folded: String,
    options: Options<'static>,
}

impl FlameGraph {
    /// The stacks and titles of `session`'s flame graph; an error when it has no samples.
    pub fn of(session: &Session) -> Result<Self> {
        let mut folded = Vec::new();
        super::write_folded(session, &mut folded)?;
        let folded = match String::from_utf8(folded) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        if folded.is_empty() {
            return Err(Error::NoSamples {
                profile: "the session".to_owned(),
            });
        }
        let mut options = Options::default();
        options.title = super::title(session);
        options.subtitle = Some(subtitle(session));
        options.count_name = count_name(session);
        // The folded writer sorts its lines by their bytes already: inferno's own sort would
        // hold a pointer and length a line (16 MB for a million) for nothing.
        options.no_sort = true;
        Ok(FlameGraph { folded, options })
    }

    /// Draws the flame graph to `out`.
    pub fn write(mut self, out: impl Write) -> Result<()> {
        flamegraph::from_lines(&mut self.options, self.folded.lines(), out).map_err(Error::Write)
    }
}

/// Writes a differential flame graph of `new` against `base`: the frames are `new`'s, red where
/// a function's weight grew, blue where it shrank, the deeper the colour the larger the change
/// (inferno's differential mode, from differential folded stacks). Unless `absolute`, `base` is
/// first scaled to `new`'s total, so each side counts as a share of its own total. Profiles whose
/// weights are in different units are refused.
pub fn write_diff_svg(
    base: DiffSide<'_>,
    new: DiffSide<'_>,
    absolute: bool,
    out: impl Write,
) -> Result<()> {
    let diff = DiffTree::between(base, new, absolute)?;
    if diff.total_weight(0).1 == 0 {
        return Err(Error::NoSamples {
            profile: new.label.to_owned(),
        });
    }
    let mut folded = Vec::new();
    super::write_folded_diff(&diff, &mut folded)?;
    let folded = String::from_utf8_lossy(&folded);
    let mut options = Options::default();
    options.title = format!("{} against {}", new.label, base.label);
    options.subtitle = Some(format!(
        "red: grew, blue: shrank ({}); widths from {}",
        match absolute {
            true => "absolute weights",
            false => "as shares of each profile's total",
        },
        new.label
    ));
    options.count_name = count_name(new.session);
    flamegraph::from_lines(&mut options, folded.lines(), out).map_err(Error::Write)?;
    Ok(())
}

fn count_name(session: &Session) -> String {
    match session.meta.sample_type.unit {
        Unit::Count => session.meta.sample_type.name.clone(),
        unit => unit.name().to_owned(),
    }
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
    if let Some(ns) = meta.start_time_ns {
        text.push_str(", started ");
        text.push_str(&crate::session::rfc3339_utc(ns));
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

    /// The fill colour of the frame titled `name (...`, as `(r, g, b)`.
    fn fill(svg: &str, name: &str) -> (u8, u8, u8) {
        let at = svg.find(&format!("<title>{name} (")).expect(name);
        let rest = &svg[at..];
        let rgb = &rest[rest.find("fill=\"rgb(").expect("a fill") + 10..];
        let rgb = &rgb[..rgb.find(')').unwrap()];
        let v: Vec<u8> = rgb.split(',').map(|c| c.trim().parse().unwrap()).collect();
        (v[0], v[1], v[2])
    }

    fn folded(lines: &[(&str, u64)]) -> Session {
        let mut b = crate::session::SessionBuilder::default();
        let t = b.thread(1, "main");
        for (i, (path, w)) in lines.iter().enumerate() {
            let names: Vec<&str> = path.split(';').collect();
            b.push_named(&names, t, i as u64, *w);
        }
        b.finish()
    }

    #[test]
    fn the_folded_lines_come_sorted_as_inferno_would_sort_them() {
        // Names with spaces and `<`, prefixes of each other, and stacks in no order: the
        // picture drawn without inferno's sort is the one drawn with it.
        let session = folded(&[
            ("main;<T as Clone>::clone", 3),
            ("main;b", 5),
            ("main;b c", 2),
            ("main;b;d", 4),
            ("main", 1),
            ("main;a;z", 7),
            ("main;a y", 6),
        ]);
        let draw = |sort: bool| {
            let mut flame = FlameGraph::of(&session).unwrap();
            flame.options.no_sort = !sort;
            // Colours by name, not at random.
            flame.options.hash = true;
            let mut out = Vec::new();
            flame.write(&mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(draw(false), draw(true));
    }

    #[test]
    fn a_diff_is_red_where_new_grew_and_blue_where_it_shrank() {
        let base = folded(&[("main;grows", 10), ("main;shrinks", 30), ("main;same", 20)]);
        let new = folded(&[("main;grows", 30), ("main;shrinks", 10), ("main;same", 20)]);
        let side = |label, session| DiffSide { label, session };
        let mut out = Vec::new();
        write_diff_svg(side("a.json", &base), side("b.json", &new), false, &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(svg.contains("b.json against a.json"), "title");
        let (r, g, b) = fill(&svg, "grows");
        assert!(r == 255 && g < 255 && b < 255, "red: {:?}", (r, g, b));
        let (r, g, b) = fill(&svg, "shrinks");
        assert!(b == 255 && r < 255 && g < 255, "blue: {:?}", (r, g, b));
        assert_eq!(fill(&svg, "same"), (250, 250, 250), "unchanged is white");
    }

    /// The page's differential flame graph colours frames with `DiffTree::color`: it must give
    /// every frame the colour this SVG gives it, including the scale set by a function that is
    /// gone from the new profile (not drawn, but the largest change).
    #[test]
    fn the_core_diff_colours_equal_the_svg_fills() {
        let base = folded(&[
            ("main;grows", 10),
            ("main;shrinks", 30),
            ("main;same", 20),
            ("main;mid;leaf", 5),
            ("main;mid", 5),
            ("main;gone", 40),
        ]);
        let new = folded(&[
            ("main;grows", 45),
            ("main;shrinks", 25),
            ("main;same", 20),
            ("main;mid;leaf", 9),
            ("main;mid", 1),
            ("main;fresh", 7),
        ]);
        let side = |label, session| DiffSide { label, session };
        for absolute in [false, true] {
            let mut out = Vec::new();
            write_diff_svg(side("a", &base), side("b", &new), absolute, &mut out).unwrap();
            let svg = String::from_utf8(out).unwrap();
            let diff = DiffTree::between(side("a", &base), side("b", &new), absolute).unwrap();
            let mut seen = 0;
            for i in 1..diff.len() {
                let name = diff.name(i);
                if diff.total_weight(i).1 == 0 {
                    assert!(
                        !svg.contains(&format!("<title>{name} (")),
                        "{name} is not drawn"
                    );
                    continue;
                }
                let [r, g, b] = diff.color(i);
                assert_eq!(fill(&svg, name), (r, g, b), "{name}, absolute: {absolute}");
                seen += 1;
            }
            assert_eq!(seen, 7, "main, grows, shrinks, same, mid, leaf, fresh");
        }
    }

    #[test]
    fn a_longer_recording_of_the_same_shape_is_no_change_unless_absolute() {
        let base = folded(&[("main;a", 10), ("main;b", 30)]);
        let new = folded(&[("main;a", 20), ("main;b", 60)]);
        let side = |label, session| DiffSide { label, session };
        let mut out = Vec::new();
        write_diff_svg(side("a", &base), side("b", &new), false, &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert_eq!(fill(&svg, "b"), (250, 250, 250));
        let mut out = Vec::new();
        write_diff_svg(side("a", &base), side("b", &new), true, &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert_eq!(fill(&svg, "b").0, 255, "absolute: b grew");
    }

    #[test]
    fn a_diff_of_different_units_is_refused() {
        let base = folded(&[("main", 1)]);
        let mut new = folded(&[("main", 1)]);
        new.meta.sample_type = crate::session::SampleType::samples();
        let side = |label, session| DiffSide { label, session };
        let err = write_diff_svg(side("a", &base), side("b", &new), false, Vec::new()).unwrap_err();
        assert!(matches!(err, Error::Incomparable(_)), "{err}");
    }

    #[test]
    fn an_empty_session_is_an_error_not_an_empty_picture() {
        let err = write_svg(&Session::default(), Vec::new()).unwrap_err();
        assert!(matches!(err, Error::NoSamples { .. }), "{err}");
        assert_eq!(err.to_string(), "the session has no samples");
    }
}
