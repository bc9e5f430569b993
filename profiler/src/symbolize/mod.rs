//! Turning sampled addresses into functions, files, lines and inlined frames, after stop.
