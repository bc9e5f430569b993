//! Threads blocked in a system call, of this process or another, read without a signal:
//! `/proc/PID/task/TID/syscall` says where a thread sleeps ([`parse_syscall`]), its stack is
//! copied through `/proc/PID/mem` as unwinding reaches further ([`MemStack`]), and it is unwound
//! with its frame pointer unknown, looking for frame records where the rules need one
//! ([`Blocked::unwind`]). The in-process sampler's wall mode and `prof record --pid` in wall
//! mode both read blocked threads this way.

use crate::symbolize::LoadedObject;
use crate::sys::Regs;
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
pub struct MemStack<'a> {
    mem: &'a File,
    lo: u64,
    hi: u64,
    copy: RefCell<Vec<u8>>,
    failed: Cell<bool>,
}

impl<'a> MemStack<'a> {
    /// The stack `[sp, hi)` of another thread, copied into `buffer` (reused between samples)
    /// as unwinding needs it.
    pub fn new(mem: &'a File, sp: u64, hi: u64, mut buffer: Vec<u8>) -> MemStack<'a> {
        buffer.clear();
        MemStack {
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

impl MemStack<'_> {
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

/// A thread blocked in a system call at stack pointer `sp` and program counter `pc` (as
/// `/proc/PID/task/TID/syscall` gives them), its stack readable through `mem` (its process's
/// `/proc/PID/mem`) up to `hi`, the end of the stack's mapping.
pub struct Blocked<'a> {
    /// The process's memory.
    pub mem: &'a File,
    /// The thread's user stack pointer.
    pub sp: u64,
    /// The address it resumes at.
    pub pc: u64,
    /// The end of the mapping that holds `sp`.
    pub hi: u64,
}

impl Blocked<'_> {
    /// Unwinds the thread into `out` (which holds its leaf, `pc`), copying its stack into
    /// `buffer` as unwinding reaches further, with `unwinder` over `objects` (whose function
    /// entries `entries` keeps): the search for frame records while the frame pointer is
    /// unknown (see `unwind_copied`). Returns whether a frame pointer was found that way.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[allow(clippy::too_many_arguments)]
    pub fn unwind(
        &self,
        unwinder: &super::dwarf::Dwarf,
        rules: &mut super::dwarf::Cache,
        objects: &[LoadedObject],
        entries: &mut HashMap<(String, u64), Vec<u64>>,
        buffer: &mut Vec<u8>,
        max_depth: usize,
        out: &mut Vec<u64>,
    ) -> bool {
        let stack = MemStack::new(self.mem, self.sp, self.hi, std::mem::take(buffer));
        let mut calls = CallCheck {
            mem: self.mem,
            objects,
            entries,
        };
        let regs = Regs {
            pc: self.pc,
            sp: self.sp,
            fp: 0,
            lr: 0,
        };
        let guessed = unwind_copied(unwinder, rules, &stack, regs, &mut calls, max_depth, out);
        *buffer = stack.into_buffer();
        guessed
    }
}

/// Tells whether a word of a blocked thread's stack is the return address of a call into a
/// given function: the instruction before it must be a call (read from the process's memory),
/// and a direct call must target that function's entry, or a stub (a PLT entry, which is not a
/// function entry, or code of another object). A stale return address left on the stack by
/// an earlier call fails: its call targets another function.
struct CallCheck<'a> {
    mem: &'a File,
    objects: &'a [LoadedObject],
    entries: &'a mut HashMap<(String, u64), Vec<u64>>,
}

impl<'a> CallCheck<'a> {
    /// The loaded object whose code holds `a`.
    fn object_of(&self, a: u64) -> Option<&'a LoadedObject> {
        self.objects
            .iter()
            .find(|o| o.exec.iter().any(|r| r.contains(&a)))
    }

    /// The entry of the function holding `a` (the last function entry not above it).
    fn entry_of(&mut self, a: u64) -> Option<u64> {
        let object = self.object_of(a)?;
        let entries = self
            .entries
            .entry((object.name.clone(), object.bias))
            .or_insert_with(|| super::dwarf::function_entries(object));
        let i = entries.partition_point(|&e| e <= a);
        i.checked_sub(1).map(|i| entries[i])
    }

    /// Whether `ret` returns from a call into the function holding `callee`: `None` when it
    /// cannot, else how sure that is.
    fn returns_into(&mut self, ret: u64, callee: u64) -> Option<Callee> {
        self.object_of(ret)?;
        match call_before(self.mem, ret)? {
            Call::Indirect | Call::Slot(_) => Some(Callee::Possible),
            Call::Direct(target) => {
                let same_object = match (self.object_of(target), self.object_of(callee)) {
                    (Some(t), Some(c)) => std::ptr::eq(t, c),
                    _ => false,
                };
                if !same_object || self.entry_of(target) != Some(target) {
                    return Some(Callee::Possible);
                }
                (self.entry_of(callee) == Some(target)).then_some(Callee::Known)
            }
        }
    }
}

impl CallCheck<'_> {
    /// Where the frame record of the function holding `pc` lies above its stack pointer at a
    /// call, in bytes, as its prologue says: `push %rbp; mov %rsp,%rbp`, then pushes of other
    /// registers and a `sub $N,%rsp`. `None` for any other prologue.
    fn record_offset(&mut self, pc: u64) -> Option<u64> {
        if cfg!(not(target_arch = "x86_64")) {
            return None;
        }
        let entry = self.entry_of(pc)?;
        let mut code = [0u8; 32];
        self.mem.read_exact_at(&mut code, entry).ok()?;
        prologue_frame_size(&code)
    }
}

/// The bytes between the stack pointer and the saved frame pointer after an x86-64 prologue
/// that sets up a frame pointer (see [`CallCheck::record_offset`]); `None` for another one.
fn prologue_frame_size(code: &[u8; 32]) -> Option<u64> {
    if code[..4] != [0x55, 0x48, 0x89, 0xE5] {
        return None;
    }
    let (mut at, mut size) = (4, 0u64);
    loop {
        match code.get(at..)? {
            [0x50..=0x57, ..] => (at, size) = (at + 1, size + 8),
            [0x41, 0x50..=0x57, ..] => (at, size) = (at + 2, size + 8),
            [0x48, 0x83, 0xEC, n, ..] => return Some(size + u64::from(*n)),
            [0x48, 0x81, 0xEC, a, b, c, d, ..] => {
                return Some(size + u64::from(u32::from_le_bytes([*a, *b, *c, *d])))
            }
            _ => return Some(size),
        }
    }
}

/// How sure [`CallCheck::returns_into`] is that a call reached the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Callee {
    /// The call targets the function's entry.
    Known,
    /// The call's target is not known (indirect) or is a stub that may lead to it.
    Possible,
}

/// The call instruction that ends just before `ret`.
#[derive(Debug, PartialEq, Eq)]
enum Call {
    /// A call to a fixed address.
    Direct(u64),
    /// A call through a register or memory.
    Indirect,
    /// A call to the address held at this address (x86-64's RIP-relative `call *slot(%rip)`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Slot(u64),
}

/// Decodes the call instruction ending just before `ret`, if there is one: x86-64's `call
/// rel32` (`E8`) and `call r/m64` (`FF /2`, every addressing form).
#[cfg(target_arch = "x86_64")]
fn call_before(mem: &File, ret: u64) -> Option<Call> {
    let mut b = [0u8; 7];
    mem.read_exact_at(&mut b, ret.checked_sub(7)?).ok()?;
    match decode_call_x86_64(&b, ret)? {
        // `call *slot(%rip)`, how code built without PLT calls another object's or (in a
        // position-independent executable) its own functions: the slot holds the target.
        Call::Slot(slot) => {
            let mut target = [0u8; 8];
            mem.read_exact_at(&mut target, slot).ok()?;
            Some(Call::Direct(u64::from_ne_bytes(target)))
        }
        call => Some(call),
    }
}

/// `call_before` on the seven bytes before `ret`.
#[cfg(any(target_arch = "x86_64", test))]
fn decode_call_x86_64(b: &[u8; 7], ret: u64) -> Option<Call> {
    if b[2] == 0xE8 {
        let rel = i32::from_le_bytes([b[3], b[4], b[5], b[6]]);
        return Some(Call::Direct(ret.wrapping_add_signed(i64::from(rel))));
    }
    // `FF /2`: the ModRM byte's reg field is 2; its mod and r/m fields (and a SIB's base)
    // give the instruction's length, which must end exactly at `ret`.
    (2..=7).find_map(|len| {
        let at = 7 - len;
        let modrm = *b.get(at + 1)?;
        if b[at] != 0xFF || (modrm >> 3) & 7 != 2 {
            return None;
        }
        let (md, rm) = (modrm >> 6, modrm & 7);
        let sib_base = b.get(at + 2).map(|s| s & 7);
        if (md, rm) == (0, 5) && len == 6 {
            let disp = i32::from_le_bytes([b[at + 2], b[at + 3], b[at + 4], b[at + 5]]);
            return Some(Call::Slot(ret.wrapping_add_signed(i64::from(disp))));
        }
        let expected = match (md, rm) {
            (3, _) => 2,
            (0, 4) if sib_base == Some(5) => 7,
            (0, 4) => 3,
            (0, 5) => 6,
            (0, _) => 2,
            (1, 4) => 4,
            (1, _) => 3,
            (2, 4) => 7,
            _ => 6,
        };
        (expected == len).then_some(Call::Indirect)
    })
}

/// Decodes the call instruction ending just before `ret`, if there is one: AArch64's `bl` and
/// `blr`.
#[cfg(target_arch = "aarch64")]
fn call_before(mem: &File, ret: u64) -> Option<Call> {
    let mut b = [0u8; 4];
    mem.read_exact_at(&mut b, ret.checked_sub(4)?).ok()?;
    let insn = u32::from_le_bytes(b);
    if insn & 0xFC00_0000 == 0x9400_0000 {
        let imm = i64::from(((insn & 0x03FF_FFFF) << 6) as i32 >> 6) * 4;
        return Some(Call::Direct((ret - 4).wrapping_add_signed(imm)));
    }
    (insn & 0xFFFF_FC1F == 0xD63F_0000).then_some(Call::Indirect)
}

/// Elsewhere nothing is known of calls, so no record is accepted.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn call_before(_: &File, _: u64) -> Option<Call> {
    None
}

/// How far above a frame's stack pointer to look for its frame record when its frame pointer
/// is unknown (see `unwind_copied`).
const FP_SCAN_WORDS: u64 = 512;

/// Unwinds a copied stack with DWARF CFI from `regs` (its frame pointer unknown), pushing
/// return addresses to `out` after the leaf already there. A frame whose CFA rule needs the
/// frame pointer, reached before any frame restored it from the stack, cannot be unwound as
/// it is: its frame record (saved frame pointer, return address) is then looked for in the
/// words above its stack pointer: the nearest word that `returns_into(word, function)` knows
/// to return from a call of the function being unwound, else the nearest that may, and the
/// step is retried with the record as frame pointer; the step must move up the stack. The saved frame
/// pointer itself proves nothing: in a release build the caller keeps no frame pointer, and
/// the register held whatever data it held. This happens only while the frame pointer is
/// unknown (zero). Returns whether a frame pointer was found that way.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn unwind_copied(
    unwinder: &super::dwarf::Dwarf,
    rules: &mut super::dwarf::Cache,
    stack: &MemStack<'_>,
    regs: Regs,
    calls: &mut CallCheck<'_>,
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
                let function = address.address_for_lookup();
                // Where the function's prologue puts its record, if that record is one; else
                // the nearest record whose call is known to target this function; failing
                // that, the nearest whose call could (an indirect call, a stub).
                let mut try_record = |at: u64| {
                    let mut tried = before;
                    super::dwarf::set_fp(&mut tried, at);
                    match unwinder.unwind_frame(address, &mut tried, rules, &mut read) {
                        Ok(Some(r)) if super::dwarf::sp_of(&tried) > sp => Some((r, tried)),
                        _ => None,
                    }
                };
                let predicted = calls.record_offset(function).and_then(|offset| {
                    let at = sp + offset;
                    calls.returns_into(stack.read(at + 8)?, function)?;
                    try_record(at)
                });
                let mut plausible = None;
                let found = predicted.or_else(|| {
                    (0..FP_SCAN_WORDS).find_map(|i| {
                        let at = sp + 8 * i;
                        let kind = calls.returns_into(stack.read(at + 8)?, function)?;
                        if kind == Callee::Known || plausible.is_none() {
                            let record = try_record(at)?;
                            if kind == Callee::Known {
                                return Some(record);
                            }
                            plausible = Some(record);
                        }
                        None
                    })
                });
                let Some((r, tried)) = found.or(plausible) else {
                    break;
                };
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

    /// The seven bytes before a return address: `code` at their end, padded with `nop`s.
    fn before(code: &[u8]) -> [u8; 7] {
        let mut b = [0x90; 7];
        b[7 - code.len()..].copy_from_slice(code);
        b
    }

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
    fn calls_are_decoded_from_the_bytes_before_a_return_address() {
        let ret = 0x1000;
        // call rel32 (+0x20, -0x10)
        let direct = before(&[0xE8, 0x20, 0, 0, 0]);
        assert_eq!(decode_call_x86_64(&direct, ret), Some(Call::Direct(0x1020)));
        let back = before(&[0xE8, 0xF0, 0xFF, 0xFF, 0xFF]);
        assert_eq!(decode_call_x86_64(&back, ret), Some(Call::Direct(0xFF0)));
        // call *0x100(%rip): the target is in the slot
        let slot = before(&[0xFF, 0x15, 0x00, 0x01, 0, 0]);
        assert_eq!(decode_call_x86_64(&slot, ret), Some(Call::Slot(0x1100)));
        for indirect in [
            &[0xFF, 0xD0][..],                           // call *%rax
            &[0x41, 0xFF, 0xD4],                         // call *%r12
            &[0xFF, 0x10],                               // call *(%rax)
            &[0xFF, 0x50, 0x08],                         // call *0x8(%rax)
            &[0xFF, 0x54, 0x24, 0x08],                   // call *0x8(%rsp)
            &[0xFF, 0x90, 0x00, 0x01, 0x00, 0x00],       // call *0x100(%rax)
            &[0xFF, 0x94, 0xC8, 0x00, 0x01, 0x00, 0x00], // call *0x100(%rax,%rcx,8)
        ] {
            let b = before(indirect);
            assert_eq!(
                decode_call_x86_64(&b, ret),
                Some(Call::Indirect),
                "{indirect:x?}"
            );
        }
        for other in [
            &[0x48, 0x89, 0xE5][..], // mov %rsp,%rbp
            &[0xFF, 0xE0],           // jmp *%rax
            &[0xFF, 0x50],           // call *disp8(%rax) cut short
            &[0xC3],                 // ret
        ] {
            let b = before(other);
            assert_eq!(decode_call_x86_64(&b, ret), None, "{other:x?}");
        }
    }

    #[test]
    fn a_frame_pointer_prologue_gives_the_records_place() {
        let mut code = [0x90u8; 32];
        // push %rbp; mov %rsp,%rbp; push %r15; push %r14; push %r12; push %rbx; sub $0x20,%rsp
        let prologue = [
            0x55, 0x48, 0x89, 0xE5, 0x41, 0x57, 0x41, 0x56, 0x41, 0x54, 0x53, 0x48, 0x83, 0xEC,
            0x20,
        ];
        code[..prologue.len()].copy_from_slice(&prologue);
        assert_eq!(prologue_frame_size(&code), Some(4 * 8 + 0x20));
        // sub $0x1000,%rsp, no pushes
        let mut big = [0x90u8; 32];
        big[..11].copy_from_slice(&[0x55, 0x48, 0x89, 0xE5, 0x48, 0x81, 0xEC, 0, 0x10, 0, 0]);
        assert_eq!(prologue_frame_size(&big), Some(0x1000));
        // No frame pointer set up: nothing to say.
        let mut none = [0x90u8; 32];
        none[..2].copy_from_slice(&[0x41, 0x57]);
        assert_eq!(prologue_frame_size(&none), None);
    }

    #[test]
    fn a_copied_stack_reads_what_the_memory_holds_and_nothing_outside() {
        let words: Vec<u64> = (0..5000u64).map(|i| i * 3 + 1).collect();
        let lo = words.as_ptr() as u64;
        let hi = lo + 8 * words.len() as u64;
        let mem = File::open("/proc/self/mem").unwrap();
        let stack = MemStack::new(&mem, lo, hi, Vec::new());
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
