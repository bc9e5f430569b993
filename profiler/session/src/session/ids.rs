//! The typed indices into a session's tables: an index into one table can never be used for
//! another.

use serde::{Deserialize, Serialize};

macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The position in its table, for indexing a `Vec`.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

index_type!(
    /// An index into [`Session::strings`](super::Session::strings).
    StrId
);
index_type!(
    /// An index into [`Session::frames`](super::Session::frames).
    FrameId
);
index_type!(
    /// An index into [`Session::stacks`](super::Session::stacks): one node of the stack prefix tree.
    StackId
);
index_type!(
    /// An index into [`Session::threads`](super::Session::threads).
    ThreadIdx
);
index_type!(
    /// An index into [`Scopes::sites`](super::Scopes::sites): one `prof::scope!` or `prof::mark!` call site.
    SiteIdx
);
index_type!(
    /// An index into [`Scopes::spans`](super::Scopes::spans): one execution of a scope.
    SpanIdx
);
index_type!(
    /// An index into [`Tasks::tasks`](super::Tasks::tasks): one async task.
    TaskIdx
);
index_type!(
    /// An index into [`Session::processes`](super::Session::processes) (0, the implicit process, when that table is
    /// empty: see [`Session::process_table`](super::Session::process_table)).
    ProcessIdx
);
