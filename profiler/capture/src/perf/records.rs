//! The records a perf ring holds, parsed from its bytes: the layouts of `perf_event_open(2)` for
//! the sample type and flags `sys::perf_event_ring` asks for (samples with `IP | TID | TIME |
//! PERIOD | CALLCHAIN | REGS_USER | STACK_USER`; other records followed by the task and time,
//! `sample_id_all`).

/// A sample: the task, when, its weight, the user registers and the copied stack.
#[derive(Debug, PartialEq, Eq)]
pub struct SampleRecord {
    /// The process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// When, on `CLOCK_MONOTONIC` (nanoseconds).
    pub time: u64,
    /// The event's count since the previous sample (CPU nanoseconds for a task clock).
    pub period: u64,
    /// The kernel's part of the call chain, innermost first (empty for a sample taken in
    /// user space, or of an event that excludes the kernel).
    pub kernel: Vec<u64>,
    /// The registers of `sample_regs_user`, lowest register number first; empty when the
    /// sample interrupted no user code.
    pub regs: Vec<u64>,
    /// The event's count at the sample (`PERF_SAMPLE_READ`, see [`parse_all_read`]).
    pub read: Option<u64>,
    /// The stack bytes the kernel copied, from the stack pointer up (as far as the stack
    /// went: usually much less than asked for).
    pub stack: Vec<u8>,
}

/// The event's count since a thread's previous sample on the same CPU, from the counts the two
/// samples carried (`PERF_SAMPLE_READ`): a count below the previous one is a new thread that
/// was given the same id (its copy of the event counts from 0 again), all of whose count is
/// new.
pub fn count_since(previous: u64, count: u64) -> u64 {
    if count < previous {
        count
    } else {
        count - previous
    }
}

/// A hit of a uprobe or return probe (`crate::sys::tracepoint_recorder`'s records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// The id of the event that wrote it (its probe's: [`crate::sys::perf_event_id`]).
    pub id: u64,
    /// The process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// When (`CLOCK_MONOTONIC`).
    pub time: u64,
    /// The stack pointer, when the registers were copied.
    pub sp: Option<u64>,
    /// The word at the stack pointer, when it was copied (at a function's entry on x86_64,
    /// the address its call returns to).
    pub top: Option<u64>,
}

/// Splits `bytes` (whole records of call rings, `crate::sys::CALL_SAMPLE_TYPE`) into call
/// records, passing each to `each`; returns the records the kernel said it dropped. A
/// malformed record ends the walk.
pub fn parse_calls(bytes: &[u8], mut each: impl FnMut(CallRecord)) -> u64 {
    let mut lost = 0u64;
    let mut rest = bytes;
    while rest.len() >= 8 {
        let kind = u32::from_ne_bytes(rest[0..4].try_into().unwrap_or_default());
        let size = usize::from(u16::from_ne_bytes(
            rest[6..8].try_into().unwrap_or_default(),
        ));
        if size < 8 || size > rest.len() {
            break;
        }
        let mut c = Cursor {
            bytes: &rest[8..size],
        };
        rest = &rest[size..];
        match kind {
            SAMPLE => {
                if let Some(call) = parse_call(&mut c) {
                    each(call);
                }
            }
            LOST => {
                let _id = c.u64();
                lost = lost.saturating_add(c.u64().unwrap_or(0));
            }
            _ => {}
        }
    }
    lost
}

/// A call record's body: identifier, pid and tid, time, the registers (one: the stack
/// pointer), the stack copy.
fn parse_call(c: &mut Cursor<'_>) -> Option<CallRecord> {
    let id = c.u64()?;
    let (pid, tid) = (c.u32()?, c.u32()?);
    let time = c.u64()?;
    let abi = c.u64()?;
    let sp = if abi == 0 { None } else { Some(c.u64()?) };
    let size = usize::try_from(c.u64()?).ok()?;
    let mut top = None;
    if size > 0 {
        let data = c.take(size)?;
        let dyn_size = usize::try_from(c.u64()?).ok()?;
        if dyn_size >= 8 && data.len() >= 8 {
            top = Some(u64::from_ne_bytes(data[..8].try_into().ok()?));
        }
    }
    Some(CallRecord {
        id,
        pid,
        tid,
        time,
        sp,
        top,
    })
}

/// One record of the ring.
#[derive(Debug, PartialEq, Eq)]
pub enum Record {
    /// A sample.
    Sample(SampleRecord),
    /// A mapping of a file (or the vDSO): `prot` has `PROT_EXEC` for code.
    Mmap {
        /// The process.
        pid: u32,
        /// When.
        time: u64,
        /// The mapping's first address.
        addr: u64,
        /// Its length in bytes.
        len: u64,
        /// The file offset mapped at `addr`.
        pgoff: u64,
        /// Its protection (`PROT_*`).
        prot: u32,
        /// The file's path (or `[vdso]` and the like).
        filename: String,
    },
    /// A thread's name (`exec` set when the process called `exec`, replacing its mappings).
    Comm {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// When.
        time: u64,
        /// Whether the name changed because the process called `exec`.
        exec: bool,
        /// The new name.
        name: String,
    },
    /// A new thread or process (`pid != ppid`).
    Fork {
        /// The new thread's process.
        pid: u32,
        /// The process it was started from.
        ppid: u32,
        /// The new thread.
        tid: u32,
        /// When.
        time: u64,
    },
    /// A thread's end (the process's when `pid == tid`).
    Exit {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// When.
        time: u64,
    },
    /// A thread switched out (`out`; `preempt` when it was still runnable) or in.
    Switch {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// When.
        time: u64,
        /// Switched out (else in).
        out: bool,
        /// Switched out while still runnable (preempted, not blocked).
        preempt: bool,
    },
    /// A counted function entered or returned (`prof record --calls-timed`).
    Call(CallRecord),
    /// The kernel dropped `lost` records (the ring was full).
    Lost {
        /// How many records.
        lost: u64,
    },
    /// A record of another kind.
    Other,
}

impl Record {
    /// When it happened (0 for records without a time).
    pub fn time(&self) -> u64 {
        match self {
            Record::Sample(SampleRecord { time, .. })
            | Record::Mmap { time, .. }
            | Record::Comm { time, .. }
            | Record::Fork { time, .. }
            | Record::Exit { time, .. }
            | Record::Switch { time, .. }
            | Record::Call(CallRecord { time, .. }) => *time,
            Record::Lost { .. } | Record::Other => 0,
        }
    }
}

const MMAP2: u32 = 10;
const LOST: u32 = 2;
const COMM: u32 = 3;
const EXIT: u32 = 4;
const FORK: u32 = 7;
const SAMPLE: u32 = 9;
const SWITCH: u32 = 14;
const MISC_COMM_EXEC: u16 = 1 << 13;
const MISC_SWITCH_OUT: u16 = 1 << 13;
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// Call chain entries from here up mark a context (`PERF_CONTEXT_KERNEL`, `_USER`...), not an
/// address.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

/// Little cursor over a record's bytes; reads past the end give `None`.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.bytes.split_at_checked(n)?;
        self.bytes = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.take(8)?.try_into().ok()?))
    }
    /// `n` words (one bounds check for all of them).
    fn words(&mut self, n: usize) -> Option<Vec<u64>> {
        let bytes = self.take(n.checked_mul(8)?)?;
        Some(
            bytes
                .chunks_exact(8)
                .map(|w| u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
                .collect(),
        )
    }
    /// A NUL-terminated string padded to 8 bytes, up to the last `tail` bytes.
    fn string(&mut self, tail: usize) -> Option<String> {
        let n = self.bytes.len().checked_sub(tail)?;
        let field = self.take(n)?;
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        Some(String::from_utf8_lossy(&field[..end]).into_owned())
    }
}

/// Bytes of `sample_id_all`'s trailer for our sample type: pid, tid, time.
const ID_TRAILER: usize = 16;

/// Splits `bytes` (whole records of `prof record`'s events, as a ring's drain gives them) into
/// records, passing each to `each` with the number of registers each sample carries; a
/// malformed record ends the walk. Samples carry a call chain (`RING_SAMPLE_TYPE`) and, when
/// `read`, the event's count.
pub fn parse_all(bytes: &[u8], regs: usize, read: bool, each: impl FnMut(Record)) {
    walk(bytes, regs, read, true, each);
}

/// [`parse_all`] for the library's own ring (`Timer::PerfRing`), whose samples carry no call
/// chain (`OWN_RING_SAMPLE_TYPE`) and, when `read`, the event's count (`PERF_SAMPLE_READ` with
/// `read_format` 0).
pub fn parse_all_read(bytes: &[u8], regs: usize, read: bool, each: impl FnMut(Record)) {
    walk(bytes, regs, read, false, each);
}

/// The records of `bytes`, samples laid out with a count when `read` and a call chain when
/// `callchain` (in the kernel's order: period, read, call chain, registers, stack).
fn walk(bytes: &[u8], regs: usize, read: bool, callchain: bool, mut each: impl FnMut(Record)) {
    let mut rest = bytes;
    while rest.len() >= 8 {
        let kind = u32::from_ne_bytes(rest[0..4].try_into().unwrap_or_default());
        let misc = u16::from_ne_bytes(rest[4..6].try_into().unwrap_or_default());
        let size = usize::from(u16::from_ne_bytes(
            rest[6..8].try_into().unwrap_or_default(),
        ));
        if size < 8 || size > rest.len() {
            return;
        }
        let body = &rest[8..size];
        rest = &rest[size..];
        each(parse(kind, misc, body, regs, read, callchain).unwrap_or(Record::Other));
    }
}

/// One record's body (after its 8-byte header).
fn parse(
    kind: u32,
    misc: u16,
    body: &[u8],
    regs: usize,
    read: bool,
    callchain: bool,
) -> Option<Record> {
    let mut c = Cursor { bytes: body };
    Some(match kind {
        SAMPLE => {
            let _ip = c.u64()?;
            let (pid, tid) = (c.u32()?, c.u32()?);
            let time = c.u64()?;
            let period = c.u64()?;
            let read = if read { Some(c.u64()?) } else { None };
            let kernel = if callchain {
                let chain = usize::try_from(c.u64()?).ok()?;
                let mut kernel = c.words(chain)?;
                kernel.retain(|&a| a < PERF_CONTEXT_MAX);
                kernel
            } else {
                Vec::new()
            };
            let abi = c.u64()?;
            let regs = if abi == 0 { Vec::new() } else { c.words(regs)? };
            let size = usize::try_from(c.u64()?).ok()?;
            let mut stack = Vec::new();
            if size > 0 {
                let data = c.take(size)?;
                let dyn_size = usize::try_from(c.u64()?).ok()?;
                stack = data[..dyn_size.min(size)].to_vec();
            }
            Record::Sample(SampleRecord {
                pid,
                tid,
                time,
                period,
                kernel,
                regs,
                stack,
                read,
            })
        }
        SWITCH => {
            let (pid, tid, time) = (c.u32()?, c.u32()?, c.u64()?);
            Record::Switch {
                pid,
                tid,
                time,
                out: misc & MISC_SWITCH_OUT != 0,
                preempt: misc & MISC_SWITCH_OUT_PREEMPT != 0,
            }
        }
        MMAP2 => {
            let (pid, _tid) = (c.u32()?, c.u32()?);
            let (addr, len, pgoff) = (c.u64()?, c.u64()?, c.u64()?);
            c.take(24)?; // device and inode, or build ID
            let prot = c.u32()?;
            let _flags = c.u32()?;
            let filename = c.string(ID_TRAILER)?;
            let (_, _, time) = (c.u32()?, c.u32()?, c.u64()?);
            Record::Mmap {
                pid,
                time,
                addr,
                len,
                pgoff,
                prot,
                filename,
            }
        }
        COMM => {
            let (pid, tid) = (c.u32()?, c.u32()?);
            let name = c.string(ID_TRAILER)?;
            let (_, _, time) = (c.u32()?, c.u32()?, c.u64()?);
            Record::Comm {
                pid,
                tid,
                time,
                exec: misc & MISC_COMM_EXEC != 0,
                name,
            }
        }
        FORK | EXIT => {
            let (pid, ppid, tid, _ptid) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
            let time = c.u64()?;
            if kind == FORK {
                Record::Fork {
                    pid,
                    ppid,
                    tid,
                    time,
                }
            } else {
                Record::Exit { pid, tid, time }
            }
        }
        LOST => {
            let _id = c.u64()?;
            Record::Lost { lost: c.u64()? }
        }
        _ => Record::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&kind.to_ne_bytes());
        r.extend_from_slice(&misc.to_ne_bytes());
        r.extend_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
        r.extend_from_slice(body);
        r
    }

    fn words(ws: &[u64]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    #[test]
    fn a_count_below_the_previous_one_is_a_new_thread_with_the_same_id() {
        assert_eq!(count_since(0, 500), 500);
        assert_eq!(count_since(500, 800), 300);
        // The id's old thread counted 800 on this CPU; the new one has run 200 here.
        assert_eq!(count_since(800, 200), 200);
    }

    #[test]
    fn parses_a_sample_with_registers_and_a_partly_filled_stack() {
        let mut body = words(&[
            0x1000,
            (7u64 << 32) | 5,
            99,
            1_000_000,
            3,
            -128i64 as u64, // PERF_CONTEXT_KERNEL
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0200,
            2,
            0xb,
            0x5,
            0x1000,
            16,
        ]);
        body.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        body.extend(words(&[8]));
        let bytes = record(SAMPLE, 0, &body);
        let mut got = Vec::new();
        parse_all(&bytes, 3, false, |r| got.push(format!("{r:?}")));
        let want = Record::Sample(SampleRecord {
            pid: 5,
            tid: 7,
            time: 99,
            period: 1_000_000,
            kernel: vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0200],
            regs: vec![0xb, 0x5, 0x1000],
            stack: vec![1, 2, 3, 4, 5, 6, 7, 8],
            read: None,
        });
        assert_eq!(got, vec![format!("{want:?}")]);
    }

    #[test]
    fn parses_a_samples_count_when_it_carries_one() {
        let body = words(&[0x1000, (7u64 << 32) | 5, 99, 1_000_000, 1_234_567, 0, 0]);
        let bytes = record(SAMPLE, 0, &body);
        let mut got = Vec::new();
        parse_all_read(&bytes, 3, true, |r| got.push(r));
        assert_eq!(
            got,
            vec![Record::Sample(SampleRecord {
                pid: 5,
                tid: 7,
                time: 99,
                period: 1_000_000,
                kernel: Vec::new(),
                regs: Vec::new(),
                stack: Vec::new(),
                read: Some(1_234_567),
            })]
        );
    }

    #[test]
    fn parses_mmap2_comm_fork_exit_lost_and_switch_and_stops_at_a_torn_record() {
        let mut mmap = words(&[(3u64 << 32) | 3, 0x4000, 0x2000, 0x1000, 0, 0, 0]);
        mmap.extend_from_slice(&5u32.to_ne_bytes());
        mmap.extend_from_slice(&2u32.to_ne_bytes());
        mmap.extend_from_slice(b"/bin/x\0\0");
        mmap.extend(words(&[(3u64 << 32) | 3, 42]));
        let mut comm = words(&[(4u64 << 32) | 3]);
        comm.extend_from_slice(b"worker\0\0");
        comm.extend(words(&[(4u64 << 32) | 3, 43]));
        let mut bytes = record(MMAP2, 0, &mmap);
        bytes.extend(record(COMM, MISC_COMM_EXEC, &comm));
        bytes.extend(record(
            FORK,
            0,
            &words(&[(1u64 << 32) | 3, (3u64 << 32) | 8, 44]),
        ));
        bytes.extend(record(
            EXIT,
            0,
            &words(&[(3u64 << 32) | 3, (3u64 << 32) | 3, 45]),
        ));
        bytes.extend(record(LOST, 0, &words(&[1, 12])));
        bytes.extend(record(
            SWITCH,
            MISC_SWITCH_OUT | MISC_SWITCH_OUT_PREEMPT,
            &words(&[(3u64 << 32) | 3, 46]),
        ));
        bytes.extend(record(SWITCH, 0, &words(&[(3u64 << 32) | 3, 47])));
        bytes.extend_from_slice(&[9, 0, 0, 0, 0, 0, 200, 0]); // claims 200 bytes
        let mut got = Vec::new();
        parse_all(&bytes, 3, false, |r| got.push(r));
        assert_eq!(
            got,
            vec![
                Record::Mmap {
                    pid: 3,
                    time: 42,
                    addr: 0x4000,
                    len: 0x2000,
                    pgoff: 0x1000,
                    prot: 5,
                    filename: "/bin/x".into()
                },
                Record::Comm {
                    pid: 3,
                    tid: 4,
                    time: 43,
                    exec: true,
                    name: "worker".into()
                },
                Record::Fork {
                    pid: 3,
                    ppid: 1,
                    tid: 8,
                    time: 44
                },
                Record::Exit {
                    pid: 3,
                    tid: 3,
                    time: 45
                },
                Record::Lost { lost: 12 },
                Record::Switch {
                    pid: 3,
                    tid: 3,
                    time: 46,
                    out: true,
                    preempt: true
                },
                Record::Switch {
                    pid: 3,
                    tid: 3,
                    time: 47,
                    out: false,
                    preempt: false
                },
            ]
        );
    }

    #[test]
    fn call_records_give_id_task_time_stack_pointer_and_return_address_and_count_losses() {
        let mut body = 77u64.to_ne_bytes().to_vec();
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(&4u32.to_ne_bytes());
        // time, abi, sp, stack size, the copied word, its dynamic size
        for word in [1_000u64, 2, 0x7ffe_0000, 8, 0x5555_1234, 8] {
            body.extend_from_slice(&word.to_ne_bytes());
        }
        let mut bytes = record(SAMPLE, 0, &body);
        // A return with no registers copied (abi 0) and no stack.
        let mut bare = 78u64.to_ne_bytes().to_vec();
        bare.extend_from_slice(&3u32.to_ne_bytes());
        bare.extend_from_slice(&4u32.to_ne_bytes());
        for word in [1_500u64, 0, 0] {
            bare.extend_from_slice(&word.to_ne_bytes());
        }
        bytes.extend(record(SAMPLE, 0, &bare));
        let mut lost = Vec::new();
        for word in [77u64, 5] {
            lost.extend_from_slice(&word.to_ne_bytes());
        }
        bytes.extend(record(LOST, 0, &lost));
        let mut calls = Vec::new();
        assert_eq!(parse_calls(&bytes, |c| calls.push(c)), 5);
        assert_eq!(
            calls,
            [
                CallRecord {
                    id: 77,
                    pid: 3,
                    tid: 4,
                    time: 1_000,
                    sp: Some(0x7ffe_0000),
                    top: Some(0x5555_1234),
                },
                CallRecord {
                    id: 78,
                    pid: 3,
                    tid: 4,
                    time: 1_500,
                    sp: None,
                    top: None,
                },
            ]
        );
    }
}
