//! [`Report`]: the result of a profiling session, with the ways to read, save and export it.

use prof_session::aggregate::{CallTree, Filter, SortBy, TopRow, TopTable, TransformSpec};
use prof_session::session::Session;
use std::fmt;
use std::io::Write;

pub use prof_session::aggregate::DEFAULT_TOP;

/// A finished profile. Wraps a [`Session`] and offers the common views and exports.
///
/// ```
/// # fn main() -> prof::Result<()> {
/// let report = prof::profile(prof::Options::default(), || {
///     (0..5_000_000u64).fold(0, |a, i| a ^ i.rotate_left(7))
/// })?;
/// println!("{report}"); // the top-10 table
/// for row in report.top(3) {
///     println!("{} {}", row.name, row.self_weight);
/// }
/// let mut folded = Vec::new();
/// report.write_folded(&mut folded)?; // for flamegraph.pl or inferno
/// let path = std::env::temp_dir().join(format!("report-doc-{}.json.gz", std::process::id()));
/// report.save(&path)?;
/// assert_eq!(prof::Report::load(&path)?, report);
/// # std::fs::remove_file(&path).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    session: Session,
}

impl Report {
    /// A report over an existing session.
    pub fn new(session: Session) -> Self {
        Report { session }
    }

    /// The underlying session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Consumes the report, returning its session.
    pub fn into_session(self) -> Session {
        self.session
    }

    /// The number of samples recorded.
    pub fn total_samples(&self) -> u64 {
        self.session.sample_count()
    }

    /// The call tree of all samples, as the default report shows it: a wall session's time
    /// switched out at the call that blocked (see [`crate::aggregate::default_transforms`]).
    pub fn call_tree(&self) -> CallTree {
        let defaults = prof_session::aggregate::default_transforms(&self.session);
        let transforms = TransformSpec::resolve_all(&defaults, &self.session).unwrap_or_default();
        CallTree::filtered(&self.session, &Filter::all(), &transforms)
    }

    /// The `n` functions with the most self weight, heaviest first.
    pub fn top(&self, n: usize) -> Vec<TopRow> {
        self.call_tree().top(&self.session, n, SortBy::SelfWeight)
    }

    /// The names of the sample types each sample carries, the default (the one
    /// [`Report::top`], [`Report::write_folded`] and `Display` show) first: `["cpu",
    /// "samples"]` for a CPU profile.
    pub fn sample_types(&self) -> Vec<String> {
        self.session
            .sample_types()
            .into_iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// This report with sample type `name` as the default one, so its views and exports show
    /// it. Fails with [`crate::Error::UnknownSampleType`] when the report has no such type.
    pub fn with_sample_type(&self, name: &str) -> prof_session::Result<Report> {
        let mut session = self.session.clone();
        session.select_sample_type(name)?;
        Ok(Report { session })
    }

    /// Writes all samples as folded stacks (`root;...;leaf weight`), weighted by the default
    /// sample type.
    pub fn write_folded(&self, out: &mut impl Write) -> prof_session::Result<()> {
        prof_session::export::write_folded(&self.session, out)
    }

    /// Writes all samples as folded stacks weighted by the sample type `name` (one of
    /// [`Report::sample_types`]).
    pub fn write_folded_as(&self, name: &str, out: &mut impl Write) -> prof_session::Result<()> {
        if self.session.meta.sample_type.name == name {
            return self.write_folded(out);
        }
        self.with_sample_type(name)?.write_folded(out)
    }

    /// Saves the session to `path` (gzipped when it ends in `.gz`), atomically.
    #[cfg(feature = "sampler")]
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> prof_session::Result<()> {
        prof_session::session::save(&self.session, path)
    }

    /// Loads a report from a session file (JSON or gzipped JSON).
    #[cfg(feature = "sampler")]
    pub fn load(path: impl AsRef<std::path::Path>) -> prof_session::Result<Report> {
        prof_session::session::load(path).map(Report::new)
    }

    /// Serves this report's viewer from this process on a background thread and opens it in
    /// the default browser (`$BROWSER`, or the desktop's opener when there is a display); the
    /// `serve` feature.
    ///
    /// Prints nothing: the returned [`ServedViewer`](prof_serve::ServedViewer) has the URL and
    /// says whether a browser was started (no browser is not an error). It keeps the server
    /// running until it is dropped; `report.open_in_browser()?.wait()` serves until Ctrl-C.
    /// Fails only when the session cannot be encoded or no port can be bound.
    #[cfg(feature = "serve")]
    pub fn open_in_browser(&self) -> prof_session::Result<prof_serve::ServedViewer> {
        let program = &self.session().meta.program;
        let name = match program.rsplit('/').next() {
            Some(base) if !base.is_empty() => format!("{base}.json"),
            _ => "profile.json".to_owned(),
        };
        let file = prof_serve::SessionFile::from_session(name, self.session())?;
        prof_serve::ServedViewer::open(file)
    }
}

impl From<Session> for Report {
    fn from(session: Session) -> Self {
        Report::new(session)
    }
}

/// The top-10 table by self weight: TOTAL (pct) SELF (pct) FRAME.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tree = self.call_tree();
        let rows = tree.top(&self.session, DEFAULT_TOP, SortBy::SelfWeight);
        let table = TopTable {
            session: &self.session,
            threads: None,
            rows: &rows,
            total_weight: tree.total_weight(tree.root()),
            total_count: tree.total_count(tree.root()),
            sort: SortBy::SelfWeight,
            calls: None,
        };
        table.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::SessionBuilder;

    fn report() -> Report {
        let mut b = SessionBuilder::default();
        b.meta_mut().program = "demo".into();
        let t = b.thread(1, "main");
        b.push_named(&["main", "work"], t, 0, 3_000_000);
        b.push_named(&["main", "work"], t, 1, 1_000_000);
        b.push_named(&["main"], t, 2, 1_000_000);
        Report::new(b.finish())
    }

    #[test]
    fn display_prints_the_top_table() {
        let text = report().to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "demo: cpu mode, 3 samples, showing cpu (nanoseconds), 5.00 ms total, sorted by self"
        );
        assert!(
            lines[1].contains("TOTAL") && lines[1].ends_with("FRAME"),
            "{text}"
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["4.00", "ms", "80.0%", "4.00", "ms", "80.0%", "work"]
        );
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            ["5.00", "ms", "100.0%", "1.00", "ms", "20.0%", "main"]
        );
    }

    #[test]
    fn the_table_header_states_dropped_samples_and_their_share() {
        let mut session = report().into_session();
        session.meta.dropped_samples = 1;
        let text = Report::new(session).to_string();
        let header = text.lines().next().unwrap();
        assert!(
            header.ends_with("sorted by self; dropped 1 (25.0% of those taken)"),
            "{header}"
        );
        // None dropped, nothing said.
        assert!(!report().to_string().contains("dropped"));
    }

    #[test]
    fn top_and_folded_agree() {
        let r = report();
        let top = r.top(1);
        assert_eq!(
            (top[0].name.as_str(), top[0].self_weight),
            ("work", 4_000_000)
        );
        let mut out = Vec::new();
        r.write_folded(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "main 1000000\nmain;work 4000000\n"
        );
    }

    #[test]
    fn folded_stacks_can_be_written_in_any_sample_type() {
        let mut b = SessionBuilder::new(prof_session::session::Metadata {
            mode: prof_session::Mode::Cpu,
            extra_sample_types: prof_session::Mode::Cpu.extra_sample_types(),
            ..Default::default()
        });
        let t = b.thread(1, "main");
        b.push_named(&["main", "work"], t, 0, 3_000_000);
        b.push_named(&["main", "work"], t, 1, 1_000_000);
        b.push_named(&["main"], t, 2, 1_000_000);
        let r = Report::new(b.finish());
        assert_eq!(r.sample_types(), ["cpu", "samples"]);
        let folded = |name: &str| {
            let mut out = Vec::new();
            r.write_folded_as(name, &mut out)
                .map(|()| String::from_utf8(out).unwrap())
        };
        assert_eq!(folded("samples").unwrap(), "main 1\nmain;work 2\n");
        assert_eq!(folded("cpu").unwrap(), "main 1000000\nmain;work 4000000\n");
        assert_eq!(
            folded("wall").unwrap_err().to_string(),
            "no sample type `wall` (available: cpu, samples)"
        );
    }
}
