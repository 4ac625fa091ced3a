//! Records as the host's JSON text, and answers spliced from it.
//!
//! A [`RawRecord`] borrows its members from the text the host answered
//! with ([`Items::read_by_query_raw`](crate::Items::read_by_query_raw)): reading a list of
//! records builds no tree and copies no value. A [`JsonOut`] writes an
//! answer from such members and values of the extension's own, so a record
//! passes from the database to the client as the same bytes.
//!
//! ```
//! use std::borrow::Cow;
//! use host_sdk::raw::{JsonOut, RawRecord};
//!
//! // As `items.read_by_query_raw("articles", &query)?` would give it.
//! let text = r#"[{"id":"a","title":"T"},{"id":"b","title":"U"}]"#;
//! let list = RawRecord::parse_list(text).unwrap();
//! let mut out = JsonOut::default();
//! out.array(&list, |out, article| {
//!     let mut members: Vec<(&str, Cow<str>)> = article
//!         .members()
//!         .map(|(name, value)| (name, Cow::Borrowed(value.get())))
//!         .collect();
//!     members.push(("stars", Cow::Owned(5.to_string())));
//!     out.object(&mut members);
//! });
//! assert_eq!(
//!     out.as_str(),
//!     r#"[{"id":"a","stars":5,"title":"T"},{"id":"b","stars":5,"title":"U"}]"#
//! );
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A JSON object's members, in the order of its text (the host prints a
/// record's fields sorted by name), each value the text it was written as.
#[derive(Debug, Clone, Default)]
pub struct RawRecord<'a> {
    members: Vec<(Name<'a>, &'a RawValue)>,
}

impl<'a> RawRecord<'a> {
    /// The value of `field`, as JSON text.
    pub fn get(&self, field: &str) -> Option<&'a RawValue> {
        self.members
            .iter()
            .find(|(name, _)| name.0 == field)
            .map(|(_, value)| *value)
    }

    /// The value of `field` when it is a string (borrowed unless it holds
    /// escapes).
    pub fn str(&self, field: &str) -> Option<Cow<'a, str>> {
        self.get(field).and_then(string_of)
    }

    /// The value of `field` when it is an integer.
    pub fn i64(&self, field: &str) -> Option<i64> {
        self.get(field).and_then(|v| v.get().parse().ok())
    }

    /// The members, in the order of the text.
    pub fn members(&self) -> impl Iterator<Item = (&str, &'a RawValue)> + '_ {
        self.members
            .iter()
            .map(|(name, value)| (name.0.as_ref(), *value))
    }

    /// About how many bytes the record takes written again with
    /// [`JsonOut::object`] (SDK 1.16; exact unless a name holds escapes),
    /// to reserve room for an answer.
    pub fn written_len(&self) -> usize {
        // `{}`, each `"name":value`, and the commas between them.
        let members: usize = self
            .members
            .iter()
            .map(|(name, value)| name.0.len() + value.get().len() + 3)
            .sum();
        2 + members + self.members.len().saturating_sub(1)
    }

    /// Parses one object.
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Parses an array of objects.
    pub fn parse_list(text: &'a str) -> Result<Vec<Self>, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// A JSON string's value, borrowed from its text unless it holds escapes;
/// `None` for any other JSON value.
pub fn string_of(value: &RawValue) -> Option<Cow<'_, str>> {
    let text = value.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawRecord<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = RawRecord<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(entry) = map.next_entry::<Name<'de>, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(RawRecord { members })
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// A member's name: borrowed from the text unless it holds escapes
/// (public since SDK 1.18, for visitors that write a record as they read
/// it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Name<'a>(Cow<'a, str>);

impl Name<'_> {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(text.to_string())))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// JSON text written piece by piece. Values given as text
/// ([`JsonOut::raw`]) are trusted to be JSON: they come from a parsed
/// [`RawValue`] or from this writer.
#[derive(Debug, Default)]
pub struct JsonOut {
    bytes: Vec<u8>,
}

impl JsonOut {
    /// An empty output with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(capacity),
        }
    }

    /// An output holding this JSON text, trusted as [`JsonOut::raw`]
    /// trusts it.
    pub fn of_text(json: &str) -> Self {
        Self {
            bytes: json.as_bytes().to_vec(),
        }
    }

    /// An output holding this JSON text, taken as it is, without a copy
    /// (SDK 1.20): the host's text of a read whose shape is the answer's.
    /// Trusted as [`JsonOut::raw`] trusts it.
    pub fn of_string(json: String) -> Self {
        Self {
            bytes: json.into_bytes(),
        }
    }

    /// Makes room for at least `additional` more bytes (SDK 1.16): one
    /// allocation for an answer whose size is known, instead of its copies
    /// as it grows.
    pub fn reserve(&mut self, additional: usize) {
        self.bytes.reserve(additional);
    }

    /// Appends JSON text as it is.
    pub fn raw(&mut self, json: &str) {
        self.bytes.extend_from_slice(json.as_bytes());
    }

    /// Appends a punctuation byte (`[`, `,`, `{`, ...).
    pub fn byte(&mut self, b: u8) {
        self.bytes.push(b);
    }

    /// Appends `text` as a JSON string.
    pub fn string(&mut self, text: &str) {
        write_string(&mut self.bytes, text);
    }

    /// Appends an object of `members`, sorted by name (as the host prints
    /// records, and as a `serde_json` map prints), each value JSON text.
    pub fn object<'m>(&mut self, members: &mut [(&'m str, Cow<'m, str>)]) {
        members.sort_by(|a, b| a.0.cmp(b.0));
        self.byte(b'{');
        for (n, (name, value)) in members.iter().enumerate() {
            if n > 0 {
                self.byte(b',');
            }
            self.string(name);
            self.byte(b':');
            self.raw(value);
        }
        self.byte(b'}');
    }

    /// Appends an array whose elements `each` writes, separated by commas.
    pub fn array<T>(
        &mut self,
        elements: impl IntoIterator<Item = T>,
        mut each: impl FnMut(&mut Self, T),
    ) {
        self.byte(b'[');
        for (n, element) in elements.into_iter().enumerate() {
            if n > 0 {
                self.byte(b',');
            }
            each(self, element);
        }
        self.byte(b']');
    }

    /// Drops what was written after the first `len` bytes (SDK 1.18): a
    /// part written and then given up is taken back. `len` must be a
    /// length this output had (a [`JsonOut::len`] read earlier).
    pub fn truncate(&mut self, len: usize) {
        self.bytes.truncate(len);
    }

    /// How many bytes are written.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is written yet.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The text written so far.
    pub fn as_str(&self) -> &str {
        // Only `str` pieces were appended.
        std::str::from_utf8(&self.bytes).unwrap_or_default()
    }

    /// The written JSON text as bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The text written.
    pub fn into_string(self) -> String {
        // Only `str` pieces were appended.
        String::from_utf8(self.bytes).unwrap_or_default()
    }
}

/// Appends `text` to `out` as a JSON string, byte for byte as `serde_json`
/// writes it (SDK 1.16): `"` and `\` escaped, `\b \f \n \r \t` by
/// letter, other control characters as `\u00xx`. Text with nothing to
/// escape, most of it, is checked eight bytes at a time and copied whole.
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            if !needs_escape(u64::from_le_bytes(word)) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0x00..=0x1f => None,
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            Some(text) => out.extend_from_slice(text),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether any of the eight bytes of `word` is a control character, `"` or
/// `\` (each test is exact: it has no false positives).
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |v: u64, n: u64| v.wrapping_sub(ONES * n) & !v & HIGH;
    let zero = |v: u64| below(v, 1);
    (below(word, 0x20) | zero(word ^ (ONES * b'"' as u64)) | zero(word ^ (ONES * b'\\' as u64)))
        != 0
}

/// JSON text an answer carries as it is
/// ([`Response::ok_raw`](crate::Response::ok_raw),
/// [`Response::created_raw`](crate::Response::created_raw)): a record read
/// with [`Items::read_one_raw`](crate::Items::read_one_raw) (a checked
/// [`RawValue`]), or what a [`JsonOut`] wrote.
pub trait RawJson: sealed::Sealed {
    /// The text's bytes.
    #[doc(hidden)]
    fn into_json_bytes(self) -> Vec<u8>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for Box<serde_json::value::RawValue> {}
    impl Sealed for super::JsonOut {}
}

impl RawJson for Box<RawValue> {
    fn into_json_bytes(self) -> Vec<u8> {
        String::from(Box::<str>::from(self)).into_bytes()
    }
}

impl RawJson for JsonOut {
    fn into_json_bytes(self) -> Vec<u8> {
        self.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_borrowed_in_order() {
        let text = r#"{"b":[1,{"x":2}],"a":"h\"i","c":null,"n":-12,"q\"t":1}"#;
        let r = RawRecord::parse(text).unwrap();
        let names: Vec<&str> = r.members().map(|(n, _)| n).collect();
        assert_eq!(names, ["b", "a", "c", "n", "q\"t"]);
        assert_eq!(r.i64("q\"t"), Some(1));
        assert_eq!(r.get("b").unwrap().get(), r#"[1,{"x":2}]"#);
        assert_eq!(r.str("a").as_deref(), Some("h\"i"));
        assert!(r.str("c").is_none());
        assert!(r.str("b").is_none());
        assert_eq!(r.i64("n"), Some(-12));
        assert!(r.get("z").is_none());
    }

    #[test]
    fn a_record_written_again_takes_the_room_it_said() {
        let text = r#"{"a":[1, 2],"bc":"x","d":{"e":null}}"#;
        let r = RawRecord::parse(text).unwrap();
        let mut members: Vec<(&str, Cow<str>)> = r
            .members()
            .map(|(n, v)| (n, Cow::Borrowed(v.get())))
            .collect();
        let mut out = JsonOut::default();
        out.object(&mut members);
        assert_eq!(r.written_len(), out.len());
        assert_eq!(RawRecord::parse("{}").unwrap().written_len(), 2);
    }

    #[test]
    fn plain_strings_are_not_copied() {
        let text = r#"{"id":"abc"}"#;
        let r = RawRecord::parse(text).unwrap();
        assert!(matches!(r.str("id"), Some(Cow::Borrowed("abc"))));
    }

    #[test]
    fn a_list_that_is_not_objects_is_refused() {
        assert!(RawRecord::parse_list(r#"[{"a":1},2]"#).is_err());
        assert_eq!(RawRecord::parse_list("[]").unwrap().len(), 0);
    }

    #[test]
    fn objects_are_written_sorted_and_parse_back() {
        let text = r#"{"z":1,"a":{"k":[true]}}"#;
        let r = RawRecord::parse(text).unwrap();
        let mut members: Vec<(&str, Cow<str>)> = r
            .members()
            .map(|(n, v)| (n, Cow::Borrowed(v.get())))
            .collect();
        members.push(("m\"q", Cow::Owned("7".into())));
        let mut out = JsonOut::default();
        out.array([1, 2], |out, _| out.object(&mut members.clone()));
        let back: serde_json::Value = serde_json::from_str(out.as_str()).unwrap();
        let one = serde_json::json!({"a": {"k": [true]}, "m\"q": 7, "z": 1});
        assert_eq!(back, serde_json::json!([one.clone(), one]));
        assert!(out
            .as_str()
            .starts_with(r#"[{"a":{"k":[true]},"m\"q":7,"z":1}"#));
    }

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        write_string(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for text in [
            "",
            "plain",
            "exactly8",
            "sixteen bytes ok",
            "q\"uote and back\\slash",
            "\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f} \u{7f}",
            "é ü 中文 😀 longer than eight bytes\n",
        ] {
            assert_eq!(
                written(text),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(
            text in proptest::collection::vec(
                proptest::sample::select(vec!['a', ' ', '"', '\\', '\n', '\u{1}', '\u{1f}', '\u{7f}', 'é', '😀', '!', '~']),
                0..40,
            )
        ) {
            let text: String = text.into_iter().collect();
            proptest::prop_assert_eq!(written(&text), serde_json::to_string(&text).unwrap());
        }
    }
}
