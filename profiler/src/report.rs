//! [`Report`]: the result of a profiling session, with the ways to read, save and export it.

use prof_session::aggregate::{
    CallSummary, CallTree, Filter, FunctionTable, MarkList, ScopeSummary, SortBy, TableOptions,
    TaskSummary, TopRow, TransformSpec,
};
use prof_session::export::Format;
use prof_session::session::Session;
use std::fmt;
use std::io::Write;

pub use prof_session::aggregate::DEFAULT_TOP;

/// A finished profile. Wraps a [`Session`] and offers the views `prof report` prints (the
/// functions, scopes, tasks and marks tables, with its options: [`TableOptions`]) and every
/// export by name, each writing to a `&mut impl Write`: [`Report::write_folded`],
/// [`Report::write_svg`], [`Report::write_speedscope`], [`Report::write_pprof`] (gzipped, as
/// `go tool pprof` reads it), [`Report::write_dot`], [`Report::write_session`] and, with the
/// `serve` feature, [`Report::write_html`]. [`Report::save`] picks the format from the file
/// name.
///
/// ```
/// # fn main() -> prof::Result<()> {
/// let report = prof::profile(prof::Options::default(), || {
///     (0..5_000_000u64).fold(0, |a, i| a ^ i.rotate_left(7))
/// })?
/// .report;
/// println!("{report}"); // the top-10 table
/// for row in report.top(3) {
///     println!("{} {}", row.name, row.self_weight);
/// }
/// let mut folded = Vec::new();
/// report.write_folded(&mut folded)?; // for flamegraph.pl or inferno
/// let mut speedscope = Vec::new();
/// report.write_speedscope(&mut speedscope)?; // for speedscope.app
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

    /// The functions table with `options`: what `prof report` prints with the same options
    /// (the count, the sort, the filters and the transforms), to print or to read row by row.
    /// Fails with [`Error::InvalidOption`](crate::Error::InvalidOption) naming an option that
    /// names nothing in the report (a thread, process, scope or task it does not have).
    ///
    /// ```
    /// # fn main() -> prof::Result<()> {
    /// use prof::aggregate::{SortBy, TableOptions, TransformSpec};
    /// # let report = prof::profile(prof::Options::default(), || {
    /// #     (0..3_000_000u64).fold(0, |a, i| a ^ i.rotate_left(7))
    /// # })?;
    /// // prof report FILE --sort total --top 30 --hide '^std::'
    /// let options = TableOptions::default()
    ///     .sort(SortBy::Total)
    ///     .top(30)
    ///     .transform(TransformSpec::Hide { pattern: "^std::".into() });
    /// let table = report.table(&options)?;
    /// println!("{table}");
    /// assert!(table.rows().len() <= 30);
    /// assert!(report.table(&TableOptions::default().thread("no-such-thread")).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn table(&self, options: &TableOptions) -> prof_session::Result<FunctionTable<'_>> {
        Ok(options.functions(&self.session)?)
    }

    /// The scopes table (`prof report --scopes`): per `prof::scope!` name its exact calls,
    /// total and self time, time per call and the spread of call durations, on the threads,
    /// processes and time range `options` keep.
    pub fn scopes(&self, options: &TableOptions) -> prof_session::Result<ScopeSummary<'_>> {
        Ok(options.scopes(&self.session)?)
    }

    /// The counted functions' table (`prof report --calls`): per function whose calls
    /// [`Options::count_calls`](crate::Options::count_calls) or `prof record --calls` counted,
    /// its exact calls, its self and total time from the samples `options` keep, and both per
    /// call, ranked by `options`' sort; empty when nothing was counted.
    pub fn calls(&self, options: &TableOptions) -> prof_session::Result<CallSummary<'_>> {
        Ok(options.calls(&self.session)?)
    }

    /// The marks (`prof report --marks`): every `prof::mark!` instant on the threads,
    /// processes and in the time range `options` keep, in time order, with its thread and
    /// fields.
    pub fn marks(&self, options: &TableOptions) -> prof_session::Result<MarkList<'_>> {
        Ok(options.marks(&self.session)?)
    }

    /// The tasks table (`prof report --tasks`): per async task name its samples' weight and
    /// its polls, over the samples `options` keep.
    pub fn tasks(&self, options: &TableOptions) -> prof_session::Result<TaskSummary<'_>> {
        Ok(options.tasks(&self.session)?)
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

    /// Writes a flame graph SVG (inferno's, interactive in a browser) of the default sample
    /// type.
    #[cfg(feature = "sampler")]
    pub fn write_svg(&self, out: &mut impl Write) -> prof_session::Result<()> {
        self.write_as(Format::Svg, out)
    }

    /// Writes speedscope's JSON (one profile per thread), which <https://speedscope.app> opens.
    pub fn write_speedscope(&self, out: &mut impl Write) -> prof_session::Result<()> {
        self.write_as(Format::Speedscope, out)
    }

    /// Writes pprof's profile.proto, gzipped as `go tool pprof` writes it (and as it and
    /// Pyroscope read it), with every sample type of the report.
    pub fn write_pprof(&self, out: &mut impl Write) -> prof_session::Result<()> {
        self.write_as(Format::Pprof, out)
    }

    /// Writes a Graphviz dot call graph (`dot -Tsvg`), as `go tool pprof -dot` draws one.
    pub fn write_dot(&self, out: &mut impl Write) -> prof_session::Result<()> {
        self.write_as(Format::Dot, out)
    }

    /// Writes the session file (JSON, not gzipped): what [`Report::save`] writes to a `.json`
    /// name and [`Report::load`] reads.
    pub fn write_session(&self, out: &mut impl Write) -> prof_session::Result<()> {
        self.write_as(Format::Session, out)
    }

    /// Writes one self-contained HTML file with the viewer and this profile, to open from
    /// disk with no server (the natural choice on a machine without a browser: copy the file);
    /// the `serve` feature.
    #[cfg(feature = "serve")]
    pub fn write_html(&self, out: &mut impl Write) -> prof_session::Result<()> {
        self.write_as(Format::Html, out)
    }

    /// Writes the report in `format`: what the `write_*` methods and [`Report::save`] do.
    /// [`Format::Svg`] and [`Format::Source`] need the `sampler` feature (the default),
    /// [`Format::Html`] the `serve` feature; without it they fail with
    /// [`Error::InvalidOption`](crate::Error::InvalidOption).
    pub fn write_as(&self, format: Format, out: &mut impl Write) -> prof_session::Result<()> {
        write_as(&self.session, format, &profile_name(&self.session), out)
    }

    /// Saves the report to `path` atomically, in the format its name implies, as `prof convert
    /// -o` chooses it: `.json` or `.json.gz` a session file (what `prof serve` opens),
    /// `.folded`, `.svg`, `.speedscope.json`, `.pb.gz` or `.pprof`, `.dot`, `.html` (the
    /// `serve` feature). A name that implies none (`profile.txt`) is refused with
    /// [`Error::InvalidOption`](crate::Error::InvalidOption) and nothing is written; use
    /// [`Report::save_as`] to choose.
    ///
    /// ```
    /// # fn main() -> prof::Result<()> {
    /// # let report = prof::profile(prof::Options::default(), || {
    /// #     (0..2_000_000u64).fold(0, |a, i| a ^ i.rotate_left(7))
    /// # })?;
    /// let dir = std::env::temp_dir().join(format!("prof-save-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// report.save(dir.join("profile.json.gz"))?; // prof serve, prof report
    /// report.save(dir.join("flame.svg"))?; // a browser
    /// report.save(dir.join("cpu.pb.gz"))?; // go tool pprof
    /// let svg = std::fs::read_to_string(dir.join("flame.svg")).unwrap();
    /// assert!(svg.starts_with("<?xml"));
    /// assert!(report.save(dir.join("profile.txt")).is_err());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "sampler")]
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> prof_session::Result<()> {
        let path = path.as_ref();
        let format = Format::from_path(path).ok_or_else(|| {
            crate::Error::InvalidOption(format!(
                "cannot tell a format from the name {}: end it in one of {} (or use save_as)",
                path.display(),
                Format::known_endings()
            ))
        })?;
        self.save_as(path, format)
    }

    /// Saves the report to `path` in `format`, atomically (a regular file or a new name is
    /// written through a temporary file beside it and renamed; a FIFO or character device is
    /// written through). A session file is gzipped when the name ends in `.gz`.
    #[cfg(feature = "sampler")]
    pub fn save_as(
        &self,
        path: impl AsRef<std::path::Path>,
        format: Format,
    ) -> prof_session::Result<()> {
        let path = path.as_ref();
        if format == Format::Session {
            return prof_session::session::save(&self.session, path);
        }
        prof_session::session::write_file_with(path, |out| self.write_as(format, &mut { out }))
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
        self.open_in_browser_with(&prof_serve::ServeOptions::default())
    }

    /// [`Report::open_in_browser`] on the host and port `options` give (by default loopback
    /// and the first free port from [`DEFAULT_PORT`](prof_serve::DEFAULT_PORT)), e.g.
    /// `ServeOptions::new(host, Port::Exact(9000))`; a host other than loopback exposes the
    /// profile to the network.
    #[cfg(feature = "serve")]
    pub fn open_in_browser_with(
        &self,
        options: &prof_serve::ServeOptions,
    ) -> prof_session::Result<prof_serve::ServedViewer> {
        let file =
            prof_serve::SessionFile::from_session(profile_name(&self.session), self.session())?;
        prof_serve::ServedViewer::open_with(file, options)
    }
}

/// What a profile is called where a format names it (the single-file viewer's title): the
/// program's file name with `.json`, or `profile.json`.
fn profile_name(session: &Session) -> String {
    match session.meta.program.rsplit('/').next() {
        Some(base) if !base.is_empty() => format!("{base}.json"),
        _ => "profile.json".to_owned(),
    }
}

/// Writes `session` in `format`; `name` is what the single-file viewer ([`Format::Html`]) calls
/// the profile. What [`Report::write_as`] does, for a session not held in a report (`prof
/// convert` writes with it).
pub fn write_as(
    session: &Session,
    format: Format,
    name: &str,
    out: &mut impl Write,
) -> prof_session::Result<()> {
    use prof_session::export;
    let needs = |feature: &str| {
        Err(crate::Error::InvalidOption(format!(
            "{format:?} output needs prof's `{feature}` feature"
        )))
    };
    match format {
        Format::Session => prof_session::session::write(session, out).map_err(crate::Error::Write),
        Format::Folded => export::write_folded(session, out),
        Format::Speedscope => export::speedscope::write_speedscope(session, out),
        Format::Pprof => export::pprof::write_pprof(session, out),
        Format::Dot => export::dot::write_dot(session, &export::dot::DotOptions::default(), out),
        #[cfg(feature = "sampler")]
        Format::Svg => export::svg::write_svg(session, out),
        #[cfg(feature = "sampler")]
        Format::Source => export::annotate::write_source_from_disk(session, usize::MAX, out),
        #[cfg(not(feature = "sampler"))]
        Format::Svg | Format::Source => needs("sampler"),
        #[cfg(feature = "serve")]
        Format::Html => prof_serve::write_standalone_html(session, name, out),
        #[cfg(not(feature = "serve"))]
        Format::Html => {
            let _ = name;
            needs("serve")
        }
        _ => needs("sampler"),
    }
}

impl From<Session> for Report {
    fn from(session: Session) -> Self {
        Report::new(session)
    }
}

/// The top-10 table by self weight: TOTAL (pct) SELF (pct) FRAME, as `prof report` prints it
/// ([`Report::table`] with the default options).
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match TableOptions::default().functions(&self.session) {
            Ok(table) => table.fmt(f),
            // The default options name nothing a session could lack.
            Err(e) => write!(f, "{e}"),
        }
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
