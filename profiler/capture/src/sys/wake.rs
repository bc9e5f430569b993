//! A pipe that wakes the collector. Writing to a pipe is async-signal-safe (POSIX), so the
//! signal handler wakes the collector as stop and the scope buffers do, when its ring passes a
//! quarter full or a sample's stack lies outside every known mapping; an idle session's
//! collector then sleeps until something needs it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The two ends of the collector's pipe; both close when it drops.
#[derive(Debug)]
pub struct Wakeup {
    read: OwnedFd,
    write: OwnedFd,
}

impl Wakeup {
    /// A pipe whose ends do not block (a full pipe holds a wake-up already) and close on exec.
    pub fn new() -> crate::Result<Wakeup> {
        let mut fds: [libc::c_int; 2] = [-1; 2];
        // SAFETY: `pipe` writes two descriptors into the array of two it is given.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(super::last_error("pipe"));
        }
        // SAFETY: `pipe` succeeded: both are open descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        for fd in [&read, &write] {
            let fd = fd.as_raw_fd();
            // SAFETY: `fcntl` with integer arguments on a descriptor this value owns.
            let ok = unsafe {
                libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) == 0
                    && libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0
            };
            if !ok {
                return Err(super::last_error("fcntl"));
            }
        }
        Ok(Wakeup { read, write })
    }

    /// The descriptor [`wake`] writes to, valid as long as this value lives.
    pub fn waker(&self) -> RawFd {
        self.write.as_raw_fd()
    }

    /// Waits until woken or until `timeout` passes (`None`: until woken), then empties the
    /// pipe: the wake-ups written meanwhile count as one.
    pub fn wait(&self, timeout: Option<Duration>) {
        // Whole milliseconds, rounded up: a shorter wait would spin.
        let ms = timeout.map_or(-1, |t| {
            i32::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
        });
        let mut pfd = libc::pollfd {
            fd: self.read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `poll` reads and writes the one `pollfd` it is given. EINTR only ends the
        // wait early, as a wake-up does.
        unsafe { libc::poll(&mut pfd, 1, ms) };
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `read` writes at most `buf.len()` bytes into `buf`; the descriptor does
            // not block, so an empty pipe ends the loop (EAGAIN) rather than wait.
            let n =
                unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < buf.len() as isize {
                break;
            }
        }
    }
}

/// Wakes the [`Wakeup`] whose [`Wakeup::waker`] is `fd` (nothing when `fd` is negative).
/// Async-signal-safe: one `write` system call, no allocation, no lock. The caller keeps the
/// [`Wakeup`] alive while it may call this (the handler through the session's `Shared`).
pub fn wake(fd: RawFd) {
    if fd < 0 {
        return;
    }
    let byte = 1u8;
    // SAFETY: `write` reads one byte from a local. The descriptor is the open write end of a
    // pipe (the caller's contract); a full pipe fails with EAGAIN, which is fine: it holds a
    // wake-up the collector has not taken yet.
    unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_wake_ends_the_wait_and_many_count_as_one() {
        let w = Wakeup::new().unwrap();
        let start = Instant::now();
        w.wait(Some(Duration::from_millis(30)));
        assert!(
            start.elapsed() >= Duration::from_millis(30),
            "no wake-up: the timeout"
        );
        for _ in 0..100_000 {
            wake(w.waker()); // past the pipe's room: the rest fail with EAGAIN, unblocked
        }
        let start = Instant::now();
        w.wait(Some(Duration::from_secs(60)));
        assert!(start.elapsed() < Duration::from_secs(30), "woken at once");
        // Emptied: the next wait runs to its timeout again.
        let start = Instant::now();
        w.wait(Some(Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));
        wake(-1);
    }
}
