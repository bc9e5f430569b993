//! The messages of Pyroscope's push API, written by hand from its published `api/push/v1/
//! push.proto` (package `push.v1`) and `api/types/v1/types.proto` (`types.v1.LabelPair`), so no
//! `protoc` is needed. Field numbers are those files'.

/// `push.v1.PushRequest`: the body of `POST /push.v1.PusherService/Push`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    /// Profiles, each with the labels of its series.
    #[prost(message, repeated, tag = "1")]
    pub series: Vec<RawProfileSeries>,
}

/// `push.v1.RawProfileSeries`: one series (its labels) and its profiles.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawProfileSeries {
    /// The labels naming the series: `__name__`, `service_name` and the user's.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<LabelPair>,
    /// The profiles.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<RawSample>,
}

/// `push.v1.RawSample`: one profile's bytes (pprof, gzipped or not) and its id.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RawSample {
    /// The pprof profile.
    #[prost(bytes = "vec", tag = "1")]
    pub raw_profile: Vec<u8>,
    /// A unique id of the profile.
    #[prost(string, tag = "2")]
    pub id: String,
}

/// `types.v1.LabelPair`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LabelPair {
    /// The label's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its value.
    #[prost(string, tag = "2")]
    pub value: String,
}
