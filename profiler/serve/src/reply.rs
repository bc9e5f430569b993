//! What a handler answers: a status, headers the server sets from it, and a body that is never a
//! per-request copy of a shared buffer (see [`super::body`]).

use super::body::Payload;
use bytes::Bytes;

/// `Cache-Control` for the page and its assets: the bytes behind a URL never change while the
/// server runs, and every run has a new secret, hence new URLs.
#[cfg(feature = "viewer")]
pub(crate) const CACHE_IMMUTABLE: &str = "private, max-age=31536000, immutable";
/// `Cache-Control` for profiles: they may hold private data, so they are never stored.
#[cfg(feature = "viewer")]
pub(crate) const CACHE_NONE: &str = "no-store";

/// What to send back.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub mime: &'static str,
    /// The body, already encoded as `gzip` says.
    pub body: Payload,
    /// True when the body is gzip-compressed (`Content-Encoding: gzip`).
    pub gzip: bool,
    /// True when the body depends on `Accept-Encoding` (`Vary: Accept-Encoding`).
    pub vary_encoding: bool,
    /// `Cache-Control`, if any.
    pub cache: Option<&'static str>,
    /// `Location`, for redirects.
    pub location: Option<String>,
    /// A file name to save the body as (`Content-Disposition: attachment`), for downloads.
    pub attachment: Option<String>,
}

impl Reply {
    /// A plain 404.
    #[cfg(feature = "viewer")]
    pub fn not_found() -> Reply {
        Reply::text(404, "not found")
    }

    /// A plain-text reply.
    pub fn text(status: u16, text: &'static str) -> Reply {
        Reply::shared_text(status, Bytes::from_static(text.as_bytes()))
    }

    /// A plain-text reply of shared bytes.
    pub fn shared_text(status: u16, text: Bytes) -> Reply {
        Reply {
            status,
            mime: "text/plain; charset=utf-8",
            body: Payload::Bytes(text),
            gzip: false,
            vary_encoding: false,
            cache: None,
            location: None,
            attachment: None,
        }
    }
}
