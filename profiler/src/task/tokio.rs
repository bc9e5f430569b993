//! Every tokio task's polls, from tokio's own task hooks (`on_before_task_poll` and
//! `on_after_task_poll`), which tokio offers only when built with `--cfg tokio_unstable`
//! (tokio 1.54): `RUSTFLAGS="--cfg tokio_unstable" cargo build --features prof/tokio`. Each
//! task is named where it was spawned (`file:line`, tokio's `TaskMeta::spawned_at`); its id is
//! tokio's task id with the top bit set (so it never equals an [`instrument`](super::instrument)
//! id). Futures wrapped with `instrument` inside a task are polled inside the task's poll: a
//! sample belongs to the innermost.
#![allow(unexpected_cfgs)]

#[cfg(not(tokio_unstable))]
compile_error!(
    "prof's `tokio` feature needs tokio's task hooks: build with RUSTFLAGS=\"--cfg tokio_unstable\""
);

#[cfg(tokio_unstable)]
pub use hooks::hooks;

#[cfg(tokio_unstable)]
mod hooks {
    use std::cell::Cell;
    use std::fmt::Write as _;

    /// Set in the ids of tokio's tasks.
    const TOKIO_BIT: u64 = 1 << 63;
    /// Tasks whose names a thread remembers having recorded (a direct-mapped cache).
    const NAMED: usize = 64;

    std::thread_local! {
        /// The session of [`NAMED_IDS`]; ids of another session are stale.
        static NAMED_SESSION: Cell<u64> = const { Cell::new(0) };
        /// Task ids whose names this thread recorded in [`NAMED_SESSION`], by id modulo size.
        static NAMED_IDS: [Cell<u64>; NAMED] = const { [const { Cell::new(0) }; NAMED] };
    }

    /// A tokio task id as a number. tokio has no public conversion; the id hashes as the
    /// number it holds, so a hasher that keeps what it is given reads it without the
    /// formatting and parsing its `Display` would cost on every poll.
    fn id_of(id: tokio::task::Id) -> u64 {
        use std::hash::{Hash, Hasher};
        /// Keeps the `u64` it is given (any other input is folded in).
        struct Keep(u64);
        impl Hasher for Keep {
            fn finish(&self) -> u64 {
                self.0
            }
            fn write_u64(&mut self, n: u64) {
                self.0 = n;
            }
            fn write(&mut self, bytes: &[u8]) {
                for &b in bytes {
                    self.0 = self.0.rotate_left(8) ^ u64::from(b);
                }
            }
        }
        let mut keep = Keep(0);
        id.hash(&mut keep);
        keep.finish() | TOKIO_BIT
    }

    /// Whether this thread recorded task `id`'s name in the current session (and remembers
    /// it did from now on).
    fn named(id: u64) -> bool {
        let session = crate::scope::session();
        let fresh = NAMED_SESSION.with(|s| s.replace(session) != session);
        NAMED_IDS.with(|ids| {
            if fresh {
                ids.iter().for_each(|c| c.set(0));
            }
            ids[(id as usize) % NAMED].replace(id) == id
        })
    }

    /// Adds prof's poll hooks to a tokio runtime `builder`:
    ///
    /// ```ignore
    /// let mut builder = tokio::runtime::Builder::new_multi_thread();
    /// prof::task::tokio::hooks(&mut builder);
    /// let runtime = builder.enable_all().build()?;
    /// ```
    ///
    /// They replace hooks set on the builder before (tokio keeps one of each).
    pub fn hooks(builder: &mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder {
        builder
            .on_before_task_poll(|meta| {
                if !crate::scope::enabled() {
                    return;
                }
                let id = id_of(meta.id());
                let mut name = crate::scope::Text::<{ crate::scope::MAX_TASK_NAME }>::default();
                if !named(id) {
                    let at = meta.spawned_at();
                    // The file's end, where its name is, with room for the line.
                    let file = at.file();
                    let mut from = file.len().saturating_sub(crate::scope::MAX_TASK_NAME - 12);
                    while !file.is_char_boundary(from) {
                        from += 1;
                    }
                    let _ = write!(name, "{}:{}", &file[from..], at.line());
                }
                crate::scope::poll_begin_named(id, name.as_str());
            })
            .on_after_task_poll(|meta| {
                if crate::scope::enabled() {
                    crate::scope::poll_end(id_of(meta.id()));
                }
            })
    }
}
