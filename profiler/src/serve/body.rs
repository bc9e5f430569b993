//! Response bodies that never copy a profile per request: the bytes are one shared buffer
//! (`Bytes`, reference-counted), and a client that does not take gzip gets the shared gzip data
//! decompressed a chunk at a time as it reads.

use bytes::buf::Reader;
use bytes::{Buf, Bytes};
use flate2::read::GzDecoder;
use http_body::{Frame, SizeHint};
use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Poll};

/// How much decompressed data one frame of a [`Payload::Gunzip`] body holds.
const GUNZIP_CHUNK: usize = 64 << 10;

/// The content of a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Payload {
    /// Sent as it is; cloning shares the buffer.
    Bytes(Bytes),
    /// gzip data sent decompressed, `len` bytes once decompressed.
    Gunzip {
        /// The shared compressed bytes.
        gzip: Bytes,
        /// Their decompressed length, which is the `Content-Length` sent.
        len: u64,
    },
}

impl Payload {
    /// The number of bytes this payload sends.
    pub fn len(&self) -> u64 {
        match self {
            Payload::Bytes(bytes) => bytes.len() as u64,
            Payload::Gunzip { len, .. } => *len,
        }
    }

    /// The bytes sent, all at once (for tests).
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Payload::Bytes(bytes) => bytes.to_vec(),
            Payload::Gunzip { gzip, .. } => {
                let mut out = Vec::new();
                GzDecoder::new(&gzip[..]).read_to_end(&mut out).unwrap();
                out
            }
        }
    }

    /// The body hyper sends.
    pub fn into_body(self) -> Body {
        match self {
            Payload::Bytes(bytes) => Body::Bytes(Some(bytes)),
            Payload::Gunzip { gzip, len } => Body::Gunzip {
                decoder: Box::new(GzDecoder::new(gzip.reader())),
                left: len,
            },
        }
    }
}

/// A response body: one shared buffer, or a streaming decompression of one.
pub(crate) enum Body {
    /// The whole body in one frame, `None` once sent.
    Bytes(Option<Bytes>),
    /// Decompressed as the client reads; `left` bytes still to send.
    Gunzip {
        /// Reads the shared gzip buffer.
        decoder: Box<GzDecoder<Reader<Bytes>>>,
        /// Bytes still to send.
        left: u64,
    },
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(match self.get_mut() {
            Body::Bytes(bytes) => bytes.take().map(|b| Ok(Frame::data(b))),
            Body::Gunzip { left: 0, .. } => None,
            Body::Gunzip { decoder, left } => {
                let want = usize::try_from(*left).map_or(GUNZIP_CHUNK, |l| l.min(GUNZIP_CHUNK));
                let mut chunk = vec![0; want];
                // The data was compressed by this process from a session that was read back, so
                // it cannot be corrupt; should it end early anyway, the connection is cut.
                Some(decoder.read_exact(&mut chunk).map(|()| {
                    *left -= want as u64;
                    Frame::data(Bytes::from(chunk))
                }))
            }
        })
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Bytes(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            Body::Gunzip { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Bytes(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Body::Gunzip { left, .. } => SizeHint::with_exact(*left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{write::GzEncoder, Compression};
    use http_body::Body as _;
    use std::io::Write;
    use std::task::Waker;

    fn frames(mut body: Body) -> Vec<Bytes> {
        let mut cx = Context::from_waker(Waker::noop());
        let mut out = Vec::new();
        while let Poll::Ready(Some(frame)) = Pin::new(&mut body).poll_frame(&mut cx) {
            out.push(frame.unwrap().into_data().unwrap());
        }
        assert!(body.is_end_stream());
        out
    }

    #[test]
    fn shared_bytes_are_sent_without_a_copy() {
        let shared = Bytes::from(vec![7u8; 1000]);
        let sent = frames(Payload::Bytes(shared.clone()).into_body());
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].as_ptr(),
            shared.as_ptr(),
            "the same buffer, not a copy"
        );
    }

    #[test]
    fn gzip_is_streamed_out_decompressed_in_bounded_chunks() {
        let json: Vec<u8> = (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(&json).unwrap();
        let payload = Payload::Gunzip {
            gzip: Bytes::from(enc.finish().unwrap()),
            len: json.len() as u64,
        };
        assert_eq!(payload.len(), json.len() as u64);
        let body = payload.into_body();
        assert_eq!(body.size_hint().exact(), Some(json.len() as u64));
        let sent = frames(body);
        assert!(sent.iter().all(|f| f.len() <= GUNZIP_CHUNK));
        assert_eq!(sent.concat(), json);
    }
}
