//! Building sessions from function names alone: for tests, benchmarks and importers of formats
//! that know nothing but names (like folded stacks).

use super::{FrameSpec, SessionBuilder, StackId, ThreadIdx};

impl SessionBuilder {
    /// The leaf id of a stack of function names given root first (`None` when empty).
    pub fn intern_named_stack(&mut self, root_first: &[&str]) -> Option<StackId> {
        root_first.iter().fold(None, |parent, name| {
            let frame = self.intern_frame(&FrameSpec::named(name));
            Some(self.intern_stack(parent, frame))
        })
    }

    /// Adds one sample of the stack `root_first` (function names, outermost first). An empty
    /// stack adds nothing, since a sample needs a leaf.
    pub fn push_named(
        &mut self,
        root_first: &[&str],
        thread: ThreadIdx,
        time_ns: u64,
        weight: u64,
    ) {
        if let Some(stack) = self.intern_named_stack(root_first) {
            self.push_sample(stack, thread, time_ns, weight);
        }
    }
}
