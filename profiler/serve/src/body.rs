//! Response bodies that never copy a profile per request: the bytes are one shared buffer
//! (`Bytes`, reference-counted), a client that does not take gzip gets the shared gzip data
//! decompressed a chunk at a time as it reads, and a source file is read a chunk at a time as
//! the client takes it, each read on tokio's blocking pool (never on the server's thread) and
//! bounded by [`FILE_READ_TIMEOUT`]. What a connection holds is a chunk, whatever the size of
//! what it sends.

use bytes::buf::Reader;
use bytes::{Buf, Bytes};
use flate2::read::GzDecoder;
use http_body::{Frame, SizeHint};
use std::fs::File;
use std::future::Future;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Sleep;

/// How much decompressed data one frame of a [`Payload::Gunzip`] body holds.
const GUNZIP_CHUNK: usize = 64 << 10;
/// How much of a file one frame of a [`Payload::File`] body holds.
pub(crate) const FILE_CHUNK: usize = 64 << 10;
/// How long one read of a file may take before the response is cut off (a file on a hung
/// network file system).
pub(crate) const FILE_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The content of a reply. `/debug/pprof` (feature `debug-http` alone) sends only
/// [`Payload::Bytes`]: the other two are the viewer's sessions and source files.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "viewer"), allow(dead_code))]
pub enum Payload {
    /// Sent as it is; cloning shares the buffer.
    Bytes(Bytes),
    /// gzip data sent decompressed, `len` bytes once decompressed.
    Gunzip {
        /// The shared compressed bytes.
        gzip: Bytes,
        /// Their decompressed length, which is the `Content-Length` sent.
        len: u64,
    },
    /// The first `len` bytes of an open regular file, read as the client takes them. Should the
    /// file shrink meanwhile, the connection is cut rather than a short body sent.
    File {
        /// The file, opened and checked (see `super::source_files`).
        file: Arc<File>,
        /// The bytes sent, the `Content-Length`.
        len: u64,
    },
}

impl Payload {
    /// The number of bytes this payload sends.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Payload::Bytes(bytes) => bytes.len() as u64,
            Payload::Gunzip { len, .. } | Payload::File { len, .. } => *len,
        }
    }

    /// The bytes sent, all at once (for tests).
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        match self {
            Payload::Bytes(bytes) => bytes.to_vec(),
            Payload::Gunzip { gzip, .. } => {
                let mut out = Vec::new();
                GzDecoder::new(&gzip[..]).read_to_end(&mut out).unwrap();
                out
            }
            Payload::File { file, len } => {
                let mut out = vec![0; *len as usize];
                file.read_exact_at(&mut out, 0).unwrap();
                out
            }
        }
    }

    /// The body hyper sends.
    pub(crate) fn into_body(self) -> Body {
        match self {
            Payload::Bytes(bytes) => Body::Bytes(Some(bytes)),
            Payload::Gunzip { gzip, len } => Body::Gunzip {
                decoder: Box::new(GzDecoder::new(gzip.reader())),
                left: len,
            },
            Payload::File { file, len } => Body::File {
                file,
                offset: 0,
                left: len,
                reading: None,
            },
        }
    }
}

/// A read of a file under way on the blocking pool, and when it counts as hung.
type Reading = (JoinHandle<std::io::Result<Vec<u8>>>, Pin<Box<Sleep>>);

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
    /// Read from a file as the client reads; `left` bytes still to send from `offset`.
    File {
        /// The open file.
        file: Arc<File>,
        /// Where the next read starts.
        offset: u64,
        /// Bytes still to send.
        left: u64,
        /// The read under way, if any.
        reading: Option<Reading>,
    },
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(match self.get_mut() {
            Body::File {
                file,
                offset,
                left,
                reading,
            } => return poll_file(cx, file, offset, left, reading),
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
            Body::Gunzip { left, .. } | Body::File { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Bytes(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Body::Gunzip { left, .. } | Body::File { left, .. } => SizeHint::with_exact(*left),
        }
    }
}

/// The next frame of a file body: starts a read of the next chunk on the blocking pool, or
/// polls the one under way.
fn poll_file(
    cx: &mut Context<'_>,
    file: &Arc<File>,
    offset: &mut u64,
    left: &mut u64,
    reading: &mut Option<Reading>,
) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
    if *left == 0 {
        return Poll::Ready(None);
    }
    let (task, deadline) = reading.get_or_insert_with(|| {
        let (file, at) = (Arc::clone(file), *offset);
        let want = usize::try_from(*left).map_or(FILE_CHUNK, |l| l.min(FILE_CHUNK));
        let task = tokio::task::spawn_blocking(move || read_chunk(&file, at, want));
        (task, Box::pin(tokio::time::sleep(FILE_READ_TIMEOUT)))
    });
    let read = match Pin::new(task).poll(cx) {
        Poll::Ready(joined) => joined.map_err(std::io::Error::other).and_then(|read| read),
        Poll::Pending => match deadline.as_mut().poll(cx) {
            // The read stays behind on its pool thread; its result is dropped when it ends.
            Poll::Ready(()) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "a read of the file did not end in time",
            )),
            Poll::Pending => return Poll::Pending,
        },
    };
    *reading = None;
    Poll::Ready(Some(match read {
        Ok(chunk) if chunk.is_empty() => {
            *left = 0;
            Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was sent",
            ))
        }
        Ok(chunk) => {
            *offset += chunk.len() as u64;
            *left -= chunk.len() as u64;
            Ok(Frame::data(Bytes::from(chunk)))
        }
        Err(e) => {
            // Nothing more is sent after an error.
            *left = 0;
            Err(e)
        }
    }))
}

/// Up to `want` bytes of `file` from `offset` (fewer only at its end).
pub(crate) fn read_chunk(file: &File, offset: u64, want: usize) -> std::io::Result<Vec<u8>> {
    let mut chunk = vec![0; want];
    let mut filled = 0;
    while filled < want {
        match file.read_at(&mut chunk[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    chunk.truncate(filled);
    Ok(chunk)
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

    /// Polls `body` to its end on a runtime (a file body reads on its blocking pool).
    async fn drain(mut body: Body) -> Vec<std::io::Result<Bytes>> {
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            out.push(frame.map(|f| f.into_data().unwrap()));
        }
        out
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_file_is_sent_in_bounded_chunks_and_cut_off_when_it_shrinks() {
        let path = std::env::temp_dir().join(format!("prof-body-file-{}", std::process::id()));
        let text: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        let file = Arc::new(File::open(&path).unwrap());
        let payload = Payload::File {
            file: Arc::clone(&file),
            len: text.len() as u64,
        };
        assert_eq!(payload.to_vec(), text);
        let body = payload.into_body();
        assert_eq!(body.size_hint().exact(), Some(text.len() as u64));
        let sent = runtime().block_on(drain(body));
        let sent: Vec<Bytes> = sent.into_iter().map(Result::unwrap).collect();
        assert!(sent.iter().all(|f| f.len() <= FILE_CHUNK));
        assert_eq!(sent.concat(), text);
        // A file shorter than the length promised: an error, not a short body.
        let body = Payload::File {
            file,
            len: text.len() as u64 + 10,
        }
        .into_body();
        let sent = runtime().block_on(drain(body));
        let err = sent.last().unwrap().as_ref().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
        std::fs::remove_file(&path).unwrap();
    }
}
