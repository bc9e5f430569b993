//! Turning library errors into the exit codes every subcommand uses: 2 for bad input or usage,
//! 1 for anything else.

use std::process::ExitCode;

/// Exit code for bad input or usage.
pub const BAD_INPUT: u8 = 2;
/// Exit code for any other failure.
pub const FAILURE: u8 = 1;

/// Prints `err` as one line on standard error and returns the matching exit code.
pub fn fail(err: &prof::Error) -> ExitCode {
    eprintln!("prof: {err}");
    ExitCode::from(match err {
        prof::Error::BadInput { .. }
        | prof::Error::InvalidOption(_)
        | prof::Error::Incomparable(_)
        | prof::Error::NoSamples { .. }
        | prof::Error::PortsInUse { .. } => BAD_INPUT,
        _ => FAILURE,
    })
}
