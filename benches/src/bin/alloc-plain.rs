//! The alloc bench's workload with the system allocator as it is (the baseline); with `thread`,
//! an idle thread runs beside it.

fn main() {
    let mut args = std::env::args().skip(1);
    let passes = args.next().and_then(|p| p.parse().ok()).unwrap_or(40);
    let thread = args.next().as_deref() == Some("thread");
    prof_benches::alloc_workload::child(false, thread, passes);
}
