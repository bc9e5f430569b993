//! A service for `tests/tests/debug_pprof.rs`: serves `prof::debug::serve("127.0.0.1:0")`,
//! prints `listening ADDR`, and works until killed. Its main thread spends its CPU time 3 to 1
//! in `hot_three` and `hot_one` (the same hashing, three units against one), keeps the last
//! [`KEPT`] blocks that `retain_blocks` allocates (what is in use) and frees at once the blocks
//! `churn_blocks` allocates (allocated, never in use for long).
//!
//! On standard input, `start` runs a session of the program's own (`started` once it runs) and
//! `stop` ends it (`stopped N` with its sample count), to check that a request meanwhile neither
//! breaks it nor is served; `drop` drops the server (`dropped` once the drop has returned).

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::mpsc;

#[global_allocator]
static ALLOC: prof::alloc::Sampling<std::alloc::System> =
    prof::alloc::Sampling::new(std::alloc::System);

/// Hashing rounds in one unit of work.
const UNIT: u64 = 20_000;
/// Bytes of one block.
const BLOCK: usize = 64 << 10;
/// Blocks `retain_blocks` keeps alive.
const KEPT: usize = 256;

#[inline(never)]
fn hash(rounds: u64) -> u64 {
    (0..rounds).fold(0xcbf2_9ce4_8422_2325_u64, |h, i| {
        (h ^ std::hint::black_box(i)).wrapping_mul(0x100_0000_01b3)
    })
}

#[inline(never)]
fn hot_three() -> u64 {
    hash(3 * UNIT)
}

#[inline(never)]
fn hot_one() -> u64 {
    hash(UNIT)
}

#[inline(never)]
fn retain_blocks(kept: &mut VecDeque<Vec<u8>>) {
    if kept.len() == KEPT {
        kept.pop_front();
    }
    kept.push_back(std::hint::black_box(Vec::with_capacity(BLOCK)));
}

#[inline(never)]
fn churn_blocks() {
    drop(std::hint::black_box(Vec::<u8>::with_capacity(BLOCK)));
}

fn main() {
    let mut server = match prof::debug::serve("127.0.0.1:0") {
        Ok(server) => Some(server),
        Err(e) => {
            eprintln!("debug_pprof_target: {e}");
            std::process::exit(1);
        }
    };
    if let Some(server) = &server {
        println!("listening {}", server.local_addr());
    }
    let _ = std::io::stdout().flush();
    let (commands, inbox) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            let _ = commands.send(line);
        }
    });
    let mut own = None;
    let mut kept = VecDeque::with_capacity(KEPT);
    let mut x = 0;
    loop {
        x ^= hot_three() ^ hot_one();
        retain_blocks(&mut kept);
        churn_blocks();
        std::hint::black_box(x);
        match inbox.try_recv().as_deref() {
            Ok("start") => match prof::Profiler::start(prof::Options::default()) {
                Ok(profiler) => {
                    own = Some(profiler);
                    println!("started");
                }
                Err(e) => println!("refused {e}"),
            },
            Ok("drop") => {
                drop(server.take());
                println!("dropped");
            }
            Ok("stop") => match own.take().map(prof::Profiler::stop) {
                Some(Ok(report)) => println!("stopped {}", report.total_samples()),
                Some(Err(e)) => println!("failed {e}"),
                None => println!("not running"),
            },
            _ => {}
        }
        let _ = std::io::stdout().flush();
    }
}
