//! [`Report`]: the result of a profiling session, with the ways to read, save and export it.

use crate::session::Session;

/// A finished profile. Wraps a [`Session`] and offers the common views and exports.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    session: Session,
}

impl Report {
    /// A report over an existing session.
    pub fn new(session: Session) -> Self {
        Report { session }
    }

    /// The underlying session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Consumes the report, returning its session.
    pub fn into_session(self) -> Session {
        self.session
    }

    /// The number of samples recorded.
    pub fn total_samples(&self) -> usize {
        self.session.sample_count()
    }
}

impl From<Session> for Report {
    fn from(session: Session) -> Self {
        Report::new(session)
    }
}
