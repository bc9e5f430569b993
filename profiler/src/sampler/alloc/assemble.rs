//! From sampled allocations to a [`Session`](crate::session::Session): symbolize the stacks (without the allocator's own
//! frames), scale each sample to an unbiased estimate and mark the blocks still live at stop.

use super::collector::Collected;
use crate::sampler::assemble::Threads;
use crate::session::Session;
use crate::session::{Metadata, SessionBuilder};
use crate::Options;
use prof_capture::assemble::{estimate, intern_stacks, is_allocator_frame, splitmix, Cut};
use std::collections::HashSet;

/// True for the frames of the allocation path, which every sample would otherwise end in: the
/// capture core's list ([`is_allocator_frame`]) and this sampler's own code.
fn is_sampling_frame(name: &str) -> bool {
    is_allocator_frame(name)
        || name
            .trim_start_matches('<')
            .starts_with("prof::sampler::alloc::")
}

/// Builds the report: per sample, `alloc_bytes`, `alloc_objects`, and `inuse_bytes`,
/// `inuse_objects` (the same estimate when its block was still listed at stop, else 0).
pub fn build(
    collected: Collected,
    live: &[u32],
    mut meta: Metadata,
    dropped: u64,
    mean: u64,
    options: &Options,
    scopes: Option<crate::scope::record::Recording>,
) -> Session {
    meta.dropped_samples = dropped + collected.dropped;
    let mut builder = SessionBuilder::new(meta);
    prof_capture::assemble::add_mappings(&mut builder, &collected.objects);
    let stack_ids = intern_stacks(
        &mut builder,
        &collected.stacks,
        &collected.objects,
        prof_capture::symbolize::AddressSpace::Own,
        Cut {
            leaf: &is_sampling_frame,
            ..Cut::depth(options.max_depth)
        },
    );
    let live: HashSet<u32> = live.iter().copied().collect();
    let mut threads = Threads::new(
        &mut builder,
        &collected.names,
        scopes.as_ref(),
        &collected.objects,
        options.max_depth,
    );
    for s in &collected.samples {
        let Some(stack) = stack_ids[s.stack as usize] else {
            continue;
        };
        let thread = threads.idx(&mut builder, s.tid);
        let (bytes, objects) = estimate(s.size, mean, splitmix(u64::from(s.id)));
        let (inuse_bytes, inuse_objects) = if live.contains(&s.id) {
            (bytes, objects)
        } else {
            (0, 0)
        };
        builder.push_sample_full(
            stack,
            thread,
            s.time_ns,
            &[bytes, objects, inuse_bytes, inuse_objects],
            1,
            None,
        );
        threads.set_context(&mut builder, s.tid, s.time_ns);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_samplers_own_frames_are_cut_with_the_allocation_path() {
        for name in [
            "prof::sampler::alloc::record",
            "<prof::sampler::alloc::Hooks as prof_capture::sys::alloc::AllocHooks>::allocated",
            "__rustc::__rust_alloc",
        ] {
            assert!(is_sampling_frame(name), "{name}");
        }
        assert!(!is_sampling_frame("prof::sampler::assemble::build"));
        assert!(!is_sampling_frame("alloc::vec::Vec<T,A>::push"));
    }
}
