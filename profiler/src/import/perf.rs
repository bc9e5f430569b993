//! `perf script` text in, collapsed by inferno's perf collapser into folded stacks whose root
//! frame names the thread (`comm-pid/tid`), then read as folded stacks.

use super::folded::{read_lines, RootFrame};
use crate::session::{SampleType, Session, Unit};
use crate::{Error, Result};
use inferno::collapse::perf::{Folder, Options};
use inferno::collapse::Collapse;
use std::io::BufRead;
use std::path::Path;

/// The `timer` metadata of a session imported from `perf script` output.
pub const PERF_TIMER: &str = "import:perf";

/// Reads `perf script` output from `input`; `path` only names the input in errors.
pub fn read_perf_script(input: impl BufRead, path: &Path) -> Result<Session> {
    let mut options = Options::default();
    options.include_tid = true;
    options.nthreads = 1;
    let mut folded = Vec::new();
    Folder::from(options)
        .collapse(input, &mut folded)
        .map_err(|e| Error::BadInput {
            path: path.to_owned(),
            message: format!("not readable as perf script output: {e}"),
        })?;
    if folded.is_empty() {
        return Err(Error::BadInput {
            path: path.to_owned(),
            message: "no samples found in the perf script output".into(),
        });
    }
    // inferno's collapser sums the periods, which for perf's default cpu-clock event are
    // nanoseconds.
    let sample_type = SampleType::new("cpu", Unit::Nanoseconds);
    read_lines(
        &folded[..],
        path,
        RootFrame::Thread,
        PERF_TIMER,
        sample_type,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
worker 100/101 [000] 1.000000: 250000 cpu-clock:
\t    55aa01 hash+0x10 (/usr/bin/demo)
\t    55aa02 work+0x20 (/usr/bin/demo)
\t    55aa03 main+0x30 (/usr/bin/demo)

worker 100/101 [000] 1.001000: 250000 cpu-clock:
\t    55aa01 hash+0x10 (/usr/bin/demo)
\t    55aa02 work+0x20 (/usr/bin/demo)
\t    55aa03 main+0x30 (/usr/bin/demo)

demo 100/100 [001] 1.002000: 250000 cpu-clock:
\t    55aa04 idle+0x1 (/usr/bin/demo)
\t    55aa03 main+0x30 (/usr/bin/demo)

";

    #[test]
    fn samples_keep_their_threads_and_root_first_stacks() {
        let s = read_perf_script(SCRIPT.as_bytes(), Path::new("perf.txt")).unwrap();
        assert_eq!(s.meta.timer, PERF_TIMER);
        // inferno weighs each sample by its event period (250000 ns of cpu-clock here).
        assert_eq!(s.total_weight(), 750_000);
        let mut threads: Vec<(u64, &str)> =
            s.threads.iter().map(|t| (t.tid, s.str(t.name))).collect();
        threads.sort();
        assert_eq!(threads, [(100, "demo"), (101, "worker")]);
        let hot = s.samples.weight.iter().position(|&w| w == 500_000).unwrap();
        let names: Vec<&str> = s
            .stack_frames(s.samples.stack[hot])
            .map(|f| s.frame_name(f))
            .collect();
        assert_eq!(names, ["hash", "work", "main"]);
    }

    #[test]
    fn text_without_samples_is_bad_input() {
        let err = read_perf_script(&b"hello\nworld\n"[..], Path::new("x.txt")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.txt: no samples found in the perf script output"
        );
    }
}
