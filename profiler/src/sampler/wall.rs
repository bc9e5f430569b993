//! Wall mode: every thread is sampled at the interval of wall time, without interrupting the
//! blocked ones. Each tick the collector looks at every thread:
//!
//! - A thread whose CPU clock has not moved since its stack was last captured has not run a
//!   single instruction since, so it is where it was: its previous stack is counted again, as
//!   waiting, at the cost of one clock read.
//! - Otherwise `/proc/self/task/TID/syscall` says where it is. A running (or runnable) thread
//!   is sent a tagged SIGPROF ([`sys::send_wall_sample`]) and the usual handler unwinds it. A
//!   thread asleep in a system call (or in a page fault: `-1 sp pc`) is not signalled, which
//!   would end a `poll` or `nanosleep` with EINTR: the file gives its stack pointer and
//!   program counter, the collector copies its stack through `/proc/self/mem` and unwinds it
//!   with the same DWARF tables the handler uses (the capture core's
//!   `unwind::blocked`, which `prof record --pid` uses for another process's threads). The file is read again after unwinding; if
//!   it changed, the thread woke meanwhile and the copy is discarded (its time goes to its
//!   next sample).
//!
//! Callee-saved registers of a blocked thread are unknown (the file has no frame pointer), so
//! unwinding starts with the frame pointer unknown: frames whose CFA rule needs it end the
//! stack early. Frames whose rules are relative to the stack pointer (glibc, Rust code built
//! without frame pointers) unwind normally.

use super::handler::Shared;
use prof_capture::symbolize::LoadedObject;
use prof_capture::sys;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
use prof_capture::sys::Regs;
use prof_capture::unwind::blocked::{parse_syscall, Blocked, TaskState};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
/// What the collector keeps per thread between ticks.
#[derive(Default)]
struct Watched {
    /// `/proc/self/task/TID/syscall`, kept open (each tick reads it again from offset 0).
    syscall: Option<File>,
    /// The stack captured while the thread was blocked (an index into the collector's stacks)
    /// and the thread's CPU clock read just before the capture.
    captured: Option<(u32, u64)>,
}

/// What wall mode did, for tests and the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WallStats {
    /// Ticks taken.
    pub ticks: u64,
    /// Signals sent to running threads.
    pub signals: u64,
    /// Blocked threads unwound by the collector.
    pub unwound: u64,
    /// Samples of threads that had not run since their stack was captured (no read at all).
    pub unchanged: u64,
    /// Captures discarded because the thread woke while its stack was read.
    pub woke: u64,
    /// Blocked stacks where a frame record had to be looked for (see
    /// `prof_capture::unwind::blocked`).
    pub fp_found: u64,
}

/// Wall mode's state in the collector.
pub struct Wall {
    mem: File,
    watched: HashMap<u32, Watched>,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    rules: prof_capture::unwind::dwarf::Cache,
    /// Function entries of each loaded object (by name and bias), read when a frame record
    /// is first looked for in it (see `prof_capture::unwind::blocked`).
    entries: HashMap<(String, u64), Vec<u64>>,
    buffer: Vec<u8>,
    text: [u8; 256],
    /// What it did so far.
    pub stats: WallStats,
}

/// What one tick found for a thread.
pub enum Found {
    /// Its stack has not changed since capture `stack`: count it again.
    Unchanged(u32),
    /// It was signalled (or is gone): its handler takes the sample.
    Signalled,
    /// It is blocked at this stack (addresses leaf first); `cpu` is its clock before the read.
    Blocked(Vec<u64>, u64),
    /// Nothing to record this tick (it exited, or woke while being read).
    Nothing,
}

impl Wall {
    /// Wall mode's state; fails when `/proc/self/mem` cannot be opened.
    pub fn new() -> prof_session::Result<Wall> {
        let mem = File::open("/proc/self/mem").map_err(|source| prof_session::Error::Os {
            call: "open /proc/self/mem",
            source,
        })?;
        Ok(Wall {
            mem,
            watched: HashMap::new(),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            rules: prof_capture::unwind::dwarf::Cache::default(),
            entries: HashMap::new(),
            buffer: Vec::new(),
            text: [0; 256],
            stats: WallStats::default(),
        })
    }

    /// Forgets the threads that are not in `live`.
    pub fn retain(&mut self, live: &[u32]) {
        self.watched.retain(|tid, _| live.contains(tid));
    }

    /// Records that thread `tid`'s stack was captured as stack `stack` with its CPU clock at
    /// `cpu`: until the clock moves, the thread is where it was.
    pub fn captured(&mut self, tid: u32, stack: u32, cpu: u64) {
        self.watched.entry(tid).or_default().captured = Some((stack, cpu));
    }

    /// Looks at thread `tid` for this tick: see the module documentation.
    pub fn look(
        &mut self,
        tid: u32,
        slot: usize,
        shared: &Shared,
        objects: &[LoadedObject],
        max_depth: usize,
    ) -> Found {
        let Some(cpu) = sys::thread_cpu_ns_of(tid) else {
            return Found::Nothing;
        };
        let watched = self.watched.entry(tid).or_default();
        match watched.captured.take() {
            Some((stack, at)) if at == cpu => {
                watched.captured = Some((stack, at));
                self.stats.unchanged += 1;
                return Found::Unchanged(stack);
            }
            _ => {}
        }
        let Some(before) = self.read_state(tid) else {
            return Found::Nothing;
        };
        let (sp, pc) = match before {
            TaskState::Running => {
                shared.threads.set_sent(slot, sys::monotonic_ns());
                if sys::send_wall_sample(tid) {
                    self.stats.signals += 1;
                }
                return Found::Signalled;
            }
            TaskState::Blocked { sp, pc, .. } => (sp, pc),
        };
        let stack = self.unwind(sp, pc, shared, objects, max_depth);
        if self.read_state(tid) != Some(before) {
            self.stats.woke += 1;
            return Found::Nothing;
        }
        self.stats.unwound += 1;
        Found::Blocked(stack, cpu)
    }

    /// The stack of thread `tid` if it is blocked now (and stayed so while it was read), read
    /// and unwound by the collector without signalling it; `None` when it is running or gone.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn blocked_stack(
        &mut self,
        tid: u32,
        shared: &Shared,
        objects: &[LoadedObject],
        max_depth: usize,
    ) -> Option<Vec<u64>> {
        self.watched.entry(tid).or_default();
        let before = self.read_state(tid)?;
        let TaskState::Blocked { sp, pc, .. } = before else {
            return None;
        };
        let stack = self.unwind(sp, pc, shared, objects, max_depth);
        (self.read_state(tid) == Some(before)).then_some(stack)
    }

    /// The state of thread `tid` now, `None` when it has exited (or the file is unreadable).
    fn read_state(&mut self, tid: u32) -> Option<TaskState> {
        let watched = self.watched.get_mut(&tid)?;
        if watched.syscall.is_none() {
            watched.syscall = File::open(format!("/proc/self/task/{tid}/syscall")).ok();
        }
        let n = watched.syscall.as_ref()?.read_at(&mut self.text, 0).ok()?;
        parse_syscall(std::str::from_utf8(&self.text[..n]).ok()?)
    }

    /// Unwinds a blocked thread from `pc` and `sp`, leaf first; at least the leaf.
    fn unwind(
        &mut self,
        sp: u64,
        pc: u64,
        shared: &Shared,
        objects: &[LoadedObject],
        max_depth: usize,
    ) -> Vec<u64> {
        let mut out = vec![pc];
        let Some(range) = shared.maps.find(sp) else {
            return out;
        };
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let guard = sys::read_begin();
            if let Some(dwarf) = shared.dwarf.get(&guard) {
                let blocked = Blocked {
                    mem: &self.mem,
                    sp,
                    pc,
                    hi: range.hi,
                };
                let guessed = blocked.unwind(
                    &dwarf.unwinder,
                    &mut self.rules,
                    objects,
                    &mut self.entries,
                    &mut self.buffer,
                    max_depth,
                    &mut out,
                );
                if guessed {
                    self.stats.fp_found += 1;
                }
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let _ = (objects, max_depth, range, Regs::default());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_reads_as_blocked_while_it_sleeps() {
        let tid = sys::gettid();
        let sleeper = std::thread::spawn(move || {
            let mut wall = Wall::new().unwrap();
            wall.watched.insert(tid, Watched::default());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                if let Some(TaskState::Blocked { nr, .. }) = wall.read_state(tid) {
                    return nr;
                }
                assert!(std::time::Instant::now() < deadline, "never seen blocked");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        while !sleeper.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let nr = sleeper.join().unwrap();
        assert!(
            nr >= 0,
            "asleep in a system call (nanosleep or clock_nanosleep)"
        );
    }
}
