//! Timing counted calls from their entry and return records (`prof record --calls-timed`): each
//! thread's open calls as a stack, a return paired with the call it ends, each call's duration,
//! its self time (less the timed calls it made), and the calls kept as spans for the session's
//! timeline.
//!
//! A return is paired by its stack pointer where the records carry one: a call returns with the
//! stack pointer it was entered with, less the return address the `ret` popped (x86_64), so a
//! return whose entry was never seen, or an entry whose return never comes (the kernel stops
//! hijacking return addresses past 64 nested probed calls; `longjmp` skips returns), does not
//! pair the wrong calls. Without one, the innermost open call of the same function is taken.

use prof_session::session::TimedCalls;
use std::collections::HashMap;

/// How many bytes above a call's entry stack pointer its return's is: x86_64's `ret` pops the
/// return address the `call` pushed; aarch64's return address is in a register.
#[cfg(target_arch = "x86_64")]
const RETURN_SP_ABOVE_ENTRY: u64 = 8;
/// How many bytes above a call's entry stack pointer its return's is.
#[cfg(not(target_arch = "x86_64"))]
const RETURN_SP_ABOVE_ENTRY: u64 = 0;

/// The most spans a recording keeps by default (a span per timed call: 48 bytes each in
/// memory, about 20 in the file); calls past it are timed all the same, only not drawn.
pub const DEFAULT_MAX_SPANS: usize = 500_000;

/// A call open on a thread.
#[derive(Clone, Copy, Debug)]
struct Open {
    function: u32,
    start: u64,
    sp: Option<u64>,
    /// The address it returns to (the word at its entry stack pointer on x86_64).
    returns_to: Option<u64>,
    /// The time of the timed calls it made.
    children_ns: u64,
    /// Inside another call of the same function (its time is in that one's total).
    recursive: bool,
}

/// One timed call, kept for the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSpan {
    /// The function, as an index into the counted functions.
    pub function: u32,
    /// The thread.
    pub tid: u32,
    /// Its entry (`CLOCK_MONOTONIC`).
    pub start: u64,
    /// Its return.
    pub end: u64,
}

/// The calls of one recording's counted functions, timed.
#[derive(Debug)]
pub struct CallTimer {
    open: HashMap<u32, Vec<Open>>,
    timed: Vec<TimedCalls>,
    spans: Vec<CallSpan>,
    max_spans: usize,
    /// Calls timed but not kept as spans (past `max_spans`).
    spans_dropped: u64,
    /// Entries with no return and returns with no entry.
    unpaired: u64,
    /// Records the kernel dropped (a full ring).
    lost: u64,
    first: Option<u64>,
}

impl CallTimer {
    /// A timer of `functions` counted functions, keeping at most `max_spans` spans.
    pub fn new(functions: usize, max_spans: usize) -> CallTimer {
        CallTimer {
            open: HashMap::new(),
            timed: vec![TimedCalls::default(); functions],
            spans: Vec::new(),
            max_spans,
            spans_dropped: 0,
            unpaired: 0,
            lost: 0,
            first: None,
        }
    }

    /// Thread `tid` entered `function` at `time` with stack pointer `sp`, the word there
    /// `top`.
    pub fn entered(
        &mut self,
        tid: u32,
        function: u32,
        time: u64,
        sp: Option<u64>,
        top: Option<u64>,
    ) {
        self.first.get_or_insert(time);
        let stack = self.open.entry(tid).or_default();
        let recursive = stack.iter().any(|o| o.function == function);
        stack.push(Open {
            function,
            start: time,
            sp,
            returns_to: top,
            children_ns: 0,
            recursive,
        });
    }

    /// Thread `tid` returned from `function` at `time` with stack pointer `sp`.
    pub fn returned(&mut self, tid: u32, function: u32, time: u64, sp: Option<u64>) {
        self.first.get_or_insert(time);
        let Some(stack) = self.open.get_mut(&tid) else {
            self.unpaired += 1;
            return;
        };
        let entry_sp = sp.map(|sp| sp.wrapping_sub(RETURN_SP_ABOVE_ENTRY));
        let at = stack.iter().rposition(|o| match (o.sp, entry_sp) {
            (Some(a), Some(b)) => a == b && o.function == function,
            _ => o.function == function,
        });
        let Some(at) = at else {
            self.unpaired += 1;
            return;
        };
        // Calls entered after it and still open never returned (a lost record, `longjmp`, or
        // past the kernel's depth of hijacked returns).
        self.unpaired += (stack.len() - at - 1) as u64;
        stack.truncate(at + 1);
        let Some(call) = stack.pop() else {
            return;
        };
        let duration = time.saturating_sub(call.start);
        if let Some(caller) = stack.last_mut() {
            caller.children_ns = caller.children_ns.saturating_add(duration);
        }
        let timed = &mut self.timed[call.function as usize];
        timed.calls += 1;
        if !call.recursive {
            timed.total_ns = timed.total_ns.saturating_add(duration);
        }
        timed.self_ns = timed
            .self_ns
            .saturating_add(duration.saturating_sub(call.children_ns));
        if self.spans.len() < self.max_spans {
            self.spans.push(CallSpan {
                function: call.function,
                tid,
                start: call.start,
                end: time,
            });
        } else {
            self.spans_dropped += 1;
        }
    }

    /// The kernel dropped `n` records (a ring was full): the calls they began or ended are
    /// not timed.
    pub fn lost(&mut self, n: u64) {
        self.lost = self.lost.saturating_add(n);
    }

    /// Records the kernel dropped.
    pub fn records_lost(&self) -> u64 {
        self.lost
    }

    /// A thread ended: its calls still open will not return.
    pub fn thread_ended(&mut self, tid: u32) {
        if let Some(stack) = self.open.remove(&tid) {
            self.unpaired += stack.len() as u64;
        }
    }

    /// Puts back, in the stack bytes `bytes` copied at stack pointer `sp` on thread `tid`, the
    /// return addresses of its open timed calls where the kernel put its trampoline's (so the
    /// stack unwinds past them). Only on x86_64, where the return address is at the entry's
    /// stack pointer.
    pub fn restore(&self, tid: u32, sp: u64, bytes: &mut [u8]) {
        if RETURN_SP_ABOVE_ENTRY == 0 {
            return;
        }
        let Some(stack) = self.open.get(&tid) else {
            return;
        };
        for call in stack {
            let (Some(at), Some(address)) = (call.sp, call.returns_to) else {
                continue;
            };
            let slot = at
                .checked_sub(sp)
                .and_then(|o| usize::try_from(o).ok())
                .and_then(|o| bytes.get_mut(o..o.checked_add(8)?));
            if let Some(slot) = slot {
                slot.copy_from_slice(&address.to_ne_bytes());
            }
        }
    }

    /// Each counted function's timed calls, in the order of the functions.
    pub fn timed(&self) -> &[TimedCalls] {
        &self.timed
    }

    /// The calls kept as spans, in the order they returned.
    pub fn spans(&self) -> &[CallSpan] {
        &self.spans
    }

    /// Calls timed but not kept as spans.
    pub fn spans_dropped(&self) -> u64 {
        self.spans_dropped
    }

    /// Calls with an entry and no return or a return and no entry: still running at the end,
    /// started before an attach, or a record lost.
    pub fn unpaired(&self) -> u64 {
        self.unpaired + self.open.values().map(|s| s.len() as u64).sum::<u64>()
    }

    /// The time of the first record.
    pub fn first_time(&self) -> Option<u64> {
        self.first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_calls_give_total_and_self_time_and_recursion_counts_once_in_total() {
        let mut t = CallTimer::new(2, 10);
        let sp = |depth: u64| Some(0x1000 - depth * 64);
        let ret = |depth: u64| sp(depth).map(|s| s + RETURN_SP_ABOVE_ENTRY);
        // f [0, 100] calls g [10, 30] and f [40, 90], which calls g [50, 60].
        t.entered(1, 0, 0, sp(0), Some(0xaa));
        t.entered(1, 1, 10, sp(1), Some(0xbb));
        t.returned(1, 1, 30, ret(1));
        t.entered(1, 0, 40, sp(1), Some(0xcc));
        t.entered(1, 1, 50, sp(2), Some(0xdd));
        t.returned(1, 1, 60, ret(2));
        t.returned(1, 0, 90, ret(1));
        t.returned(1, 0, 100, ret(0));
        let f = t.timed()[0];
        let g = t.timed()[1];
        assert_eq!((f.calls, f.total_ns), (2, 100));
        // The outer: 100 less 20 (g) and 50 (f); the inner: 50 less 10 (g).
        assert_eq!(f.self_ns, 30 + 40);
        assert_eq!((g.calls, g.total_ns, g.self_ns), (2, 30, 30));
        assert_eq!(t.unpaired(), 0);
        assert_eq!(t.spans().len(), 4);
    }

    #[test]
    fn a_return_pairs_with_its_own_entry_past_entries_that_never_returned() {
        let mut t = CallTimer::new(1, 10);
        // Three nested calls of one function; the innermost two returned unseen.
        for (depth, time) in [(0u64, 0u64), (1, 10), (2, 20)] {
            t.entered(7, 0, time, Some(0x1000 - depth * 64), None);
        }
        t.returned(7, 0, 100, Some(0x1000 + RETURN_SP_ABOVE_ENTRY));
        if RETURN_SP_ABOVE_ENTRY > 0 {
            assert_eq!(t.timed()[0].total_ns, 100);
        }
        assert_eq!(t.timed()[0].calls, 1);
        assert_eq!(t.unpaired(), 2);
        // A return with no entry.
        t.returned(8, 0, 5, None);
        assert_eq!(t.unpaired(), 3);
    }

    #[test]
    fn spans_past_the_bound_are_counted_not_kept_and_open_calls_are_unpaired() {
        let mut t = CallTimer::new(1, 1);
        for i in 0..3 {
            t.entered(1, 0, i * 10, None, None);
            t.returned(1, 0, i * 10 + 5, None);
        }
        t.entered(1, 0, 100, None, None);
        assert_eq!(t.timed()[0].calls, 3);
        assert_eq!((t.spans().len(), t.spans_dropped()), (1, 2));
        assert_eq!(t.unpaired(), 1);
        t.thread_ended(1);
        assert_eq!(t.unpaired(), 1);
    }

    #[test]
    fn a_stack_copy_gets_back_the_return_addresses_of_the_calls_still_open() {
        let mut t = CallTimer::new(1, 10);
        t.entered(3, 0, 0, Some(0x1010), Some(0x5555_0001));
        let bytes = vec![0xffu8; 32];
        let mut restored = bytes.clone();
        t.restore(3, 0x1000, &mut restored);
        if RETURN_SP_ABOVE_ENTRY == 0 {
            assert_eq!(restored, bytes);
            return;
        }
        assert_eq!(&restored[16..24], &0x5555_0001u64.to_ne_bytes());
        assert_eq!(&restored[..16], &bytes[..16]);
        // Another thread's copy, or one that does not reach the slot, is left alone.
        let mut other = bytes.clone();
        t.restore(4, 0x1000, &mut other);
        assert_eq!(other, bytes);
        let mut short = bytes[..20].to_vec();
        t.restore(3, 0x1000, &mut short);
        assert_eq!(short, bytes[..20]);
    }
}
