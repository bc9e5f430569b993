//! Whose processes prof may sample, from `/proc/PID/status`: a process's real, effective and
//! saved user and group ids and effective capabilities. The kernel lets a perf event on
//! another process open when the caller may read it as `ptrace` would (the same user in all
//! three ids, and the process dumpable) or has `CAP_PERFMON` (or `CAP_SYS_ADMIN`, or
//! `CAP_SYS_PTRACE` for the `ptrace` check). A refusal for any of these reasons names it, not
//! the `perf_event_paranoid` sysctl, which changes nothing for them.

/// The ids and capabilities of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Creds {
    /// Real, effective and saved user ids.
    pub uid: [u32; 3],
    /// Real, effective and saved group ids.
    pub gid: [u32; 3],
    /// Effective capabilities (bit N is capability N).
    pub caps: u64,
}

const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

impl Creds {
    /// The ids of a `/proc/PID/status` text; `None` without its `Uid:` and `Gid:` lines.
    pub fn parse(status: &str) -> Option<Creds> {
        let ids = |key: &str| -> Option<[u32; 3]> {
            let line = status.lines().find_map(|l| l.strip_prefix(key))?;
            let mut ids = line.split_whitespace().map(|id| id.parse().ok());
            Some([ids.next()??, ids.next()??, ids.next()??])
        };
        let caps = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|c| u64::from_str_radix(c.trim(), 16).ok())
            .unwrap_or(0);
        Some(Creds {
            uid: ids("Uid:")?,
            gid: ids("Gid:")?,
            caps,
        })
    }

    /// The ids of process `pid` now; `None` when it has ended.
    pub fn of(pid: u32) -> Option<Creds> {
        Creds::parse(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    }

    /// This process's ids.
    pub fn own() -> Option<Creds> {
        Creds::of(std::process::id())
    }

    /// Whether these capabilities let their holder sample any process.
    fn may_sample_anyone(&self) -> bool {
        [CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON]
            .iter()
            .any(|&cap| self.caps & (1 << cap) != 0)
    }
}

/// Whether process `pid` is not dumpable (`prctl(PR_SET_DUMPABLE, 0)`, or an `exec` that
/// changed its ids): the kernel then gives its `/proc/PID/` files to root whatever its user.
pub(crate) fn non_dumpable(pid: u32, creds: &Creds) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}/status"))
        .is_ok_and(|m| m.uid() == 0 && creds.uid[1] != 0)
}

/// Why `caller` may not sample a process with `target`'s ids (not dumpable when
/// `non_dumpable`), when the reason is the process rather than the sysctl: one line a user can
/// act on, or `None`.
pub(crate) fn refusal(caller: &Creds, target: &Creds, non_dumpable: bool) -> Option<String> {
    const NEEDS: &str = "CAP_PERFMON (or CAP_SYS_PTRACE, or root)";
    if caller.may_sample_anyone() {
        return None;
    }
    let (uid, gid) = (caller.uid[0], caller.gid[0]);
    if target.uid.iter().any(|&u| u != uid) {
        let theirs = target.uid.iter().find(|&&u| u != uid).unwrap_or(&uid);
        return Some(format!(
            "it runs as another user (uid {theirs}; prof runs as uid {uid}), and sampling \
             another user's process needs {NEEDS}"
        ));
    }
    if target.gid.iter().any(|&g| g != gid) {
        let theirs = target.gid.iter().find(|&&g| g != gid).unwrap_or(&gid);
        return Some(format!(
            "it runs with another group (gid {theirs}; prof runs as gid {gid}), and sampling \
             it needs {NEEDS}"
        ));
    }
    non_dumpable.then(|| {
        format!(
            "it is non-dumpable (it called prctl(PR_SET_DUMPABLE, 0), or changed its user or \
             group), which keeps even its own user from sampling it; that needs {NEEDS}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(uid: u32, gid: u32) -> Creds {
        Creds {
            uid: [uid; 3],
            gid: [gid; 3],
            caps: 0,
        }
    }

    #[test]
    fn the_ids_and_capabilities_of_a_status_file_are_read() {
        let status = "Name:\tsleep\nUid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n\
                      CapEff:\t0000004000000000\n";
        let c = Creds::parse(status).unwrap();
        assert_eq!((c.uid, c.gid), ([1000, 0, 0], [100; 3]));
        assert!(c.may_sample_anyone(), "CAP_PERFMON is bit 38");
        assert_eq!(Creds::parse("Name:\tx\n"), None);
        let own = Creds::own().unwrap();
        assert_eq!(Creds::of(std::process::id()), Some(own));
    }

    #[test]
    fn a_refused_attach_names_another_users_process_or_a_non_dumpable_one() {
        let nobody = creds(65534, 65534);
        // Another user's process (root's): the owner and the capability, not the sysctl.
        let text = refusal(&nobody, &creds(0, 0), false).unwrap();
        assert!(
            text.contains("another user (uid 0; prof runs as uid 65534)")
                && text.contains("CAP_PERFMON")
                && !text.contains('\n'),
            "{text}"
        );
        // A set-uid process started by this user runs as another in its effective id.
        let setuid = Creds {
            uid: [65534, 0, 0],
            ..nobody
        };
        assert!(refusal(&nobody, &setuid, true)
            .unwrap()
            .contains("another user (uid 0;"));
        let text = refusal(&nobody, &creds(65534, 0), false).unwrap();
        assert!(text.contains("another group (gid 0;"), "{text}");
        // One's own process that made itself non-dumpable.
        let text = refusal(&nobody, &nobody, true).unwrap();
        assert!(
            text.contains("non-dumpable") && text.contains("PR_SET_DUMPABLE"),
            "{text}"
        );
        // One's own dumpable process: the sysctl's message stands.
        assert_eq!(refusal(&nobody, &nobody, false), None);
        // A caller with CAP_PERFMON or CAP_SYS_PTRACE is refused for another reason.
        for cap in [CAP_PERFMON, CAP_SYS_PTRACE] {
            let capable = Creds {
                caps: 1 << cap,
                ..nobody
            };
            assert_eq!(refusal(&capable, &creds(0, 0), true), None);
        }
    }
}
