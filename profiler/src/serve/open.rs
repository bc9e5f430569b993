//! [`Report::open_in_browser`]: the viewer for a profile taken in this process.

use super::{browser, Opened, ServeOptions, Server, SessionFile};
use crate::{Report, Result};

impl Report {
    /// Serves this report's viewer from this process on a background thread and opens it in
    /// the default browser (`$BROWSER`, or the desktop's opener when there is a display).
    ///
    /// Prints the URL to standard error, so it can be opened by hand when no browser can be
    /// started; that case is not an error. The returned guard keeps the server running: it stops
    /// when the guard is dropped. Fails only when the session cannot be written or no port can
    /// be bound.
    pub fn open_in_browser(&self) -> Result<Server> {
        let program = &self.session().meta.program;
        let name = match program.rsplit('/').next() {
            Some(base) if !base.is_empty() => format!("{base}.json"),
            _ => "profile.json".to_owned(),
        };
        let file = SessionFile::from_session(name, self.session())?;
        let server = Server::start(vec![file], &ServeOptions::default())?;
        eprintln!("prof: viewer at {}", server.url());
        match browser::open(server.url()) {
            Opened::Launched(_) => {}
            Opened::NoDisplay => eprintln!("prof: no display; open the URL above in a browser"),
            Opened::Failed(why) => {
                eprintln!("prof: could not open a browser ({why}); open the URL above yourself")
            }
        }
        Ok(server)
    }
}
