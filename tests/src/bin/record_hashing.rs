//! A program for `tests/tests/convert.rs` that records a profile of its own hot function,
//! `hash_rounds`, and saves it to the path it is given. It is linked as a fixed-address (non-PIE)
//! executable (see `build.rs`), because Go's bundled `go tool pprof` disassembles only those: it
//! compares sampled addresses with the file's symbol addresses without relocating either.

use std::time::{Duration, Instant};

#[inline(never)]
fn hash_rounds(rounds: u64) -> u64 {
    (0..rounds).fold(0xcbf2_9ce4_8422_2325_u64, |h, i| {
        (h ^ std::hint::black_box(i)).wrapping_mul(0x100_0000_01b3)
    })
}

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: record_hashing OUT.json");
        std::process::exit(2);
    };
    let recorded = prof::profile(prof::Options::default(), || {
        let start = Instant::now();
        let mut x = 0;
        while start.elapsed() < Duration::from_millis(400) {
            x ^= hash_rounds(100_000);
        }
        x
    })
    .and_then(|report| report.save(&out));
    if let Err(e) = recorded {
        eprintln!("record_hashing: {e}");
        std::process::exit(1);
    }
}
