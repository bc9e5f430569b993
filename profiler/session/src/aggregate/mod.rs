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
//! function's lines, the source view). By instruction: [`function_addresses`] and
//! [`instruction_weights`] (one function's code, the assembly view).
//!
//! ```
//! use prof_session::session::{FrameSpec, Metadata, SessionBuilder};
//!
//! // Two samples of `main;parse` and one of `main;work`, on one thread.
//! let mut b = SessionBuilder::new(Metadata::default());
//! let main = b.intern_frame(&FrameSpec::named("main"));
//! let parse = b.intern_frame(&FrameSpec::named("parse"));
//! let work = b.intern_frame(&FrameSpec::named("work"));
//! let thread = b.thread(1, "main");
//! let parsing = b.intern_stack_path(&[main, parse]).unwrap();
//! let working = b.intern_stack_path(&[main, work]).unwrap();
//! b.push_sample(parsing, thread, 0, 1_000_000);
//! b.push_sample(parsing, thread, 1_000_000, 1_000_000);
//! b.push_sample(working, thread, 2_000_000, 1_000_000);
//! let session = b.finish();
//! use prof_session::aggregate::{format_percent, format_weight, CallTree, Filter, SortBy};
//!
//! let tree = CallTree::new(&session, &Filter::all());
//! let top = tree.top(&session, 10, SortBy::SelfWeight);
//! assert_eq!(top[0].name, "parse");
//! let whole = session.total_weight();
//! let shown = format!(
//!     "{} {}",
//!     format_weight(&session.meta.sample_type, top[0].self_weight),
//!     format_percent(top[0].self_weight, whole)
//! );
//! assert_eq!(shown, "2.00 ms 66.7%");
//! ```

mod addresses;
mod calls;
mod diff_table;
mod diff_tree;
mod filter;
mod flame;
mod format;
mod grouping;
#[cfg(test)]
mod grouping_tests;
mod inverted;
mod lines;
mod listing;
mod sandwich;
mod scheduler;
mod scope_lanes;
mod scope_stats;
#[cfg(test)]
mod scope_stats_tests;
mod scope_table;
mod search;
mod shape;
mod stack_chart;
mod table;
mod threads;
mod timeline;
mod top;
mod top_table;
mod transform;
mod transform_spec;
mod tree;
mod waits;

pub use addresses::{
    function_addresses, hottest_place, instruction_weights, AddressWeights, CodePlace,
    InstructionWeights, SampleWeights,
};
pub use calls::{call_table, counted_by_name, CallRow, CallTable};
pub use diff_table::{
    check_comparable, DiffColumn, DiffError, DiffOptions, DiffRow, DiffSide, DiffTable,
};
pub use diff_tree::{diff_color, format_share_change, DiffTree, StackDelta};
pub use filter::{Filter, StackWeights};
pub use flame::{FlameOptions, FlameOrder, Rect};
pub use format::{
    fixed, format_dropped, format_location, format_losses, format_ms, format_percent,
    format_percent_change, format_time_at, format_weight, format_weight_change,
    format_weight_named, shell_words, thousands,
};
pub use grouping::{
    group_by_scope, group_by_task, ScopeCalls, NO_SCOPE_FRAME, NO_TASK_FRAME, SCOPE_FRAME_PREFIX,
    TASK_FRAME_PREFIX,
};
pub use lines::{function_lines, line_weights, FileWeights};
pub use listing::{Column, TableOrder};
pub use scheduler::{is_kernel_module, SCHEDULER_FUNCTIONS};
pub use scope_lanes::{Bar, BarKind, DrawnBar, ScopeIndex, ScopeLayout, TaskLane, MERGED};
pub use scope_stats::{
    duration_histogram, longest_spans, percentile, scope_durations, scope_table, task_table,
    DurationBar, DurationHistogram, ScopeRow, TaskRow, Tasks,
};
pub use scope_table::{ScopeTable, TaskTable};
pub use search::{is_marked, name_contains, SearchMatch};
pub use stack_chart::{box_function, stack_chart, StackBox};
pub use table::{
    CallSummary, FunctionTable, GroupBy, MarkList, OptionError, ScopeSummary, TableOptions,
    TaskSummary,
};
pub use threads::{
    busiest_first, group_by_process, process_label, shown_label, thread_totals,
    thread_totals_shown, track_order, ProcessGroup, ThreadTotal,
};
pub use timeline::{bucket_of, time_extent, timeline, timeline_charged, TimelineTrack};
pub use top::{SortBy, TopRow, DEFAULT_TOP};
pub use top_table::TopTable;
pub use transform::{NameMatcher, Transform};
pub use transform_spec::{default_transforms, TransformSpec};
pub use tree::{CallTree, NodeId, TransformedStacks};
pub use waits::{task_waits, wait_after, TASK_WAIT_TYPE};

#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod transform_tests;
