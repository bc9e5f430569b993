//! Allocation profiling: who allocates, how much, and what is still allocated at the end.
//!
//! Install [`Sampling`] as the program's global allocator around the allocator it uses, then
//! profile in [`Mode::Alloc`](crate::Mode::Alloc):
//!
//! ```no_run
//! #[global_allocator]
//! static ALLOC: prof::alloc::Sampling<std::alloc::System> =
//!     prof::alloc::Sampling::new(std::alloc::System);
//!
//! # fn work() {}
//! # fn main() -> prof::Result<()> {
//! let options = prof::Options::default()
//!     .mode(prof::Mode::Alloc)
//!     .alloc_interval_bytes(512 * 1024);
//! let report = prof::profile(options, || work())?;
//! println!("{report}"); // where the bytes were allocated
//! # Ok(())
//! # }
//! ```
//!
//! Allocations are sampled by bytes with a Poisson process: each thread draws an exponentially
//! distributed distance with mean [`Options::alloc_interval_bytes`](crate::Options) (512 KiB by
//! default, as Go's and tcmalloc's heap profilers), and the allocation within which that many
//! bytes have passed is sampled. A block of `s` bytes is thus sampled with probability
//! `p = 1 - exp(-s/m)`, and each sample counts `s/p` bytes and `1/p` objects, an unbiased
//! estimate. A sampled allocation records its stack (unwound in the allocation call itself,
//! without allocating) and is listed until it is freed, so the report carries four sample types
//! per stack: `alloc_bytes`, `alloc_objects`, `inuse_bytes` and `inuse_objects` (in use: still
//! allocated when the session stopped). A `realloc` counts as a free and an allocation.
//!
//! Without an allocation session the wrapper costs one thread-local subtraction and one branch
//! per allocation, and one load and branch per free. Allocations made before the session
//! started are not counted, nor are their frees.

#[doc(inline)]
pub use prof_capture::sys::keep_large_blocks_mapped;

/// A global allocator that samples the allocations of `A` while an allocation session runs
/// ([`Mode::Alloc`](crate::Mode::Alloc)), and otherwise costs one thread-local subtraction and
/// one branch per allocation (and one load and branch per free): `Sampling::new(inner)` wraps
/// the allocator the program uses (see the module's docs). Its `unsafe` part lives in the
/// capture core's OS module; the sampling is `prof`'s allocation sampler.
pub type Sampling<A> = prof_capture::sys::Sampling<A, crate::sampler::alloc::Hooks>;

/// Bytes the in-use table of an allocation session takes: it is allocated whole at start (a
/// fixed number of slots), whatever the workload, and freed at stop.
pub fn in_use_table_bytes() -> usize {
    crate::sampler::alloc::in_use_table_bytes()
}
