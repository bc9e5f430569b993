//! Folded stacks in: `root;...;leaf weight`, one line per stack, as flamegraph.pl and inferno
//! write them. Each line becomes one sample on a single thread named `all`.

use crate::session::{FrameId, Metadata, SampleType, Session, SessionBuilder, ThreadIdx};
use crate::{Error, Result};
use std::io::BufRead;
use std::path::Path;

/// The `timer` metadata of a session imported from folded stacks.
pub const FOLDED_TIMER: &str = "import:folded";

/// How the first frame of each line is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RootFrame {
    /// An ordinary frame; every sample is on one thread.
    Frame,
    /// `comm-pid/tid`, as inferno's perf collapser writes with `include_tid`: the thread.
    #[cfg_attr(not(feature = "native"), allow(dead_code))] // only the perf importer uses it
    Thread,
}

/// Reads folded stacks from `input`; `path` only names the input in errors.
pub fn read_folded(input: impl BufRead, path: &Path) -> Result<Session> {
    read_lines(
        input,
        path,
        RootFrame::Frame,
        FOLDED_TIMER,
        SampleType::samples(),
    )
}

/// Reads folded lines into a session whose `timer` is `timer` and whose weights are of
/// `sample_type`. When those are counts of samples, each line stands for that many samples.
pub(crate) fn read_lines(
    input: impl BufRead,
    path: &Path,
    root: RootFrame,
    timer: &str,
    sample_type: SampleType,
) -> Result<Session> {
    let counts_samples = sample_type == SampleType::samples();
    let bad = |line: usize, message: String| Error::BadInput {
        path: path.to_owned(),
        message: format!("line {line}: {message}"),
    };
    let mut b = SessionBuilder::new(Metadata {
        timer: timer.to_owned(),
        prof_version: crate::VERSION.to_owned(),
        sample_type,
        ..Metadata::default()
    });
    let mut all: Option<ThreadIdx> = None;
    let mut frames: Vec<FrameId> = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let n = n + 1;
        let line = line.map_err(|e| bad(n, format!("cannot read: {e}")))?;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let (stack, weight) = line
            .rsplit_once(' ')
            .ok_or_else(|| bad(n, "expected `frames weight`".into()))?;
        let weight: u64 = weight
            .parse()
            .map_err(|_| bad(n, format!("weight `{weight}` is not a whole number")))?;
        let mut names = stack.split(';');
        let thread = match root {
            RootFrame::Frame => *all.get_or_insert_with(|| b.thread(0, "all")),
            RootFrame::Thread => {
                let first = names.next().unwrap_or_default();
                let (name, tid) = parse_thread(first)
                    .ok_or_else(|| bad(n, format!("`{first}` is not `command-pid/tid`")))?;
                b.thread(tid, name)
            }
        };
        frames.clear();
        for name in names.filter(|name| !name.is_empty()) {
            frames.push(b.intern_frame(&crate::session::FrameSpec::named(name)));
        }
        let Some(leaf) = b.intern_stack_path(&frames) else {
            return Err(bad(n, "the stack has no frames".into()));
        };
        let multiplicity = if counts_samples { weight } else { 1 };
        b.push_samples(leaf, thread, 0, weight, multiplicity);
    }
    let session = b.finish();
    if session.samples.is_empty() {
        return Err(Error::BadInput {
            path: path.to_owned(),
            message: "no stacks found".into(),
        });
    }
    Ok(session)
}

/// `comm-pid/tid` → (`comm`, tid). The command may itself contain `-`.
fn parse_thread(frame: &str) -> Option<(&str, u64)> {
    let (comm, ids) = frame.rsplit_once('-')?;
    let (_pid, tid) = ids.split_once('/')?;
    Some((comm, tid.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Session> {
        read_folded(text.as_bytes(), Path::new("in.folded"))
    }

    #[test]
    fn each_line_is_a_weighted_root_first_stack() {
        let s = read("main;work;hash 30\nmain;idle 5\n\nmain;work;hash 2\n").unwrap();
        assert_eq!(s.samples.len(), 3);
        // Folded weights are counts of samples: 37 samples in 3 lines.
        assert_eq!(s.sample_count(), 37);
        assert_eq!(s.total_weight(), 37);
        assert_eq!(s.meta.timer, FOLDED_TIMER);
        let leaf = s.samples.stack[0];
        let names: Vec<&str> = s.stack_frames(leaf).map(|f| s.frame_name(f)).collect();
        assert_eq!(names, ["hash", "work", "main"]);
        assert_eq!(s.samples.stack[0], s.samples.stack[2]);
        assert_eq!(s.threads.len(), 1);
    }

    #[test]
    fn frame_names_may_contain_spaces() {
        let s = read("main;<T as Trait>::call 4\n").unwrap();
        assert_eq!(
            s.frame_name(s.stack(s.samples.stack[0]).frame),
            "<T as Trait>::call"
        );
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let err = read("main 1\nmain;work x\n").unwrap_err().to_string();
        assert_eq!(err, "in.folded: line 2: weight `x` is not a whole number");
        let err = read("justonefield\n").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
        assert_eq!(
            read("").unwrap_err().to_string(),
            "in.folded: no stacks found"
        );
    }

    #[test]
    fn a_thread_root_frame_becomes_the_thread() {
        let input = "my-app-12/14;main;work 3\nmy-app-12/15;main 1\n";
        let s = read_lines(
            input.as_bytes(),
            Path::new("p"),
            RootFrame::Thread,
            "t",
            SampleType::samples(),
        )
        .unwrap();
        assert_eq!(s.threads.len(), 2);
        assert_eq!(s.threads[0].tid, 14);
        assert_eq!(s.str(s.threads[0].name), "my-app");
        let names: Vec<&str> = s
            .stack_frames(s.samples.stack[0])
            .map(|f| s.frame_name(f))
            .collect();
        assert_eq!(names, ["work", "main"]);
    }
}
