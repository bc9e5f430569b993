//! The socket between `prof record --mode alloc` and the allocation interposer it loads into
//! the recorded program (`preload/`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The lowest descriptor number the program's end of the channel may take: the top of the
/// first 1,024 (the range `select` can watch, which ordinary programs stay in), or of the
/// descriptor limit when it is lower. A program opens descriptors from the lowest free number
/// up, so it reaches this one only after a thousand others, and the interposer checks that the
/// descriptor is still its socket before each use.
fn channel_number() -> libc::c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a live rlimit for the kernel to fill.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        1024
    };
    (soft.min(1024) as libc::c_int - 1).max(3)
}

/// A connected pair of stream sockets: (prof's end, close-on-exec; the program's end, inherited
/// across `exec`, at a number above the program's own: see `channel_number`, falling back to
/// the lowest free one when the limit leaves none). The program's end can buffer 4 MiB where
/// the kernel allows it (`net.core.wmem_max`), so that a burst of samples rarely waits for prof.
pub fn preload_socket() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a live array of two ints for the kernel to fill.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by socketpair and are owned by nothing else.
    let (ours, low) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_DUPFD on a descriptor this function owns makes a copy at the lowest free number
    // from the one given, without FD_CLOEXEC: the program (and what it starts) inherits it.
    let high = unsafe { libc::fcntl(low.as_raw_fd(), libc::F_DUPFD, channel_number()) };
    let theirs = if high >= 0 {
        // SAFETY: `high` was just made by fcntl and is owned by nothing else.
        unsafe { OwnedFd::from_raw_fd(high) }
    } else {
        // SAFETY: F_SETFD on a descriptor this function owns; clearing FD_CLOEXEC lets the
        // program inherit it.
        if unsafe { libc::fcntl(low.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        low
    };
    let size: libc::c_int = 4 << 20;
    // SAFETY: `size` is a live int of the length given; a refusal only leaves the default size.
    unsafe {
        libc::setsockopt(
            theirs.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    Ok((ours, theirs))
}

/// An anonymous in-memory file holding `image` (the interposer library), for the dynamic
/// loader to map from `/proc/PID/fd/N`: no file on disk to clean up, and none on a `noexec`
/// temporary directory.
pub fn memory_file(name: &std::ffi::CStr, image: &[u8]) -> io::Result<std::fs::File> {
    // SAFETY: `name` is NUL-terminated; the descriptor returned is owned by nothing else.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just made by memfd_create and is owned by nothing else.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    io::Write::write_all(&mut file, image)?;
    Ok(file)
}
