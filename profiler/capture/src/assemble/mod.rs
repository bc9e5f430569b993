//! From raw stacks to a session: the stacks interned with their symbols ([`intern_stacks`]),
//! the metadata a session of this process starts with ([`at_start`]), processes read from
//! `/proc` ([`process_from_proc`]) and the loaded objects as the session's mappings
//! ([`add_mappings`]), and what an allocation sample stands for ([`estimate`],
//! [`is_allocator_frame`]). The in-process samplers and `prof record` each add their own threads and
//! samples around these.

mod heap;
mod mappings;
mod meta;
mod stack_index;
mod stacks;

pub use heap::{estimate, is_allocator_frame, splitmix};
pub use mappings::add_mappings;
pub use meta::{at_start, own_process, process_from_proc, start_time_ns};
pub use stack_index::StackIndex;
pub use stacks::{intern_stacks, Cut, THREAD_FROM};
