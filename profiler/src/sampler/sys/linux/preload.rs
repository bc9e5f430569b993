//! The socket between `prof record --mode alloc` and the allocation interposer it loads into
//! the recorded program (`preload/`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A connected pair of stream sockets: (prof's end, close-on-exec; the program's end, inherited
/// across `exec`). The program's end can buffer 4 MiB where the kernel allows it
/// (`net.core.wmem_max`), so that a burst of samples rarely waits for prof.
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
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETFD on a descriptor this function owns; clearing FD_CLOEXEC lets the program
    // (and what it starts) inherit it.
    if unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
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
