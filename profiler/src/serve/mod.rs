//! The local HTTP server behind `prof serve` and `Report::open_in_browser`, with the embedded
//! wasm viewer.
//!
//! The server binds loopback by default, puts a random secret segment in every URL (anything else
//! is a 404), and serves only the embedded assets, the sessions it was given and, for the Source
//! view, the source files their frames name under a source root (`source` module): no path a
//! request gives reaches the filesystem. Sessions are kept compressed in one shared buffer each and sent
//! gzip-compressed to clients that take it. What it guarantees against hostile clients is listed
//! in the `http` module.
//!
//! The HTTP side (`http`, `body`, `stall`, `reply`, `encoding`) is shared with the
//! `/debug/pprof` endpoint ([`crate::debug`], feature `debug-http`), which builds it without the
//! viewer: with `debug-http` alone only those modules are compiled, and nothing here is public.

#[cfg(feature = "serve")]
pub mod assets;
pub(crate) mod body;
#[cfg(feature = "serve")]
mod browser;
mod encoding;
pub(crate) mod http;
#[cfg(feature = "serve")]
mod load;
#[cfg(feature = "serve")]
mod open_in_browser;
pub(crate) mod reply;
#[cfg(feature = "serve")]
mod routes;
#[cfg(feature = "serve")]
mod secret;
#[cfg(feature = "serve")]
mod server;
#[cfg(feature = "serve")]
mod source_files;
mod stall;
#[cfg(feature = "serve")]
mod standalone;

#[cfg(feature = "serve")]
pub use browser::{open as open_browser, Opened};
#[cfg(feature = "serve")]
pub use http::{ACCEPT_BACKOFF, HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
#[cfg(feature = "serve")]
pub use load::{load_for_serving, load_for_serving_with};
#[cfg(feature = "serve")]
pub use open_in_browser::ServedViewer;
#[cfg(feature = "serve")]
pub use routes::SessionFile;
#[cfg(feature = "serve")]
pub use server::{exposure_warning, Port, ServeOptions, Server, DEFAULT_PORT, PORT_ATTEMPTS};
#[cfg(feature = "serve")]
pub use source_files::{MAX_SOURCE_BYTES, SOURCE_OPEN_TIMEOUT};
#[cfg(feature = "serve")]
pub use stall::WRITE_STALL_TIMEOUT;
#[cfg(feature = "serve")]
pub use standalone::write_standalone_html;
