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
//!   with the same DWARF tables the handler uses. The file is read again after unwinding; if
//!   it changed, the thread woke meanwhile and the copy is discarded (its time goes to its
//!   next sample).
//!
//! Callee-saved registers of a blocked thread are unknown (the file has no frame pointer), so
//! unwinding starts with the frame pointer unknown: frames whose CFA rule needs it end the
//! stack early. Frames whose rules are relative to the stack pointer (glibc, Rust code built
//! without frame pointers) unwind normally.

use super::handler::Shared;
use super::sys::{self, Regs};
use crate::symbolize::LoadedObject;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The first part of a blocked thread's stack copied; more is copied when unwinding reaches
/// past it, doubling each time, up to the end of the stack's mapping.
const FIRST_COPY: usize = 16 << 10;

/// Where a thread is, as `/proc/self/task/TID/syscall` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// On a CPU or runnable (`running`): only a signal can read its registers.
    Running,
    /// Asleep in system call `nr` (`-1`: asleep outside any, e.g. in a page fault), with its
    /// user stack pointer and the address it will resume at.
    Blocked {
        /// The system call number, -1 for none.
        nr: i64,
        /// The user stack pointer.
        sp: u64,
        /// The user program counter (just after the system call instruction).
        pc: u64,
    },
}

/// Parses the contents of `/proc/PID/task/TID/syscall`: `running`, `NR ARG1 … ARG6 SP PC` or
/// `-1 SP PC` (numbers after the first in hexadecimal with `0x`). `None` for anything else.
pub fn parse_syscall(text: &str) -> Option<TaskState> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    if first == "running" {
        return Some(TaskState::Running);
    }
    let nr: i64 = first.parse().ok()?;
    let rest: Vec<&str> = words.collect();
    let expected = if nr == -1 { 2 } else { 8 };
    if rest.len() != expected {
        return None;
    }
    let hex = |w: &str| u64::from_str_radix(w.strip_prefix("0x")?, 16).ok();
    Some(TaskState::Blocked {
        nr,
        sp: hex(rest[expected - 2])?,
        pc: hex(rest[expected - 1])?,
    })
}

/// A blocked thread's stack from its stack pointer to the end of its mapping, read through
/// `/proc/self/mem`: a read of memory that is gone (the thread exited and its stack was
/// unmapped) fails instead of faulting, so no `unsafe` is needed.
pub struct CopiedStack<'a> {
    mem: &'a File,
    lo: u64,
    hi: u64,
    copy: RefCell<Vec<u8>>,
    failed: Cell<bool>,
}

impl<'a> CopiedStack<'a> {
    /// The stack `[sp, hi)` of another thread, copied into `buffer` (reused between samples)
    /// as unwinding needs it.
    pub fn new(mem: &'a File, sp: u64, hi: u64, mut buffer: Vec<u8>) -> CopiedStack<'a> {
        buffer.clear();
        CopiedStack {
            mem,
            lo: sp,
            hi: hi.max(sp),
            copy: RefCell::new(buffer),
            failed: Cell::new(false),
        }
    }

    /// The buffer back, for the next copy.
    pub fn into_buffer(self) -> Vec<u8> {
        self.copy.into_inner()
    }

    /// Copies more of the stack until `end` (an address) is covered; false if that failed.
    fn cover(&self, end: u64) -> bool {
        let mut copy = self.copy.borrow_mut();
        let want = end.saturating_sub(self.lo) as usize;
        if want <= copy.len() {
            return true;
        }
        if self.failed.get() {
            return false;
        }
        let total = (self.hi - self.lo) as usize;
        let new_len = want.max(copy.len() * 2).max(FIRST_COPY).min(total);
        let old_len = copy.len();
        copy.resize(new_len, 0);
        match self
            .mem
            .read_exact_at(&mut copy[old_len..], self.lo + old_len as u64)
        {
            Ok(()) => true,
            Err(_) => {
                copy.truncate(old_len);
                self.failed.set(true);
                false
            }
        }
    }
}

impl CopiedStack<'_> {
    /// The 8-byte word at `addr`, `None` outside `[sp, hi)`, misaligned, or unreadable.
    pub fn read(&self, addr: u64) -> Option<u64> {
        let end = addr.checked_add(8)?;
        if addr < self.lo || end > self.hi || addr % 8 != 0 || !self.cover(end) {
            return None;
        }
        let at = (addr - self.lo) as usize;
        let copy = self.copy.borrow();
        Some(u64::from_ne_bytes(copy[at..at + 8].try_into().ok()?))
    }
}

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
    /// Blocked stacks where a frame record had to be looked for (see `unwind_copied`).
    pub fp_found: u64,
}

/// Wall mode's state in the collector.
pub struct Wall {
    mem: File,
    watched: HashMap<u32, Watched>,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    rules: super::dwarf::Cache,
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
    pub fn new() -> crate::Result<Wall> {
        let mem = File::open("/proc/self/mem").map_err(|source| crate::Error::Os {
            call: "open /proc/self/mem",
            source,
        })?;
        Ok(Wall {
            mem,
            watched: HashMap::new(),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            rules: super::dwarf::Cache::default(),
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
        let stack = CopiedStack::new(&self.mem, sp, range.hi, std::mem::take(&mut self.buffer));
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let guard = sys::read_begin();
            if let Some(dwarf) = shared.dwarf.get(&guard) {
                let is_code = |a: u64| {
                    objects
                        .iter()
                        .any(|o| o.exec.iter().any(|r| r.contains(&a)))
                };
                let guessed = unwind_copied(
                    &dwarf.unwinder,
                    &mut self.rules,
                    &stack,
                    Regs {
                        pc,
                        sp,
                        fp: 0,
                        lr: 0,
                    },
                    &is_code,
                    max_depth,
                    &mut out,
                );
                if guessed {
                    self.stats.fp_found += 1;
                }
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let _ = (objects, max_depth, Regs::default());
        self.buffer = stack.into_buffer();
        out
    }
}

/// How far above a frame's stack pointer to look for its frame record when its frame pointer
/// is unknown (see [`unwind_copied`]).
const FP_SCAN_WORDS: u64 = 512;

/// Unwinds a copied stack with DWARF CFI from `regs` (its frame pointer unknown), pushing
/// return addresses to `out` after the leaf already there. A frame whose CFA rule needs the
/// frame pointer, reached before any frame restored it from the stack, cannot be unwound as
/// it is: its frame record (saved frame pointer, return address) is then looked for in the
/// words above its stack pointer, as the nearest pair of a pointer further up the stack (or zero, the end of the chain) and
/// an address in loaded code, and the step is retried with that record as frame pointer; the
/// step must move up the stack. This happens only while the frame pointer is unknown (zero).
/// Returns whether a frame pointer was found that way.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn unwind_copied(
    unwinder: &super::dwarf::Dwarf,
    rules: &mut super::dwarf::Cache,
    stack: &CopiedStack<'_>,
    regs: Regs,
    is_code: &dyn Fn(u64) -> bool,
    max_depth: usize,
    out: &mut Vec<u64>,
) -> bool {
    use framehop::{FrameAddress, Unwinder};
    let mut uregs = super::dwarf::start_regs(&regs);
    let mut address = FrameAddress::from_instruction_pointer(regs.pc);
    let mut guessed = false;
    let mut read = |a: u64| stack.read(a).ok_or(());
    while out.len() < max_depth {
        let before = uregs;
        let ret = match unwinder.unwind_frame(address, &mut uregs, rules, &mut read) {
            Ok(Some(ret)) => ret,
            // framehop takes a zero frame pointer for the end of the chain; here it means
            // "unknown" until a frame restores it from the stack or a record is found.
            Ok(None) if super::dwarf::fp_of(&before) != 0 => break,
            Err(_) if super::dwarf::fp_of(&before) != 0 => break,
            Ok(None) | Err(_) => {
                let sp = super::dwarf::sp_of(&before);
                let found = (0..FP_SCAN_WORDS).find_map(|i| {
                    let at = sp + 8 * i;
                    let (saved, ret) = (stack.read(at)?, stack.read(at + 8)?);
                    if (saved != 0 && saved <= at) || !is_code(ret) {
                        return None;
                    }
                    let mut tried = before;
                    super::dwarf::set_fp(&mut tried, at);
                    match unwinder.unwind_frame(address, &mut tried, rules, &mut read) {
                        Ok(Some(r)) if super::dwarf::sp_of(&tried) > sp => Some((r, tried)),
                        _ => None,
                    }
                });
                let Some((r, tried)) = found else { break };
                guessed = true;
                uregs = tried;
                r
            }
        };
        match FrameAddress::from_return_address(ret) {
            Some(a) => {
                address = a;
                out.push(ret);
            }
            None => break,
        }
    }
    guessed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms_of_the_syscall_file() {
        assert_eq!(parse_syscall("running\n"), Some(TaskState::Running));
        assert_eq!(
            parse_syscall("7 0x7f1c 0x1 0xffffffff 0x0 0x0 0x0 0x7ffd1230 0x7f00aa12\n"),
            Some(TaskState::Blocked {
                nr: 7,
                sp: 0x7ffd_1230,
                pc: 0x7f00_aa12
            })
        );
        assert_eq!(
            parse_syscall("-1 0x7ffd0000 0x55aa\n"),
            Some(TaskState::Blocked {
                nr: -1,
                sp: 0x7ffd_0000,
                pc: 0x55aa
            })
        );
        for bad in [
            "",
            "7 0x1 0x2",
            "x 0x1 0x2",
            "-1 0x1 zz",
            "7 1 2 3 4 5 6 7 8",
        ] {
            assert_eq!(parse_syscall(bad), None, "{bad:?}");
        }
    }

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

    #[test]
    fn a_copied_stack_reads_what_the_memory_holds_and_nothing_outside() {
        let words: Vec<u64> = (0..5000u64).map(|i| i * 3 + 1).collect();
        let lo = words.as_ptr() as u64;
        let hi = lo + 8 * words.len() as u64;
        let mem = File::open("/proc/self/mem").unwrap();
        let stack = CopiedStack::new(&mem, lo, hi, Vec::new());
        assert_eq!(stack.read(lo), Some(1));
        assert_eq!(
            stack.read(hi - 8),
            Some(4999 * 3 + 1),
            "past the first copy"
        );
        assert_eq!(stack.read(lo + 8 * 2500), Some(7501));
        assert_eq!(stack.read(hi), None);
        assert_eq!(stack.read(lo - 8), None);
        assert_eq!(stack.read(lo + 4), None);
    }
}
