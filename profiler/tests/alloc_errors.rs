//! Allocation mode refuses to start, with one clear error, where it cannot measure anything.
//! This test binary keeps the default global allocator.

#[test]
fn alloc_mode_without_the_wrapper_is_refused_with_a_clear_error() {
    let options = prof::Options::default().mode(prof::Mode::Alloc);
    let err = prof::Profiler::start(options).err().expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("prof::alloc::Sampling") && text.contains("global_allocator"),
        "{text}"
    );
}

#[test]
fn a_zero_alloc_interval_is_refused() {
    let options = prof::Options::default()
        .mode(prof::Mode::Alloc)
        .alloc_interval_bytes(0);
    let err = prof::Profiler::start(options).err().expect("refused");
    assert!(err.to_string().contains("alloc_interval_bytes"), "{err}");
}
