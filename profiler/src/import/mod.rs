//! Readers that turn other tools' profiles (folded stacks, `perf script`, pprof) into sessions.
