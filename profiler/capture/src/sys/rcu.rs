//! Sharing state with the signal handler without locks: values replaced under running handlers
//! ([`Rcu`]) and scratch space one handler at a time may use ([`TryCell`]).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts the handlers currently between [`read_begin`] and the guard's drop, process-wide.
static ACTIVE_READERS: AtomicUsize = AtomicUsize::new(0);

/// Marks a reader (a running handler) of [`Rcu`] cells; values it read stay alive until it is
/// dropped.
pub struct ReadGuard(());

/// Starts a read section. Async-signal-safe (one atomic add).
pub fn read_begin() -> ReadGuard {
    ACTIVE_READERS.fetch_add(1, Ordering::SeqCst);
    ReadGuard(())
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        ACTIVE_READERS.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Retired<T>(Vec<*mut T>);
// SAFETY: the pointers are uniquely owned boxes waiting to be freed; sending them between
// threads is sending `Box<T>`, which is fine for `T: Send`.
unsafe impl<T: Send> Send for Retired<T> {}

/// A value the signal handler reads without locks while other threads replace it: a replaced
/// value is freed only once no handler is inside a read section.
pub struct Rcu<T> {
    ptr: AtomicPtr<T>,
    retired: Mutex<Retired<T>>,
}

impl<T: Send + Sync> Rcu<T> {
    /// An empty cell.
    pub const fn empty() -> Self {
        Rcu {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            retired: Mutex::new(Retired(Vec::new())),
        }
    }

    /// The current value, valid while `guard` lives.
    pub fn get<'a>(&'a self, _guard: &'a ReadGuard) -> Option<&'a T> {
        let ptr = self.ptr.load(Ordering::SeqCst);
        // SAFETY: a non-null pointer came from Box::into_raw in `replace`. It is freed only by
        // `reclaim` after it was swapped out *and* ACTIVE_READERS was seen at zero. Our guard
        // incremented ACTIVE_READERS (SeqCst) before this load (SeqCst), so either the swap came
        // after our increment and the reclaimer sees a non-zero count until the guard drops, or
        // the swap came before our load and we read the new pointer. The borrow is tied to the
        // guard, so it cannot outlive the read section.
        unsafe { ptr.as_ref() }
    }

    /// Puts in a new value (or none); the old one is freed once no reader can hold it.
    pub fn replace(&self, value: Option<Box<T>>) {
        let new = value.map_or(std::ptr::null_mut(), Box::into_raw);
        let old = self.ptr.swap(new, Ordering::SeqCst);
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        if !old.is_null() {
            retired.0.push(old);
        }
        drop(retired);
        self.reclaim();
    }

    /// Frees replaced values if no handler is running; returns true when none are left.
    pub fn reclaim(&self) -> bool {
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        if retired.0.is_empty() {
            return true;
        }
        if ACTIVE_READERS.load(Ordering::SeqCst) != 0 {
            return false;
        }
        for ptr in retired.0.drain(..) {
            // SAFETY: `ptr` came from Box::into_raw, was swapped out of `self.ptr` before
            // it was retired, and no reader is active now (see `get`), so nothing can still
            // borrow it; each retired pointer is freed once because it is drained.
            drop(unsafe { Box::from_raw(ptr) });
        }
        true
    }

    /// Replaces the value with none and waits until it is freed.
    pub fn clear_and_wait(&self) {
        self.replace(None);
        while !self.reclaim() {
            std::thread::yield_now();
        }
    }
}

impl<T> Drop for Rcu<T> {
    fn drop(&mut self) {
        let ptr = *self.ptr.get_mut();
        let retired =
            std::mem::take(&mut self.retired.get_mut().unwrap_or_else(|e| e.into_inner()).0);
        for p in retired.into_iter().chain((!ptr.is_null()).then_some(ptr)) {
            // SAFETY: dropping the cell means `&mut self`: no reader can borrow from it (a
            // borrow from `get` keeps `self` borrowed), and each pointer is a distinct box.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A value that one handler at a time may use, taken without waiting: a try-lock that never
/// blocks, for per-handler scratch state such as an unwinder cache.
pub struct TryCell<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is exclusive (guarded by `busy`), so sharing the cell between
// threads is like sharing a Mutex<T>, which needs only `T: Send`.
unsafe impl<T: Send> Sync for TryCell<T> {}

impl<T> TryCell<T> {
    /// A free cell holding `value`.
    pub fn new(value: T) -> Self {
        TryCell {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` on the value if no one else is using it; `None` otherwise.
    pub fn try_with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        struct Release<'a>(&'a AtomicBool);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _release = Release(&self.busy);
        // SAFETY: we won the false→true exchange of `busy`, so no other caller holds a
        // reference to the value until `_release` stores false after `f` returns; `f` cannot
        // re-enter this cell on this thread because a nested call would see `busy` set.
        Some(f(unsafe { &mut *self.value.get() }))
    }
}
