//! The session's process table for a recording: each process seen (the command and every
//! process it started, or the attached one and its children), its parent from FORK records,
//! its name from COMM records, and its command line and executable from `/proc`, read as soon
//! as its records are read from the rings (while it most likely still lives). A process that
//! ended before prof looked keeps what the records said: its name, and as executable the first
//! file it mapped executable after its last `exec`.

use super::records::{Record, SampleRecord};
use prof_session::session::{Process, ProcessIdx, SessionBuilder};
use std::collections::HashMap;

/// What is known of one process.
#[derive(Default)]
struct Entry {
    parent_pid: Option<u32>,
    /// Its main thread's name after its last `exec`, and that `exec`'s time.
    name: Option<String>,
    exec_time: u64,
    /// Waiting for the first executable mapping after an `exec`: that is the program.
    awaiting_program: bool,
    mapped_program: Option<String>,
    /// What `/proc` said, and when it was read (`CLOCK_MONOTONIC`, as record times).
    seen: Option<(Process, u64)>,
    /// Whether a record of it was handled (records of processes not recorded never are).
    handled: bool,
}

/// The processes of a recording, in the order first seen.
#[derive(Default)]
pub struct ProcessTable {
    order: Vec<u32>,
    entries: HashMap<u32, Entry>,
    /// Each thread's process.
    owner: HashMap<u32, u32>,
}

impl ProcessTable {
    fn entry(&mut self, pid: u32) -> &mut Entry {
        if !self.entries.contains_key(&pid) {
            self.order.push(pid);
        }
        self.entries.entry(pid).or_default()
    }

    /// Reads `/proc/PID` now for `pid` (once known, even when it has ended: its further
    /// samples do not look again).
    pub fn look(&mut self, pid: u32) {
        let entry = self.entry(pid);
        if let Some(process) = prof_capture::assemble::process_from_proc(pid) {
            let now = prof_capture::sys::monotonic_ns();
            entry.seen = Some((process, now));
        }
    }

    /// Marks `pid` as recorded (an attached process, which may have no record of its own).
    pub fn handled(&mut self, pid: u32) {
        self.entry(pid).handled = true;
    }

    /// Called for each record as it is read from a ring, before records are put in time
    /// order: a process seen for the first time, or that has just called `exec`, is looked up
    /// in `/proc` at once.
    pub fn read(&mut self, r: &Record) {
        match *r {
            Record::Fork { pid, ppid, .. } if pid != ppid => self.look(pid),
            Record::Comm {
                pid, exec: true, ..
            } => self.look(pid),
            Record::Sample(ref s) if !self.entries.contains_key(&s.pid) => self.look(s.pid),
            _ => {}
        }
    }

    /// Takes in a record in time order.
    pub fn handle(&mut self, r: &Record) {
        if let Record::Sample(SampleRecord { pid, .. })
        | Record::Fork { pid, .. }
        | Record::Comm { pid, .. }
        | Record::Mmap { pid, .. } = *r
        {
            self.entry(pid).handled = true;
        }
        match r {
            Record::Sample(s) => {
                self.entry(s.pid);
                self.owner.insert(s.tid, s.pid);
            }
            &Record::Fork { pid, ppid, tid, .. } => {
                if pid != ppid {
                    self.entry(pid).parent_pid = Some(ppid);
                }
                self.owner.insert(tid, pid);
            }
            Record::Comm {
                pid,
                tid,
                exec,
                name,
                time,
            } => {
                self.owner.insert(*tid, *pid);
                let entry = self.entry(*pid);
                if *exec {
                    entry.exec_time = *time;
                    entry.awaiting_program = true;
                    entry.mapped_program = None;
                }
                if *exec || pid == tid {
                    entry.name = Some(name.clone());
                }
            }
            Record::Mmap {
                pid,
                prot,
                filename,
                ..
            } => {
                let entry = self.entry(*pid);
                if *prot & libc::PROT_EXEC as u32 != 0
                    && entry.awaiting_program
                    && !filename.starts_with('[')
                {
                    entry.awaiting_program = false;
                    entry.mapped_program = Some(filename.clone());
                }
            }
            _ => {}
        }
    }

    /// Adds the processes to `builder`; gives each thread's process index (threads of a
    /// process never seen join the first).
    pub fn build(self, builder: &mut SessionBuilder) -> HashMap<u32, ProcessIdx> {
        let mut index = HashMap::new();
        for pid in &self.order {
            let entry = &self.entries[pid];
            if !entry.handled {
                continue;
            }
            // What `/proc` said before the last `exec` describes the program before it.
            let seen = entry
                .seen
                .as_ref()
                .filter(|(_, at)| *at >= entry.exec_time)
                .map(|(p, _)| p);
            let name = entry
                .name
                .clone()
                .or_else(|| seen.map(|p| p.name.clone()))
                .unwrap_or_default();
            let process = Process {
                pid: *pid,
                parent_pid: entry.parent_pid.or_else(|| seen.and_then(|p| p.parent_pid)),
                name,
                command_line: seen.map(|p| p.command_line.clone()).unwrap_or_default(),
                executable: seen
                    .and_then(|p| p.executable.clone())
                    .or_else(|| entry.mapped_program.clone()),
            };
            index.insert(*pid, builder.push_process(process));
        }
        self.owner
            .into_iter()
            .map(|(tid, pid)| (tid, index.get(&pid).copied().unwrap_or(ProcessIdx(0))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_ended_unseen_keeps_its_comm_name_parent_and_first_mapped_program() {
        let mut table = ProcessTable::default();
        let records = [
            Record::Fork {
                pid: 4_000_001,
                ppid: 4_000_000,
                tid: 4_000_001,
                time: 10,
            },
            Record::Comm {
                pid: 4_000_001,
                tid: 4_000_001,
                time: 11,
                exec: true,
                name: "spin".into(),
            },
            Record::Mmap {
                pid: 4_000_001,
                time: 12,
                addr: 0x1000,
                len: 0x1000,
                pgoff: 0,
                prot: (libc::PROT_READ | libc::PROT_EXEC) as u32,
                filename: "/opt/spin".into(),
            },
            Record::Mmap {
                pid: 4_000_001,
                time: 13,
                addr: 0x9000,
                len: 0x1000,
                pgoff: 0,
                prot: (libc::PROT_READ | libc::PROT_EXEC) as u32,
                filename: "/lib/ld.so".into(),
            },
            Record::Fork {
                pid: 4_000_001,
                ppid: 4_000_001,
                tid: 4_000_002,
                time: 14,
            },
        ];
        for r in &records {
            table.read(r);
            table.handle(r);
        }
        let mut b = SessionBuilder::default();
        let owners = table.build(&mut b);
        let s = b.finish();
        assert_eq!(
            s.processes,
            [Process {
                pid: 4_000_001,
                parent_pid: Some(4_000_000),
                name: "spin".into(),
                command_line: Vec::new(),
                executable: Some("/opt/spin".into()),
            }]
        );
        assert_eq!(owners[&4_000_002], ProcessIdx(0));
    }
}
