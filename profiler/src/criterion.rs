//! criterion's profiler hook (the `criterion` feature): with [`Profiler`] in a benchmark's
//! `Criterion`, `cargo bench --bench NAME -- --profile-time 5` samples each benchmark while
//! criterion runs it and saves one session per benchmark in criterion's folder for it
//! (`target/criterion/<benchmark>/profile/prof.json.gz`).
//!
//! criterion's `Profiler` trait returns nothing, so what happened (the saved file and its top
//! functions, or why there is none) is written to a writer the caller gives: the library still
//! prints nothing of its own accord, and the bench chooses stdout, stderr or a buffer.
//!
//! ```no_run
//! use criterion::{criterion_group, criterion_main, Criterion};
//!
//! fn bench(c: &mut Criterion) {
//!     c.bench_function("sum", |b| b.iter(|| (0..1000u64).sum::<u64>()));
//! }
//! fn profiled() -> Criterion {
//!     let profiler = prof::criterion::Profiler::new(prof::Options::default(), std::io::stdout());
//!     Criterion::default().with_profiler(profiler)
//! }
//! criterion_group!(name = benches; config = profiled(); targets = bench);
//! criterion_main!(benches);
//! ```

use crate::options::Options;
use crate::report::Report;
use crate::report::DEFAULT_TOP;
use prof_session::aggregate::{Filter, SortBy, TopTable};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The session file's name in each benchmark's profile folder.
pub const FILE_NAME: &str = "prof.json.gz";

/// A `criterion::profiler::Profiler` that samples each benchmark criterion profiles
/// (`--profile-time`) with prof's sampler and saves the session as [`FILE_NAME`] in the folder
/// criterion gives, then writes the file's path and the top functions to the caller's writer.
/// Failures (another session running, a folder that cannot be written) are one line on that
/// writer, starting `prof: ` and naming the benchmark; the benchmark itself runs on.
pub struct Profiler {
    options: Options,
    top: usize,
    out: Box<dyn Write>,
    running: Option<crate::profiler::Profiler>,
}

impl Profiler {
    /// A hook sampling with `options` (interval, mode, ...) that writes what it did to `out`,
    /// with the [`DEFAULT_TOP`] functions of most self weight.
    pub fn new(options: Options, out: impl Write + 'static) -> Profiler {
        Profiler {
            options,
            top: DEFAULT_TOP,
            out: Box::new(out),
            running: None,
        }
    }

    /// Shows the `n` functions of most self weight after each benchmark (0: only the line
    /// naming the saved file).
    pub fn top(mut self, n: usize) -> Profiler {
        self.top = n;
        self
    }

    /// Stops the running session and saves it in `dir`: the saved file.
    fn finish(&mut self, dir: &Path) -> prof_session::Result<Option<(PathBuf, Report)>> {
        let Some(running) = self.running.take() else {
            return Ok(None);
        };
        let report = running.stop()?;
        std::fs::create_dir_all(dir).map_err(|source| prof_session::Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join(FILE_NAME);
        report.save(&path)?;
        Ok(Some((path, report)))
    }

    /// Writes the saved file's line and its top table.
    fn show(&mut self, id: &str, path: &Path, report: &Report) -> std::io::Result<()> {
        let session = report.session();
        writeln!(
            self.out,
            "prof: {id}: {} samples saved to {}",
            report.total_samples(),
            path.display()
        )?;
        if self.top > 0 {
            let tree = prof_session::aggregate::CallTree::new(session, &Filter::all());
            let rows = tree.top(session, self.top, SortBy::SelfWeight);
            let table = TopTable {
                session,
                threads: None,
                rows: &rows,
                total_weight: tree.total_weight(tree.root()),
                total_count: tree.total_count(tree.root()),
                sort: SortBy::SelfWeight,
                calls: None,
            };
            write!(self.out, "{table}")?;
        }
        self.out.flush()
    }
}

// The hook cannot return an error, and failing to write to the caller's own writer leaves
// nowhere else to report: those write errors are dropped (`let _`), the session is saved anyway.
impl ::criterion::profiler::Profiler for Profiler {
    fn start_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
        // A session left running (stop never called) would make every later start fail.
        self.running = None;
        match crate::profiler::Profiler::start(self.options.clone()) {
            Ok(running) => self.running = Some(running),
            Err(e) => {
                let _ = writeln!(self.out, "prof: {benchmark_id}: not profiled: {e}");
            }
        }
    }

    fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        match self.finish(benchmark_dir) {
            Ok(Some((path, report))) => {
                let _ = self.show(benchmark_id, &path, &report);
            }
            Ok(None) => {}
            Err(e) => {
                let _ = writeln!(self.out, "prof: {benchmark_id}: no session saved: {e}");
            }
        }
    }
}
