//! Per-thread perf events on the task clock, signalling their thread on overflow.

use super::super::last_error;
use super::super::signal::SIGNAL;
use super::super::timer::PerfDelivery;
use super::signal::TRAP_TAG;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER7` (128 bytes), the fields we set named.
#[repr(C)]
#[derive(Default)]
pub(super) struct PerfEventAttr {
    pub(super) kind: u32,
    pub(super) size: u32,
    pub(super) config: u64,
    pub(super) sample_period: u64,
    pub(super) sample_type: u64,
    pub(super) read_format: u64,
    /// Bit field: disabled (bit 0), inherit (bit 1), exclude_kernel (bit 5), exclude_hv (bit 6),
    /// inherit_thread (bit 35), remove_on_exec (bit 36), sigtrap (bit 37), and the others of
    /// `perf_event_open(2)`.
    pub(super) flags: u64,
    /// `wakeup_events`, or `wakeup_watermark` with the `watermark` flag.
    pub(super) wakeup_events: u32,
    pub(super) bp_type: u32,
    pub(super) config1: u64,
    pub(super) config2: u64,
    pub(super) branch_sample_type: u64,
    pub(super) sample_regs_user: u64,
    pub(super) sample_stack_user: u32,
    pub(super) clockid: i32,
    pub(super) sample_regs_intr: u64,
    pub(super) aux_watermark: u32,
    pub(super) sample_max_stack: u16,
    pub(super) reserved: u16,
    pub(super) aux_sample_size: u32,
    pub(super) reserved3: u32,
    /// Copied into `si_perf_data` of the SIGTRAP a `sigtrap` event sends.
    pub(super) sig_data: u64,
}

pub(super) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(super) const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
pub(super) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// Opens the event `attr` describes on task `pid` (a thread, or a process for an inherited
/// event), on `cpu` or on any CPU, closed on `exec` by prof (`FD_CLOEXEC`).
pub(super) fn open_event(
    attr: &PerfEventAttr,
    pid: u32,
    cpu: Option<u32>,
) -> crate::Result<OwnedFd> {
    let cpu = cpu.map_or(-1, |c| c as libc::c_int);
    // SAFETY: `attr` is a properly sized, initialized perf_event_attr (its `size` field says how
    // much the kernel may read) that holds no pointer; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::pid_t,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(last_error("perf_event_open"));
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Opens a task-clock perf event on thread `tid` that signals that thread every `period_ns` of
/// its CPU time, as `delivery` says. The event starts enabled.
pub fn perf_event_thread(
    tid: u32,
    period_ns: u64,
    delivery: PerfDelivery,
) -> crate::Result<OwnedFd> {
    // disabled | exclude_kernel | exclude_hv
    let mut flags = 1 | (1 << 5) | (1 << 6);
    if delivery != PerfDelivery::Sigio {
        // remove_on_exec (which the kernel requires with sigtrap) | sigtrap
        flags |= (1 << 36) | (1 << 37);
    }
    if delivery == PerfDelivery::SigtrapInherit {
        // inherit | inherit_thread
        flags |= (1 << 1) | (1 << 35);
    }
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns.max(1),
        flags,
        wakeup_events: 1,
        sig_data: (TRAP_TAG << 32) | u64::from(tid),
        ..PerfEventAttr::default()
    };
    let owned = open_event(&attr, tid, None)?;
    let raw = owned.as_raw_fd();
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid as libc::pid_t,
    };
    // SAFETY: `raw` is an open descriptor we own; the fcntl commands take an int or a pointer
    // to a valid f_owner_ex owned by this frame; the ioctl takes no argument.
    unsafe {
        if delivery != PerfDelivery::Sigio {
            if libc::ioctl(raw, PERF_EVENT_IOC_ENABLE as _, 0) != 0 {
                return Err(last_error("ioctl(PERF_EVENT_IOC_ENABLE)"));
            }
            return Ok(owned);
        }
        let flags = libc::fcntl(raw, libc::F_GETFL);
        if libc::fcntl(raw, libc::F_SETFL, flags | libc::O_ASYNC) != 0 {
            return Err(last_error("fcntl(F_SETFL, O_ASYNC)"));
        }
        if libc::fcntl(raw, F_SETSIG, SIGNAL) != 0 {
            return Err(last_error("fcntl(F_SETSIG)"));
        }
        if libc::fcntl(raw, F_SETOWN_EX, &owner as *const FOwnerEx) != 0 {
            return Err(last_error("fcntl(F_SETOWN_EX)"));
        }
        if libc::ioctl(raw, PERF_EVENT_IOC_ENABLE as _, 0) != 0 {
            return Err(last_error("ioctl(PERF_EVENT_IOC_ENABLE)"));
        }
    }
    Ok(owned)
}

/// Stops a perf event from counting (and so from signalling) before it is closed.
pub fn perf_event_disable(fd: &OwnedFd) {
    // SAFETY: `fd` is an open perf event descriptor we own; this ioctl takes no argument.
    unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE as _, 0) };
}
