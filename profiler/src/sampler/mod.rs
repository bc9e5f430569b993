//! Sampling the call stacks of the running process (Linux first; other Unix via `setitimer`).
