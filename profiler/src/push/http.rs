//! One HTTP/1.1 POST over hyper's client half, on the caller's tokio runtime, bounded as a whole
//! (connect, send, answer) by a timeout: a server that refuses, hangs, resets or trickles costs
//! the agent at most that long and the program nothing.

use super::request::{Request, Target};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// The most of an error answer's body kept for the message.
const ERROR_BODY_MAX: usize = 200;

/// How one attempt ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer.
    Accepted,
    /// An answer worth trying again later: 5xx, 429, or no answer (refused, reset, timed out).
    Retry(String),
    /// An answer that another try would not change (4xx but 429): bad credentials, a body the
    /// server refuses.
    Refused(String),
}

/// A request body sent in one frame.
struct Once(Option<Bytes>);

impl Body for Once {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |b| b.len() as u64))
    }
}

/// Sends `request` to `target` and reads the answer, within `timeout`.
pub async fn post(target: &Target, request: &Request, body: Bytes, timeout: Duration) -> Outcome {
    match tokio::time::timeout(timeout, exchange(target, request, body)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Retry(format!(
            "no answer from {} within {timeout:?}",
            target.authority
        )),
    }
}

async fn exchange(target: &Target, request: &Request, body: Bytes) -> Outcome {
    let retry = |what: &str, e: &dyn std::fmt::Display| {
        Outcome::Retry(format!("{what} {}: {e}", target.authority))
    };
    let stream = match tokio::net::TcpStream::connect(target.authority.as_str()).await {
        Ok(s) => s,
        Err(e) => return retry("cannot connect to", &e),
    };
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake::<_, Once>(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(e) => return retry("HTTP handshake with", &e),
        };
    // Drives the connection while the request is sent and answered; it ends with the
    // exchange (the request asks the server to close).
    let driver = tokio::spawn(connection);
    let mut builder = hyper::Request::post(request.path_and_query.as_str())
        .header("host", target.authority.as_str())
        .header("connection", "close");
    for (name, value) in &request.headers {
        builder = builder.header(*name, value.as_str());
    }
    let outcome = match builder.body(Once(Some(body))) {
        Err(e) => Outcome::Refused(format!("cannot build the request: {e}")),
        Ok(req) => match sender.send_request(req).await {
            Err(e) => retry("no answer from", &e),
            Ok(answer) => read_answer(answer).await,
        },
    };
    driver.abort();
    outcome
}

/// What an answer means; an error answer's first bytes go in the message.
async fn read_answer(answer: hyper::Response<hyper::body::Incoming>) -> Outcome {
    let status = answer.status();
    let mut body = answer.into_body();
    let mut text = Vec::new();
    // The answer is read to its end (a short body) so the server sees a clean exchange; only
    // its first bytes are kept.
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    let room = ERROR_BODY_MAX.saturating_sub(text.len());
                    text.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Err(_) => break,
        }
    }
    if status.is_success() {
        return Outcome::Accepted;
    }
    let message = format!(
        "HTTP {}: {}",
        status.as_u16(),
        String::from_utf8_lossy(&text).trim()
    );
    if status.is_server_error() || status.as_u16() == 429 || status.as_u16() == 408 {
        Outcome::Retry(message)
    } else {
        Outcome::Refused(message)
    }
}
