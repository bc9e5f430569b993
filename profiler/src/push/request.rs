//! What one window becomes on the wire: the URL path and query, the headers and the body, for
//! either of Pyroscope's APIs. Pure: no I/O, so every byte is checked by unit tests.

use super::proto::{LabelPair, PushRequest, RawProfileSeries, RawSample};
use super::{Config, Protocol};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use prof_session::{Error, Mode, Result};
use prost::Message;
use std::time::{SystemTime, UNIX_EPOCH};

/// The `spyName` sent to `/ingest`.
pub const SPY_NAME: &str = "prof";

/// The Connect API's path (after the URL's own path).
pub const CONNECT_PATH: &str = "/push.v1.PusherService/Push";
/// The ingest API's path (after the URL's own path).
pub const INGEST_PATH: &str = "/ingest";

/// Query characters left as they are: RFC 3986's unreserved ones.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Where to push: an `http://host[:port][/path]` URL, taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `host:port`, to connect to and for the `Host` header.
    pub authority: String,
    /// The URL's path without a trailing `/` (`""` for none).
    pub base_path: String,
}

impl Target {
    /// Parses `url`. Only `http` is spoken: for `https` put a TLS-terminating proxy (or
    /// Grafana Alloy's `pyroscope.receive_http`) beside the program.
    pub fn parse(url: &str) -> Result<Target> {
        let bad = |why: &str| Error::InvalidOption(format!("push URL `{url}`: {why}"));
        let uri: hyper::Uri = url
            .parse()
            .map_err(|_| bad("expected http://HOST[:PORT][/PATH]"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(bad(
                    "https is not supported; push over http to a local TLS proxy or Alloy",
                ))
            }
            _ => return Err(bad("expected http://HOST[:PORT][/PATH]")),
        }
        let authority = uri
            .authority()
            .filter(|a| !a.host().is_empty())
            .ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("credentials go in basic_auth, not the URL"));
        }
        // `Uri` keeps the query but drops a fragment; the text says whether there was either.
        if uri.query().is_some() || url.contains('#') {
            return Err(bad("no query or fragment allowed"));
        }
        // What follows the host, read as text: `Authority::port` says none for `host:y`.
        let port = match authority.as_str()[authority.host().len()..].strip_prefix(':') {
            None => 80,
            Some(port) => port
                .parse::<u16>()
                .map_err(|_| bad("the port is not a number up to 65535"))?,
        };
        Ok(Target {
            authority: format!("{}:{port}", authority.host()),
            base_path: uri.path().trim_end_matches('/').to_owned(),
        })
    }
}

/// One window's request.
#[derive(Debug)]
pub struct Request {
    /// Path and query, from `/`.
    pub path_and_query: String,
    /// Headers besides `Host` and `Content-Length`.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The profile type Pyroscope files a mode's profiles under (its `__name__` label).
pub fn profile_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Cpu => "process_cpu",
        Mode::Wall => "wall",
        Mode::Alloc => "memory",
        // A mode the session model adds later is filed under its own name.
        other => other.name(),
    }
}

/// Checks the tenant and credentials (header values), the labels and service name: Pyroscope's label names are `[a-zA-Z_][a-zA-Z0-9_.]*`,
/// and in the ingest API's `name=service{k=v,...}` no value may hold `{`, `}`, `,` or `=`.
pub fn check_labels(config: &Config) -> Result<()> {
    if config.service.is_empty() {
        return Err(Error::InvalidOption(
            "push: the service name is empty".into(),
        ));
    }
    for (name, value) in &config.labels {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(Error::InvalidOption(format!(
                "push: label name `{name}` is not [a-zA-Z_][a-zA-Z0-9_.]*"
            )));
        }
        if name.starts_with("__") || name == "service_name" {
            return Err(Error::InvalidOption(format!(
                "push: label `{name}` is reserved (set the service with .service())"
            )));
        }
        if value.is_empty() {
            return Err(Error::InvalidOption(format!(
                "push: label `{name}` has an empty value"
            )));
        }
    }
    // A header value with a line break or other control character would fail every window's
    // request: refuse it at start instead.
    let headers = [("tenant", &config.tenant), ("credentials", &config.auth)];
    for (what, value) in headers {
        if let Some(value) = value {
            if hyper::header::HeaderValue::from_str(value).is_err() {
                return Err(Error::InvalidOption(format!(
                    "push: the {what} hold a character an HTTP header cannot carry"
                )));
            }
        }
    }
    if config.protocol == Protocol::Ingest {
        let all = std::iter::once(config.service.as_str())
            .chain(config.labels.iter().map(|(_, v)| v.as_str()));
        for text in all {
            if text.contains(['{', '}', ',', '=']) {
                return Err(Error::InvalidOption(format!(
                    "push: `{text}` cannot go in the ingest API's name (no {{ }} , =); use Protocol::Connect"
                )));
            }
        }
    }
    Ok(())
}

/// The ingest API's `name`: `service{k=v,...}` (just `service` without labels).
pub fn ingest_name(config: &Config) -> String {
    if config.labels.is_empty() {
        return config.service.clone();
    }
    let labels: Vec<String> = config
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{}{{{}}}", config.service, labels.join(","))
}

/// Seconds since the Unix epoch.
fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// A profile's id, unique per process and window (the window's start in nanoseconds, a counter
/// and the process id), shaped like a UUID as Pyroscope's SDKs send.
fn profile_id(from: SystemTime, seq: u64) -> String {
    let nanos = from
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    let pid = u64::from(std::process::id());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        (nanos >> 32) as u32,
        (nanos >> 16) as u16,
        nanos as u16,
        seq as u16,
        (pid << 16) ^ (seq >> 16) & 0xffff_ffff_ffff
    )
}

/// The request pushing `pprof` (a gzipped profile of `from..until`) by `config.protocol`.
pub fn build(
    config: &Config,
    auth: Option<&str>,
    pprof: Vec<u8>,
    from: SystemTime,
    until: SystemTime,
    seq: u64,
) -> Request {
    let mut headers = vec![("user-agent", format!("prof/{}", prof_session::VERSION))];
    if let Some(auth) = auth {
        headers.push(("authorization", auth.to_owned()));
    }
    if let Some(tenant) = &config.tenant {
        headers.push(("x-scope-orgid", tenant.clone()));
    }
    let base = &config.target.base_path;
    match config.protocol {
        Protocol::Connect => {
            headers.push(("content-type", "application/proto".into()));
            headers.push(("connect-protocol-version", "1".into()));
            let mut labels = vec![
                LabelPair {
                    name: "__name__".into(),
                    value: profile_name(config.mode).into(),
                },
                LabelPair {
                    name: "service_name".into(),
                    value: config.service.clone(),
                },
            ];
            labels.extend(config.labels.iter().map(|(k, v)| LabelPair {
                name: k.clone(),
                value: v.clone(),
            }));
            let body = PushRequest {
                series: vec![RawProfileSeries {
                    labels,
                    samples: vec![RawSample {
                        raw_profile: pprof,
                        id: profile_id(from, seq),
                    }],
                }],
            }
            .encode_to_vec();
            Request {
                path_and_query: format!("{base}{CONNECT_PATH}"),
                headers,
                body,
            }
        }
        Protocol::Ingest => {
            headers.push(("content-type", "application/octet-stream".into()));
            let name = ingest_name(config);
            let rate = (1.0 / config.interval.as_secs_f64().max(1e-9)).round() as u64;
            // `until` is exclusive in whole seconds: a window never ends before it starts.
            let (from_s, until_s) = (unix_seconds(from), unix_seconds(until));
            Request {
                path_and_query: format!(
                    "{base}{INGEST_PATH}?name={}&from={from_s}&until={}&format=pprof&sampleRate={rate}&spyName={SPY_NAME}",
                    utf8_percent_encode(&name, QUERY),
                    until_s.max(from_s + 1)
                ),
                headers,
                body: pprof,
            }
        }
    }
}

/// The `Authorization` header's value for basic credentials.
pub fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {token}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config(protocol: Protocol) -> Config {
        let mut c = crate::push::Pyroscope::new("http://example.test:4040/base/")
            .service("checkout")
            .label("region", "eu")
            .label("pod", "a-1")
            .protocol(protocol)
            .tenant("org 1")
            .into_config()
            .unwrap();
        c.interval = Duration::from_millis(10);
        c
    }

    #[test]
    fn header_values_that_http_cannot_carry_are_refused_at_start() {
        let start = |p: crate::push::Pyroscope| p.service("s").into_config();
        let p = || crate::push::Pyroscope::new("http://x:4040");
        assert!(start(p().tenant("org\r\nx-evil: 1")).is_err());
        assert!(start(p().bearer_token("t\n")).is_err());
        assert!(
            start(p().basic_auth("u", "p\n")).is_ok(),
            "base64 carries any password"
        );
        assert!(start(p().tenant("org 1")).is_ok());
    }

    #[test]
    fn urls_are_taken_apart_and_https_refused() {
        let t = Target::parse("http://127.0.0.1:4040").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.base_path.as_str()),
            ("127.0.0.1:4040", "")
        );
        let t = Target::parse("http://pyro/x/").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.base_path.as_str()),
            ("pyro:80", "/x")
        );
        let t = Target::parse("http://[::1]:9/").unwrap();
        assert_eq!(t.authority, "[::1]:9");
        for bad in [
            "https://x",
            "x:4040",
            "http://",
            "http://u:p@x",
            "http://x:y",
            "http://x/?a=1",
            "http://x/#top",
            "http://x/a b",
            "http://x:99999",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ingest_request_names_the_series_with_its_labels() {
        let c = config(Protocol::Ingest);
        let from = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let r = build(
            &c,
            Some("Bearer t"),
            vec![1, 2, 3],
            from,
            from + Duration::from_secs(10),
            0,
        );
        assert_eq!(
            r.path_and_query,
            "/base/ingest?name=checkout%7Bregion%3Deu%2Cpod%3Da-1%7D&from=1700000000&until=1700000010&format=pprof&sampleRate=100&spyName=prof"
        );
        assert_eq!(r.body, [1, 2, 3]);
        assert!(r.headers.contains(&("authorization", "Bearer t".into())));
        assert!(r.headers.contains(&("x-scope-orgid", "org 1".into())));
    }

    #[test]
    fn connect_request_is_a_push_request_with_labels() {
        let c = config(Protocol::Connect);
        let from = UNIX_EPOCH + Duration::from_secs(5);
        let r = build(&c, None, vec![9; 4], from, from, 7);
        assert_eq!(r.path_and_query, "/base/push.v1.PusherService/Push");
        assert!(r
            .headers
            .contains(&("content-type", "application/proto".into())));
        let decoded = PushRequest::decode(&r.body[..]).unwrap();
        let series = &decoded.series[0];
        let labels: Vec<(&str, &str)> = series
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                ("__name__", "process_cpu"),
                ("service_name", "checkout"),
                ("region", "eu"),
                ("pod", "a-1")
            ]
        );
        assert_eq!(series.samples[0].raw_profile, [9; 4]);
        assert_eq!(series.samples[0].id.len(), 36);
    }

    #[test]
    fn bad_labels_are_refused_with_a_reason() {
        let refuse = |p: crate::push::Pyroscope| p.into_config().unwrap_err().to_string();
        let base = || crate::push::Pyroscope::new("http://x:1");
        assert!(refuse(base().service("")).contains("service name is empty"));
        assert!(refuse(base().label("1a", "v")).contains("not [a-zA-Z_]"));
        assert!(refuse(base().label("__name__", "v")).contains("reserved"));
        assert!(refuse(base().label("k", "a,b").protocol(Protocol::Ingest))
            .contains("Protocol::Connect"));
        assert!(base()
            .label("k", "a,b")
            .protocol(Protocol::Connect)
            .into_config()
            .is_ok());
    }

    #[test]
    fn basic_auth_is_base64_of_user_colon_password() {
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }
}
