//! The threads of a running process, and opening an event on each of them: an inherited
//! event reaches only the threads started after it was opened on their parent, so a thread
//! started while the events are being opened is missed unless the threads are listed again,
//! until a listing finds none new.

use prof_session::Result;
use std::collections::HashSet;

/// How many listings of a process's threads at the most: a process that starts threads
/// faster than prof opens events on them would otherwise keep prof listing for ever (those it
/// starts after the last listing inherit from a thread that has its events, as most do).
const MAX_LISTINGS: usize = 64;

/// The threads of process `pid` now (`/proc/PID/task`); none when it has ended.
pub fn task_ids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Calls `open` once for each thread of process `pid` not in `opened` (adding it there),
/// listing the threads again until a listing finds none new.
pub fn open_on_every_task(
    pid: u32,
    opened: &mut HashSet<u32>,
    mut open: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    for _ in 0..MAX_LISTINGS {
        let new: Vec<u32> = task_ids(pid)
            .into_iter()
            .filter(|t| !opened.contains(t))
            .collect();
        if new.is_empty() {
            break;
        }
        for tid in new {
            opened.insert(tid);
            open(tid)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_of_this_process_is_opened_once_and_those_already_opened_are_not() {
        let (started, stop) = (
            std::sync::mpsc::channel::<()>(),
            std::sync::mpsc::channel::<()>(),
        );
        let (ready, wait) = (started.0, stop.1);
        let worker = std::thread::spawn(move || {
            ready.send(()).unwrap();
            let _ = wait.recv();
        });
        started.1.recv().unwrap();
        let me = crate::sys::gettid();
        let mut opened = HashSet::from([me]);
        let mut seen = Vec::new();
        open_on_every_task(std::process::id(), &mut opened, |tid| {
            seen.push(tid);
            Ok(())
        })
        .unwrap();
        assert!(!seen.contains(&me));
        let mut unique = seen.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seen.len());
        assert!(opened.len() >= 2 && seen.len() == opened.len() - 1);
        drop(stop.0);
        worker.join().unwrap();
    }
}
