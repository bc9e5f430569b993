//! A small JSON reader for the session file, in place of serde_json's deserializer.
//!
//! The file has one fixed shape, so its reader (`session::file_reader`) walks it with these few
//! non-generic steps (objects key by key, arrays item by item, strings, unsigned integers,
//! booleans, `null`) instead of serde's visitors: serde_json instantiated its deserializer once
//! per struct of the file, about 140 kB of the wasm viewer's code. The same reader serves the
//! `prof` command and the viewer, so they accept exactly the same files.
//!
//! The viewer reads the page's state (its view, transforms and names) with it too.
//!
//! It is strict JSON (RFC 8259): no trailing commas, no comments, strings valid UTF-8 with
//! escapes checked (surrogate pairs included). Errors read as serde_json's did, ending in the
//! position: `invalid type: string "many", expected u32 at line 1 column 120`.

use std::borrow::Cow;
use std::fmt::Display;

/// How deep values the reader skips (unknown fields) may nest before the input is refused,
/// so hostile input cannot overflow the stack. serde_json's limit.
const MAX_DEPTH: u32 = 128;

/// A position in a JSON text, and the steps that read values from it. Each step skips the white
/// space before the value it reads; an error is one line ending in the position.
///
/// ```
/// use prof_session::json::Json;
///
/// let mut json = Json::new(br#"{"names": ["main", "run"], "depth": 2}"#);
/// let (mut names, mut depth) = (Vec::new(), 0);
/// json.object("a map")?;
/// let mut first = true;
/// while let Some(key) = json.key(&mut first)? {
///     match &*key {
///         "names" => names = json.strings()?,
///         "depth" => depth = json.u32()?,
///         _ => json.skip()?,
///     }
/// }
/// json.end()?;
/// assert_eq!((names, depth), (vec!["main".to_owned(), "run".to_owned()], 2));
/// # Ok::<(), String>(())
/// ```
pub struct Json<'a> {
    text: &'a [u8],
    at: usize,
}

/// What an object read by [`Json::fields`] does with a key not among its field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// Refuses it, naming the known fields (serde's `deny_unknown_fields`).
    Deny,
    /// Skips its value.
    Skip,
}

/// The state of an object whose fields are read by index ([`Json::field`]): which of its (at
/// most 64) fields were seen, so a field is read once and the required ones are checked at the
/// end ([`Json::require`]), without one `Option` per field.
#[derive(Debug)]
pub struct Fields<'n> {
    names: &'n [&'n str],
    unknown: Unknown,
    seen: u64,
    first: bool,
}

/// Whether any of the eight bytes of `word` ends a string's plain run: a quote, a backslash or
/// a control character. Exact as a yes or no (the borrows of the subtractions can only mark
/// bytes above one that is special), so a word it passes holds none of them.
fn special_byte_in(word: u64) -> bool {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v;
    let quote = zero_in(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_in(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (quote | backslash | control) & HIGH != 0
}

/// The result of a reading step: the value, or one line saying what is wrong and where.
pub type Step<T> = Result<T, String>;

impl<'a> Json<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a [u8]) -> Self {
        Json { text, at: 0 }
    }

    /// `message` with the position reached: `... at line 3 column 7`.
    #[cold]
    #[inline(never)]
    pub fn error(&self, message: impl Display) -> String {
        // Up to and including the byte the reader stopped at (the one it refuses), as
        // serde_json counted: `{x` is refused at column 2; at the end, the last byte's column.
        let mut before = &self.text[..(self.at + 1).min(self.text.len())];
        if self.at < self.text.len() && before.ends_with(b"\n") {
            before = &before[..before.len() - 1];
        }
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = before.len()
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        format!("{message} at line {line} column {column}")
    }

    /// The next byte that is not white space, not consumed (`None` at the end).
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.text.get(self.at) {
            if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                self.at += 1;
            } else {
                return Some(b);
            }
        }
        None
    }

    /// Checks that nothing but white space follows the top-level value.
    pub fn end(&mut self) -> Step<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }

    /// The error for a value of the wrong kind where `expected` was wanted, naming what was
    /// found (reading past it when it is a string or a number, to quote it).
    #[cold]
    #[inline(never)]
    fn unexpected(&mut self, expected: &str) -> String {
        let found = match self.peek() {
            None => return self.error("EOF while parsing a value"),
            Some(b'"') => {
                self.at += 1;
                match self.string_body() {
                    Ok(s) => format!("string {s:?}"),
                    Err(e) => return e,
                }
            }
            Some(b'{') => "map".to_owned(),
            Some(b'[') => "sequence".to_owned(),
            Some(b'n') => match self.literal(b"null") {
                Ok(()) => "null".to_owned(),
                Err(e) => return e,
            },
            Some(b't') => match self.literal(b"true") {
                Ok(()) => "boolean `true`".to_owned(),
                Err(e) => return e,
            },
            Some(b'f') => match self.literal(b"false") {
                Ok(()) => "boolean `false`".to_owned(),
                Err(e) => return e,
            },
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                match self.number(expected) {
                    Ok(_) => format!(
                        "integer `{}`",
                        String::from_utf8_lossy(&self.text[start..self.at])
                    ),
                    Err(e) => return e,
                }
            }
            Some(_) => return self.error("expected value"),
        };
        self.error(format_args!("invalid type: {found}, expected {expected}"))
    }

    /// Consumes `word` (`null`, `true`, `false`), which the next byte starts.
    fn literal(&mut self, word: &[u8]) -> Step<()> {
        for &b in word {
            match self.text.get(self.at) {
                Some(&c) if c == b => self.at += 1,
                Some(_) => return Err(self.error("expected ident")),
                None => return Err(self.error("EOF while parsing a value")),
            }
        }
        Ok(())
    }

    /// Reads a whole text: the value `read` reads, and nothing after it but white space.
    pub fn parse<T>(text: &'a [u8], read: impl FnOnce(&mut Json<'a>) -> Step<T>) -> Step<T> {
        let mut json = Json::new(text);
        let value = read(&mut json)?;
        json.end()?;
        Ok(value)
    }

    /// An array of strings.
    pub fn strings(&mut self) -> Step<Vec<String>> {
        self.array("a sequence")?;
        let mut strings = Vec::new();
        let mut first = true;
        while self.item(&mut first)? {
            strings.push(self.string()?.into_owned());
        }
        Ok(strings)
    }

    /// Enters an object whose fields are `names` (at most 64), read with [`Json::field`];
    /// `expected` names it for the error when the value is something else.
    pub fn fields<'n>(
        &mut self,
        expected: &str,
        names: &'n [&'n str],
        unknown: Unknown,
    ) -> Step<Fields<'n>> {
        debug_assert!(names.len() <= 64);
        self.object(expected)?;
        Ok(Fields {
            names,
            unknown,
            seen: 0,
            first: true,
        })
    }

    /// The index in its names of the object's next field (its value is next), or `None` after
    /// the closing `}`. A field seen before is refused; other keys are skipped or refused as
    /// `fields` says.
    pub fn field(&mut self, fields: &mut Fields<'_>) -> Step<Option<usize>> {
        while let Some(key) = self.key(&mut fields.first)? {
            match fields.names.iter().position(|name| **name == *key) {
                Some(i) if fields.seen & (1 << i) != 0 => {
                    return Err(self.duplicate(fields.names[i]));
                }
                Some(i) => {
                    fields.seen |= 1 << i;
                    return Ok(Some(i));
                }
                None if fields.unknown == Unknown::Deny => {
                    return Err(self.unknown(&key, fields.names));
                }
                None => self.skip()?,
            }
        }
        Ok(None)
    }

    /// Checks, after the object's end, that it had every field whose bit is set in `required`
    /// (bit `i` for `names[i]`), naming the first missing one.
    pub fn require(&self, fields: &Fields<'_>, required: u64) -> Step<()> {
        match (0..fields.names.len()).find(|&i| required & !fields.seen & (1 << i) != 0) {
            Some(i) => Err(self.missing(fields.names[i])),
            None => Ok(()),
        }
    }

    /// Enters an object; `expected` names it for the error when the value is something else.
    pub fn object(&mut self, expected: &str) -> Step<()> {
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                Ok(())
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// The next key of the object entered, with its `:` read (its value is next), or `None`
    /// after the closing `}`. `first` is true until the first call for this object returns.
    pub fn key(&mut self, first: &mut bool) -> Step<Option<Cow<'a, str>>> {
        let mut next = self.peek();
        if std::mem::take(first) {
            if next == Some(b'}') {
                self.at += 1;
                return Ok(None);
            }
        } else {
            match next {
                Some(b',') => {
                    self.at += 1;
                    next = self.peek();
                    if next == Some(b'}') {
                        return Err(self.error("trailing comma"));
                    }
                }
                Some(b'}') => {
                    self.at += 1;
                    return Ok(None);
                }
                None => return Err(self.error("EOF while parsing an object")),
                Some(_) => return Err(self.error("expected `,` or `}`")),
            }
        }
        match next {
            Some(b'"') => {
                self.at += 1;
                let key = self.string_body()?;
                match self.peek() {
                    Some(b':') => {
                        self.at += 1;
                        Ok(Some(key))
                    }
                    None => Err(self.error("EOF while parsing an object")),
                    Some(_) => Err(self.error("expected `:`")),
                }
            }
            None => Err(self.error("EOF while parsing an object")),
            Some(_) => Err(self.error("key must be a string")),
        }
    }

    /// Enters an array; `expected` names it for the error when the value is something else.
    pub fn array(&mut self, expected: &str) -> Step<()> {
        match self.peek() {
            Some(b'[') => {
                self.at += 1;
                Ok(())
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// True when the array entered has another item (read it next), false after its `]`.
    /// `first` is true until the first call for this array returns.
    pub fn item(&mut self, first: &mut bool) -> Step<bool> {
        let next = self.peek();
        if std::mem::take(first) {
            if next == Some(b']') {
                self.at += 1;
                return Ok(false);
            }
            return match next {
                None => Err(self.error("EOF while parsing a list")),
                Some(_) => Ok(true),
            };
        }
        match next {
            Some(b',') => {
                self.at += 1;
                match self.peek() {
                    Some(b']') => Err(self.error("trailing comma")),
                    None => Err(self.error("EOF while parsing a list")),
                    Some(_) => Ok(true),
                }
            }
            Some(b']') => {
                self.at += 1;
                Ok(false)
            }
            None => Err(self.error("EOF while parsing a list")),
            Some(_) => Err(self.error("expected `,` or `]`")),
        }
    }

    /// Consumes `null` and returns true if that is the next value, else reads nothing.
    pub fn null(&mut self) -> Step<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(true);
        }
        Ok(false)
    }

    /// A string, borrowed from the text unless it has escapes.
    pub fn string(&mut self) -> Step<Cow<'a, str>> {
        match self.peek() {
            Some(b'"') => {
                self.at += 1;
                self.string_body()
            }
            _ => Err(self.unexpected("a string")),
        }
    }

    /// The rest of a string whose opening quote has been read.
    fn string_body(&mut self) -> Step<Cow<'a, str>> {
        let start = self.at;
        // Eight bytes at a time while none of them is special; then byte by byte from the word
        // that holds one. A session's packed columns are megabytes of plain base64.
        while let Some(word) = self.text.get(self.at..self.at + 8) {
            match <[u8; 8]>::try_from(word) {
                Ok(bytes) if !special_byte_in(u64::from_le_bytes(bytes)) => self.at += 8,
                _ => break,
            }
        }
        loop {
            match self.text.get(self.at) {
                Some(b'"') => {
                    let bytes = &self.text[start..self.at];
                    self.at += 1;
                    return match std::str::from_utf8(bytes) {
                        Ok(s) => Ok(Cow::Borrowed(s)),
                        Err(_) => Err(self.error("invalid unicode code point")),
                    };
                }
                Some(b'\\') => break,
                Some(&b) if b < 0x20 => return Err(self.control_character()),
                Some(_) => self.at += 1,
                None => return Err(self.error("EOF while parsing a string")),
            }
        }
        let mut out = self.text[start..self.at].to_vec();
        loop {
            let Some(&b) = self.text.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            self.at += 1;
            match b {
                b'"' => {
                    return String::from_utf8(out)
                        .map(Cow::Owned)
                        .map_err(|_| self.error("invalid unicode code point"));
                }
                b'\\' => {
                    let Some(&escape) = self.text.get(self.at) else {
                        return Err(self.error("EOF while parsing a string"));
                    };
                    self.at += 1;
                    let plain = match escape {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let c = self.unicode_escape()?;
                            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            continue;
                        }
                        _ => return Err(self.error("invalid escape")),
                    };
                    out.push(plain);
                }
                b if b < 0x20 => {
                    self.at -= 1;
                    return Err(self.control_character());
                }
                b => out.push(b),
            }
        }
    }

    #[cold]
    fn control_character(&self) -> String {
        self.error("control character (\\u0000-\\u001F) found while parsing a string")
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self) -> Step<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let Some(&b) = self.text.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err(self.error("invalid escape")),
            };
            self.at += 1;
            n = n * 16 + u32::from(digit);
        }
        Ok(n)
    }

    /// The character of a `\u` escape whose `\u` has been read: a surrogate pair takes two.
    fn unicode_escape(&mut self) -> Step<char> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.text.get(self.at..self.at + 2) != Some(b"\\u") {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                self.at += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error("lone trailing surrogate in hex escape")),
            code => code,
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid unicode code point"))
    }

    /// An unsigned integer; `expected` (`u64`, `u32`) names the type in errors about other
    /// values, negative ones and fractions.
    fn number(&mut self, expected: &str) -> Step<u64> {
        let start = self.at;
        let negative = self.text.get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        let digits = self.at;
        let mut value: Option<u64> = Some(0);
        while let Some(&b @ b'0'..=b'9') = self.text.get(self.at) {
            value = value
                .and_then(|v| v.checked_mul(10))
                .and_then(|v| v.checked_add(u64::from(b - b'0')));
            self.at += 1;
        }
        let n_digits = self.at - digits;
        if n_digits == 0 {
            return Err(self.error(match self.text.get(self.at) {
                None => "EOF while parsing a value",
                Some(_) => "invalid number",
            }));
        }
        if n_digits > 1 && self.text[digits] == b'0' {
            return Err(self.error("invalid number"));
        }
        let mut fraction = false;
        if self.text.get(self.at) == Some(&b'.') {
            self.at += 1;
            fraction = true;
            self.digits()?;
        }
        if matches!(self.text.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            fraction = true;
            if matches!(self.text.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits()?;
        }
        let text = String::from_utf8_lossy(&self.text[start..self.at]);
        match value {
            // Past u64 serde_json reads a number as a float, as here.
            Some(v) if !fraction && !negative => Ok(v),
            Some(_) if !fraction && negative => Err(self.error(format_args!(
                "invalid value: integer `{text}`, expected {expected}"
            ))),
            _ => Err(self.error(format_args!(
                "invalid type: floating point `{text}`, expected {expected}"
            ))),
        }
    }

    /// At least one digit (of a fraction or an exponent).
    fn digits(&mut self) -> Step<()> {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.text.get(self.at) {
            self.at += 1;
        }
        if self.at == start {
            return Err(self.error(match self.text.get(self.at) {
                None => "EOF while parsing a value",
                Some(_) => "invalid number",
            }));
        }
        Ok(())
    }

    /// An unsigned 64-bit integer.
    pub fn u64(&mut self) -> Step<u64> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number("u64"),
            _ => Err(self.unexpected("u64")),
        }
    }

    /// An unsigned 32-bit integer.
    pub fn u32(&mut self) -> Step<u32> {
        let n = match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number("u32")?,
            _ => return Err(self.unexpected("u32")),
        };
        u32::try_from(n)
            .map_err(|_| self.error(format_args!("invalid value: integer `{n}`, expected u32")))
    }

    /// `true` or `false`.
    pub fn bool(&mut self) -> Step<bool> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => Err(self.unexpected("a boolean")),
        }
    }

    /// Reads past any value (an unknown field's), checking that it is well formed.
    pub fn skip(&mut self) -> Step<()> {
        self.skip_nested(0)
    }

    fn skip_nested(&mut self, depth: u32) -> Step<()> {
        if depth >= MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut first = true;
                while self.key(&mut first)?.is_some() {
                    self.skip_nested(depth + 1)?;
                }
                Ok(())
            }
            Some(b'[') => {
                self.at += 1;
                let mut first = true;
                while self.item(&mut first)? {
                    self.skip_nested(depth + 1)?;
                }
                Ok(())
            }
            Some(b'"') => {
                self.at += 1;
                self.string_body().map(drop)
            }
            Some(b'-' | b'0'..=b'9') => self.skip_number(),
            Some(b'n') => self.literal(b"null"),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            None => Err(self.error("EOF while parsing a value")),
            Some(_) => Err(self.error("expected value")),
        }
    }

    /// Reads past any number, negative and fractional ones included.
    fn skip_number(&mut self) -> Step<()> {
        match self.number("a number") {
            Err(e) if e.starts_with("invalid value") || e.starts_with("invalid type") => Ok(()),
            other => other.map(drop),
        }
    }

    /// The error for a field that appears twice in one object.
    #[cold]
    #[inline(never)]
    pub fn duplicate(&self, field: &str) -> String {
        self.error(format_args!("duplicate field `{field}`"))
    }

    /// The error for an object that lacks the required `field`.
    #[cold]
    #[inline(never)]
    pub fn missing(&self, field: &str) -> String {
        self.error(format_args!("missing field `{field}`"))
    }

    /// The error for a field the object may not have; `known` lists the ones it may.
    #[cold]
    #[inline(never)]
    pub fn unknown(&self, field: &str, known: &[&str]) -> String {
        let known = known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        self.error(format_args!(
            "unknown field `{field}`, expected one of {known}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_borrow_unless_escaped_and_decode_every_escape() {
        let mut j = Json::new(br#" "plain" "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00" "#);
        assert!(matches!(j.string().unwrap(), Cow::Borrowed("plain")));
        assert_eq!(j.string().unwrap(), "a\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{1f600}");
        j.end().unwrap();
        for bad in [
            &br#""\ud83d""#[..],
            br#""\ude00""#,
            br#""\x""#,
            b"\"a\nb\"",
            b"\"\xff\"",
            b"\"abc",
        ] {
            assert!(Json::new(bad).string().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn strings_read_a_word_at_a_time_stop_at_every_special_byte_wherever_it_falls() {
        // Each byte that ends a plain run, at every offset of a string longer than two words,
        // among bytes that do not (the neighbours of the special ones, and UTF-8): the reader
        // must agree with serde_json on the value or on whether it fails.
        let filler = "a é~\x7f!#[]{}";
        for special in ["\"", "\\n", "\\\\", "\u{1}", "\u{1f}", "\n", "\t"] {
            for at in 0..filler.len() + 20 {
                let mut body: String = filler.chars().cycle().take(at).collect();
                body.push_str(special);
                body.push_str("tail-of-the-string");
                let text = format!("\"{body}\"");
                let ours = Json::new(text.as_bytes()).string().map(Cow::into_owned);
                if special == "\"" {
                    // A quote ends the string where it stands, not a word later.
                    let before = &body[..body.len() - "\"tail-of-the-string".len()];
                    assert_eq!(ours.unwrap(), before, "{text:?}");
                    continue;
                }
                let theirs = serde_json::from_str::<String>(&text);
                match (&ours, &theirs) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{text:?}"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
                }
            }
        }
        for word in 0..=255u8 {
            let bytes = u64::from_le_bytes([b'a', b'b', word, b'c', b'd', b'e', b'f', b'g']);
            let special = word == b'"' || word == b'\\' || word < 0x20;
            assert_eq!(special_byte_in(bytes), special, "{word:#x}");
        }
    }

    #[test]
    fn numbers_are_unsigned_integers_and_others_are_named() {
        assert_eq!(Json::new(b"18446744073709551615").u64(), Ok(u64::MAX));
        assert_eq!(Json::new(b"0").u32(), Ok(0));
        let err = |text: &[u8]| Json::new(text).u32().unwrap_err();
        assert_eq!(
            err(b"4294967296"),
            "invalid value: integer `4294967296`, expected u32 at line 1 column 10"
        );
        assert!(err(b"-1").starts_with("invalid value: integer `-1`"));
        assert!(err(b"1.5").starts_with("invalid type: floating point `1.5`"));
        assert!(err(b"18446744073709551616").starts_with("invalid type: floating point"));
        assert!(err(b"01").starts_with("invalid number"));
        assert!(err(b"\"7\"").starts_with("invalid type: string \"7\", expected u32"));
        assert!(err(b"").starts_with("EOF while parsing a value"));
    }

    #[test]
    fn objects_and_arrays_refuse_what_json_refuses() {
        let mut j = Json::new(br#"{"a": [1, {"b": null}, "x", true, -2.5e3], "c": {}}"#);
        j.object("a map").unwrap();
        let mut first = true;
        assert_eq!(j.key(&mut first).unwrap().as_deref(), Some("a"));
        j.skip().unwrap();
        assert_eq!(j.key(&mut first).unwrap().as_deref(), Some("c"));
        j.skip().unwrap();
        assert_eq!(j.key(&mut first).unwrap(), None);
        j.end().unwrap();
        for bad in [
            &b"[1,]"[..],
            b"[1 2]",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{1:1}",
            b"[",
            b"nul",
            b"[1]]",
        ] {
            let mut j = Json::new(bad);
            assert!(j.skip().and_then(|()| j.end()).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(200);
        assert!(Json::new(deep.as_bytes())
            .skip()
            .unwrap_err()
            .starts_with("recursion limit exceeded"));
    }

    #[test]
    fn fields_are_read_once_by_index_and_the_required_ones_checked() {
        let names = &["a", "b", "c"];
        let read = |text: &str, unknown| {
            let mut json = Json::new(text.as_bytes());
            let mut fields = json.fields("struct T", names, unknown)?;
            let mut found = Vec::new();
            while let Some(i) = json.field(&mut fields)? {
                found.push(i);
                json.skip()?;
            }
            json.require(&fields, 0b011)?;
            Ok::<_, String>(found)
        };
        assert_eq!(
            read(r#"{"b":1,"x":[2],"a":{}}"#, Unknown::Skip),
            Ok(vec![1, 0])
        );
        let error = |text, unknown| read(text, unknown).unwrap_err();
        assert!(error(r#"{"a":1,"x":2}"#, Unknown::Deny)
            .starts_with("unknown field `x`, expected one of `a`, `b`, `c`"));
        assert!(error(r#"{"a":1,"a":2}"#, Unknown::Skip).starts_with("duplicate field `a`"));
        assert!(error(r#"{"a":1,"c":2}"#, Unknown::Skip).starts_with("missing field `b`"));
        assert!(error("[]", Unknown::Skip).starts_with("invalid type: sequence, expected struct T"));
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let mut j = Json::new(b"{\n  \"a\": x");
        j.object("a map").unwrap();
        j.key(&mut true).unwrap();
        assert_eq!(j.skip().unwrap_err(), "expected value at line 2 column 8");
        let mut j = Json::new(b"{x");
        j.object("a map").unwrap();
        assert_eq!(
            j.key(&mut true).unwrap_err(),
            "key must be a string at line 1 column 2"
        );
        assert_eq!(
            Json::new(b"\"a\nb\"").string().unwrap_err(),
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 2"
        );
    }
}
