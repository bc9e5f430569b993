//! A service for `tests/tests/debug_pprof.rs` with the system allocator (not
//! `prof::alloc::Sampling`): serves `prof::debug::serve("127.0.0.1:0")`, prints `listening ADDR`
//! and waits until killed.

use std::io::Write;

fn main() {
    let server = match prof::debug::serve("127.0.0.1:0") {
        Ok(server) => server,
        Err(e) => {
            eprintln!("debug_pprof_plain: {e}");
            std::process::exit(1);
        }
    };
    println!("listening {}", server.local_addr());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
