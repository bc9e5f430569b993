//! The local HTTP server behind `prof serve` and `Report::open_in_browser`, with the embedded
//! wasm viewer.
//!
//! The server binds loopback by default, puts a random secret segment in every URL (anything else
//! is a 404), and serves only the embedded assets, the sessions it was given and, for the Source
//! view, the source files their frames name under a source root (`source` module): no path a
//! request gives reaches the filesystem. Sessions are kept compressed in one shared buffer each and sent
//! gzip-compressed to clients that take it. What it guarantees against hostile clients is listed
//! in the `http` module.

pub mod assets;
mod body;
mod browser;
mod encoding;
mod http;
mod load;
mod open_in_browser;
mod routes;
mod secret;
mod server;
mod source_files;
mod stall;
mod standalone;

pub use browser::{open as open_browser, Opened};
pub use http::{ACCEPT_BACKOFF, HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
pub use load::{load_for_serving, load_for_serving_with};
pub use open_in_browser::ServedViewer;
pub use routes::SessionFile;
pub use server::{exposure_warning, Port, ServeOptions, Server, DEFAULT_PORT, PORT_ATTEMPTS};
pub use source_files::{MAX_SOURCE_BYTES, SOURCE_OPEN_TIMEOUT};
pub use stall::WRITE_STALL_TIMEOUT;
pub use standalone::write_standalone_html;
