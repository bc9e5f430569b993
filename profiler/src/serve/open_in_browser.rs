//! [`Report::open_in_browser`]: the viewer for a profile taken in this process, and the guard
//! that keeps it served.

use super::{browser, Opened, ServeOptions, Server, SessionFile};
use crate::{Report, Result};

/// The viewer of a report, served from this process: its URL, whether a browser was opened on
/// it, and the server. **Serving stops when this is dropped**, so `let _ =
/// report.open_in_browser()?;` shows a page that is already gone; keep it, or call
/// [`ServedViewer::wait`] to serve until the process is interrupted (Ctrl-C).
#[must_use = "the viewer stops serving when this is dropped: keep it, or call .wait() to serve until Ctrl-C"]
#[derive(Debug)]
pub struct ServedViewer {
    server: Server,
    browser: Opened,
}

impl ServedViewer {
    /// The viewer's URL, secret included: what to open by hand when no browser was started.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// Whether a browser was started on the URL, and if not, why.
    pub fn browser(&self) -> &Opened {
        &self.browser
    }

    /// Serves until the process is interrupted (the server does not stop by itself); returns
    /// only when serving failed in a way it cannot recover from, saying why.
    pub fn wait(self) -> Result<()> {
        self.server.wait()
    }

    /// Stops serving now (what dropping it does, said out loud).
    pub fn stop(self) {
        drop(self);
    }
}

impl Report {
    /// Serves this report's viewer from this process on a background thread and opens it in
    /// the default browser (`$BROWSER`, or the desktop's opener when there is a display).
    ///
    /// Prints nothing: the returned [`ServedViewer`] has the URL and says whether a browser was
    /// started (no browser is not an error). It keeps the server running until it is dropped;
    /// `report.open_in_browser()?.wait()` serves until Ctrl-C. Fails only when the session
    /// cannot be encoded or no port can be bound.
    pub fn open_in_browser(&self) -> Result<ServedViewer> {
        let program = &self.session().meta.program;
        let name = match program.rsplit('/').next() {
            Some(base) if !base.is_empty() => format!("{base}.json"),
            _ => "profile.json".to_owned(),
        };
        let file = SessionFile::from_session(name, self.session())?;
        let server = Server::start(vec![file], &ServeOptions::default())?;
        let browser = browser::open(server.url());
        Ok(ServedViewer { server, browser })
    }
}
