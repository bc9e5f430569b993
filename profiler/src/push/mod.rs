//! Continuous profiling into Grafana Pyroscope: [`Pyroscope`] starts an [`Agent`] that profiles
//! the process in windows ([`DEFAULT_WINDOW`] at [`DEFAULT_FREQUENCY_HZ`], as fleet agents
//! default) and pushes each window as gzipped pprof, labelled with `service_name` and the
//! user's labels, to Pyroscope's Connect API (`POST /push.v1.PusherService/Push`, a
//! `push.v1.PushRequest`) or its ingest API (`POST /ingest?name=service{k=v}&from=&until=
//! &format=pprof`).
//!
//! The program is never held up: each window is encoded by the agent's own thread and handed to
//! a queue of at most [`QUEUE_WINDOWS`]; a second thread sends them, each request bounded by
//! [`Pyroscope::timeout`], retried with exponential backoff (from [`FIRST_BACKOFF`], at most
//! [`MAX_ATTEMPTS`] tries) while the server is down or answers 5xx/429. When the queue is full
//! the oldest window is dropped and counted ([`Stats::dropped`]). [`Agent::stop`] (or dropping
//! the agent) ends the window under way, pushes it and what is queued, and returns within
//! [`Pyroscope::timeout`] plus the time to stop the sampler and encode that window, whatever
//! the server does.
//!
//! Windows are sampler sessions run back to back: between two, the time to stop the sampler
//! and start it again is not sampled ([`Stats::unsampled`] adds it up); a window is symbolized
//! and encoded once the next one runs. Only plain
//! `http://` is spoken (see `docs/production.md` for TLS).

mod agent;
mod http;
mod proto;
mod request;

pub use agent::Agent;

use prof_session::{Mode, Result};
use std::time::Duration;

/// The default length of a window: 10 s, as Pyroscope's agents push.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(10);
/// The default sampling rate: 100 Hz, as Pyroscope's and Go's agents sample.
pub const DEFAULT_FREQUENCY_HZ: u32 = 100;
/// The default bound on one request (connect, send, answer), and so on [`Agent::stop`]'s flush.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Encoded windows waiting to be sent, at most; a newer one pushes the oldest out.
pub const QUEUE_WINDOWS: usize = 4;
/// Tries per window: the first and its retries.
pub const MAX_ATTEMPTS: u32 = 4;
/// The wait before the first retry; each further one waits twice as long.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Samples one window keeps at most (later ones are dropped and counted in the profile's
/// `dropped_samples`): bounds the sampler's memory at about 7 bytes a sample plus the distinct
/// stacks.
pub const WINDOW_MAX_SAMPLES: usize = 200_000;

/// Which of Pyroscope's APIs windows are pushed to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// `POST /push.v1.PusherService/Push`: a protobuf `push.v1.PushRequest` (Connect unary over
    /// HTTP/1.1), the labels as label pairs. What Pyroscope's own SDKs and Alloy use.
    #[default]
    Connect,
    /// `POST /ingest?name=service{k=v,...}&from=S&until=S&format=pprof&sampleRate=HZ
    /// &spyName=prof` with the gzipped pprof as the body.
    Ingest,
}

/// The settings of an agent, checked; built by [`Pyroscope`].
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub target: request::Target,
    pub service: String,
    pub labels: Vec<(String, String)>,
    pub mode: Mode,
    pub window: Duration,
    pub interval: Duration,
    pub timeout: Duration,
    pub protocol: Protocol,
    pub tenant: Option<String>,
    pub auth: Option<String>,
}

/// Builds a push agent: `Pyroscope::new("http://pyroscope:4040").service("checkout")
/// .label("region", "eu").start()?`.
#[derive(Clone, Debug)]
#[must_use = "a Pyroscope builder does nothing until start()"]
pub struct Pyroscope {
    url: String,
    service: String,
    labels: Vec<(String, String)>,
    mode: Mode,
    window: Duration,
    frequency_hz: u32,
    timeout: Duration,
    protocol: Protocol,
    tenant: Option<String>,
    auth: Option<String>,
}

impl Pyroscope {
    /// An agent pushing to the Pyroscope server at `url` (`http://HOST[:PORT][/PATH]`), for a
    /// service named after the program until [`Pyroscope::service`] names it.
    pub fn new(url: impl Into<String>) -> Pyroscope {
        let service = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".into());
        Pyroscope {
            url: url.into(),
            service,
            labels: Vec::new(),
            mode: Mode::Cpu,
            window: DEFAULT_WINDOW,
            frequency_hz: DEFAULT_FREQUENCY_HZ,
            timeout: DEFAULT_TIMEOUT,
            protocol: Protocol::default(),
            tenant: None,
            auth: None,
        }
    }

    /// The service's name: the `service_name` label.
    pub fn service(mut self, name: impl Into<String>) -> Self {
        self.service = name.into();
        self
    }

    /// Adds a label to every window (`[a-zA-Z_][a-zA-Z0-9_.]*`, not `service_name` nor
    /// `__`-prefixed); a second value for the same name replaces the first.
    pub fn label(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        match self.labels.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.labels.push((name, value)),
        }
        self
    }

    /// What to profile: CPU time (the default), wall time, or allocations (which needs
    /// `prof::alloc::Sampling` as the global allocator; each window then holds the allocations
    /// made in it, and its in-use figures those of them still live at its end).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The length of a window: how often a profile is pushed ([`DEFAULT_WINDOW`]; at least
    /// 100 ms).
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Samples per second of each thread's CPU (or wall) time ([`DEFAULT_FREQUENCY_HZ`]).
    pub fn frequency(mut self, hz: u32) -> Self {
        self.frequency_hz = hz;
        self
    }

    /// HTTP basic credentials (Grafana Cloud: the instance id and an API token).
    pub fn basic_auth(mut self, user: impl AsRef<str>, password: impl AsRef<str>) -> Self {
        self.auth = Some(request::basic(user.as_ref(), password.as_ref()));
        self
    }

    /// A bearer token, sent as `Authorization: Bearer TOKEN` (replaces basic credentials).
    pub fn bearer_token(mut self, token: impl AsRef<str>) -> Self {
        self.auth = Some(format!("Bearer {}", token.as_ref()));
        self
    }

    /// The tenant of a multi-tenant Pyroscope: the `X-Scope-OrgID` header.
    pub fn tenant(mut self, org_id: impl Into<String>) -> Self {
        self.tenant = Some(org_id.into());
        self
    }

    /// The longest one request may take, connect to answer ([`DEFAULT_TIMEOUT`]); also how long
    /// [`Agent::stop`] may spend pushing what is left.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Which API to push to ([`Protocol::Connect`] by default).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Checks the settings and starts the agent: the first window starts before this returns.
    /// Fails with [`crate::Error::InvalidOption`] for a URL, label, window or frequency that
    /// cannot be used, and as [`crate::Profiler::start`] does (another session running, ...).
    pub fn start(self) -> Result<Agent> {
        Agent::start(self.into_config()?)
    }

    pub(crate) fn into_config(self) -> Result<Config> {
        let invalid = |m: String| Err(prof_session::Error::InvalidOption(format!("push: {m}")));
        if self.window < Duration::from_millis(100) {
            return invalid(format!("window {:?} is shorter than 100 ms", self.window));
        }
        if !(1..=10_000).contains(&self.frequency_hz) {
            return invalid(format!(
                "frequency {} Hz is not within 1..=10000",
                self.frequency_hz
            ));
        }
        if self.timeout.is_zero() {
            return invalid("timeout is zero".into());
        }
        let config = Config {
            target: request::Target::parse(&self.url)?,
            service: self.service,
            labels: self.labels,
            mode: self.mode,
            window: self.window,
            interval: Duration::from_secs(1) / self.frequency_hz,
            timeout: self.timeout,
            protocol: self.protocol,
            tenant: self.tenant,
            auth: self.auth,
        };
        request::check_labels(&config)?;
        Ok(config)
    }
}

/// What an agent did so far ([`Agent::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Windows profiled and encoded (handed to the queue).
    pub windows: u64,
    /// Windows the server accepted (a 2xx answer).
    pub pushed: u64,
    /// Windows given up: refused (4xx but 429) or still failing after [`MAX_ATTEMPTS`] tries.
    pub failed: u64,
    /// Windows never sent: pushed out of a full queue, or still queued when stop's time ran
    /// out.
    pub dropped: u64,
    /// Requests repeated after a failed try.
    pub retried: u64,
    /// Request body bytes of the windows the server accepted.
    pub bytes_sent: u64,
    /// Time between windows that no window covers (stopping and restarting the sampler), added
    /// up.
    pub unsampled: Duration,
    /// The last failure, as a line (`None` until one happens).
    pub last_error: Option<String>,
}
