//! `perf script` text in, read line by line into one session row per sample: its thread, its
//! time relative to the first sample, its stack and its period.
//!
//! The layouts read: the default one (an event line `comm [pid/]tid [cpu] time: period event:`
//! followed by indented `address symbol+offset (dso)` frame lines and a blank line), the one of a
//! `perf record` without `-g` (the single frame on the event line), the older one with unindented
//! frame lines and no time, and the output of `perf script -F` without the period. The event
//! decides the unit: `cpu-clock` and `task-clock` periods are nanoseconds, other events' periods
//! counts of that event; samples without a period count 1 each. A file of several events shows
//! one (the first, or the one asked for), and says so.
//!
//! Frames are named as the reference collapsers name them (see `perf_names.rs`), so the folded
//! stacks of a perf file are theirs; with [`LoadOptions::process_root`] each stack starts with
//! the process name (spaces as `_`), as theirs do by default; a sample without frames is its
//! process name alone either way, so every sample's period counts. An `(inlined)` frame is marked
//! inlined and takes the object of the frame at the same address it was inlined into.
//!
//! Bytes that are not UTF-8 become U+FFFD (�) in names, so they show.

use super::perf_names::{frame_names, Named};
use super::{cut_warning, unknown_type, LoadOptions, Loaded, Totals, MAX_STACK_DEPTH};
use crate::error::{Error, Result};
use crate::session::{FrameId, FrameSpec, Metadata, SampleType, Session, SessionBuilder, Unit};
use regex::Regex;
use std::io::BufRead;
use std::path::Path;
use std::sync::OnceLock;

/// The `timer` metadata of a session imported from `perf script` output.
pub const PERF_TIMER: &str = "import:perf";

/// Reads `perf script` output from `input`; `path` only names the input in errors.
pub fn read_perf_script(input: impl BufRead, path: &Path) -> Result<Session> {
    read_perf_script_with(input, path, &LoadOptions::default()).map(|l| l.session)
}

/// Reads `perf script` output from `input`, showing the event `options.sample_type` (by default
/// the first one); `path` only names the input in errors.
pub fn read_perf_script_with(
    mut input: impl BufRead,
    path: &Path,
    options: &LoadOptions,
) -> Result<Loaded> {
    let bad = |message: String| Error::BadInput {
        path: path.to_owned(),
        message,
    };
    let mut reader = Reader::new(options.sample_type.as_deref(), options.process_root);
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        line.clear();
        let read = input
            .read_until(b'\n', &mut line)
            .map_err(|e| bad(format!("line {}: cannot read: {e}", n + 1)))?;
        if read == 0 {
            break;
        }
        n += 1;
        reader
            .line(&String::from_utf8_lossy(&line), n)
            .map_err(bad)?;
    }
    reader.finish().map_err(bad)
}

/// An event line, parsed.
struct EventLine<'a> {
    comm: &'a str,
    pid: Option<u32>,
    tid: u64,
    time_ns: Option<u64>,
    period: Option<u64>,
    event: &'a str,
    rest: &'a str,
}

/// A sample being read: its event line's facts and its frames so far, leaf first.
struct Pending {
    /// The line number of its event line.
    line: usize,
    keep: bool,
    comm: String,
    tid: u64,
    time_ns: Option<u64>,
    weight: u64,
    frames: Vec<FrameId>,
    /// `(inlined)` frames read but not yet added: their names and address, waiting for the frame
    /// they were inlined into (the next one at the same address) to give them its object.
    held: Vec<(Named, u64)>,
    cut: bool,
}

struct Reader<'o> {
    wanted: Option<&'o str>,
    process_root: bool,
    /// The names of the line being read, reused.
    names: Vec<Named>,
    b: SessionBuilder,
    /// The event shown, once known, and whether its samples carry a period.
    shown: Option<(String, bool)>,
    /// Samples of each event seen, in order of first sight.
    events: Vec<(String, u64)>,
    current: Option<Pending>,
    first_time: Option<u64>,
    last_time: u64,
    totals: Totals,
    rows: u64,
    skipped: u64,
    first_skipped: Option<String>,
    cut: u64,
}

impl<'o> Reader<'o> {
    fn new(wanted: Option<&'o str>, process_root: bool) -> Self {
        Reader {
            wanted,
            process_root,
            names: Vec::new(),
            b: SessionBuilder::new(Metadata {
                timer: PERF_TIMER.to_owned(),
                prof_version: crate::VERSION.to_owned(),
                ..Metadata::default()
            }),
            shown: None,
            events: Vec::new(),
            current: None,
            first_time: None,
            last_time: 0,
            totals: Totals::default(),
            rows: 0,
            skipped: 0,
            first_skipped: None,
            cut: 0,
        }
    }

    fn skip(&mut self, n: usize, why: &str) {
        self.skipped += 1;
        self.first_skipped
            .get_or_insert_with(|| format!("line {n}: {why}"));
    }

    fn line(&mut self, raw: &str, n: usize) -> Result<(), String> {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            return self.end_sample();
        }
        if trimmed.starts_with('#') {
            return Ok(());
        }
        if let Some(event) = parse_event(trimmed) {
            self.end_sample()?;
            self.start_sample(&event, n);
            if let Some(frame) = parse_frame(event.rest) {
                self.push_frame(&frame);
            }
            return Ok(());
        }
        match parse_frame(trimmed) {
            Some(frame) if self.current.is_some() => self.push_frame(&frame),
            Some(_) => self.skip(n, "a frame line before any event line"),
            None => self.skip(n, "neither an event line nor a frame line"),
        }
        Ok(())
    }

    fn start_sample(&mut self, e: &EventLine<'_>, n: usize) {
        let event = event_name(e.event);
        match self.events.iter_mut().find(|(name, _)| name == event) {
            Some((_, count)) => *count += 1,
            None => self.events.push((event.to_owned(), 1)),
        }
        if self.shown.is_none() && self.wanted.is_none_or(|w| w == event) {
            self.shown = Some((event.to_owned(), e.period.is_some()));
            let meta = self.b.meta_mut();
            meta.program = e.comm.to_owned();
            meta.pid = e.pid.unwrap_or(0);
        }
        // The first sample shown decides whether weights are periods or counts of one.
        let (keep, weight) = match &self.shown {
            Some((shown, true)) if shown == event => match e.period {
                Some(period) => (true, period),
                None => {
                    self.skip(n, "an event line without the period the others have");
                    (false, 0)
                }
            },
            Some((shown, false)) if shown == event => (true, 1),
            _ => (false, 0),
        };
        self.current = Some(Pending {
            line: n,
            keep,
            comm: e.comm.to_owned(),
            tid: e.tid,
            time_ns: e.time_ns,
            weight,
            frames: Vec::new(),
            held: Vec::new(),
            cut: false,
        });
    }

    fn push_frame(&mut self, frame: &FrameLine<'_>) {
        let Some(pending) = self.current.as_mut().filter(|p| p.keep) else {
            return;
        };
        if frame.dso == Some("inlined") {
            let mut names = std::mem::take(&mut self.names);
            frame_names(frame.symbol, None, &pending.comm, &mut names);
            // Leaf first, as the frames are kept.
            for mut named in names.drain(..).rev() {
                named.inlined = true;
                pending.held.push((named, frame.address));
            }
            self.names = names;
            return;
        }
        self.release_held(Some(frame));
        let Some(pending) = self.current.as_mut() else {
            return;
        };
        let mut names = std::mem::take(&mut self.names);
        frame_names(frame.symbol, frame.dso, &pending.comm, &mut names);
        for named in names.drain(..).rev() {
            self.push_named(&named, frame.dso, frame.address);
        }
        self.names = names;
    }

    /// Adds the held `(inlined)` frames, each with the object of `into` when it is at their
    /// address (the frame they were inlined into), else with none.
    fn release_held(&mut self, into: Option<&FrameLine<'_>>) {
        let Some(pending) = self.current.as_mut() else {
            return;
        };
        let held = std::mem::take(&mut pending.held);
        for (named, address) in &held {
            let dso = into.filter(|f| f.address == *address).and_then(|f| f.dso);
            self.push_named(named, dso, *address);
        }
    }

    /// Adds one frame at the root end of the sample being read (frames come leaf first).
    fn push_named(&mut self, named: &Named, dso: Option<&str>, address: u64) {
        let Some(pending) = self.current.as_mut() else {
            return;
        };
        if pending.frames.len() >= MAX_STACK_DEPTH {
            pending.cut = true;
            return;
        }
        let id = self.b.intern_frame(&FrameSpec {
            module: dso,
            address: Some(address),
            inlined: named.inlined,
            ..FrameSpec::named(&named.name)
        });
        pending.frames.push(id);
    }

    fn end_sample(&mut self) -> Result<(), String> {
        if !self.current.as_ref().is_some_and(|p| p.keep) {
            self.current = None;
            return Ok(());
        }
        self.release_held(None);
        let Some(mut pending) = self.current.take() else {
            return Ok(());
        };
        // Root first. The process name is the root when asked for, and always of a sample
        // without frames: it stands for the whole sample, whose weight the reference
        // collapsers count under it.
        pending.frames.reverse();
        let (root, callees) = match pending.frames.split_first() {
            Some((&outermost, callees)) if !self.process_root => (outermost, callees),
            _ => {
                let process = pending.comm.replace(' ', "_");
                (
                    self.b.intern_frame(&FrameSpec::named(&process)),
                    &pending.frames[..],
                )
            }
        };
        let root = self.b.intern_stack(None, root);
        let leaf = callees.iter().fold(root, |parent, &frame| {
            self.b.intern_stack(Some(parent), frame)
        });
        self.totals
            .add(pending.weight, 1)
            .map_err(|why| format!("line {}: {why}", pending.line))?;
        self.cut += u64::from(pending.cut);
        let time = match pending.time_ns {
            Some(t) => {
                let first = *self.first_time.get_or_insert(t);
                self.last_time = self.last_time.max(t);
                t.saturating_sub(first)
            }
            None => 0,
        };
        let thread = self.b.thread(pending.tid, &pending.comm);
        self.b.push_sample(leaf, thread, time, pending.weight);
        self.rows += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<Loaded, String> {
        self.end_sample()?;
        let Some((event, with_period)) = self.shown.clone() else {
            return Err(match (self.wanted, self.events.is_empty()) {
                (Some(wanted), false) => {
                    unknown_type(wanted, self.events.iter().map(|(e, _)| e.as_str()))
                }
                _ => self.no_samples(),
            });
        };
        if self.rows == 0 {
            return Err(self.no_samples());
        }
        let mut warnings = Vec::new();
        let others: Vec<String> = self
            .events
            .iter()
            .filter(|(name, _)| *name != event)
            .map(|(name, count)| format!("{name} ({count})"))
            .collect();
        if !others.is_empty() {
            warnings.push(format!(
                "the file holds samples of other events too, left out: {}; choose one as the sample type",
                others.join(", ")
            ));
        }
        if self.skipped > 0 {
            warnings.push(format!(
                "skipped {} line{} that could not be read (first: {})",
                self.skipped,
                if self.skipped == 1 { "" } else { "s" },
                self.first_skipped.take().unwrap_or_default()
            ));
        }
        warnings.extend(cut_warning(self.cut));
        let meta = self.b.meta_mut();
        meta.sample_type = match (with_period, event.as_str()) {
            (false, _) => SampleType::samples(),
            (true, "cpu-clock" | "task-clock") => SampleType::new(event, Unit::Nanoseconds),
            (true, _) => SampleType::new(event, Unit::Count),
        };
        meta.duration_ns = self.last_time - self.first_time.unwrap_or(self.last_time);
        Ok(Loaded {
            session: self.b.finish(),
            warnings,
        })
    }

    fn no_samples(&mut self) -> String {
        match self.first_skipped.take() {
            Some(first) => format!(
                "no samples found in the perf script output ({} line{} could not be read; first: {first})",
                self.skipped,
                if self.skipped == 1 { "" } else { "s" }
            ),
            None => "no samples found in the perf script output".to_owned(),
        }
    }
}

/// The event line pattern: `comm [pid/]tid [[cpu]] [time:] [period] event: [rest]`. The command
/// may hold spaces; the event may hold colons (`sched:sched_switch`, `cpu-clock:pppH`).
fn event_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?P<comm>\S.*?)\s+(?:(?P<pid>\d+)/)?(?P<tid>\d+)\s+(?:\[\d+\]\s+)?(?:(?P<time>\d+\.\d+):\s+)?(?:(?P<period>\d+)\s+)?(?P<event>[^\s:\d][^\s]*?):(?:\s+(?P<rest>.*))?$",
        )
        .expect("the event line pattern compiles")
    })
}

/// `line` (trimmed) as an event line, if it is one.
fn parse_event(line: &str) -> Option<EventLine<'_>> {
    // Every event line has a `:` ending a word; most lines (frames) have none, and skip the regex.
    if !line.ends_with(':') && !line.contains(": ") && !line.contains(":\t") {
        return None;
    }
    let caps = event_regex().captures(line)?;
    let text = |name| caps.name(name).map(|m| m.as_str());
    Some(EventLine {
        comm: text("comm")?,
        pid: text("pid").and_then(|p| p.parse().ok()),
        tid: text("tid")?.parse().ok()?,
        time_ns: text("time").and_then(parse_seconds),
        period: text("period").and_then(|p| p.parse().ok()),
        event: text("event")?,
        rest: text("rest").unwrap_or_default(),
    })
}

/// `seconds.fraction` as nanoseconds.
fn parse_seconds(text: &str) -> Option<u64> {
    let (secs, frac) = text.split_once('.')?;
    let mut nanos: u64 = 0;
    for i in 0..9 {
        let digit = frac.as_bytes().get(i).map_or(0, |d| u64::from(d - b'0'));
        nanos = nanos * 10 + digit;
    }
    secs.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

/// The event's name without perf's modifiers: `cpu-clock:pppH` → `cpu-clock`, `cycles:u` →
/// `cycles`; a tracepoint keeps its group (`sched:sched_switch`).
fn event_name(event: &str) -> &str {
    match event.rsplit_once(':') {
        Some((name, modifiers))
            if !modifiers.is_empty()
                && modifiers.bytes().all(|c| b"ukhIGHpPSDeWb".contains(&c)) =>
        {
            name
        }
        _ => event,
    }
}

/// A frame line, parsed.
struct FrameLine<'a> {
    address: u64,
    /// The function, without `+0x...` offset; `None` when perf did not know it, blank when perf
    /// printed none before the object.
    symbol: Option<&'a str>,
    dso: Option<&'a str>,
}

/// `address [symbol[+0xoffset]] [(dso)]` (trimmed), if `line` is a frame line.
fn parse_frame(line: &str) -> Option<FrameLine<'_>> {
    let (address, rest) = match line.split_once(char::is_whitespace) {
        Some((a, r)) => (a, r.trim()),
        None => (line, ""),
    };
    if address.is_empty() || address.len() > 16 || !address.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let address = u64::from_str_radix(address, 16).ok()?;
    // The dso is the last parenthesized group; it may hold parentheses itself ("(deleted)").
    let (symbol, dso) = match rest.strip_suffix(')') {
        Some(inner) => {
            let mut depth = 1usize;
            let mut open = None;
            for (i, c) in inner.char_indices().rev() {
                match c {
                    ')' => depth += 1,
                    '(' => {
                        depth -= 1;
                        if depth == 0 {
                            open = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            match open {
                Some(i) if i == 0 || inner[..i].ends_with(char::is_whitespace) => {
                    (inner[..i].trim_end(), Some(&inner[i + 1..]))
                }
                _ => (rest, None),
            }
        }
        None => (rest, None),
    };
    let symbol = match symbol.rsplit_once("+0x") {
        Some((name, offset))
            if !name.is_empty() && offset.bytes().all(|c| c.is_ascii_hexdigit()) =>
        {
            name
        }
        _ => symbol,
    };
    Some(FrameLine {
        address,
        // A blank symbol before an object is kept blank (the reference collapsers name it " ").
        symbol: Some(symbol).filter(|s| *s != "[unknown]" && !(s.is_empty() && dso.is_none())),
        dso: dso.filter(|d| !d.is_empty() && *d != "unknown" && *d != "[unknown]"),
    })
}

/// True when `line` has the structure of a `perf script` line: an event line, or an indented
/// frame line (what [`super::sniff`] looks for).
pub(crate) fn is_perf_line(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return false;
    }
    let indented = trimmed.len() < line.trim_end().len();
    parse_event(trimmed).is_some_and(|e| !e.comm.contains(';'))
        || indented && parse_frame(trimmed).is_some()
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

    fn read(text: &[u8]) -> Result<Loaded> {
        read_perf_script_with(text, Path::new("perf.txt"), &LoadOptions::default())
    }

    fn names(s: &Session, row: usize) -> Vec<&str> {
        s.stack_frames(s.samples.stack[row])
            .map(|f| s.frame_name(f))
            .collect()
    }

    #[test]
    fn each_sample_is_a_row_with_its_thread_time_stack_and_period() {
        let s = read(SCRIPT.as_bytes()).unwrap().session;
        assert_eq!(s.meta.timer, PERF_TIMER);
        assert_eq!(
            s.meta.sample_type,
            SampleType::new("cpu-clock", Unit::Nanoseconds)
        );
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.sample_count(), 3);
        assert_eq!(s.samples.weight, [250_000; 3]);
        assert_eq!(s.samples.time_ns, [0, 1_000_000, 2_000_000]);
        assert_eq!(s.meta.duration_ns, 2_000_000);
        let mut threads: Vec<(u64, &str)> =
            s.threads.iter().map(|t| (t.tid, s.str(t.name))).collect();
        threads.sort();
        assert_eq!(threads, [(100, "demo"), (101, "worker")]);
        assert_eq!(names(&s, 0), ["hash", "work", "main"]);
        let hash = s.frame(s.stack(s.samples.stack[0]).frame);
        assert_eq!(hash.address, Some(0x55aa01));
        assert_eq!(hash.module.map(|m| s.str(m)), Some("/usr/bin/demo"));
    }

    #[test]
    fn three_identical_samples_count_as_three() {
        let text =
            "burn 1/1 [000] 1.0: 1000 cpu-clock:\n\t 55aa01 hot+0x10 (/bin/burn)\n\n".repeat(3);
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(s.sample_count(), 3);
        assert_eq!(s.total_weight(), 3000);
    }

    #[test]
    fn cycles_are_counts_of_cycles_not_nanoseconds() {
        let text = "swapper     0 [012] 2281339.604067:   20834821 cycles:\n        ffffffffc09ace93 idle_loop+0xb80 ([kernel.kallsyms])\n\n";
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(s.meta.sample_type, SampleType::new("cycles", Unit::Count));
        assert_eq!(s.total_weight(), 20_834_821);
        assert_eq!(names(&s, 0), ["idle_loop"]);
        let s = read(b"a 1 1.0: 7 cycles:u: 55 f (x)\n").unwrap().session;
        assert_eq!(s.meta.sample_type, SampleType::new("cycles", Unit::Count));
    }

    #[test]
    fn samples_without_a_period_count_one_each() {
        let text = "iperf 1/2 [000] 1.0: cpu-clock: \n\t    55aa01 hot (/bin/iperf)\n\niperf 1/2 [000] 1.1: cpu-clock: \n\t    55aa01 hot (/bin/iperf)\n\n";
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(s.meta.sample_type, SampleType::samples());
        assert_eq!(s.samples.weight, [1, 1]);
        assert_eq!(s.samples.time_ns, [0, 100_000_000]);
    }

    #[test]
    fn a_record_without_callchains_has_the_frame_on_the_event_line() {
        let text = "burn 26036  7992.386479:    1001001 cpu-clock:pppH:      1226 hot70+0x55 (/opt/app/burn)\n\
            burn 26036  7992.387480:    1001001 cpu-clock:pppH:      1226 hot70+0x55 (/opt/app/burn)\n";
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(s.sample_count(), 2);
        assert_eq!(s.total_weight(), 2_002_002);
        assert_eq!(s.meta.sample_type.name, "cpu-clock");
        assert_eq!(names(&s, 1), ["hot70"]);
        assert_eq!(s.str(s.threads[0].name), "burn");
    }

    #[test]
    fn a_period_after_samples_without_one_does_not_mix_units() {
        let text = "a 1 1.0: cpu-clock: 55 f (x)\na 1 1.1: 1000 cpu-clock: 55 f (x)\n";
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(s.meta.sample_type, SampleType::samples());
        assert_eq!(s.samples.weight, [1, 1]);
        let text = "a 1 1.0: 1000 cpu-clock: 55 f (x)\na 1 1.1: cpu-clock: 55 f (x)\n";
        let loaded = read(text.as_bytes()).unwrap();
        assert_eq!(loaded.session.samples.weight, [1000]);
        assert_eq!(
            loaded.warnings,
            ["skipped 1 line that could not be read (first: line 2: an event line without the period the others have)"]
        );
    }

    #[test]
    fn the_older_layout_with_unindented_frames_reads() {
        let text = "java 19983 cycles:\nffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n7f0000001000 main (/usr/bin/java)\n\n";
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(names(&s, 0), ["native_write_msr_safe", "main"]);
        assert_eq!(s.meta.sample_type, SampleType::samples());
        assert_eq!(s.threads[0].tid, 19983);
    }

    #[test]
    fn bytes_that_are_not_utf8_show_as_replacement_characters() {
        let text = b"burn 26036  7992.386479:    1001001 cpu-clock:pppH: \n\t            1226 hot70+0x55 (/opt/app/burn)\n\t            141d ma\xffin+0x39 (/opt/app/burn)\n\n";
        let s = read(text).unwrap().session;
        assert_eq!(names(&s, 0), ["hot70", "ma\u{fffd}in"]);
    }

    #[test]
    fn frame_lines_before_any_event_line_are_refused_not_a_panic() {
        let text =
            "\t    55aa01 hash+0x10 (/usr/bin/demo)\n\t    55aa02 main+0x20 (/usr/bin/demo)\n\n";
        let err = read(text.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            err,
            "perf.txt: no samples found in the perf script output (2 lines could not be read; \
             first: line 1: a frame line before any event line)"
        );
    }

    #[test]
    fn mixed_events_show_the_first_or_the_chosen_one_and_say_so() {
        let text = "a 1 1.0: 10 cpu-clock: 55 f (x)\na 1 1.1: 7 cycles: 55 g (x)\na 1 1.2: 10 cpu-clock: 56 h (x)\n";
        let loaded = read(text.as_bytes()).unwrap();
        assert_eq!(loaded.session.sample_count(), 2);
        assert_eq!(
            loaded.warnings,
            ["the file holds samples of other events too, left out: cycles (1); choose one as the sample type"]
        );
        let options = LoadOptions {
            sample_type: Some("cycles".into()),
            ..LoadOptions::default()
        };
        let loaded = read_perf_script_with(text.as_bytes(), Path::new("p"), &options).unwrap();
        assert_eq!(loaded.session.total_weight(), 7);
        assert_eq!(loaded.session.meta.sample_type.name, "cycles");
        let options = LoadOptions {
            sample_type: Some("instructions".into()),
            ..LoadOptions::default()
        };
        let err = read_perf_script_with(text.as_bytes(), Path::new("p"), &options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "p: no sample type `instructions` (available: cpu-clock, cycles)"
        );
    }

    #[test]
    fn unknown_symbols_take_the_dso_name_and_offsets_are_dropped() {
        let frame = parse_frame("7f2a3b2a0000 [unknown] (/usr/lib/libc.so.6 (deleted))").unwrap();
        assert_eq!(frame.symbol, None);
        assert_eq!(frame.dso, Some("/usr/lib/libc.so.6 (deleted)"));
        let frame = parse_frame("115b operator()(int)+0x22 (/bin/x)").unwrap();
        assert_eq!(frame.symbol, Some("operator()(int)"));
        let frame = parse_frame("115b hot").unwrap();
        assert_eq!((frame.symbol, frame.dso), (Some("hot"), None));
        let s = read(b"a 1 1.0: 1 cpu-clock:\n\t 7f00 [unknown] (/lib/libc.so.6)\n\t 7f01 [unknown] ([unknown])\n")
            .unwrap()
            .session;
        assert_eq!(names(&s, 0), ["[libc.so.6]", "[unknown]"]);
        let unknown = s.frame(
            s.stack(s.samples.stack[0])
                .parent
                .map(|p| s.stack(p).frame)
                .unwrap(),
        );
        assert_eq!(unknown.module, None, "`[unknown]` is no object");
    }

    #[test]
    fn inlined_is_no_module_and_inlined_frames_take_the_object_they_were_inlined_into() {
        let text = "a 1/1 1.0: 1 cycles:\n\t 10 inner (inlined)\n\t 20 lost (inlined)\n\t 10 outer+0x4 (/lib/ld.so)\n\t 30 main (/bin/a)\n\n";
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(names(&s, 0), ["inner", "lost", "outer", "main"]);
        let frames: Vec<(bool, Option<&str>)> = s
            .stack_frames(s.samples.stack[0])
            .map(|f| (s.frame(f).inlined, s.frame(f).module.map(|m| s.str(m))))
            .collect();
        // `lost` is at another address than the frame after it: perf lost what it was
        // inlined into, so its object is unknown rather than guessed.
        assert_eq!(
            frames,
            [
                (true, Some("/lib/ld.so")),
                (true, None),
                (false, Some("/lib/ld.so")),
                (false, Some("/bin/a"))
            ]
        );
        assert!(!s.strings.iter().any(|t| t == "inlined"));
    }

    #[test]
    fn the_process_root_is_the_command_with_spaces_as_underscores() {
        let text = "web server 1/2 1.0: 1 cycles:\n\t 10 work (/bin/a)\n\nweb server 1/2 1.1: 1 cycles:\n\n";
        let options = LoadOptions {
            process_root: true,
            ..LoadOptions::default()
        };
        let loaded = read_perf_script_with(text.as_bytes(), Path::new("p"), &options).unwrap();
        let s = &loaded.session;
        assert_eq!(names(s, 0), ["work", "web_server"]);
        // A sample without frames is its root alone, as the reference collapsers count it.
        assert_eq!(names(s, 1), ["web_server"]);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let s = read(text.as_bytes()).unwrap().session;
        assert_eq!(names(&s, 0), ["work"]);
    }

    #[test]
    fn samples_without_frames_keep_their_period_under_their_process_name() {
        // Frameless event lines: before a blank line, before the next event line, at the end.
        let text = "web server 1/2 1.0: 100 cpu-clock:\n\t 10 work (/bin/a)\n\n\
            web server 1/2 1.1: 20 cpu-clock:\n\n\
            web server 1/3 1.2: 3 cpu-clock:\n\
            db 4/4 1.3: 4000 cpu-clock:\n\t 10 query (/bin/db)\n\n\
            db 4/4 1.4: 1 cpu-clock:\n";
        for process_root in [false, true] {
            let options = LoadOptions {
                process_root,
                ..LoadOptions::default()
            };
            let loaded = read_perf_script_with(text.as_bytes(), Path::new("p"), &options).unwrap();
            let s = &loaded.session;
            assert_eq!(s.total_weight(), 100 + 20 + 3 + 4000 + 1, "{process_root}");
            assert_eq!(s.samples.weight, [100, 20, 3, 4000, 1]);
            assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
            for (row, process) in [(1, "web_server"), (2, "web_server"), (4, "db")] {
                assert_eq!(names(s, row), [process], "{process_root}");
            }
            let query: &[&str] = if process_root {
                &["query", "db"]
            } else {
                &["query"]
            };
            assert_eq!(names(s, 3), query);
        }
    }

    #[test]
    fn stacks_deeper_than_the_maximum_are_cut_at_the_root_end() {
        let mut text = String::from("a 1 1.0: 1 cpu-clock:\n\t 1 leaf (x)\n");
        for _ in 0..MAX_STACK_DEPTH + 5 {
            text.push_str("\t 2 caller (x)\n");
        }
        let loaded = read(text.as_bytes()).unwrap();
        let s = &loaded.session;
        assert_eq!(s.stack_frames(s.samples.stack[0]).count(), MAX_STACK_DEPTH);
        assert_eq!(names(s, 0)[0], "leaf");
        assert_eq!(
            loaded.warnings,
            [format!(
                "1 stack deeper than {MAX_STACK_DEPTH} frames was cut at the root end"
            )]
        );
    }

    #[test]
    fn periods_adding_up_past_2_64_are_refused() {
        let text = "a 1 1.0: 18446744073709551615 cycles: 55 f (x)\n".repeat(2);
        let err = read(text.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            err,
            "perf.txt: line 2: the weights add up to more than 2^64 - 1, more than prof can total"
        );
    }

    #[test]
    fn text_without_samples_is_bad_input() {
        let err = read(b"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "perf.txt: no samples found in the perf script output"
        );
    }
}
