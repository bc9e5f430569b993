//! The allocation session's collector thread: drains the ring of sampled allocations into
//! interned stacks, and keeps the unwinder's modules up to date as libraries are loaded.

use super::Shared;
use prof_capture::assemble::StackIndex;
use prof_capture::symbolize::LoadedObject;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest the collector sleeps between drains.
const MAX_SLEEP: Duration = Duration::from_millis(10);
/// How often the loaded objects are looked at.
const MODULES_EVERY: Duration = Duration::from_millis(20);

/// One sampled allocation.
#[derive(Clone, Copy, Debug)]
pub struct AllocSample {
    /// Index into [`Collected::stacks`].
    pub stack: u32,
    /// The sample's id (its in-use table listing carries it).
    pub id: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// Nanoseconds since the session started.
    pub time_ns: u64,
    /// The block's size in bytes.
    pub size: u64,
}

/// What the collector hands back at stop.
#[derive(Default)]
pub struct Collected {
    /// Distinct stacks, addresses leaf first.
    pub stacks: Vec<Box<[u64]>>,
    /// Samples in arrival order.
    pub samples: Vec<AllocSample>,
    /// Thread names by id, as recorded by their samples.
    pub names: HashMap<u32, String>,
    /// Samples over `max_samples`, dropped.
    pub dropped: u64,
    /// Every object loaded at some point of the session, for symbolization.
    pub objects: Vec<LoadedObject>,
}

/// The collector's state.
pub struct Collector {
    shared: Arc<Shared>,
    max_samples: usize,
    out: Collected,
    index: StackIndex,
    objects: prof_capture::objects::ObjectWatch,
}

impl Collector {
    /// A collector for a session.
    pub(super) fn new(shared: Arc<Shared>, max_samples: usize) -> Collector {
        Collector {
            shared,
            max_samples,
            out: Collected::default(),
            index: StackIndex::default(),
            objects: prof_capture::objects::ObjectWatch::new(),
        }
    }

    /// Reads the loaded objects and installs a new unwinder when they changed.
    pub fn refresh_modules(&mut self) {
        self.objects.refresh(
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            &self.shared.dwarf,
            &mut self.out.objects,
        );
    }

    /// Moves the records waiting in the ring into the profile; returns how many words of the
    /// ring they took.
    fn drain(&mut self) -> usize {
        let shared = Arc::clone(&self.shared);
        let mut drained = 0;
        let mut scratch = Vec::new();
        loop {
            let taken = shared.ring.pop(|raw, words| {
                let id = words.next().unwrap_or(0) as u32;
                let mut name = [0u8; 16];
                for chunk in name.chunks_mut(8) {
                    chunk.copy_from_slice(&words.next().unwrap_or(0).to_le_bytes());
                }
                if self.out.samples.len() >= self.max_samples {
                    self.out.dropped += 1;
                    return;
                }
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                self.out
                    .names
                    .entry(raw.tid)
                    .or_insert_with(|| String::from_utf8_lossy(&name[..end]).into_owned());
                scratch.clear();
                scratch.extend(words);
                let stack = self.index.intern(&mut self.out.stacks, &scratch);
                self.out.samples.push(AllocSample {
                    stack,
                    id,
                    tid: raw.tid,
                    time_ns: raw.time_ns,
                    size: raw.weight,
                });
            });
            if taken == 0 {
                break;
            }
            drained += taken;
        }
        drained
    }

    /// Drains until `stop` is set, then once more (the session's writers have finished by
    /// then), and hands back what was collected.
    pub fn run(mut self, stop: &AtomicBool) -> Collected {
        let collector = std::thread::current();
        crate::scope::wake_on_fill(Some(Box::new(move || collector.unpark())));
        let mut last_modules = Instant::now();
        let mut last_drain = Instant::now();
        while !stop.load(Ordering::Acquire) {
            let drained = self.drain();
            let scope_fullest = crate::scope::drain();
            let since_drain = last_drain.elapsed();
            last_drain = Instant::now();
            if last_modules.elapsed() >= MODULES_EVERY {
                last_modules = Instant::now();
                self.refresh_modules();
            }
            // Fast enough to keep the ring under a quarter full at the rate just seen.
            let sleep = if drained > self.shared.ring.capacity() / 16 {
                Duration::from_millis(1)
            } else {
                MAX_SLEEP
            };
            // A busy scope buffer shortens the sleep as a busy ring does.
            let scope_sleep = crate::sampler::collector::next_sleep(
                scope_fullest,
                since_drain,
                crate::scope::BUFFER_WORDS,
                MAX_SLEEP,
            );
            std::thread::park_timeout(sleep.min(scope_sleep));
        }
        crate::scope::wake_on_fill(None);
        self.drain();
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        self.shared.dwarf.replace(None);
        self.out
    }
}
