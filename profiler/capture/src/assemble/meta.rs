//! The session metadata the sampler fills in: who, where, when, how.

use crate::session::{Metadata, Mode, Process};
use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as a session's start: nanoseconds since the Unix epoch, to the millisecond (what its
/// file keeps, so a session reads back equal).
pub fn start_time_ns(time: SystemTime) -> i64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let ns = i64::try_from(since.as_nanos()).unwrap_or(i64::MAX);
    ns - ns % 1_000_000
}

/// The metadata known at start; duration, rates and drops are filled in at stop.
pub fn at_start(mode: Mode, requested_interval_ns: u64, timer: &str) -> Metadata {
    let mut args = std::env::args();
    let program = std::env::current_exe()
        .map(|p| p.display().to_string())
        .ok()
        .or_else(|| args.next())
        .unwrap_or_default();
    let args = std::env::args().skip(1).collect();
    Metadata {
        program,
        args,
        pid: std::process::id(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default(),
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        start_time_ns: Some(start_time_ns(SystemTime::now())),
        duration_ns: 0,
        mode,
        requested_interval_ns,
        achieved_interval_ns: 0,
        timer: timer.to_owned(),
        dropped_samples: 0,
        sampling_ended: None,
        sample_type: mode.sample_type(),
        extra_sample_types: mode.extra_sample_types(),
        prof_version: prof_session::VERSION.to_owned(),
    }
}

/// What `/proc` says of process `pid` now: its parent, name, command line and executable;
/// `None` once it has ended (a zombie's command line is empty and its executable unreadable).
pub fn process_from_proc(pid: u32) -> Option<Process> {
    let dir = format!("/proc/{pid}");
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    // `pid (comm) state ppid ...`: the name may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    let parent_pid = fields
        .next()
        .and_then(|p| p.parse().ok())
        .filter(|&p| p != 0);
    let name = std::fs::read_to_string(format!("{dir}/comm")).ok()?;
    let command_line = std::fs::read(format!("{dir}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let executable = std::fs::read_link(format!("{dir}/exe"))
        .ok()
        .map(|p| p.display().to_string());
    Some(Process {
        pid,
        parent_pid,
        name: name.trim_end_matches('\n').to_owned(),
        command_line,
        executable,
    })
}

/// This process, as the single entry of the sampler's process table.
pub fn own_process(meta: &Metadata) -> Process {
    process_from_proc(std::process::id()).unwrap_or_else(|| Process::implicit(meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_from_proc() {
        let me = process_from_proc(std::process::id()).expect("this process is alive");
        assert_eq!(me.pid, std::process::id());
        assert_eq!(me.parent_pid, Some(std::os::unix::process::parent_id()));
        let exe = std::env::current_exe().unwrap().display().to_string();
        assert_eq!(me.executable.as_deref(), Some(exe.as_str()));
        let args: Vec<String> = std::env::args().collect();
        assert_eq!(me.command_line, args);
        assert!(!me.name.is_empty() && exe.contains(&me.name[..me.name.len().min(15)]));
        assert!(process_from_proc(u32::MAX).is_none());
    }
    use std::time::Duration;

    #[test]
    fn start_times_are_kept_to_the_millisecond() {
        assert_eq!(start_time_ns(UNIX_EPOCH), 0);
        let t = UNIX_EPOCH + Duration::from_nanos(951_782_400_000_000_000 + 3_723_456_789);
        assert_eq!(start_time_ns(t), 951_782_400_000_000_000 + 3_723_000_000);
        assert_eq!(
            crate::session::rfc3339_utc(start_time_ns(t)),
            "2000-02-29T00:00:03.723Z"
        );
    }
}
