//! What an allocation sample stands for, for both allocation samplers (the in-process one's
//! global allocator and `prof record`'s interposer): the estimate of a block sampled by a
//! Poisson process over bytes, and the frames of the allocation path cut from its stack.

/// The estimate one sample of a `size`-byte block stands for when blocks are sampled by a
/// Poisson process over bytes with mean `mean`: it was sampled with probability
/// `p = 1 - exp(-size/mean)`, so it counts `1/p` blocks and `size/p` bytes (the estimator of
/// Go's and tcmalloc's heap profiles). Returns (bytes, objects) as whole numbers, rounded at
/// random, up with the probability of the fraction (`draw` is a uniform random word), so that
/// the rounding adds no bias: rounding to the nearest made a block of 1.05 means count 2
/// objects for 1.54 (+30%), one of 1.2 means 1 for 1.43 (-30%).
pub fn estimate(size: u64, mean: u64, draw: u64) -> (u64, u64) {
    let p = -(-(size as f64) / mean.max(1) as f64).exp_m1();
    if p <= 0.0 {
        // A zero-sized block: it never moves the countdown, so it is never sampled.
        return (0, 0);
    }
    let uniform = (draw >> 11) as f64 / (1u64 << 53) as f64;
    let round = |x: f64| {
        let whole = x.floor();
        whole as u64 + u64::from(uniform < x - whole)
    };
    (round(size as f64 / p), round(1.0 / p).max(1))
}

/// True for the frames of the allocation path itself, which end every allocation sample and
/// are cut from its leaf end (see [`Cut::leaf`](super::Cut::leaf)), given the frame's function
/// `name` and source `file`: prof's wrapper, the allocator shims the compiler generates
/// (`__rust_alloc`, `__rust_realloc` and their `_zeroed` forms, `__rg_*`, `__rdl_*`) and the
/// wrapper's source file (its inlined frames' short names), the `alloc`
/// crate (`alloc::raw_vec`, `alloc::vec::Vec::push`, `<alloc::string::String as Clone>::clone`),
/// `core::alloc`, and any frame whose source is the Rust standard library's (`library/alloc`,
/// `library/core`, `library/std`: how the unqualified names of inlined frames in
/// `debug = "line-tables-only"` builds, `with_capacity<u8> (mod.rs)`, are known). What is left
/// ends in the first frame that is the program's own (or another crate's).
pub fn is_allocator_frame(name: &str, file: Option<&str>) -> bool {
    const PREFIXES: [&str; 10] = [
        "prof_capture::sys::global_alloc::",
        "__rust_alloc",
        "__rust_realloc",
        "__rg_alloc",
        "__rg_realloc",
        "__rdl_alloc",
        "__rdl_realloc",
        "alloc::",
        "core::alloc::",
        "std::alloc::",
    ];
    /// The standard library's sources, as its DWARF names them (`/rustc/HASH/library/…`, or
    /// the `rust-src` component's `…/lib/rustlib/src/rust/library/…`).
    const STD_SOURCES: [&str; 3] = [
        "/library/alloc/src/",
        "/library/core/src/",
        "/library/std/src/",
    ];
    let name = name.trim_start_matches('<');
    let name = name.strip_prefix("__rustc::").unwrap_or(name);
    PREFIXES.iter().any(|p| name.starts_with(p))
        || file.is_some_and(|f| {
            STD_SOURCES.iter().any(|s| f.contains(s))
                || f.ends_with(crate::sys::GLOBAL_ALLOC_SOURCE)
        })
}

/// SplitMix64's output function: a well-mixed word from any seed (the random draws of the
/// samplers and of [`estimate`]'s rounding).
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_blocks_stand_for_about_the_mean_and_large_ones_for_themselves() {
        let mean = 512 * 1024;
        let (bytes, objects) = estimate(64, mean, 0);
        // p = 1 - exp(-64/524288) ~ 64/524288: about mean + size/2 bytes, mean/size objects.
        assert!((bytes as i64 - (mean + 32) as i64).abs() <= 1, "{bytes}");
        assert!((8192..=8193).contains(&objects), "{objects}");
        let (bytes, objects) = estimate(64 << 20, mean, u64::MAX);
        assert_eq!((bytes, objects), (64 << 20, 1));
        assert_eq!(estimate(0, mean, 0), (0, 0));
    }

    #[test]
    fn object_estimates_are_unbiased_for_every_block_size() {
        // Rounding 1/p to the nearest whole biased alloc_objects by up to +-30% for
        // blocks near the interval. Over many samples, the whole-number estimates must
        // average to 1/p (and size/p) for blocks from 1/1000 to 10 times the interval.
        let mean = 64 * 1024u64;
        for ratio in [0.001, 0.5, 0.9, 1.05, 1.2, 2.0, 3.0, 10.0] {
            let size = (mean as f64 * ratio) as u64;
            let p = -(-(size as f64) / mean as f64).exp_m1();
            let n = 20_000u64;
            let (mut bytes, mut objects) = (0u64, 0u64);
            for i in 0..n {
                let (b, o) = estimate(size, mean, splitmix(i));
                bytes += b;
                objects += o;
            }
            let objects_error = objects as f64 / (n as f64 / p) - 1.0;
            let bytes_error = bytes as f64 / (n as f64 * size as f64 / p) - 1.0;
            assert!(
                objects_error.abs() < 0.01,
                "{ratio}x: objects off by {objects_error}"
            );
            assert!(
                bytes_error.abs() < 0.001,
                "{ratio}x: bytes off by {bytes_error}"
            );
        }
    }

    #[test]
    fn the_allocation_path_is_trimmed_and_the_callers_kept() {
        let std_file =
            "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/raw_vec/mod.rs";
        for (name, file) in [
            ("<prof_capture::sys::global_alloc::Sampling<A,H> as core::alloc::global::GlobalAlloc>::alloc", None),
            ("prof_capture::sys::global_alloc::allocated", None),
            ("__rustc::__rust_alloc", None),
            ("__rustc::__rust_alloc_zeroed", None),
            ("__rust_realloc", None),
            ("alloc::alloc::exchange_malloc", None),
            ("alloc::raw_vec::RawVecInner<A>::finish_grow", None),
            ("<alloc::raw_vec::RawVec<T,A>>::grow_one", None),
            // The collections above the allocator: the program's frame that called them is
            // where the bytes go.
            ("alloc::vec::Vec<T,A>::push", None),
            ("<alloc::string::String as core::clone::Clone>::clone", None),
            // Inlined frames of a line-tables-only build: short names, the library's files.
            ("try_allocate_in<alloc::alloc::Global>", Some(std_file)),
            ("with_capacity<u8>", Some("/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/vec/mod.rs")),
            // The wrapper's own inlined frames, by its file's path.
            ("current_regs", Some(&*format!("/build/{}", crate::sys::GLOBAL_ALLOC_SOURCE))),
        ] {
            assert!(is_allocator_frame(name, file), "{name}");
        }
        for (name, file) in [
            (
                "prof::cli::workload::allocate",
                Some("/src/prof/profiler/src/cli/workload.rs"),
            ),
            ("main", None),
            ("small_blocks", Some("src/bin/alloc_split.rs")),
            // A C++ function whose demangled name starts with its return type.
            (
                "std::vector<double, std::allocator<double> > make<double>(unsigned long)",
                None,
            ),
            ("operator new(unsigned long)", None),
            // The catch_unwind intrinsic under every spawned thread (regression: it once cut
            // those threads' stacks down to their root).
            ("__rust_try", None),
            ("__rustc::__rust_start_panic", None),
        ] {
            assert!(!is_allocator_frame(name, file), "{name}");
        }
    }
}
