//! How the samples spread over the threads: each thread's sample count and weight, for thread
//! pickers and summaries.

use crate::session::{Session, ThreadIdx};
use serde::{Deserialize, Serialize};

/// The samples of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTotal {
    /// Which thread.
    pub thread: ThreadIdx,
    /// How many samples were taken on it.
    pub samples: u64,
    /// Their summed weight, in the unit of the session's mode.
    pub weight: u64,
}

/// Each thread of `session` with its samples, in the order of `session.threads` (threads without
/// samples included, with zeros). A sample naming a thread the session does not list is not
/// counted.
pub fn thread_totals(session: &Session) -> Vec<ThreadTotal> {
    let mut totals: Vec<ThreadTotal> = (0..session.threads.len())
        .map(|i| ThreadTotal {
            thread: ThreadIdx(i as u32),
            samples: 0,
            weight: 0,
        })
        .collect();
    let samples = &session.samples;
    for (i, (thread, &weight)) in samples.thread.iter().zip(&samples.weight).enumerate() {
        if let Some(total) = totals.get_mut(thread.index()) {
            total.samples = total.samples.saturating_add(samples.multiplicity(i));
            total.weight = total.weight.saturating_add(weight);
        }
    }
    totals
}

/// The threads of `totals` (as [`thread_totals`] gives them) heaviest first, threads of equal
/// weight in their order: a timeline of many threads, most of them idle, shows the busy ones
/// first.
pub fn busiest_first(totals: &[ThreadTotal]) -> Vec<ThreadIdx> {
    let mut order: Vec<&ThreadTotal> = totals.iter().collect();
    order.sort_by_key(|t| std::cmp::Reverse(t.weight));
    order.into_iter().map(|t| t.thread).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busiest_first_puts_idle_threads_last_and_keeps_the_order_of_equals() {
        let total = |i, weight| ThreadTotal {
            thread: ThreadIdx(i),
            samples: 1,
            weight,
        };
        let totals = [
            total(0, 1),
            total(1, 0),
            total(2, 9),
            total(3, 1),
            total(4, 5),
        ];
        assert_eq!(
            busiest_first(&totals),
            [2, 4, 0, 3, 1].map(ThreadIdx).to_vec()
        );
    }
    use crate::session::{FrameSpec, SessionBuilder};

    #[test]
    fn counts_and_weighs_each_threads_samples() {
        let mut b = SessionBuilder::default();
        let f = b.intern_frame(&FrameSpec::named("f"));
        let s = b.intern_stack_path(&[f]).unwrap();
        let main = b.thread(1, "main");
        let idle = b.thread(2, "idle");
        let worker = b.thread(3, "worker");
        b.push_sample(s, main, 0, 5);
        b.push_sample(s, worker, 1, 7);
        b.push_sample(s, main, 2, 5);
        let totals = thread_totals(&b.finish());
        let got: Vec<_> = totals
            .iter()
            .map(|t| (t.thread, t.samples, t.weight))
            .collect();
        assert_eq!(got, [(main, 2, 10), (idle, 0, 0), (worker, 1, 7)]);
    }
}
