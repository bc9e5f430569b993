//! The local HTTP server behind `prof serve` and `Report::open_in_browser`, with the embedded
//! wasm viewer.
//!
//! The server binds loopback by default, puts a random secret segment in every URL (anything else
//! is a 404), and serves only the embedded assets and the sessions it was given: nothing a request
//! says reaches the filesystem. Sessions are sent gzip-compressed.

pub mod assets;
mod browser;
mod load;
mod open;
mod routes;
mod secret;
mod server;
mod standalone;

pub use browser::{open as open_browser, Opened};
pub use load::load_for_serving;
pub use routes::SessionFile;
pub use server::{exposure_warning, Port, ServeOptions, Server, DEFAULT_PORT, PORT_ATTEMPTS};
pub use standalone::write_standalone_html;
