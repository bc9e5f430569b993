//! A small JSON writer for the answers the page reads: one concrete type over a `String`, so the
//! wasm module holds no serde serializer, no `serde_json::Value` (a BTreeMap) and no float
//! printer of its own (serde_json's cost about 40 kB there).
//!
//! The writer places commas itself: [`JsonOut::key`] and every value after the first in an
//! object or array get one. Values are written in the order the calls come; the caller keeps
//! objects and arrays balanced.

/// The decimals [`JsonOut::f64`] writes.
pub const F64_DECIMALS: usize = 12;

/// A JSON text being written.
pub struct JsonOut {
    out: String,
    /// True right after `{`, `[` or a key: the next value or key needs no comma before it.
    fresh: bool,
}

/// Something the page reads as JSON.
pub trait ToJson {
    /// Writes `self` as one JSON value.
    fn write_json(&self, w: &mut JsonOut);

    /// `self` as JSON text.
    fn to_json(&self) -> String {
        let mut w = JsonOut::new();
        self.write_json(&mut w);
        w.finish()
    }
}

impl Default for JsonOut {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonOut {
    /// An empty text.
    pub fn new() -> Self {
        JsonOut {
            out: String::new(),
            fresh: true,
        }
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.out
    }

    /// A comma unless this value opens its object or array (or follows its key).
    fn comma(&mut self) {
        if !self.fresh {
            self.out.push(',');
        }
        self.fresh = false;
    }

    /// Opens an object: `{`.
    pub fn begin_object(&mut self) -> &mut Self {
        self.comma();
        self.out.push('{');
        self.fresh = true;
        self
    }

    /// Closes an object: `}`.
    pub fn end_object(&mut self) -> &mut Self {
        self.out.push('}');
        self.fresh = false;
        self
    }

    /// Opens an array: `[`.
    pub fn begin_array(&mut self) -> &mut Self {
        self.comma();
        self.out.push('[');
        self.fresh = true;
        self
    }

    /// Closes an array: `]`.
    pub fn end_array(&mut self) -> &mut Self {
        self.out.push(']');
        self.fresh = false;
        self
    }

    /// An object's key (escaped like any string); its value comes next.
    pub fn key(&mut self, key: &str) -> &mut Self {
        self.string(key);
        self.out.push(':');
        self.fresh = true;
        self
    }

    /// A string, escaped as serde_json escapes: `"`, `\`, and the control characters below
    /// 0x20 (`\b \f \n \r \t` short, the others `\u00XX`); everything else as it is.
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.comma();
        self.out.reserve(s.len() + 2);
        self.out.push('"');
        let mut plain = 0;
        for (i, b) in s.bytes().enumerate() {
            let short = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => continue,
            };
            self.out.push_str(&s[plain..i]);
            plain = i + 1;
            if short.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.push_str("\\u00");
                self.out.push(HEX[usize::from(b >> 4)] as char);
                self.out.push(HEX[usize::from(b & 0xf)] as char);
            } else {
                self.out.push_str(short);
            }
        }
        self.out.push_str(&s[plain..]);
        self.out.push('"');
        self
    }

    /// A string, or `null` for `None`.
    pub fn opt_string(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.string(s),
            None => self.null(),
        }
    }

    /// An unsigned integer (every `u8` to `u64` and `usize` goes through this).
    /// Its digits are written here rather than by `write!(.., "{n}")`: going through `fmt`
    /// made the wasm module 1.6 kB larger (598,205 against 596,618 bytes).
    pub fn u64(&mut self, n: u64) -> &mut Self {
        self.comma();
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for &d in &digits[at..] {
            self.out.push(d as char);
        }
        self
    }

    /// A signed integer.
    pub fn i64(&mut self, n: i64) -> &mut Self {
        if n < 0 {
            self.comma();
            self.out.push('-');
            self.fresh = true;
        }
        self.u64(n.unsigned_abs())
    }

    /// A float to [`F64_DECIMALS`] decimals, trailing zeros dropped (`0.5`, `1`, `0`), by the
    /// core's integer-only [`prof_session::aggregate::fixed`]; `null` when it is not finite (as serde_json
    /// writes it). The page's floats are shares and positions between 0 and 1, where a
    /// trillionth is far below a pixel; a shortest round-trip text would link core's float
    /// formatting, 20 kB of the module, for digits nothing draws.
    pub fn f64(&mut self, x: f64) -> &mut Self {
        self.comma();
        if !x.is_finite() {
            self.out.push_str("null");
            return self;
        }
        let text = prof_session::aggregate::fixed(x, F64_DECIMALS, false);
        let text = text.trim_end_matches('0').trim_end_matches('.');
        // `-0.0000001` rounds to `-0`: the same number as 0 to the page.
        self.out.push_str(if text == "-0" { "0" } else { text });
        self
    }

    /// `true` or `false`.
    pub fn bool(&mut self, b: bool) -> &mut Self {
        self.comma();
        self.out.push_str(if b { "true" } else { "false" });
        self
    }

    /// `null`.
    pub fn null(&mut self) -> &mut Self {
        self.comma();
        self.out.push_str("null");
        self
    }

    /// An array of strings.
    pub fn strings<'a>(&mut self, items: impl IntoIterator<Item = &'a str>) -> &mut Self {
        self.begin_array();
        for s in items {
            self.string(s);
        }
        self.end_array()
    }

    /// An array of unsigned integers.
    pub fn u64s(&mut self, items: impl IntoIterator<Item = u64>) -> &mut Self {
        self.begin_array();
        for n in items {
            self.u64(n);
        }
        self.end_array()
    }

    /// An array of the values of `items`, each written by its [`ToJson`].
    pub fn array<T: ToJson>(&mut self, items: &[T]) -> &mut Self {
        self.begin_array();
        for item in items {
            item.write_json(self);
        }
        self.end_array()
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, w: &mut JsonOut) {
        w.array(self);
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, w: &mut JsonOut) {
        w.array(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn strings_escape_as_serde_json_escapes_them() {
        let mut every_control = String::new();
        for b in 0u8..0x20 {
            every_control.push(b as char);
        }
        let tricky = [
            "",
            "plain",
            every_control.as_str(),
            "\"quoted\" \\back\\slash\\",
            "a\u{7f}b",
            "caf\u{e9} \u{4e2d}\u{6587} \u{2028}\u{2029}",
            "emoji \u{1f980}\u{1f468}\u{200d}\u{1f469}",
            "\\u0041 is not A",
            "end\u{0}",
        ];
        for s in tricky {
            let mut w = JsonOut::new();
            w.string(s);
            let ours = w.finish();
            let theirs = serde_json::to_string(s).unwrap();
            assert_eq!(ours, theirs, "{s:?}");
            assert_eq!(parsed(&ours), Value::from(s));
        }
        let mut w = JsonOut::new();
        w.begin_object().key("a\"\n").string("b").end_object();
        assert_eq!(w.finish(), r#"{"a\"\n":"b"}"#);
    }

    #[test]
    fn numbers_read_back_as_serde_json_writes_them() {
        for n in [0, 1, 9, 10, 1234567890, u64::MAX] {
            let mut w = JsonOut::new();
            w.u64(n);
            assert_eq!(w.finish(), serde_json::to_string(&n).unwrap());
        }
        for n in [0, -1, -10, i64::MIN, i64::MAX] {
            let mut w = JsonOut::new();
            w.i64(n);
            assert_eq!(w.finish(), serde_json::to_string(&n).unwrap());
        }
        let floats = [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            1.0 / 3.0,
            0.999_999_999_999_9,
            1e-7,
            1e300,
            -1e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            123456789.125,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for x in floats {
            let mut w = JsonOut::new();
            w.f64(x);
            let text = w.finish();
            if x.is_finite() && x.abs() > 1e300 {
                // All the digits of the integer it is, which JSON.parse reads back exactly and
                // serde_json refuses as out of range (such values never reach the page).
                assert_eq!(text, format!("{x:.0}"));
                continue;
            }
            let ours = parsed(&text);
            let theirs = parsed(&serde_json::to_string(&x).unwrap());
            assert_eq!(ours.is_null(), theirs.is_null(), "{x}");
            if let (Some(ours), Some(theirs)) = (ours.as_f64(), theirs.as_f64()) {
                // To the decimals written, and exact where they hold all of it.
                assert!((ours - theirs).abs() <= 0.5e-12, "{x}: {text}");
                if x.abs() >= 1.0 && x.fract() == 0.0 {
                    assert_eq!(ours, theirs, "{text}");
                }
            }
            if (0.0..=1.0).contains(&x) {
                assert!(text.len() <= 14, "{text}");
            }
        }
        let mut w = JsonOut::new();
        w.begin_array()
            .f64(0.5)
            .f64(1.0)
            .f64(-1e-13)
            .f64(0.25e-10)
            .end_array();
        assert_eq!(w.finish(), "[0.5,1,0,0.000000000025]");
    }

    #[test]
    fn nesting_places_commas() {
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("a").u64s([1, 2, 3]);
        w.key("b").begin_array().end_array();
        w.key("c").begin_object().end_object();
        w.key("d").strings(["x", "y"]);
        w.key("e").opt_string(None);
        w.key("e2").opt_string(Some("z"));
        w.key("f").bool(true);
        w.key("g").i64(-3);
        w.key("h").begin_array();
        w.begin_object().key("x").f64(0.5).end_object();
        w.begin_object().key("x").bool(false).end_object();
        w.end_array();
        w.end_object();
        let text = w.finish();
        assert_eq!(
            parsed(&text),
            serde_json::json!({"a": [1, 2, 3], "b": [], "c": {}, "d": ["x", "y"], "e": null, "e2": "z",
                "f": true, "g": -3, "h": [{"x": 0.5}, {"x": false}]})
        );
    }
}
