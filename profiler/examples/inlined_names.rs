//! Checks that inlined functions keep names that tell them apart: profiles two closures, one
//! in `demo::run` and one in `workload::run`, both `{closure#0}` by their short name and both
//! inlined into the standard library's iterator code, then prints how much of the time each
//! one's own name covers. Build it like your program (`cargo run --release --example
//! inlined_names`): what a release build's debug info holds decides the names (see docs/sampler.md, Names).
//!
//! Prints `demo closure: P% (NAME)`, `workload closure: P% (NAME)`, then the top rows.

use std::time::Duration;

mod demo {
    /// Sums a mix of `0..n` through a closure the iterator code inlines.
    #[inline(never)]
    pub fn run(cpu: std::time::Duration) -> u64 {
        let start = prof::sampler::thread_cpu_time();
        let mut acc = 0u64;
        while prof::sampler::thread_cpu_time() - start < cpu {
            let n = std::hint::black_box(20_000u64);
            acc ^= (0..n).map(|x| x.wrapping_mul(31) ^ (x >> 3)).sum::<u64>();
        }
        acc
    }
}

mod workload {
    /// Folds `0..n` through a different closure with the same short name.
    #[inline(never)]
    pub fn run(cpu: std::time::Duration) -> u64 {
        let start = prof::sampler::thread_cpu_time();
        let mut acc = 0u64;
        while prof::sampler::thread_cpu_time() - start < cpu {
            let n = std::hint::black_box(20_000u64);
            acc ^= (0..n).map(|x| x.rotate_left(7) ^ (x >> 5)).sum::<u64>();
        }
        acc
    }
}

fn main() {
    let work = || demo::run(Duration::from_millis(400)) ^ workload::run(Duration::from_millis(400));
    let report = match prof::profile(prof::Options::default(), work) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("inlined_names: {e}");
            std::process::exit(1);
        }
    };
    let s = report.session();
    let me = prof::sampler::current_tid();
    let mine: Vec<usize> = (0..s.samples.len())
        .filter(|&i| s.threads[s.samples.thread[i].index()].tid == me)
        .collect();
    let total: u64 = mine.iter().map(|&i| s.samples.weight[i]).sum();
    for module in ["demo", "workload"] {
        // The samples with a frame named as the closure of `<module>::run` (its name before
        // any generic arguments: `…::demo::run::{closure#0}`, or `{{closure}}` as legacy
        // symbol mangling spells it).
        let path = format!("::{module}::run::{{");
        let mut weight = 0u64;
        let mut names = std::collections::BTreeSet::new();
        for &i in &mine {
            let frames: Vec<&str> = s
                .stack_frames(s.samples.stack[i])
                .map(|f| s.frame_name(f))
                .collect();
            let closure = frames.iter().find(|n| {
                let head = n.split('<').next().unwrap_or("");
                head.contains(&format!("{path}closure#"))
                    || head.contains(&format!("{path}{{closure"))
            });
            if let Some(name) = closure {
                weight += s.samples.weight[i];
                names.insert(name.to_string());
            }
        }
        let names: Vec<String> = names.into_iter().collect();
        println!(
            "{module} closure: {:.0}% ({})",
            100.0 * weight as f64 / total.max(1) as f64,
            names.join(", ")
        );
    }
    println!("{report}");
}
