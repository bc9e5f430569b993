//! The messages of pprof's `profile.proto` (package `perftools.profiles`, proto3), written by hand
//! from the public specification so no `protoc` is needed. Field numbers are the specification's.
//! Fields `prof` neither writes nor reads (breakdowns, label sets, `drop_frames`...) are left out:
//! prost skips unknown fields when decoding.

/// A whole profile. `string_table[0]` must be `""`; every name is an index into it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each `Sample::value` entry measures.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Binaries and libraries, by address range.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Program locations (one per instruction address).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions referenced by locations' lines.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string, deduplicated.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Collection start, nanoseconds since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long the collection ran.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// The kind of events between samples.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The number of events (of `period_type`) between samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The type (string index) of the preferred sample value; 0 means the last one.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A measurement's kind and unit, both string indices.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ValueType {
    /// E.g. `cpu`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// E.g. `nanoseconds`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// Values measured at one stack.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per `Profile::sample_type`.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Extra context, e.g. the thread.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key with a string or numeric value.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Label {
    /// String index of the key.
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String index of the value, when it is a string.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// The value, when it is a number.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// String index of `num`'s unit.
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A binary or library mapped into memory.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Mapping {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// First address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// Address just past the end.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// File offset of `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// String index of the file name.
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// String index of the build id.
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Locations in it already carry function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// ... and file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// ... and line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// ... and inlined frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// One program location: an address and the (possibly inlined) lines at it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping it lies in, or 0.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The instruction address, or 0.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Innermost (inlined) first; the last entry is the real caller.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// A function at a source line.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The line, or 0.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// A function.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Function {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// String index of the human-readable name.
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// String index of the system (mangled) name.
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// String index of the source file.
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function, or 0.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
