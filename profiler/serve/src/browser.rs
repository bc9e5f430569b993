//! Opening the viewer's URL in the user's browser: `$BROWSER` when set, otherwise the desktop's
//! opener (`xdg-open`, or `open` on macOS) when there is a display.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What happened when asked to open a browser.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Opened {
    /// This command was started with the URL.
    Launched(String),
    /// There is no display and no `$BROWSER`, so nothing was started.
    NoDisplay,
    /// Every candidate failed to start or exited at once with a failure; the message says why.
    Failed(String),
}

/// How long a browser command is watched after it starts: one that fails within it opened
/// nothing.
const SETTLE: Duration = Duration::from_millis(500);

/// Opens `url` in a browser, waiting at most half a second per command to see that it did not
/// fail at once (never for the browser to close). Never fails: the result says what happened.
pub fn open(url: &str) -> Opened {
    // The one place the library reads the environment: `$BROWSER` and the display variables are
    // the platform's convention for how a program opens a URL (as `xdg-open` reads them), not
    // configuration of prof, which comes only through `Options`.
    let env = std::env::var_os("BROWSER");
    let display = std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty())
        || std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty());
    let candidates = candidates(env, display, cfg!(target_os = "macos"), url);
    if candidates.is_empty() {
        return Opened::NoDisplay;
    }
    let mut errors = Vec::new();
    for argv in candidates {
        let Some((program, args)) = argv.split_first() else {
            continue;
        };
        let spawned = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                errors.push(format!("{program}: {e}"));
                continue;
            }
        };
        // A command that fails at once (`BROWSER=false`, an opener with no handler) opened
        // nothing: the next candidate is tried. One that succeeds at once (xdg-open hands the
        // URL over and exits) or still runs after a moment (the browser itself) did.
        let deadline = Instant::now() + SETTLE;
        let exited = loop {
            match child.try_wait() {
                Ok(None) if Instant::now() < deadline => std::thread::sleep(SETTLE / 25),
                other => break other,
            }
        };
        match exited {
            Ok(Some(status)) if !status.success() => {
                errors.push(format!("{program}: exited at once ({status})"));
            }
            Ok(Some(_)) => return Opened::Launched(argv.join(" ")),
            _ => {
                // Reap it whenever it exits, so it never lingers as a zombie.
                let _ = std::thread::Builder::new()
                    .name("prof-browser".into())
                    .spawn(move || child.wait());
                return Opened::Launched(argv.join(" "));
            }
        }
    }
    Opened::Failed(errors.join("; "))
}

/// The commands to try in order, each as program and arguments.
///
/// `$BROWSER` is a `:`-separated list of commands (the convention of `xdg-open` and Python's
/// `webbrowser`); `%s` in a command stands for the URL, otherwise the URL is the last argument.
fn candidates(env: Option<OsString>, display: bool, macos: bool, url: &str) -> Vec<Vec<String>> {
    if let Some(env) = env.filter(|e| !e.is_empty()) {
        return env
            .to_string_lossy()
            .split(':')
            .filter_map(|command| {
                let mut argv: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
                if argv.is_empty() {
                    return None;
                }
                if argv.iter().any(|a| a.contains("%s")) {
                    for arg in &mut argv {
                        *arg = arg.replace("%s", url);
                    }
                } else {
                    argv.push(url.to_owned());
                }
                Some(argv)
            })
            .collect();
    }
    if macos {
        vec![vec!["open".into(), url.into()]]
    } else if display {
        vec![vec!["xdg-open".into(), url.into()]]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:1/s/";

    #[test]
    fn browser_variable_wins_and_takes_the_url_at_percent_s_or_at_the_end() {
        let c = candidates(
            Some("firefox --new-tab:w3m %s -x".into()),
            false,
            false,
            URL,
        );
        assert_eq!(
            c,
            [vec!["firefox", "--new-tab", URL], vec!["w3m", URL, "-x"]]
        );
    }

    #[test]
    fn without_browser_variable_a_display_is_needed() {
        assert!(candidates(None, false, false, URL).is_empty());
        assert!(candidates(Some("".into()), false, false, URL).is_empty());
        assert_eq!(candidates(None, true, false, URL), [vec!["xdg-open", URL]]);
        assert_eq!(candidates(None, false, true, URL), [vec!["open", URL]]);
    }
}
