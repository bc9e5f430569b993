//! The local HTTP server behind `prof serve` and `prof::Report::open_in_browser`, with the
//! embedded wasm viewer (the `viewer` feature, whose build script compiles `viewer/`).
//!
//! The server binds loopback by default, puts a random secret segment in every URL (anything else
//! is a 404), and serves only the embedded assets, the sessions it was given and, for the Source
//! view, the source files their frames name under a source root (`source_files` module), and for the
//! Assembly view the code of the binaries their mappings name, for sessions recorded on this
//! machine (`disasm` module): no path a request gives reaches the filesystem. Sessions are kept compressed in one shared buffer each and sent
//! gzip-compressed to clients that take it. What it guarantees against hostile clients is listed
//! in the `http` module.
//!
//! The HTTP side (`http`, `body`, `reply`, `stall`, `encoding`: [`Serving`], [`Handler`],
//! [`Reply`], [`Payload`]) is always built: the
//! `/debug/pprof` endpoint (`prof::debug`, feature `debug-http`) serves with it, without the
//! viewer and its wasm build. `prof` re-exports what users name (`prof::serve`); the embedded
//! assets and the server's tuning constants are this crate's alone.
#![deny(unsafe_code)]
// Output belongs to the caller: only the command line prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "viewer")]
pub mod assets;
mod body;
#[cfg(feature = "viewer")]
mod browser;
#[cfg(feature = "viewer")]
mod disasm;
mod encoding;
mod http;
#[cfg(feature = "viewer")]
mod load;
#[cfg(feature = "viewer")]
mod open_in_browser;
mod reply;
#[cfg(feature = "viewer")]
mod routes;
#[cfg(feature = "viewer")]
mod secret;
#[cfg(feature = "viewer")]
mod server;
#[cfg(feature = "viewer")]
mod source_files;
mod stall;
#[cfg(feature = "viewer")]
mod standalone;

pub use body::Payload;
#[cfg(feature = "viewer")]
pub use browser::{open as open_browser, Opened};
#[cfg(feature = "viewer")]
pub use disasm::{DISASM_TIMEOUT, MAX_BINARY_BYTES, MAX_FUNCTION_BYTES};
pub use http::{Handler, Serving};
#[cfg(feature = "viewer")]
pub use http::{ACCEPT_BACKOFF, HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
#[cfg(feature = "viewer")]
pub use load::{load_for_serving, load_for_serving_with};
#[cfg(feature = "viewer")]
pub use open_in_browser::ServedViewer;
pub use reply::Reply;
#[cfg(feature = "viewer")]
pub use routes::SessionFile;
#[cfg(feature = "viewer")]
pub use server::{exposure_warning, Port, ServeOptions, Server, DEFAULT_PORT, PORT_ATTEMPTS};
#[cfg(feature = "viewer")]
pub use source_files::{MAX_SOURCE_BYTES, SOURCE_OPEN_TIMEOUT};
#[cfg(feature = "viewer")]
pub use stall::WRITE_STALL_TIMEOUT;
#[cfg(feature = "viewer")]
pub use standalone::write_standalone_html;
