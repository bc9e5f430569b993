//! The session's dense tables of strings and frames (a million distinct names).
//!
//! A `Vec<String>` costs 24 bytes plus a heap block per name, and a `Vec<Frame>` 48 bytes per
//! frame, most of it `Option` padding. [`Strings`] keeps every text in one buffer with the end of
//! each; [`Frames`] keeps the frames in columns, each optional column empty until a frame has the
//! field, so frames known by name only (folded stacks) take 4 bytes each.

use super::ids::StrId;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Index;

/// One frame: a function at a place in the code. Inlined calls are frames of their own, marked
/// [`Frame::inlined`], sharing the caller's [`Frame::address`]. A session stores its frames in
/// columns ([`Frames`]) and hands them out by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// The demangled function name; where no symbol names the code, its object's file name
    /// and file address (`gzip+0x4290`), or a hex address when it is in no object.
    pub name: StrId,
    /// The source file, when debug info names one.
    pub file: Option<StrId>,
    /// The line in [`Frame::file`], when known.
    pub line: Option<u32>,
    /// The binary or shared library the code lives in.
    pub module: Option<StrId>,
    /// The instruction address sampled, when the frame came from a native stack.
    pub address: Option<u64>,
    /// True when this call was inlined into the frame below it (its caller).
    pub inlined: bool,
}

/// Interned strings, all in one buffer: string `i` is `text[ends[i - 1]..ends[i]]`. Serialized
/// as a sequence of strings, as a `Vec<String>` is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Strings {
    text: String,
    ends: Vec<u32>,
}

impl Strings {
    /// The number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        Some(&self.text[start..end])
    }

    /// The first string (`""` in a session).
    pub fn first(&self) -> Option<&str> {
        self.get(0)
    }

    /// Appends `text` (without looking for an equal one: the session builder interns) and
    /// returns its id. Inputs are bounded far below 4 GiB ([`crate::import::MAX_DECOMPRESSED`]),
    /// and so is the buffer.
    pub fn push(&mut self, text: &str) -> StrId {
        let id = StrId(self.ends.len() as u32);
        self.text.push_str(text);
        let end = u32::try_from(self.text.len()).expect("interned strings above 4 GiB");
        self.ends.push(end);
        id
    }

    /// Every string, in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + '_ {
        (0..self.len()).map(|i| &self[i])
    }
}

impl Index<usize> for Strings {
    type Output = str;

    fn index(&self, i: usize) -> &str {
        self.get(i).expect("string index out of range")
    }
}

impl<'a> FromIterator<&'a str> for Strings {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut strings = Strings::default();
        for text in iter {
            strings.push(text);
        }
        strings
    }
}

impl Serialize for Strings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = Strings;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of strings")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
                let mut strings = Strings::default();
                while let Some(text) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
                    strings.push(&text);
                }
                Ok(strings)
            }
        }
        deserializer.deserialize_seq(Seq)
    }
}

const INLINED: u8 = 1;
const HAS_FILE: u8 = 2;
const HAS_LINE: u8 = 4;
const HAS_MODULE: u8 = 8;
const HAS_ADDRESS: u8 = 16;

/// Distinct frames, in columns. `name` has a row per frame; `flags` (inlined, and which optional
/// fields are present) and each optional column stay empty until a frame needs them, then hold a
/// row per frame (0 where absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frames {
    name: Vec<StrId>,
    flags: Vec<u8>,
    file: Vec<StrId>,
    line: Vec<u32>,
    module: Vec<StrId>,
    address: Vec<u64>,
}

/// Sets row `row` of a column that may still be empty (all absent), filling absent rows with
/// `fill`.
fn set<T: Copy>(column: &mut Vec<T>, row: usize, value: Option<T>, fill: T) {
    if let Some(value) = value {
        column.resize(row, fill);
        column.push(value);
    } else if !column.is_empty() {
        column.push(fill);
    }
}

impl Frames {
    /// The number of frames.
    pub fn len(&self) -> usize {
        self.name.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.name.is_empty()
    }

    /// Frame `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<Frame> {
        let name = *self.name.get(i)?;
        let flags = self.flags.get(i).copied().unwrap_or(0);
        let has = |bit: u8| flags & bit != 0;
        Some(Frame {
            name,
            file: has(HAS_FILE).then(|| self.file[i]),
            line: has(HAS_LINE).then(|| self.line[i]),
            module: has(HAS_MODULE).then(|| self.module[i]),
            address: has(HAS_ADDRESS).then(|| self.address[i]),
            inlined: flags & INLINED != 0,
        })
    }

    /// Frame `i`; panics when there is none, as indexing a `Vec` does.
    pub fn at(&self, i: usize) -> Frame {
        self.get(i).expect("frame index out of range")
    }

    /// Appends a frame (without looking for an equal one: the session builder interns).
    pub fn push(&mut self, frame: Frame) {
        let row = self.name.len();
        let flags = [
            (frame.inlined, INLINED),
            (frame.file.is_some(), HAS_FILE),
            (frame.line.is_some(), HAS_LINE),
            (frame.module.is_some(), HAS_MODULE),
            (frame.address.is_some(), HAS_ADDRESS),
        ]
        .iter()
        .filter(|&&(set, _)| set)
        .fold(0, |flags, &(_, bit)| flags | bit);
        set(&mut self.flags, row, (flags != 0).then_some(flags), 0);
        set(&mut self.file, row, frame.file, StrId(0));
        set(&mut self.line, row, frame.line, 0);
        set(&mut self.module, row, frame.module, StrId(0));
        set(&mut self.address, row, frame.address, 0);
        self.name.push(frame.name);
    }

    /// Every frame, in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Frame> + DoubleEndedIterator + '_ {
        (0..self.len()).map(|i| self.at(i))
    }
}

impl FromIterator<Frame> for Frames {
    fn from_iter<I: IntoIterator<Item = Frame>>(iter: I) -> Self {
        let mut frames = Frames::default();
        for frame in iter {
            frames.push(frame);
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_keep_each_text_including_empty_ones() {
        let texts = ["", "main", "", "fn_0000001", "ünïcode"];
        let strings: Strings = texts.iter().copied().collect();
        assert_eq!(strings.len(), 5);
        assert!(strings.iter().eq(texts.iter().copied()));
        assert_eq!(&strings[4], "ünïcode");
        assert_eq!(strings.get(5), None);
        let json = serde_json::to_string(&strings).unwrap();
        assert_eq!(json, serde_json::to_string(&texts).unwrap());
        assert_eq!(serde_json::from_str::<Strings>(&json).unwrap(), strings);
    }

    #[test]
    fn frames_read_back_every_field_whichever_columns_exist() {
        let named = |n| Frame {
            name: StrId(n),
            file: None,
            line: None,
            module: None,
            address: None,
            inlined: false,
        };
        let full = Frame {
            name: StrId(3),
            file: Some(StrId(0)),
            line: Some(0),
            module: Some(StrId(2)),
            address: Some(u64::MAX),
            inlined: true,
        };
        let only_line = Frame {
            line: Some(7),
            ..named(5)
        };
        let all = [named(1), named(2), full, only_line, named(4)];
        let frames: Frames = all.iter().copied().collect();
        assert!(frames.iter().eq(all.iter().copied()));
        assert_eq!(frames.get(5), None);
        let names: Frames = [named(1), named(2)].into_iter().collect();
        assert!(names.flags.is_empty() && names.file.is_empty() && names.address.is_empty());
    }
}
