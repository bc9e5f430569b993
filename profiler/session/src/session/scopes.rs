//! What a sampler cannot see, recorded by instrumentation: scopes (`prof::scope!`)
//! with their exact calls and durations, marks (`prof::mark!`), and async tasks with their polls.
//!
//! Times are nanoseconds since the session started, on the clock of
//! [`Samples::time_ns`](super::Samples::time_ns), so spans, marks, polls and samples share one
//! timeline. Each sample points at the innermost span open on its thread and at the task being
//! polled there ([`Samples::scope`](super::Samples::scope), [`Samples::task`](super::Samples::task)).

use super::ids::{SiteIdx, SpanIdx, StackId, StrId, TaskIdx, ThreadIdx};
use serde::{Deserialize, Serialize};

/// What a call site records: a span with a duration, or an instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteKind {
    /// `prof::scope!`: a span from the scope's start until its guard drops.
    #[default]
    Scope,
    /// `prof::mark!`: an instant.
    Mark,
}

impl SiteKind {
    /// The lowercase name used in files and texts: `scope` or `mark`.
    pub fn name(self) -> &'static str {
        match self {
            SiteKind::Scope => "scope",
            SiteKind::Mark => "mark",
        }
    }
}

/// A place in the code that opens scopes or sets marks: its name and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Site {
    /// The name given to the macro (`"parse"` for `prof::scope!("parse")`).
    pub name: StrId,
    /// The source file of the call, when known.
    pub file: Option<StrId>,
    /// Its line in [`Site::file`], when known.
    pub line: Option<u32>,
    /// A scope or a mark.
    pub kind: SiteKind,
}

/// A key-value pair attached to a span or a mark (`prof::scope!("request", id = 7)`), both as
/// text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Field {
    /// The field's name.
    pub key: StrId,
    /// Its value, formatted.
    pub value: StrId,
}

/// One execution of a scope: from its start until its guard dropped, on one thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// The scope's call site.
    pub site: SiteIdx,
    /// The thread it ran on.
    pub thread: ThreadIdx,
    /// When it started, in nanoseconds since the session started.
    pub start_ns: u64,
    /// When it ended; at or after [`Span::start_ns`].
    pub end_ns: u64,
    /// The enclosing span open on the same thread when it started, which comes earlier in
    /// [`Scopes::spans`]; `None` for an outermost one.
    pub parent: Option<SpanIdx>,
    /// Its fields, in the order given.
    pub fields: Vec<Field>,
}

impl Span {
    /// How long it ran, in nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// An instant marked on one thread (`prof::mark!("gc")`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mark {
    /// The mark's call site.
    pub site: SiteIdx,
    /// The thread that set it.
    pub thread: ThreadIdx,
    /// When, in nanoseconds since the session started.
    pub time_ns: u64,
    /// Its fields, in the order given.
    pub fields: Vec<Field>,
}

/// The instrumented scopes and marks of a session. Empty (and absent from the file) when the
/// program used none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scopes {
    /// Call sites, indexed by [`SiteIdx`].
    pub sites: Vec<Site>,
    /// Every execution of a scope, indexed by [`SpanIdx`]; a parent before its children.
    pub spans: Vec<Span>,
    /// Every mark.
    pub marks: Vec<Mark>,
    /// Scope and mark events the recorder dropped (a thread's buffer was full): when not 0, the
    /// call counts are lower bounds.
    pub dropped_events: u64,
}

impl Scopes {
    /// True when there are no sites, spans, marks or dropped events: nothing to store.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
            && self.spans.is_empty()
            && self.marks.is_empty()
            && self.dropped_events == 0
    }

    /// A call site by index.
    pub fn site(&self, idx: SiteIdx) -> &Site {
        &self.sites[idx.index()]
    }

    /// A span by index.
    pub fn span(&self, idx: SpanIdx) -> &Span {
        &self.spans[idx.index()]
    }

    /// The span `innermost` and the spans enclosing it, innermost first.
    pub fn ancestors(&self, innermost: SpanIdx) -> impl Iterator<Item = SpanIdx> + '_ {
        std::iter::successors(Some(innermost), |&s| self.span(s).parent)
    }
}

/// An async task: a future that `prof::task::instrument` wrapped, or one a runtime named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    /// Its id, unique within the session (the runtime's task id, or one prof gave it).
    pub id: u64,
    /// Its name; several tasks may share one.
    pub name: StrId,
}

/// One poll of a task: the time a thread spent in its `Future::poll`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Poll {
    /// The task polled.
    pub task: TaskIdx,
    /// The thread that polled it.
    pub thread: ThreadIdx,
    /// When the poll started, in nanoseconds since the session started.
    pub start_ns: u64,
    /// When it returned; at or after [`Poll::start_ns`].
    pub end_ns: u64,
    /// Where the task waited until its next poll, when the poll returned `Pending` in a wall
    /// mode session of `prof::task::instrument`'s tasks: the stack at which its
    /// waker was last cloned, from the leaf future up to the task's poll (version 6).
    pub waited_at: Option<StackId>,
}

/// The async tasks of a session and their polls. Empty (and absent from the file) when the
/// program instrumented none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tasks {
    /// The tasks, indexed by [`TaskIdx`].
    pub tasks: Vec<Task>,
    /// Every poll.
    pub polls: Vec<Poll>,
}

impl Tasks {
    /// True when there are no tasks and no polls.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.polls.is_empty()
    }

    /// A task by index.
    pub fn task(&self, idx: TaskIdx) -> &Task {
        &self.tasks[idx.index()]
    }
}
