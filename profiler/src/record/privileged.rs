//! Programs prof cannot sample: the kernel ends the perf events a process inherited when it
//! `exec`s a set-uid or set-gid program (one whose user or group becomes another than the
//! caller's real one) or one its user may not read, and the dynamic loader ignores
//! `LD_PRELOAD` in a set-uid or set-gid program. Such a program's process has no samples, which
//! is not for lack of running: the recording says so, naming the program.
//!
//! For the command itself, its file's mode and owner against prof's real ids say it before it
//! runs. For any process, its COMM record of the `exec` is the last the kernel writes of it
//! (it writes the record before it ends the events, and no MMAP2 of the new program follows);
//! `/proc/PID/status`, read as the record is read, tells a set-uid from a set-gid program by
//! its real and effective ids.

use super::access::Creds;
use super::records::Record;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A process prof could not sample after its `exec`, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnsampledExec {
    /// The process.
    pub pid: u32,
    /// The program it ran: its path where known, else its name.
    pub program: String,
    /// What changed at the `exec`.
    pub change: IdChange,
}

/// What an `exec` the kernel does not sample across changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdChange {
    /// A set-uid program: it ran as user `euid`.
    SetUid {
        /// Its effective user id.
        euid: u32,
    },
    /// A set-gid program: it ran as group `egid`.
    SetGid {
        /// Its effective group id.
        egid: u32,
    },
    /// Not seen (the process had ended when prof looked, or gave up its ids): a set-uid,
    /// set-gid or unreadable program.
    Unknown,
}

impl std::fmt::Display for UnsampledExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let UnsampledExec {
            pid,
            program,
            change,
        } = self;
        write!(f, "{program} (pid {pid}) could not be sampled: ")?;
        let advice = match change {
            IdChange::SetUid { euid } => {
                write!(f, "it is set-uid (it ran as uid {euid})")?;
                "profile it as that user"
            }
            IdChange::SetGid { egid } => {
                write!(f, "it is set-gid (it ran as gid {egid})")?;
                "profile it as that group"
            }
            IdChange::Unknown => {
                write!(f, "it is set-uid, set-gid or not readable by prof's user")?;
                "profile it as the user it runs as, or make it readable"
            }
        };
        write!(
            f,
            ", and the kernel stops sampling at the exec of such a program (the dynamic loader \
             ignores LD_PRELOAD in a set-uid or set-gid one): {advice}"
        )
    }
}

/// The path of `program` as `exec` finds it (searched in `PATH` when it names no directory).
pub(super) fn program_path(program: &OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return Some(path.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// What running `program` would change of `caller`'s ids (a set-uid program of another user,
/// a set-gid program of another group): `None` when nothing, or it cannot be read.
pub(super) fn predict(program: &OsStr, caller: &Creds) -> Option<(String, IdChange)> {
    use std::os::unix::fs::MetadataExt;
    let path = program_path(program)?;
    let m = std::fs::metadata(&path).ok()?;
    let change = change_at_exec(m.mode(), m.uid(), m.gid(), caller)?;
    Some((path.display().to_string(), change))
}

/// What an `exec` of a file of `mode`, owned by `uid` and `gid`, changes of `caller`'s ids.
fn change_at_exec(mode: u32, uid: u32, gid: u32, caller: &Creds) -> Option<IdChange> {
    let set_uid = mode & libc::S_ISUID != 0;
    // Set-gid without group execute marks mandatory locking, not a group change.
    let set_gid = mode & libc::S_ISGID != 0 && mode & libc::S_IXGRP != 0;
    if set_uid && uid != caller.uid[0] {
        Some(IdChange::SetUid { euid: uid })
    } else if set_gid && gid != caller.gid[0] {
        Some(IdChange::SetGid { egid: gid })
    } else {
        None
    }
}

/// What a process's ids say its last `exec` changed (`None` when real and effective agree).
fn change_seen(creds: &Creds) -> Option<IdChange> {
    if creds.uid[0] != creds.uid[1] {
        Some(IdChange::SetUid { euid: creds.uid[1] })
    } else if creds.gid[0] != creds.gid[1] {
        Some(IdChange::SetGid { egid: creds.gid[1] })
    } else {
        None
    }
}

/// The `exec`s of a recording that nothing followed.
#[derive(Default)]
pub(super) struct Execs {
    /// What `/proc` said of each process just after its `exec` record was read.
    seen: HashMap<u32, (String, Option<IdChange>)>,
    /// The processes whose last record so far is an `exec`.
    pending: HashMap<u32, (String, Option<IdChange>)>,
    /// What the command's file said before it ran: its pid, path and change.
    expected: Option<(u32, String, IdChange)>,
}

impl Execs {
    /// Execs expecting the command (process `pid`, running `program` for `caller`).
    pub fn for_command(pid: u32, program: &OsStr, caller: Option<&Creds>) -> Execs {
        let expected = caller
            .and_then(|c| predict(program, c))
            .map(|(path, change)| (pid, path, change));
        Execs {
            expected,
            ..Execs::default()
        }
    }

    /// Called for each record as it is read (while its process most likely lives): an `exec`'s
    /// process is looked up in `/proc` at once.
    pub fn read(&mut self, r: &Record) {
        if let Record::Comm {
            pid,
            exec: true,
            ref name,
            ..
        } = *r
        {
            let program = std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| name.clone());
            let change = Creds::of(pid).as_ref().and_then(change_seen);
            self.seen.insert(pid, (program, change));
        }
    }

    /// Takes in a record in time order.
    pub fn handle(&mut self, r: &Record) {
        match *r {
            Record::Comm {
                pid,
                exec: true,
                ref name,
                ..
            } => {
                let seen = self.seen.remove(&pid);
                self.pending
                    .insert(pid, seen.unwrap_or_else(|| (name.clone(), None)));
            }
            Record::Mmap { pid, .. } | Record::Switch { pid, .. } => {
                self.pending.remove(&pid);
            }
            Record::Sample(ref s) => {
                self.pending.remove(&s.pid);
            }
            _ => {}
        }
    }

    /// The processes not sampled after an `exec`: those whose change was seen or expected, and
    /// when no record was lost (`lost` is 0), the others too.
    pub fn finish(self, lost: u64) -> Vec<UnsampledExec> {
        let mut unsampled: Vec<UnsampledExec> = self
            .pending
            .into_iter()
            .filter_map(|(pid, (program, change))| {
                let (program, change) = match &self.expected {
                    Some((command, path, expected)) if *command == pid => {
                        (path.clone(), change.unwrap_or(*expected))
                    }
                    _ => (program, change.unwrap_or(IdChange::Unknown)),
                };
                let known = change != IdChange::Unknown;
                (known || lost == 0).then_some(UnsampledExec {
                    pid,
                    program,
                    change,
                })
            })
            .collect();
        unsampled.sort_by_key(|u| u.pid);
        unsampled
    }

    /// The command's expected change, for a recording that sees no records (alloc mode):
    /// the command, when `started` says its interposer never started in it.
    pub fn expected_unless(self, started: bool) -> Vec<UnsampledExec> {
        match self.expected {
            Some((pid, program, change)) if !started => vec![UnsampledExec {
                pid,
                program,
                change,
            }],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Creds = Creds {
        uid: [0; 3],
        gid: [0; 3],
        caps: 0,
    };

    #[test]
    fn a_set_uid_or_set_gid_file_of_another_user_or_group_changes_ids_at_exec() {
        let nobody = 65534;
        assert_eq!(
            change_at_exec(0o4755, nobody, 0, &ROOT),
            Some(IdChange::SetUid { euid: nobody })
        );
        assert_eq!(
            change_at_exec(0o2755, 0, nobody, &ROOT),
            Some(IdChange::SetGid { egid: nobody })
        );
        // Set-uid to oneself changes nothing; set-gid without group execute is a lock mark.
        assert_eq!(change_at_exec(0o4755, 0, 0, &ROOT), None);
        assert_eq!(change_at_exec(0o2745, 0, nobody, &ROOT), None);
        assert_eq!(change_at_exec(0o755, nobody, nobody, &ROOT), None);
    }

    fn comm(pid: u32, time: u64) -> Record {
        Record::Comm {
            pid,
            tid: pid,
            time,
            exec: true,
            name: "prog".into(),
        }
    }

    #[test]
    fn an_exec_that_nothing_follows_is_named_with_what_changed() {
        let mut execs = Execs {
            expected: Some((10, "/bin/setuid".into(), IdChange::SetUid { euid: 65534 })),
            ..Execs::default()
        };
        // 10: the command, set-uid; 11: an exec followed by its program's mapping (sampled);
        // 12: an exec nothing followed, not seen in /proc.
        for r in [comm(10, 1), comm(11, 2), comm(12, 3)] {
            execs.handle(&r);
        }
        execs.handle(&Record::Mmap {
            pid: 11,
            time: 4,
            addr: 0x1000,
            len: 0x1000,
            pgoff: 0,
            prot: libc::PROT_EXEC as u32,
            filename: "/bin/true".into(),
        });
        let unsampled = Execs {
            pending: execs.pending.clone(),
            expected: execs.expected.clone(),
            ..Execs::default()
        }
        .finish(0);
        assert_eq!(
            unsampled,
            [
                UnsampledExec {
                    pid: 10,
                    program: "/bin/setuid".into(),
                    change: IdChange::SetUid { euid: 65534 }
                },
                UnsampledExec {
                    pid: 12,
                    program: "prog".into(),
                    change: IdChange::Unknown
                }
            ]
        );
        let text = unsampled[0].to_string();
        assert!(
            text.starts_with("/bin/setuid (pid 10) could not be sampled: it is set-uid")
                && !text.contains('\n'),
            "{text}"
        );
        // With records lost, an exec nothing followed may have been followed: only what was
        // seen or expected is said.
        assert_eq!(execs.finish(3).len(), 1);
    }
}
