//! A reader of pprof's `profile.proto` in its protobuf wire form that keeps the bytes where they
//! are. Decoding the whole message (prost) made a heap object of every sample, line
//! and string: about 75 times the gzipped size for a million distinct names. Here the samples are
//! read one at a time straight from the bytes, and the string, function and location tables are
//! the places of their entries (4 bytes each: where the entry's field starts; 8 with its end
//! took 12 MB more for a million names), decoded when the importer asks for one.
//!
//! Bad input is an `Err` with a one-line reason; nothing here panics on any bytes.

use std::collections::HashMap;

/// A field's value as the wire carries it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    /// Wire type 0 (and the fixed-width types 1 and 5, widened).
    Int(u64),
    /// Wire type 2: bytes, a string, a message or a packed repeated field.
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    /// The value as an integer; a length-delimited value where one is expected is an error.
    pub(super) fn int(self) -> Result<u64, String> {
        match self {
            Value::Int(v) => Ok(v),
            Value::Bytes(_) => Err("a length-delimited value where a number belongs".into()),
        }
    }

    /// The value as a signed 64-bit integer (two's complement, as protobuf's `int64`).
    pub(super) fn i64(self) -> Result<i64, String> {
        self.int().map(|v| v as i64)
    }

    /// The value as bytes (a message or a string).
    pub(super) fn bytes(self) -> Result<&'a [u8], String> {
        match self {
            Value::Bytes(b) => Ok(b),
            Value::Int(_) => Err("a number where a message or string belongs".into()),
        }
    }

    /// Calls `f` with each number of a repeated integer field, packed or not.
    pub(super) fn each_int(self, mut f: impl FnMut(u64)) -> Result<(), String> {
        match self {
            Value::Int(v) => f(v),
            Value::Bytes(packed) => {
                let mut reader = Fields::new(packed);
                while reader.pos < packed.len() {
                    f(reader.varint()?);
                }
            }
        }
        Ok(())
    }
}

/// The fields of one message, in order.
pub(super) struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    /// The fields of the message `bytes`.
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Fields { bytes, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err("the input ends inside a number".into());
            };
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err("a number longer than 64 bits".into());
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a number longer than 64 bits".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or("a field runs past the end of its message")?;
        let taken = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(taken)
    }

    /// The next field: its number, and where its value starts in the message, and the value.
    pub(super) fn next_field(&mut self) -> Result<Option<(u64, usize, Value<'a>)>, String> {
        if self.pos >= self.bytes.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (number, wire) = (key >> 3, key & 7);
        if number == 0 {
            return Err("a field numbered 0".into());
        }
        let start = self.pos;
        let value = match wire {
            0 => Value::Int(self.varint()?),
            1 => Value::Int(u64::from_le_bytes(
                self.take(8)?.try_into().map_err(|_| "a short fixed64")?,
            )),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "a length too large")?;
                let start_of_bytes = self.pos;
                let bytes = self.take(len)?;
                return Ok(Some((number, start_of_bytes, Value::Bytes(bytes))));
            }
            5 => Value::Int(u64::from(u32::from_le_bytes(
                self.take(4)?.try_into().map_err(|_| "a short fixed32")?,
            ))),
            other => return Err(format!("wire type {other} (groups are not pprof)")),
        };
        Ok(Some((number, start, value)))
    }
}

/// Where a table's entries lie in the profile's bytes, and how their ids find them.
#[derive(Default)]
pub(super) struct Table {
    /// Where each entry's field (its key) starts in the profile's bytes.
    places: Vec<u32>,
    /// Id to entry, once the ids stop being 1, 2, 3, ... in order (what Go and prof write,
    /// which then needs no map).
    ids: Option<HashMap<u64, u32>>,
}

impl Table {
    fn push(&mut self, id: u64, place: u32) -> Result<(), String> {
        let index = u32::try_from(self.places.len()).map_err(|_| "a table above 2^32 entries")?;
        self.places.push(place);
        match &mut self.ids {
            None if id == u64::from(index) + 1 => {}
            None => {
                let mut ids: HashMap<u64, u32> =
                    (0..index).map(|i| (u64::from(i) + 1, i)).collect();
                ids.insert(id, index);
                self.ids = Some(ids);
            }
            Some(ids) => {
                // As decoding into a map would: the last entry with an id wins.
                ids.insert(id, index);
            }
        }
        Ok(())
    }

    /// The index of the entry with `id`.
    pub(super) fn find(&self, id: u64) -> Option<usize> {
        match &self.ids {
            None => usize::try_from(id.checked_sub(1)?)
                .ok()
                .filter(|&i| i < self.places.len()),
            Some(ids) => ids.get(&id).map(|&i| i as usize),
        }
    }

    /// The number of entries.
    pub(super) fn len(&self) -> usize {
        self.places.len()
    }
}

/// A `ValueType`: indices of its type and unit strings.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ValueType {
    pub kind: i64,
    pub unit: i64,
}

/// A `Mapping`, decoded (mappings are few).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Mapping {
    pub id: u64,
    pub memory_start: u64,
    pub memory_limit: u64,
    pub file_offset: u64,
    pub filename: i64,
    pub build_id: i64,
}

/// A `Function`'s fields the importer reads.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Function {
    pub name: i64,
    pub filename: i64,
}

/// A `Location`'s fields, its lines left in the bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Location<'a> {
    pub mapping_id: u64,
    pub address: u64,
    lines: &'a [u8],
    line_count: usize,
}

/// A `Line`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Line {
    pub function_id: u64,
    pub line: i64,
}

impl<'a> Location<'a> {
    /// The number of lines (functions, the inlined ones first).
    pub(super) fn line_count(&self) -> usize {
        self.line_count
    }

    /// The lines, in order.
    pub(super) fn lines(&self) -> Result<Vec<Line>, String> {
        let mut lines = Vec::with_capacity(self.line_count);
        let mut fields = Fields::new(self.lines);
        while let Some((number, _, value)) = fields.next_field()? {
            if number == 4 {
                let mut line = Line::default();
                let mut inner = Fields::new(value.bytes()?);
                while let Some((number, _, value)) = inner.next_field()? {
                    match number {
                        1 => line.function_id = value.int()?,
                        2 => line.line = value.i64()?,
                        _ => {}
                    }
                }
                lines.push(line);
            }
        }
        Ok(lines)
    }
}

/// A `Label`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Label {
    pub key: i64,
    pub str: i64,
    pub num: i64,
}

/// One sample, decoded into buffers the caller reuses.
#[derive(Debug, Default)]
pub(super) struct Sample {
    pub location_id: Vec<u64>,
    pub value: Vec<i64>,
    pub label: Vec<Label>,
}

/// A profile's scalar fields and the places of its tables; the samples stay in the bytes.
pub(super) struct Profile<'a> {
    bytes: &'a [u8],
    pub sample_type: Vec<ValueType>,
    pub samples: usize,
    pub mapping: Vec<Mapping>,
    pub locations: Table,
    pub functions: Table,
    /// Where each string's field starts.
    strings: Vec<u32>,
    pub time_nanos: i64,
    pub duration_nanos: i64,
    pub period_type: Option<ValueType>,
    pub period: i64,
    pub default_sample_type: i64,
}

fn value_type(bytes: &[u8]) -> Result<ValueType, String> {
    let mut t = ValueType::default();
    let mut fields = Fields::new(bytes);
    while let Some((number, _, value)) = fields.next_field()? {
        match number {
            1 => t.kind = value.i64()?,
            2 => t.unit = value.i64()?,
            _ => {}
        }
    }
    Ok(t)
}

fn mapping(bytes: &[u8]) -> Result<Mapping, String> {
    let mut m = Mapping::default();
    let mut fields = Fields::new(bytes);
    while let Some((number, _, value)) = fields.next_field()? {
        match number {
            1 => m.id = value.int()?,
            2 => m.memory_start = value.int()?,
            3 => m.memory_limit = value.int()?,
            4 => m.file_offset = value.int()?,
            5 => m.filename = value.i64()?,
            6 => m.build_id = value.i64()?,
            _ => {}
        }
    }
    Ok(m)
}

/// The `id` (field 1) of a function or location message.
fn id_of(bytes: &[u8]) -> Result<u64, String> {
    let mut id = 0;
    let mut fields = Fields::new(bytes);
    while let Some((number, _, value)) = fields.next_field()? {
        if number == 1 {
            id = value.int()?;
        }
    }
    Ok(id)
}

impl<'a> Profile<'a> {
    /// Reads the profile's tables and scalars, checking every field's framing and the strings'
    /// UTF-8 on the way.
    pub(super) fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        let mut p = Profile {
            bytes,
            sample_type: Vec::new(),
            samples: 0,
            mapping: Vec::new(),
            locations: Table::default(),
            functions: Table::default(),
            strings: Vec::new(),
            time_nanos: 0,
            duration_nanos: 0,
            period_type: None,
            period: 0,
            default_sample_type: 0,
        };
        let mut scratch = Sample::default();
        let mut fields = Fields::new(bytes);
        loop {
            let at = fields.pos;
            let Some((number, _, value)) = fields.next_field()? else {
                break;
            };
            let place = || u32::try_from(at).map_err(|_| "a profile above 4 GiB");
            match number {
                1 => p.sample_type.push(value_type(value.bytes()?)?),
                2 => {
                    read_sample(value.bytes()?, &mut scratch)?;
                    p.samples += 1;
                }
                3 => p.mapping.push(mapping(value.bytes()?)?),
                4 => p.locations.push(id_of(value.bytes()?)?, place()?)?,
                5 => p.functions.push(id_of(value.bytes()?)?, place()?)?,
                6 => {
                    std::str::from_utf8(value.bytes()?)
                        .map_err(|_| format!("string {} is not UTF-8", p.strings.len()))?;
                    p.strings.push(place()?);
                }
                9 => p.time_nanos = value.i64()?,
                10 => p.duration_nanos = value.i64()?,
                11 => p.period_type = Some(value_type(value.bytes()?)?),
                12 => p.period = value.i64()?,
                14 => p.default_sample_type = value.i64()?,
                _ => {}
            }
        }
        Ok(p)
    }

    /// The bytes of the length-delimited field that starts at `place` (one `parse` read).
    fn span(&self, place: u32) -> &'a [u8] {
        let mut fields = Fields {
            bytes: self.bytes,
            pos: place as usize,
        };
        match fields.next_field() {
            Ok(Some((_, _, Value::Bytes(bytes)))) => bytes,
            // Not reached: `parse` read a length-delimited field there.
            _ => &[],
        }
    }

    /// The string table's entry `index`.
    pub(super) fn string(&self, index: i64) -> Option<&'a str> {
        let span = *self.strings.get(usize::try_from(index).ok()?)?;
        // UTF-8: checked by `parse`.
        std::str::from_utf8(self.span(span)).ok()
    }

    /// The function at `index` of the function table.
    pub(super) fn function(&self, index: usize) -> Result<Function, String> {
        let mut f = Function::default();
        let mut fields = Fields::new(self.span(self.functions.places[index]));
        while let Some((number, _, value)) = fields.next_field()? {
            match number {
                2 => f.name = value.i64()?,
                4 => f.filename = value.i64()?,
                _ => {}
            }
        }
        Ok(f)
    }

    /// The location at `index` of the location table.
    pub(super) fn location(&self, index: usize) -> Result<Location<'a>, String> {
        let body = self.span(self.locations.places[index]);
        let mut l = Location {
            lines: body,
            ..Location::default()
        };
        let mut fields = Fields::new(body);
        while let Some((number, _, value)) = fields.next_field()? {
            match number {
                2 => l.mapping_id = value.int()?,
                3 => l.address = value.int()?,
                4 => {
                    value.bytes()?;
                    l.line_count += 1;
                }
                _ => {}
            }
        }
        Ok(l)
    }

    /// Calls `f` with each sample in order, decoded into one reused [`Sample`].
    pub(super) fn for_each_sample(
        &self,
        mut f: impl FnMut(usize, &Sample) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut sample = Sample::default();
        let mut n = 0;
        let mut fields = Fields::new(self.bytes);
        while let Some((number, _, value)) = fields.next_field()? {
            if number == 2 {
                read_sample(value.bytes()?, &mut sample)?;
                f(n, &sample)?;
                n += 1;
            }
        }
        Ok(())
    }
}

fn read_sample(bytes: &[u8], sample: &mut Sample) -> Result<(), String> {
    sample.location_id.clear();
    sample.value.clear();
    sample.label.clear();
    let mut fields = Fields::new(bytes);
    while let Some((number, _, value)) = fields.next_field()? {
        match number {
            1 => value.each_int(|id| sample.location_id.push(id))?,
            2 => value.each_int(|v| sample.value.push(v as i64))?,
            3 => {
                let mut label = Label::default();
                let mut inner = Fields::new(value.bytes()?);
                while let Some((number, _, value)) = inner.next_field()? {
                    match number {
                        1 => label.key = value.i64()?,
                        2 => label.str = value.i64()?,
                        3 => label.num = value.i64()?,
                        _ => {}
                    }
                }
                sample.label.push(label);
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::pprof::proto;
    use prost::Message;

    /// What prost writes, this reader reads: tables, scalars and samples, packed or not.
    #[test]
    fn a_prost_encoded_profile_reads_back_field_by_field() {
        let profile = proto::Profile {
            sample_type: vec![proto::ValueType { r#type: 1, unit: 2 }],
            sample: vec![
                proto::Sample {
                    location_id: vec![2, 1],
                    value: vec![-5, 7],
                    label: vec![proto::Label {
                        key: 3,
                        str: 0,
                        num: 42,
                        num_unit: 0,
                    }],
                },
                proto::Sample::default(),
            ],
            location: vec![
                proto::Location {
                    id: 1,
                    mapping_id: 9,
                    address: u64::MAX,
                    line: vec![
                        proto::Line {
                            function_id: 1,
                            line: -1,
                        },
                        proto::Line {
                            function_id: 7,
                            line: 3,
                        },
                    ],
                },
                proto::Location {
                    id: 5,
                    ..proto::Location::default()
                },
            ],
            function: vec![proto::Function {
                id: 1,
                name: 4,
                filename: 3,
                ..proto::Function::default()
            }],
            string_table: vec!["".into(), "cpu".into(), "ns".into(), "é".into(), "f".into()],
            time_nanos: -3,
            period: 10,
            default_sample_type: 1,
            ..proto::Profile::default()
        };
        let bytes = profile.encode_to_vec();
        let p = Profile::parse(&bytes).unwrap();
        assert_eq!((p.samples, p.strings.len(), p.string(3)), (2, 5, Some("é")));
        assert_eq!((p.time_nanos, p.period, p.default_sample_type), (-3, 10, 1));
        assert_eq!((p.sample_type[0].kind, p.sample_type[0].unit), (1, 2));
        assert_eq!(
            (p.locations.find(1), p.locations.find(5)),
            (Some(0), Some(1))
        );
        assert_eq!((p.locations.find(2), p.functions.find(1)), (None, Some(0)));
        let l = p.location(0).unwrap();
        assert_eq!((l.mapping_id, l.address, l.line_count()), (9, u64::MAX, 2));
        let lines = l.lines().unwrap();
        assert_eq!((lines[0].line, lines[1].function_id), (-1, 7));
        let f = p.function(0).unwrap();
        assert_eq!((f.name, f.filename), (4, 3));
        let mut seen = Vec::new();
        p.for_each_sample(|n, s| {
            seen.push((n, s.location_id.clone(), s.value.clone(), s.label.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [(0, vec![2, 1], vec![-5, 7], 1), (1, vec![], vec![], 0)]
        );
    }

    #[test]
    fn truncated_and_malformed_bytes_are_errors() {
        let bytes = proto::Profile {
            string_table: vec!["".into(), "main".into()],
            ..proto::Profile::default()
        }
        .encode_to_vec();
        // Cut anywhere but between the two strings.
        for cut in (1..bytes.len()).filter(|&cut| cut != 2) {
            assert!(Profile::parse(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for bad in [
            &b"\x00"[..],
            b"\x0b",
            b"\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
        ] {
            assert!(Profile::parse(bad).is_err(), "{bad:?}");
        }
        assert!(
            Profile::parse(b"\x32\x01\xff").is_err(),
            "a string not UTF-8"
        );
    }
}
