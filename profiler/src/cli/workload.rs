//! The built-in workload that `prof demo` profiles: two hot functions with clearly different
//! costs, on two threads, so the flame graph and the top-N table have something to say, and a
//! third thread that mostly waits (for the main thread's progress reports), which wall mode
//! shows and CPU mode hardly sees; and for alloc mode a fourth that parses records into small
//! strings and vectors, keeping some. Each batch of work is a scope (`prof::scope!`) and each
//! progress report a mark, so the session has exact call counts and a Scopes view too.

use std::hint::black_box;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What the workload computed, so the compiler cannot drop the work.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Primes found by trial division.
    pub primes: u64,
    /// Sum of Collatz sequence lengths.
    pub collatz_steps: u64,
    /// Progress reports the waiting thread received.
    pub reports: u64,
    /// Records parsed by the allocating thread.
    pub records: u64,
    /// The last records it parsed, still allocated when the workload returns (so an alloc
    /// session stopped then has blocks in use).
    pub kept: std::collections::VecDeque<Record>,
}

/// Runs the workload for about `duration` of wall time on the calling thread and two helper
/// threads (and with `allocating`, a thread that allocates), and returns what it computed.
pub fn run(duration: Duration, allocating: bool) -> Outcome {
    let helper = std::thread::Builder::new()
        .name("collatz".into())
        .spawn(move || collatz_for(duration))
        .expect("the demo can start a thread");
    let (progress, received) = mpsc::channel();
    let waiter = std::thread::Builder::new()
        .name("waiter".into())
        .spawn(move || wait_for_reports(&received))
        .expect("the demo can start a thread");
    let allocator = allocating.then(|| {
        std::thread::Builder::new()
            .name("records".into())
            .spawn(move || records_for(duration))
            .expect("the demo can start a thread")
    });
    let primes = primes_for(duration, &progress);
    drop(progress);
    let collatz_steps = helper.join().unwrap_or_default();
    let reports = waiter.join().unwrap_or_default();
    let (records, kept) = allocator.map_or_else(Default::default, |a| a.join().unwrap_or_default());
    Outcome {
        primes,
        collatz_steps,
        reports,
        records,
        kept,
    }
}

/// Waits for progress reports until the sender is gone, and counts them: the thread that
/// spends its time blocked in `recv`.
#[inline(never)]
fn wait_for_reports(received: &mpsc::Receiver<u64>) -> u64 {
    let mut reports = 0;
    while received.recv().is_ok() {
        reports += 1;
    }
    reports
}

/// One parsed record: small strings and a vector, as a parser of a text format makes them.
#[derive(Debug)]
pub struct Record {
    name: String,
    tags: Vec<String>,
    values: Vec<u64>,
}

/// Parses records until `duration` has passed, keeping the last 20,000; returns how many it
/// parsed and those it kept.
#[inline(never)]
fn records_for(duration: Duration) -> (u64, std::collections::VecDeque<Record>) {
    let start = Instant::now();
    let mut kept = std::collections::VecDeque::new();
    let mut n = 0u64;
    while start.elapsed() < duration {
        let _batch = prof::scope!("parse records", first = n);
        for _ in 0..200 {
            let line = format_line(n);
            let record = parse_record(&line);
            if kept.len() == 20_000 {
                kept.pop_front();
            }
            kept.push_back(record);
            n += 1;
        }
    }
    black_box(
        kept.iter()
            .map(|r| r.name.len() + r.tags.len() + r.values.len())
            .sum::<usize>(),
    );
    (n, kept)
}

/// A line of text to parse: `name;tag,tag,...;value value ...`.
#[inline(never)]
fn format_line(n: u64) -> String {
    let tags: Vec<String> = (0..1 + n % 5)
        .map(|t| format!("tag{}", (n + t) % 97))
        .collect();
    let values: Vec<String> = (0..4 + n % 24).map(|v| (n * 31 + v).to_string()).collect();
    format!("record{n};{};{}", tags.join(","), values.join(" "))
}

/// Parses a line made by [`format_line`]: one string, a vector of strings, a vector of numbers.
#[inline(never)]
fn parse_record(line: &str) -> Record {
    let mut parts = line.split(';');
    let name = parts.next().unwrap_or_default().to_owned();
    let tags = parts
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_owned)
        .collect();
    let values = parts
        .next()
        .unwrap_or_default()
        .split(' ')
        .filter_map(|v| v.parse().ok())
        .collect();
    Record { name, tags, values }
}

/// Counts primes in ever larger ranges until `duration` has passed. About three quarters of the
/// time goes to `is_prime` (trial division) and one quarter to `digit_sum` of each prime. Sends
/// the count so far to `progress` every 50 ms, and the final count when done (so the waiting
/// thread gets a report even when a busy machine let the loop run only once).
#[inline(never)]
fn primes_for(duration: Duration, progress: &mpsc::Sender<u64>) -> u64 {
    let start = Instant::now();
    let mut reported = start;
    let mut found = 0;
    let mut n = 2u64;
    while start.elapsed() < duration {
        if reported.elapsed() >= Duration::from_millis(50) {
            reported = Instant::now();
            prof::mark!("progress", found = found);
            let _ = progress.send(found);
        }
        let _batch = prof::scope!("primes batch");
        for _ in 0..2_000 {
            if is_prime(black_box(n)) {
                found += 1 + digit_sum(n) % 2;
            }
            n += 1;
        }
    }
    let _ = progress.send(found);
    found
}

/// Trial division: the hot function of the main thread.
#[inline(never)]
fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2;
    while d * d <= n {
        if n % d == 0 {
            return false;
        }
        d += 1;
    }
    true
}

/// Sums the decimal digits of `n` many times over: a second, cheaper hot function.
#[inline(never)]
fn digit_sum(n: u64) -> u64 {
    let mut total = 0;
    for round in 0..40 {
        let mut m = black_box(n + round);
        while m > 0 {
            total += m % 10;
            m /= 10;
        }
    }
    total
}

/// Sums Collatz sequence lengths until `duration` has passed: the helper thread's work.
#[inline(never)]
fn collatz_for(duration: Duration) -> u64 {
    let start = Instant::now();
    let mut total = 0;
    let mut n = 1u64;
    while start.elapsed() < duration {
        let _batch = prof::scope!("collatz batch");
        for _ in 0..2_000 {
            total += collatz_len(black_box(n));
            n += 1;
        }
    }
    total
}

/// The length of the Collatz sequence from `n`.
#[inline(never)]
fn collatz_len(mut n: u64) -> u64 {
    let mut steps = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_computes_real_results() {
        assert!(is_prime(97) && !is_prime(91) && !is_prime(1));
        assert_eq!(collatz_len(6), 8);
        assert_eq!(
            digit_sum(0),
            (0..40).map(|r: u64| r % 10 + r / 10).sum::<u64>()
        );
        let outcome = run(Duration::from_millis(120), true);
        assert!(outcome.primes > 0 && outcome.collatz_steps > 0 && outcome.records > 0);
        // At least the final report, however few 50 ms periods a loaded machine let pass.
        assert!(
            outcome.reports >= 1,
            "{} reports ({} primes, {} Collatz steps)",
            outcome.reports,
            outcome.primes,
            outcome.collatz_steps
        );
        let record = parse_record(&format_line(7));
        assert_eq!(record.name, "record7");
        assert_eq!(record.tags, ["tag7", "tag8", "tag9"]);
        assert_eq!(record.values.len(), 11);
        assert_eq!(record.values[0], 217);
    }
}
