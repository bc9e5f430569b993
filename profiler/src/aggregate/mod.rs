//! Pure functions over a [`Session`](crate::session::Session): call tree, top-N, flame graph
//! layout, filters, transforms and diff. No I/O and no globals, so the same code runs in the
//! command line, in tests and in the browser (wasm32).
//!
//! The usual flow: [`StackWeights::compute`] sums the samples a [`Filter`] keeps per stack (the
//! only pass over the samples), [`CallTree::build`] merges the stacks by function and applies
//! [`Transform`]s, and then the tree answers [`CallTree::top`], [`CallTree::flame`] and friends as
//! often as needed: [`CallTree::callers`] and [`CallTree::callees`] for one function (the
//! sandwich view), [`DiffTree`] and [`DiffTable`] for two profiles. Over time rather than
//! merged: [`timeline`] (each thread's weight per time bucket) and [`stack_chart`] (each thread's
//! stacks in order). By source line: [`line_weights`] (every file) and [`function_lines`] (one
//! function's lines, the source view).

mod diff;
mod diff_table;
mod filter;
mod flame;
mod format;
mod inverted;
mod lines;
mod listing;
pub mod order;
mod sandwich;
mod search;
mod shape;
mod stack_chart;
mod table;
mod threads;
mod timeline;
mod top;
mod transform;
mod transform_spec;
mod tree;

pub use diff::{diff_color, format_share_change, DiffTree, StackDelta};
pub use diff_table::{
    check_comparable, DiffColumn, DiffError, DiffOptions, DiffRow, DiffSide, DiffTable,
};
pub use filter::{Filter, StackWeights};
pub use flame::{FlameOptions, FlameOrder, Rect};
pub use format::{
    format_percent, format_percent_change, format_time_at, format_weight, format_weight_change,
    format_weight_named, thousands,
};
pub use lines::{function_lines, line_weights, FileWeights};
pub use listing::{Column, TableOrder};
pub use search::{is_marked, SearchMatch};
pub use stack_chart::{box_function, stack_chart, StackBox};
pub use table::TopTable;
pub use threads::{
    busiest_first, group_by_process, process_label, thread_totals, ProcessGroup, ThreadTotal,
};
pub use timeline::{bucket_of, time_extent, timeline, timeline_charged, TimelineTrack};
pub use top::{SortBy, TopRow};
pub use transform::{NameMatcher, Transform};
pub use transform_spec::TransformSpec;
pub use tree::{CallTree, NodeId, TransformedStacks};

#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod transform_tests;
