//! The session model: what a profile is, independent of how it was recorded.
//!
//! The sampler produces a [`Session`]; everything else (aggregation, exports, the viewer) consumes
//! one. This module knows nothing about the sampler.

mod model;

pub use model::{
    Frame, FrameId, FrameSpec, Metadata, Mode, Samples, Session, SessionBuilder, StackId,
    StackNode, StrId, Thread, ThreadIdx,
};
