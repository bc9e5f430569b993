//! Async tasks on the session's timeline: which task each sample belongs to, and when each
//! task was polled.
//!
//! [`instrument`] wraps any future (any executor): while a session runs, each `poll` of the
//! wrapper records its start and end in the polling thread's scope buffer (see
//! [`mod@crate::scope`]), and the task's name once per session. At stop the polls become the
//! session's task table, and every sample taken on a thread during a poll gets that poll's
//! task (the innermost one, for instrumented futures nested in each other). In wall mode each
//! poll that returns `Pending` also records where its task waits: the stack at which the inner
//! future cloned the poll's waker, from the leaf future up to this poll (see
//! [`Poll::waited_at`](crate::session::Poll::waited_at)). While no session runs a poll costs
//! one relaxed atomic load more than the inner future's.

#[cfg(feature = "tokio")]
pub mod tokio;

use prof_capture::sys;
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// Task ids given so far.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pin_project_lite::pin_project! {
    /// A future whose polls are recorded as task `name`'s: made by [`instrument`].
    #[must_use = "futures do nothing unless polled"]
    pub struct Instrumented<F> {
        #[pin]
        inner: F,
        id: u64,
        name: Cow<'static, str>,
        // The session in which the name was last recorded.
        announced: u64,
    }
}

/// Wraps `future` so that its polls count as the task `name`'s (a `&'static str` or a
/// `String`; names longer than [`MAX_TASK_NAME`](crate::scope::MAX_TASK_NAME) bytes are cut).
/// Works with any executor; each call is a new task with its own id, tasks may share a name.
///
/// ```no_run
/// # async fn fetch(_: u32) {}
/// let user = 7;
/// let fut = prof::task::instrument(format!("fetch-user-{user}"), fetch(user));
/// # drop(fut);
/// ```
pub fn instrument<F: Future>(name: impl Into<Cow<'static, str>>, future: F) -> Instrumented<F> {
    Instrumented {
        inner: future,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        name: name.into(),
        announced: 0,
    }
}

impl<F> Instrumented<F> {
    /// The task's id (unique in the process).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The task's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !crate::scope::enabled() {
            return this.inner.poll(cx);
        }
        crate::scope::poll_begin(*this.id, this.name, this.announced);
        // Ends the poll even when the inner future panics.
        let end = PollEnd(*this.id);
        if !crate::scope::awaits() {
            return this.inner.poll(cx);
        }
        // Wall mode: where the task waits until its next poll is time it spent.
        let (out, waited_at) = sys::poll_noting_await(this.inner, cx.waker());
        let id = end.0;
        if end.end() && out.is_pending() && !waited_at.addresses().is_empty() {
            crate::scope::await_point(id, waited_at.addresses());
        }
        out
    }
}

/// Records the end of a poll when dropped.
struct PollEnd(u64);

impl PollEnd {
    /// Records the end now; says whether it was recorded.
    fn end(self) -> bool {
        let this = std::mem::ManuallyDrop::new(self);
        crate::scope::poll_end(this.0)
    }
}

impl Drop for PollEnd {
    fn drop(&mut self) {
        crate::scope::poll_end(self.0);
    }
}
