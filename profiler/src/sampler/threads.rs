//! Threads: a lock-free table of each thread's CPU clock at its last sample (read and written by
//! the handler, filled by the collector), and discovery through `/proc/self/task`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const EMPTY: u32 = 0;
const GONE: u32 = u32::MAX;

/// Open-addressing table keyed by thread id. Slots of exited threads become tombstones, which a
/// later thread's insertion reuses. Each thread id is inserted by one party at a time (the
/// collector before arming the thread, or the thread's own handler), so a reuse cannot create a
/// second entry for the same thread.
pub struct ThreadTable {
    keys: Box<[AtomicU32]>,
    last_cpu: Box<[AtomicU64]>,
    /// The monotonic clock at the thread's last sample with [`ThreadTable::take_period`]; 0
    /// before one. In wall mode, instead, when the collector last signalled the thread for a
    /// sample its handler has not taken yet (see [`ThreadTable::set_sent`]); 0 for none.
    last_wall: Box<[AtomicU64]>,
    /// The thread's name (`comm`, NUL-padded) when its handler registered it, read by the
    /// collector for threads gone before a sweep saw them.
    names: Box<[[AtomicU64; 2]]>,
    /// `timer_create` only (empty for the other timers): each thread's parking state.
    parking: Box<[ParkSlot]>,
}

/// A `timer_create` thread's parking state (see [`ThreadTable::note_timer_signal`]).
#[derive(Default)]
struct ParkSlot {
    /// The ids of the thread's monotonic and CPU-clock timers (0: none), set by the collector
    /// after arming, read by the thread's handler to park and unpark it.
    timers: [AtomicU64; 2],
    /// Signals in a row that found the thread idle, and [`PARKED`] while it is parked (its
    /// monotonic timer disarmed, its CPU-clock timer armed).
    idle: AtomicU32,
    /// The thread's CPU clock at its last timer signal, sample or not.
    signal_cpu: AtomicU64,
}

/// What a timer signal tells the handler to do with its thread's timers (`timer_create` only):
/// a thread idle for many signals in a row stops being woken by the monotonic timer and waits
/// on a timer of its own CPU clock instead, which only a running thread can fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parking {
    /// Leave the timers as they are.
    Stay,
    /// Disarm the monotonic timer, arm the CPU-clock one.
    Park,
    /// Disarm the CPU-clock timer, arm the monotonic one.
    Unpark,
}

/// Set in [`ParkSlot::idle`] while the thread is parked.
const PARKED: u32 = 1 << 31;

impl ThreadTable {
    /// A table with room for `capacity` threads over the session.
    pub fn new(capacity: usize) -> ThreadTable {
        let capacity = capacity.next_power_of_two();
        ThreadTable {
            keys: (0..capacity).map(|_| AtomicU32::new(EMPTY)).collect(),
            last_cpu: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            last_wall: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            names: (0..capacity)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
            parking: Box::default(),
        }
    }

    /// As [`ThreadTable::new`], with room for the parking state of `timer_create` threads.
    pub fn with_timer_parking(capacity: usize) -> ThreadTable {
        let table = ThreadTable::new(capacity);
        ThreadTable {
            parking: (0..table.keys.len()).map(|_| ParkSlot::default()).collect(),
            ..table
        }
    }

    fn probe(&self, tid: u32) -> impl Iterator<Item = usize> {
        let mask = self.keys.len() - 1;
        let start = (tid as usize).wrapping_mul(0x9E37_79B9) & mask;
        (0..self.keys.len()).map(move |i| (start + i) & mask)
    }

    /// The slot of `tid`, if present. Async-signal-safe.
    pub fn find(&self, tid: u32) -> Option<usize> {
        for slot in self.probe(tid) {
            match self.keys[slot].load(Ordering::Acquire) {
                k if k == tid => return Some(slot),
                EMPTY => return None,
                _ => {}
            }
        }
        None
    }

    /// The slot of `tid`, adding it with clock `cpu_ns` when absent; `None` when the table is
    /// full. Async-signal-safe.
    pub fn find_or_insert(&self, tid: u32, cpu_ns: u64) -> Option<usize> {
        self.find_or_insert_new(tid, cpu_ns).map(|(slot, _)| slot)
    }

    /// As [`ThreadTable::find_or_insert`], also saying whether this call added it.
    /// Async-signal-safe.
    pub fn find_or_insert_new(&self, tid: u32, cpu_ns: u64) -> Option<(usize, bool)> {
        let mut tombstone = None;
        for slot in self.probe(tid) {
            match self.keys[slot].load(Ordering::Acquire) {
                k if k == tid => return Some((slot, false)),
                GONE => {
                    tombstone.get_or_insert(slot);
                }
                EMPTY => {
                    // Not present: take the first tombstone on the way, else this empty slot.
                    if let Some(t) = tombstone {
                        if self.claim(t, GONE, tid, cpu_ns) {
                            return Some((t, true));
                        }
                    }
                    if self.claim(slot, EMPTY, tid, cpu_ns) {
                        return Some((slot, true));
                    }
                    // Another thread took it: keep probing.
                }
                _ => {}
            }
        }
        match tombstone {
            Some(t) if self.claim(t, GONE, tid, cpu_ns) => Some((t, true)),
            _ => None,
        }
    }

    fn claim(&self, slot: usize, from: u32, tid: u32, cpu_ns: u64) -> bool {
        // The clock is only read by the thread's own handler, which cannot run before its
        // registration (by the collector before arming it, or by that very handler).
        let won = self.keys[slot]
            .compare_exchange(from, tid, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if won {
            self.last_cpu[slot].store(cpu_ns, Ordering::Release);
            self.last_wall[slot].store(0, Ordering::Release);
            for word in &self.names[slot] {
                word.store(0, Ordering::Relaxed);
            }
            if let Some(park) = self.parking.get(slot) {
                for word in &park.timers {
                    word.store(0, Ordering::Relaxed);
                }
                park.idle.store(0, Ordering::Relaxed);
                park.signal_cpu.store(cpu_ns, Ordering::Relaxed);
            }
        }
        won
    }

    /// Records the name of the thread in `slot` (only its own handler calls this, right after
    /// registering it, before publishing its sample). Async-signal-safe.
    pub fn set_name(&self, slot: usize, name: [u8; 16]) {
        for (word, bytes) in self.names[slot].iter().zip(name.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(bytes);
            word.store(u64::from_le_bytes(le), Ordering::Relaxed);
        }
    }

    /// The name recorded by [`ThreadTable::set_name`] for `tid`, if it is still registered and
    /// has one.
    pub fn name_of(&self, tid: u32) -> Option<String> {
        let slot = self.find(tid)?;
        let mut bytes = [0u8; 16];
        for (word, out) in self.names[slot].iter().zip(bytes.chunks_exact_mut(8)) {
            out.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        (len > 0).then(|| String::from_utf8_lossy(&bytes[..len]).into_owned())
    }

    /// Records the ids of the timers armed for the thread in `slot`: its monotonic timer
    /// (armed) and its CPU-clock timer (disarmed). The collector calls this after arming.
    /// Does nothing in a table made without parking.
    pub fn set_timers(&self, slot: usize, monotonic: u64, cpu: u64) {
        if let Some(park) = self.parking.get(slot) {
            park.timers[0].store(monotonic, Ordering::Release);
            park.timers[1].store(cpu, Ordering::Release);
        }
    }

    /// The ids recorded by [`ThreadTable::set_timers`], when both are. Async-signal-safe.
    pub fn timers(&self, slot: usize) -> Option<(u64, u64)> {
        let park = self.parking.get(slot)?;
        let monotonic = park.timers[0].load(Ordering::Acquire);
        let cpu = park.timers[1].load(Ordering::Acquire);
        (monotonic != 0 && cpu != 0).then_some((monotonic, cpu))
    }

    /// Counts a timer signal of the thread in `slot`, whose CPU clock reads `cpu_ns`, and
    /// says what to do with its timers: `cpu_timer` says whether it came from the CPU-clock
    /// timer. The signal found the thread idle when it ran less than `idle_below_ns` since the
    /// previous signal (a blocked thread still runs a little: each wake-up to take a signal
    /// costs it CPU time, and under load some wake-ups cost more than the bar). Each idle
    /// signal adds 1 to the thread's count and each busy one takes 2 away, so a thread idle at
    /// more than two signals of three gets to `park_after` and is parked; its CPU-clock
    /// timer's first signal unparks it. Only the thread's own handler calls this.
    /// Async-signal-safe.
    pub fn note_timer_signal(
        &self,
        slot: usize,
        cpu_ns: u64,
        cpu_timer: bool,
        idle_below_ns: u64,
        park_after: u32,
    ) -> Parking {
        let Some(park) = self.parking.get(slot) else {
            return Parking::Stay;
        };
        let ran = cpu_ns.saturating_sub(park.signal_cpu.swap(cpu_ns, Ordering::Relaxed));
        let idle = ran < idle_below_ns;
        let state = &park.idle;
        let now = state.load(Ordering::Relaxed);
        let (next, parking) = match (now & PARKED != 0, cpu_timer, idle) {
            (true, true, _) => (0, Parking::Unpark),
            // A monotonic signal sent before the thread was parked: nothing changes.
            (true, false, _) => (now, Parking::Stay),
            // A CPU-clock signal that raced with an unpark: nothing changes.
            (false, true, _) => (now, Parking::Stay),
            (false, false, false) => (now.saturating_sub(2), Parking::Stay),
            (false, false, true) if now + 1 >= park_after => (PARKED, Parking::Park),
            (false, false, true) => (now + 1, Parking::Stay),
        };
        state.store(next, Ordering::Relaxed);
        parking
    }

    /// The threads registered right now.
    pub fn tids(&self) -> Vec<u32> {
        self.keys
            .iter()
            .map(|k| k.load(Ordering::Acquire))
            .filter(|&k| k != EMPTY && k != GONE)
            .collect()
    }

    /// Takes the CPU time since the slot's last sample and records `now_ns` as the new last.
    /// Only the owning thread's handler calls this, so the swap has a single writer.
    pub fn take_delta(&self, slot: usize, now_ns: u64) -> u64 {
        let last = self.last_cpu[slot].swap(now_ns, Ordering::AcqRel);
        now_ns.saturating_sub(last)
    }

    /// Like [`ThreadTable::take_delta`], but when less than `min_ns` passed since the last
    /// sample, returns 0 and leaves the last sample's clock as it is, so the time goes to the
    /// thread's next sample.
    pub fn take_delta_of_at_least(&self, slot: usize, now_ns: u64, min_ns: u64) -> u64 {
        let last = self.last_cpu[slot].load(Ordering::Acquire);
        if now_ns.saturating_sub(last) < min_ns {
            return 0;
        }
        self.take_delta(slot, now_ns)
    }

    /// The weight of a sample from a timer that signals the thread once per `period_ns` of its
    /// CPU time, `wall_ns` being the monotonic clock now; `read_cpu` reads the thread's CPU
    /// clock (a system call) when needed. When the thread's previous sample was between half
    /// and one and a half periods of wall time ago, one period of CPU time passed since, no
    /// more and no less: the timer fired, so a period ended, and CPU time cannot outrun wall
    /// time, so a second one cannot have ended unsignalled. The weight is then the period, and
    /// no clock is read. Otherwise (its first sample; it was descheduled or blocked; a period
    /// ended in the kernel, where `exclude_kernel` events signal nothing; it kept the signal
    /// blocked) the clock is read and the weight is the time since the clock the previous
    /// sample left (counted a period at a time through the samples without a read), so every
    /// CPU nanosecond is still in some sample's weight. Only the owning thread's handler calls
    /// this.
    pub fn take_period(
        &self,
        slot: usize,
        wall_ns: u64,
        period_ns: u64,
        read_cpu: impl FnOnce() -> u64,
    ) -> u64 {
        let last_wall = self.last_wall[slot].swap(wall_ns, Ordering::AcqRel);
        let since = wall_ns.wrapping_sub(last_wall);
        if last_wall != 0 && since >= period_ns / 2 && since < period_ns + period_ns / 2 {
            self.last_cpu[slot].fetch_add(period_ns, Ordering::AcqRel);
            return period_ns;
        }
        self.take_delta(slot, read_cpu())
    }

    /// Wall mode: the collector signals the thread in `slot` at `now_ns` (the monotonic
    /// clock) for a sample.
    pub fn set_sent(&self, slot: usize, now_ns: u64) {
        self.last_wall[slot].store(now_ns, Ordering::Release);
    }

    /// Wall mode: when the collector signalled the thread in `slot` for the sample its handler
    /// is taking, and forgets it; 0 when it did not. Only the owning thread's handler calls
    /// this.
    pub fn take_sent(&self, slot: usize) -> u64 {
        self.last_wall[slot].swap(0, Ordering::AcqRel)
    }

    /// Marks a thread as exited.
    pub fn remove(&self, tid: u32) {
        if let Some(slot) = self.find(tid) {
            self.keys[slot].store(GONE, Ordering::Release);
        }
    }
}

/// The ids of the threads of this process right now.
pub fn list_tids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The name of thread `tid` (`comm`), empty when it has exited.
pub fn thread_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_default()
}

/// Whether signal `signo` waits to be delivered to a thread of this process that does not
/// block it (`SigPnd`, `ShdPnd` and `SigBlk` of `/proc/self/task/*/status`): a signal raised
/// for a thread that is not running lands when it next runs, one blocked stays pending as long
/// as the thread blocks it. `None` where that cannot be read, and for a process of more than
/// [`PENDING_READ_MAX`] threads.
pub fn signal_pending(signo: i32) -> Option<bool> {
    let bit = 1u64 << (signo - 1);
    let mut shared = false;
    let mut someone_takes_it = false;
    let mut read_any = false;
    let tids = list_tids();
    if tids.len() > PENDING_READ_MAX {
        return None;
    }
    for tid in tids {
        // A thread that exited in between has nothing pending.
        let Some(signals) = Signals::of_thread(tid) else {
            continue;
        };
        read_any = true;
        if signals.waits_for(bit) {
            return Some(true);
        }
        shared |= signals.shared & bit != 0;
        someone_takes_it |= signals.blocked & bit == 0;
    }
    read_any.then_some(shared && someone_takes_it)
}

/// The most threads [`signal_pending`] reads the status of: each costs about 16 µs here, so
/// past this many a fixed wait of 5 ms is the cheaper way to let signals land.
pub const PENDING_READ_MAX: usize = 256;

/// The signal masks of a thread's `status` file.
#[derive(Debug, PartialEq)]
struct Signals {
    /// Pending for the thread alone (`SigPnd`).
    pending: u64,
    /// Pending for the process (`ShdPnd`), which any thread not blocking it takes.
    shared: u64,
    /// Blocked by the thread (`SigBlk`).
    blocked: u64,
}

impl Signals {
    /// The masks of thread `tid`; `None` when it has exited.
    fn of_thread(tid: u32) -> Option<Signals> {
        Signals::of_status(&std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?)
    }

    /// Whether a signal of mask `bit` is pending for the thread alone and will be delivered
    /// when it runs (the thread does not block it).
    fn waits_for(&self, bit: u64) -> bool {
        self.pending & bit != 0 && self.blocked & bit == 0
    }

    /// The masks of `status`; `None` when one is missing or not hexadecimal.
    fn of_status(status: &str) -> Option<Signals> {
        let mask = |field: &str| {
            let line = status.lines().find_map(|l| l.strip_prefix(field))?;
            u64::from_str_radix(line.trim(), 16).ok()
        };
        Some(Signals {
            pending: mask("SigPnd:")?,
            shared: mask("ShdPnd:")?,
            blocked: mask("SigBlk:")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_capture::sys;

    #[test]
    fn the_signal_masks_are_read_from_a_status_file() {
        let status = "Name:\tworker\nSigQ:\t1/94651\nSigPnd:\t0000000000002000\n\
                      ShdPnd:\t0000000000000100\nSigBlk:\t0000000000002000\n\
                      SigIgn:\t0000000000001000\nSigCgt:\t0000000100000000\n";
        let signals = Signals::of_status(status).unwrap();
        assert_eq!(
            signals,
            Signals {
                pending: 0x2000,
                shared: 0x100,
                blocked: 0x2000
            }
        );
        // Pending but blocked: it is not delivered however long one waits.
        assert!(!signals.waits_for(0x2000));
        assert!(Signals::of_status("Name:\tworker\nSigPnd:\tzz\n").is_none());
    }

    #[test]
    fn a_signal_pending_for_a_thread_that_blocks_it_is_not_waited_for() {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let blocker = std::thread::spawn(move || {
            sys::block_signal_in_this_thread();
            tid_tx.send(sys::gettid()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        assert!(sys::send_wall_sample(tid));
        let bit = 1u64 << (sys::SIGNAL - 1);
        let signals = Signals::of_thread(tid).unwrap();
        assert_ne!(
            signals.pending & bit,
            0,
            "queued for the thread: {signals:?}"
        );
        assert!(!signals.waits_for(bit), "{signals:?}");
        done_tx.send(()).unwrap();
        blocker.join().unwrap();
    }

    #[test]
    fn a_thread_mostly_idle_is_parked_and_its_cpu_timer_unparks_it() {
        let t = ThreadTable::with_timer_parking(8);
        let slot = t.find_or_insert(7, 1_000).unwrap();
        let (interval, bar, park_after) = (100_000, 50_000, 10);
        let mut cpu = 1_000;
        let mut signal = |ran: u64, cpu_timer: bool| {
            cpu += ran;
            t.note_timer_signal(slot, cpu, cpu_timer, bar, park_after)
        };
        // A running thread is never parked.
        for _ in 0..100 {
            assert_eq!(signal(interval, false), Parking::Stay);
        }
        // Idle at two signals of three, with wake-ups that cost more than the bar: never.
        for _ in 0..30 {
            assert_eq!(signal(10_000, false), Parking::Stay);
            assert_eq!(signal(10_000, false), Parking::Stay);
            assert_eq!(signal(60_000, false), Parking::Stay);
        }
        // Idle at three of four: parked, once.
        let mut parked = 0;
        for _ in 0..40 {
            for ran in [10_000, 10_000, 10_000, 60_000] {
                match signal(ran, false) {
                    Parking::Park => parked += 1,
                    other => assert_eq!(other, Parking::Stay),
                }
            }
        }
        assert_eq!(parked, 1);
        // Parked: a late monotonic signal changes nothing, the CPU timer's signal unparks,
        // and a CPU signal that raced with the unpark changes nothing either.
        assert_eq!(signal(10_000, false), Parking::Stay);
        assert_eq!(signal(interval, true), Parking::Unpark);
        assert_eq!(signal(interval, true), Parking::Stay);
        // Counting starts again from zero.
        for _ in 0..park_after - 1 {
            assert_eq!(signal(0, false), Parking::Stay);
        }
        assert_eq!(signal(0, false), Parking::Park);
    }

    #[test]
    fn deltas_are_per_thread_and_exited_threads_are_forgotten() {
        let t = ThreadTable::new(8);
        let a = t.find_or_insert(10, 100).unwrap();
        let b = t.find_or_insert(18, 0).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.find_or_insert(10, 999), Some(a));
        assert_eq!(t.take_delta(a, 150), 50);
        assert_eq!(t.take_delta(a, 170), 20);
        assert_eq!(t.take_delta(b, 5), 5);
        t.remove(10);
        assert_eq!(t.find(10), None);
        assert_eq!(t.find(18), Some(b));
    }

    #[test]
    fn a_delta_below_the_minimum_goes_to_the_next_one() {
        let t = ThreadTable::new(2);
        let a = t.find_or_insert(1, 100).unwrap();
        assert_eq!(t.take_delta_of_at_least(a, 130, 50), 0);
        assert_eq!(t.take_delta_of_at_least(a, 160, 50), 60);
        assert_eq!(t.take_delta_of_at_least(a, 170, 0), 10);
    }

    #[test]
    fn a_sample_one_period_after_the_last_weighs_the_period_without_reading_the_clock() {
        let t = ThreadTable::new(2);
        let a = t.find_or_insert(1, 1_000).unwrap();
        let never = || -> u64 { panic!("the clock was read") };
        // The first sample reads the clock: 1,250 ns of CPU since registration.
        assert_eq!(t.take_period(a, 10_000, 1_000, || 2_250), 1_250);
        // One period of wall time later, and again a little early and a little late.
        assert_eq!(t.take_period(a, 11_000, 1_000, never), 1_000);
        assert_eq!(t.take_period(a, 11_600, 1_000, never), 1_000);
        assert_eq!(t.take_period(a, 13_000, 1_000, never), 1_000);
        // Two and a half periods of wall time: read, and charge what the clock says since the
        // clock counted forward (2,250 + 3 periods).
        assert_eq!(t.take_period(a, 15_500, 1_000, || 7_000), 1_750);
        // Too soon after the last (a signal kept blocked, then two at once): read too.
        assert_eq!(t.take_period(a, 15_700, 1_000, || 7_100), 100);
        assert_eq!(t.take_period(a, 16_700, 1_000, never), 1_000);
    }

    #[test]
    fn a_reused_slot_starts_with_a_clock_read() {
        let t = ThreadTable::new(2);
        let a = t.find_or_insert(1, 0).unwrap();
        t.find_or_insert(2, 0).unwrap();
        assert_eq!(t.take_period(a, 5_000, 1_000, || 900), 900);
        t.remove(1);
        assert_eq!(t.find_or_insert(3, 100), Some(a));
        assert_eq!(t.take_period(a, 6_000, 1_000, || 1_300), 1_200);
    }

    #[test]
    fn slots_of_exited_threads_are_reused() {
        let t = ThreadTable::new(2);
        let a = t.find_or_insert(1, 0).unwrap();
        t.find_or_insert(2, 0).unwrap();
        t.remove(1);
        assert_eq!(t.find_or_insert(3, 40), Some(a));
        assert_eq!(t.take_delta(a, 50), 10);
        assert!(t.find(2).is_some());
        assert_eq!(t.find(1), None);
    }

    #[test]
    fn names_and_registrations_are_reported() {
        let t = ThreadTable::new(4);
        let seven = t.find_or_insert(7, 0).unwrap();
        assert_eq!(t.find_or_insert_new(7, 0), Some((seven, false)));
        let (slot, new) = t.find_or_insert_new(9, 0).unwrap();
        assert!(new);
        assert_eq!(t.name_of(9), None);
        t.set_name(slot, *b"short-lived\0\0\0\0\0");
        assert_eq!(t.name_of(9).as_deref(), Some("short-lived"));
        let mut tids = t.tids();
        tids.sort_unstable();
        assert_eq!(tids, [7, 9]);
        t.remove(9);
        assert_eq!(t.tids(), [7]);
        assert_eq!(t.find_or_insert_new(9, 0).map(|(_, new)| new), Some(true));
        assert_eq!(
            t.name_of(9),
            None,
            "a new registration starts without a name"
        );
    }

    #[test]
    fn a_full_table_says_so() {
        let t = ThreadTable::new(2);
        assert!(t.find_or_insert(1, 0).is_some());
        assert!(t.find_or_insert(2, 0).is_some());
        assert_eq!(t.find_or_insert(3, 0), None);
    }

    #[test]
    fn this_thread_is_listed_with_its_name() {
        let tid = prof_capture::sys::gettid();
        assert!(list_tids().contains(&tid));
        let name = std::thread::Builder::new()
            .name("named-one".into())
            .spawn(|| thread_name(prof_capture::sys::gettid()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(name, "named-one");
    }
}
