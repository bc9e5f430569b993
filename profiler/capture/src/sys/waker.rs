//! Where a task waits: a waker that notes the stack it is cloned from.
//!
//! A future that returns `Pending` has handed its waker to whatever will wake it, and it does
//! so by cloning the waker at the `.await` it stopped at. [`poll_noting_await`] polls a future
//! with a `Context` whose waker wraps the real one: the wrapper's `clone` walks the stack from
//! its caller up to the poll (with the `backtrace` crate's unwinder, which reads the unwind
//! tables, so it holds in release builds without frame pointers) and returns a clone of the
//! real waker, so no stored waker is ever the wrapper and nothing of it outlives the poll.
//! Only wall mode asks for it: a walk costs microseconds, once per clone. The walk takes no
//! lock of the `backtrace` crate, so the workers of a runtime do not wait for each other's walks,
//! nor for a symbolization.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// The most return addresses an await stack keeps (innermost first).
pub const AWAIT_DEPTH: usize = 48;

/// The stack at the last clone of a poll's waker: return addresses, innermost first, from the
/// cloning function's caller up to the frame that called [`poll_noting_await`] (included, so a
/// future inlined into it still shows).
#[derive(Clone, Copy, Debug)]
pub struct AwaitStack {
    addrs: [u64; AWAIT_DEPTH],
    len: usize,
}

impl AwaitStack {
    const EMPTY: AwaitStack = AwaitStack {
        addrs: [0; AWAIT_DEPTH],
        len: 0,
    };

    /// The addresses, innermost first; empty when the waker was not cloned.
    pub fn addresses(&self) -> &[u64] {
        &self.addrs[..self.len]
    }
}

/// The wrapper's state, on [`poll_noting_await`]'s stack for the length of one poll.
struct Noting<'a> {
    real: &'a Waker,
    /// The address of this value: frames whose canonical frame address lies above it are the
    /// poll's callers, which the walk leaves out but for the first.
    bound: usize,
    /// A mutex, not a cell: a future may lend `cx.waker()` to another thread while it polls.
    stack: Mutex<AwaitStack>,
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_noting);

/// Polls `future` with a context whose waker (wrapping `waker`) notes the stack where it is
/// cloned; returns what the poll returned and the last stack noted. The stack's outermost
/// frame is this function's, never inlined into its caller, and the future's poll is never
/// inlined into it: the collector cuts the stack at this function, so a stack goes from the
/// leaf future up to the task's own future, which keeps a symbol of its own (named even in a
/// build without debug info).
#[inline(never)]
pub fn poll_noting_await<F: Future>(
    future: Pin<&mut F>,
    waker: &Waker,
) -> (Poll<F::Output>, AwaitStack) {
    let mut noting = Noting {
        real: waker,
        bound: 0,
        stack: Mutex::new(AwaitStack::EMPTY),
    };
    noting.bound = std::ptr::addr_of!(noting) as usize;
    let data = std::ptr::addr_of!(noting).cast::<()>();
    // SAFETY: the vtable's functions keep `RawWaker`'s contract for `data`, a `Noting` that
    // outlives the waker: the waker lives in this frame and is dropped (a no-op) before
    // `noting` is, and a `Context` lends it only by reference for the length of `poll`. Its
    // clones are the real waker's, owned by no part of `noting`. `Noting` is `Sync` (a shared
    // reference and a mutex), so a clone on another thread during the poll is sound too.
    let wrapper = ManuallyDrop::new(unsafe { Waker::from_raw(RawWaker::new(data, &VTABLE)) });
    let mut cx = Context::from_waker(&wrapper);
    // Called through a pointer the optimizer cannot see through, the future's poll is compiled
    // on its own rather than into this function, which the cut leaves out.
    let poll: fn(Pin<&mut F>, &mut Context<'_>) -> Poll<F::Output> = std::hint::black_box(F::poll);
    let out = poll(future, &mut cx);
    let stack = *noting.stack.lock().unwrap_or_else(|e| e.into_inner());
    (out, stack)
}

/// Notes the stack, then returns a clone of the real waker.
unsafe fn clone(data: *const ()) -> RawWaker {
    // SAFETY: `data` is the `Noting` of `poll_noting_await`, alive while its waker is.
    let noting = unsafe { &*data.cast::<Noting<'_>>() };
    // The first frame whose canonical frame address lies above this local is this function's.
    let here = 0u8;
    let low = std::ptr::addr_of!(here) as usize;
    if let Ok(mut stack) = noting.stack.try_lock() {
        let mut walk = AwaitStack::EMPTY;
        let mut own_frame = true;
        let note = |frame: &backtrace::Frame| {
            let cfa = frame.sp() as usize;
            if cfa <= low {
                // The unwinder's own frames.
                return true;
            }
            if std::mem::take(&mut own_frame) {
                return true;
            }
            walk.addrs[walk.len] = frame.ip() as u64;
            walk.len += 1;
            walk.len < AWAIT_DEPTH && cfa <= noting.bound
        };
        // SAFETY: `trace_unsynchronized` is `trace` without the `backtrace` crate's global
        // lock, which serializes its symbolization caches and Windows' dbghelp (not
        // thread-safe). This module is Unix-only, where the walk is the system unwinder's
        // `_Unwind_Backtrace` and touches no state of the crate, so a symbolization holding the
        // lock meanwhile is no concern. The unwinder guards its own tables (the frame
        // descriptions it finds through `dl_iterate_phdr`, under the loader's lock): panics on
        // any number of threads unwind through the same lookup with no lock of Rust's, so walks
        // on several threads at once are sound. The callback must not panic (a panic cannot
        // cross the C unwinder; the crate aborts): it only reads the frame and stores below
        // `AWAIT_DEPTH`, as it stops the walk when `walk.len` reaches it.
        unsafe { backtrace::trace_unsynchronized(note) };
        *stack = walk;
    }
    let real = ManuallyDrop::new(noting.real.clone());
    RawWaker::new(real.data(), real.vtable())
}

/// The wrapper is never owned by anyone but `poll_noting_await` (clones are the real waker's),
/// which never wakes it by value; were it done, it is a wake by reference.
unsafe fn wake(data: *const ()) {
    // SAFETY: as `wake_by_ref`'s.
    unsafe { wake_by_ref(data) }
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: `data` is the `Noting` of `poll_noting_await`, alive while its waker is.
    let noting = unsafe { &*data.cast::<Noting<'_>>() };
    noting.real.wake_by_ref();
}

/// Nothing to free: the wrapper's state lives on `poll_noting_await`'s stack.
unsafe fn drop_noting(_: *const ()) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[inline(never)]
    fn park_here(cx: &mut Context<'_>) -> Waker {
        std::hint::black_box(cx.waker().clone())
    }

    /// Clones its waker in `park_here` the first time, and is ready the second.
    struct Parks(bool);

    impl Future for Parks {
        type Output = ();
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if std::mem::replace(&mut self.0, true) {
                return Poll::Ready(());
            }
            park_here(cx).wake();
            Poll::Pending
        }
    }

    #[test]
    fn a_clone_notes_its_callers_and_gives_the_real_waker() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut fut = pin!(Parks(false));
        let (poll, stack) = poll_noting_await(fut.as_mut(), &waker);
        assert!(poll.is_pending());
        // The clone woke the real waker.
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
        let addrs = stack.addresses();
        assert!(!addrs.is_empty() && addrs.len() < AWAIT_DEPTH, "{addrs:x?}");
        let mut names = Vec::new();
        for &a in addrs {
            backtrace::resolve((a - 1) as *mut std::ffi::c_void, |s| {
                names.push(s.name().map(|n| format!("{n:#}")).unwrap_or_default())
            });
        }
        let park = names.iter().position(|n| n.ends_with("park_here"));
        let poll = names
            .iter()
            .position(|n| n.contains("Parks as core::future"));
        assert!(
            matches!((park, poll), (Some(a), Some(b)) if a < b),
            "{names:#?}"
        );
        assert!(
            !names.iter().any(|n| n.contains("backtrace::")),
            "{names:#?}"
        );
        assert!(
            !names.iter().any(|n| n.contains("waker::clone")),
            "{names:#?}"
        );

        let (poll, stack) = poll_noting_await(fut.as_mut(), &waker);
        assert!(poll.is_ready());
        assert!(stack.addresses().is_empty());
    }
}
