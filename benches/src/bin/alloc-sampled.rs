//! The alloc bench's workload with the system allocator under `prof::alloc::Sampling`: with no
//! session (`idle`), with no session and an idle thread beside it (`thread`), or in an
//! allocation session at the default interval (`session`); or `PASSES chunks ROUNDS`, the
//! in-process comparison of [`prof_benches::alloc_workload::chunks`].

#[global_allocator]
static ALLOC: prof::alloc::Sampling<std::alloc::System> =
    prof::alloc::Sampling::new(std::alloc::System);

fn main() {
    let mut args = std::env::args().skip(1);
    let passes = args.next().and_then(|p| p.parse().ok()).unwrap_or(40);
    let config = args.next();
    if config.as_deref() == Some("chunks") {
        let rounds = args.next().and_then(|r| r.parse().ok()).unwrap_or(20);
        prof_benches::alloc_workload::chunks(rounds, passes);
        return;
    }
    let session = config.as_deref() == Some("session");
    let thread = config.as_deref() == Some("thread");
    prof_benches::alloc_workload::child(session, thread, passes);
}
