//! The capture core of `prof`: what both the in-process sampler and `prof record` stand on, and
//! neither reaches past.
//!
//! - [`sys`]: the OS module, and the only place in `prof` with `unsafe` code (each block argued
//!   in a `// SAFETY:` comment): signals and their handlers' state, clocks and thread ids, stack
//!   reads that survive an unmapped page, perf events and their rings, per-thread timers, the
//!   loader's objects, the allocation wrapper's plumbing, the lock-free cells the signal handler
//!   shares with other threads, and the process plumbing of `prof record` (held children,
//!   interrupts, the allocation interposer's channel).
//! - [`perf`] (Linux): the perf-event ring's sample layout and its records.
//! - [`unwind`]: walking a stack (the interrupted thread's own, or a copy a perf ring carried)
//!   with DWARF CFI (framehop) or frame pointers, reusing the frames of the thread's previous
//!   stack where they provably did not change, writing frames to any [`unwind::Frames`] sink.
//! - [`objects`]: the loaded objects a collector watches, and the unwinder over them.
//! - [`calls`] (Linux): counting the calls of functions whose names match, with uprobes, and
//!   recording their entries and returns to time them.
//! - [`timed_calls`]: pairing those entries and returns into timed calls and spans.
//! - [`tasks`] (Linux): a process's threads, and opening an event on every one of them.
//! - [`probes`]: where to count a function's calls (uprobes): its offset in its file, and the
//!   libraries a program links.
//! - [`symbolize`]: addresses to functions, files, lines and inlined frames, after sampling.
//! - [`assemble`]: raw stacks (addresses) into a session's stacks, with the session's
//!   metadata, processes and mappings.
//!
//! It knows nothing of sessions' consumers (the aggregation core, the formats, the server) nor
//! of the samplers above it: every decision about when to sample is theirs.
#![deny(unsafe_code)]
// Output belongs to the caller: only the command line prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod assemble;
#[cfg(target_os = "linux")]
pub mod calls;
pub mod objects;
#[cfg(target_os = "linux")]
pub mod perf;
pub mod probes;
pub mod symbolize;
#[allow(unsafe_code)]
pub mod sys;
#[cfg(target_os = "linux")]
pub mod tasks;
pub mod timed_calls;
pub mod unwind;

use prof_session::session;
use prof_session::{Error, Result};
