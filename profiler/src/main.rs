//! The `prof` command: parses arguments and calls the library.
#![deny(unsafe_code)]

mod cli;

/// Every allocation goes through prof's sampling wrapper, so `prof demo --mode alloc` can profile
/// the demo workload's allocations; without an allocation session it costs a thread-local
/// subtraction and a branch per allocation.
#[global_allocator]
static ALLOC: prof::alloc::Sampling<std::alloc::System> =
    prof::alloc::Sampling::new(std::alloc::System);

fn main() -> std::process::ExitCode {
    cli::run()
}
