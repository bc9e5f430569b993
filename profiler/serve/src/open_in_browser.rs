//! `prof::Report::open_in_browser`: the viewer for a profile taken in this process, and the
//! guard that keeps it served.

use super::{browser, Opened, ServeOptions, Server, SessionFile};
use prof_session::Result;

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

impl ServedViewer {
    /// Serves `file`'s viewer from this process on a background thread and opens it in the
    /// default browser (`$BROWSER`, or the desktop's opener when there is a display): what
    /// `prof::Report::open_in_browser` does. Fails only when no port can be bound.
    pub fn open(file: SessionFile) -> Result<ServedViewer> {
        Self::open_with(file, &ServeOptions::default())
    }

    /// [`ServedViewer::open`] on the host and port `options` give (loopback and the first free
    /// port from [`DEFAULT_PORT`](crate::DEFAULT_PORT) by default; another host exposes the profile to the network, as
    /// [`exposure_warning`](crate::exposure_warning) says).
    pub fn open_with(file: SessionFile, options: &ServeOptions) -> Result<ServedViewer> {
        let server = Server::start(vec![file], options)?;
        let browser = browser::open(server.url());
        Ok(ServedViewer { server, browser })
    }
}
