//! The host's text of a part of a video list, written as the answer.
//!
//! svc reads videos with their movie and their models' links expanded
//! (`videos`); the answer shows `models` as the linked users' records and
//! live counts. When every video of a part has exact counters, the host's
//! text is the answer but for two things: each link gives way to its user,
//! and `counts_exact` is left out. [`write_exact`] writes that while it
//! reads, in one pass, building nothing. A part holding a video whose
//! counters are not exact is given back, and written by [`write_counted`]
//! once its records are counted. A page that one read holds needs neither
//! while every counter is exact: the host writes it in the answer's shape
//! (`videos::list_as_read`).

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use host_sdk::raw::{string_of, JsonOut, Name, RawRecord};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::counters;

/// What a part of the list held: how many videos, and the run of those
/// sharing the last upload date at its end (where the next part resumes).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Part {
    pub count: u64,
    /// `None` when the part is empty or one of its videos has no date.
    pub last: Option<Run>,
}

/// Videos of one upload date, one after the other.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub date: String,
    pub len: u64,
}

/// [`Part`] gathered one video at a time, each date as its JSON text.
#[derive(Default)]
struct Dates<'t> {
    count: u64,
    last: Option<&'t RawValue>,
    run: u64,
    undated: bool,
}

impl<'t> Dates<'t> {
    fn push(&mut self, date: Option<&'t RawValue>) {
        self.count += 1;
        match date {
            None => self.undated = true,
            Some(d) if self.last.is_some_and(|last| last.get() == d.get()) => self.run += 1,
            Some(d) => {
                self.last = Some(d);
                self.run = 1;
            }
        }
    }

    fn part(&self) -> Part {
        let last = match (self.undated, self.last.and_then(string_of)) {
            (false, Some(date)) => Some(Run {
                date: date.into_owned(),
                len: self.run,
            }),
            _ => None,
        };
        Part {
            count: self.count,
            last,
        }
    }
}

/// The [`Part`] these videos make (the writers give theirs as they write).
#[cfg(test)]
pub fn part_of(videos: &[RawRecord<'_>]) -> Part {
    let mut dates = Dates::default();
    for video in videos {
        dates.push(video.get("upload_date"));
    }
    dates.part()
}

/// Writes the videos of the host's `text` (a JSON array) into `out` as the
/// answer's elements, a comma first when `comma`; `None`, with nothing
/// written, when a video's counters are not exact (or the text is not the
/// shape this writer knows: members sorted, each counter and `models`
/// present).
pub fn write_exact(
    text: &str,
    out: &mut JsonOut,
    comma: bool,
) -> Result<Option<Part>, serde_json::Error> {
    let start = out.len();
    let gave_up = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let written = (&mut de)
        .deserialize_seq(Videos {
            out: &mut *out,
            comma,
            gave_up: &gave_up,
        })
        .and_then(|part| de.end().map(|()| part));
    match written {
        Ok(part) => Ok(Some(part)),
        Err(e) => {
            out.truncate(start);
            if gave_up.get() {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// Why [`write_exact`] gave a part back.
fn give_up<E: de::Error>(gave_up: &Cell<bool>) -> E {
    gave_up.set(true);
    E::custom("a video the one-pass writer does not write")
}

struct Videos<'o, 'g> {
    out: &'o mut JsonOut,
    comma: bool,
    gave_up: &'g Cell<bool>,
}

impl<'de> Visitor<'de> for Videos<'_, '_> {
    type Value = Part;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of videos")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Part, A::Error> {
        let mut dates = Dates::default();
        let mut comma = self.comma;
        while let Some(date) = seq.next_element_seed(Video {
            out: &mut *self.out,
            comma,
            gave_up: self.gave_up,
        })? {
            dates.push(date);
            comma = true;
        }
        Ok(dates.part())
    }
}

/// One video, written as it is read; its value is its upload date's text.
struct Video<'o, 'g> {
    out: &'o mut JsonOut,
    comma: bool,
    gave_up: &'g Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Video<'_, '_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Video<'_, '_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a video")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let out = self.out;
        if self.comma {
            out.byte(b',');
        }
        out.byte(b'{');
        let (mut exact, mut likes, mut models, mut plays) = (false, false, false, false);
        let mut date = None;
        let mut previous: Option<Name<'de>> = None;
        let mut first = true;
        while let Some(name) = map.next_key::<Name<'de>>()? {
            // Sorted as the host writes records, so the answer is too.
            if previous.as_ref().is_some_and(|p| *p >= name) {
                return Err(give_up(self.gave_up));
            }
            if name.as_str() == counters::EXACT {
                let value: &RawValue = map.next_value()?;
                exact = value.get() == "true";
                if !exact {
                    return Err(give_up(self.gave_up));
                }
            } else {
                if !first {
                    out.byte(b',');
                }
                first = false;
                out.string(name.as_str());
                out.byte(b':');
                if name.as_str() == "models" {
                    models = true;
                    map.next_value_seed(Users { out: &mut *out })?;
                } else {
                    let value: &'de RawValue = map.next_value()?;
                    out.raw(value.get());
                    match name.as_str() {
                        "likes_count" => likes = true,
                        "plays_count" => plays = true,
                        "upload_date" => date = Some(value),
                        _ => {}
                    }
                }
            }
            previous = Some(name);
        }
        if !(exact && likes && models && plays) {
            return Err(give_up(self.gave_up));
        }
        out.byte(b'}');
        Ok(date)
    }
}

/// A video's links, written as the list of their users (a link whose user
/// is gone left out).
struct Users<'o> {
    out: &'o mut JsonOut,
}

impl<'de> DeserializeSeed<'de> for Users<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Users<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a video's links")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.raw("[]");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.byte(b'[');
        let mut first = true;
        while let Some(user) = seq.next_element_seed(LinkedUser)? {
            if let Some(user) = user {
                if !first {
                    self.out.byte(b',');
                }
                first = false;
                self.out.raw(user.get());
            }
        }
        self.out.byte(b']');
        Ok(())
    }
}

/// A link's user record, `None` when it is gone.
struct LinkedUser;

impl<'de> DeserializeSeed<'de> for LinkedUser {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LinkedUser {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a link")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut user = None;
        while let Some(name) = map.next_key::<Name<'de>>()? {
            if name.as_str() == "platform_users_id" {
                let value: &'de RawValue = map.next_value()?;
                user = (value.get() != "null").then_some(value);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(user)
    }
}

/// The users of a video's links as the answer's `models` (the video read
/// with them expanded).
pub fn linked_users(video: &RawRecord<'_>) -> Result<String, serde_json::Error> {
    let mut models = JsonOut::default();
    match video.get("models") {
        Some(links) => Users { out: &mut models }
            .deserialize(&mut serde_json::Deserializer::from_str(links.get()))?,
        None => models.raw("[]"),
    }
    Ok(models.into_string())
}

/// The likes and plays counted of videos whose counters are not exact,
/// by video id.
#[derive(Debug, Default)]
pub struct Counted {
    pub likes: HashMap<String, u64>,
    pub plays: HashMap<String, u64>,
}

/// Writes `videos` as [`write_exact`] does, with `models` as `models_of`
/// gives them (from the video and its id) and `likes_count` and
/// `plays_count` the stored counters of the videos whose counters are
/// exact and the `counted` ones of the others; the [`Part`] they make.
pub fn write_counted(
    videos: &[RawRecord<'_>],
    mut models_of: impl FnMut(&RawRecord<'_>, &str) -> Result<String, serde_json::Error>,
    counted: &Counted,
    out: &mut JsonOut,
    comma: bool,
) -> Result<Part, serde_json::Error> {
    let mut dates = Dates::default();
    for (n, video) in videos.iter().enumerate() {
        if comma || n > 0 {
            out.byte(b',');
        }
        let facts = Facts::of(video);
        dates.push(facts.date);
        let id = facts.id.and_then(string_of).unwrap_or_default();
        let live = |counts: &HashMap<String, u64>| {
            Cow::Owned(counts.get(id.as_ref()).copied().unwrap_or(0).to_string())
        };
        let (likes, plays) = match facts.exact {
            true => (
                Cow::Borrowed(facts.likes.map_or("0", RawValue::get)),
                Cow::Borrowed(facts.plays.map_or("0", RawValue::get)),
            ),
            false => (live(&counted.likes), live(&counted.plays)),
        };
        let replaced = [
            ("likes_count", likes),
            ("models", Cow::Owned(models_of(video, &id)?)),
            ("plays_count", plays),
        ];
        write_merged(out, video, &replaced, &[counters::EXACT]);
    }
    Ok(dates.part())
}

/// What [`write_counted`] reads of a video, found in one pass over its
/// members (a long list's videos are many, their members a dozen each).
#[derive(Default)]
struct Facts<'a> {
    id: Option<&'a RawValue>,
    exact: bool,
    likes: Option<&'a RawValue>,
    plays: Option<&'a RawValue>,
    date: Option<&'a RawValue>,
}

impl<'a> Facts<'a> {
    fn of(video: &RawRecord<'a>) -> Self {
        let mut facts = Facts::default();
        for (name, value) in video.members() {
            match name {
                "id" => facts.id = Some(value),
                counters::EXACT => facts.exact = value.get() == "true",
                "likes_count" => facts.likes = Some(value),
                "plays_count" => facts.plays = Some(value),
                "upload_date" => facts.date = Some(value),
                _ => {}
            }
        }
        facts
    }
}

/// Whether a video's stored counters are its live counts.
pub fn is_exact(video: &RawRecord<'_>) -> bool {
    video.get(counters::EXACT).map(|x| x.get()) == Some("true")
}

/// Writes `record` with the members of `replaced` (sorted by name) in place
/// of its own of those names and without those `dropped`, in name order:
/// the host writes a record's members sorted, so the two lists are merged
/// as they come, nothing sorted again. The answer is the same bytes
/// [`JsonOut::object`] writes of the same members. A record whose members
/// are not sorted still has each replaced name once.
fn write_merged(
    out: &mut JsonOut,
    record: &RawRecord<'_>,
    replaced: &[(&str, Cow<'_, str>)],
    dropped: &[&str],
) {
    debug_assert!(replaced.windows(2).all(|w| w[0].0 < w[1].0));
    let mut first = true;
    let mut member = |out: &mut JsonOut, name: &str, value: &str| {
        if !first {
            out.byte(b',');
        }
        first = false;
        out.string(name);
        out.byte(b':');
        out.raw(value);
    };
    out.byte(b'{');
    let mut next = replaced.iter().peekable();
    // The greatest replaced name written: a member sorted after it cannot
    // be one of those written.
    let mut written: Option<&str> = None;
    for (name, value) in record.members() {
        while let Some((r, v)) = next.next_if(|(r, _)| *r < name) {
            member(out, r, v);
            written = Some(r);
        }
        if let Some((r, v)) = next.next_if(|(r, _)| *r == name) {
            member(out, r, v);
            written = Some(r);
            continue;
        }
        let out_of_order = written.is_some_and(|w| name <= w);
        if dropped.contains(&name) || (out_of_order && replaced.iter().any(|(r, _)| *r == name)) {
            continue;
        }
        member(out, name, value.get());
    }
    for (r, v) in next {
        member(out, r, v);
    }
    out.byte(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Merged into the host's sorted members, the replaced ones land where
    /// sorting them all would put them, whether or not the record had them.
    #[test]
    fn replaced_members_are_written_as_a_sorted_object_writes_them() {
        let records = [
            r#"{"a":1,"likes_count":2,"models":[],"plays_count":3,"z":"\u00e9"}"#,
            r#"{"counts_exact":true,"id":"v","movie":null}"#,
            r#"{"zz":null}"#,
            r#"{}"#,
            r#"{"a":[1,{"b":2}],"m":0,"models":null}"#,
        ];
        for text in records {
            let record = RawRecord::parse(text).expect("an object");
            let replaced = [
                ("likes_count", Cow::Borrowed("7")),
                ("models", Cow::Borrowed(r#"[{"id":"u"}]"#)),
                ("plays_count", Cow::Borrowed("8")),
            ];
            let mut merged = JsonOut::default();
            write_merged(&mut merged, &record, &replaced, &["counts_exact"]);
            let mut members: Vec<(&str, Cow<str>)> = record
                .members()
                .filter(|(name, _)| {
                    !matches!(
                        *name,
                        "likes_count" | "models" | "plays_count" | "counts_exact"
                    )
                })
                .map(|(name, value)| (name, Cow::Borrowed(value.get())))
                .chain(replaced.iter().cloned())
                .collect();
            let mut sorted = JsonOut::default();
            sorted.object(&mut members);
            assert_eq!(merged.as_str(), sorted.as_str(), "{text}");
            serde_json::from_str::<Value>(merged.as_str()).expect("JSON");
        }
    }

    /// A record whose members are not sorted (not as this host writes
    /// them) still has each replaced name once, and all its other members.
    #[test]
    fn replaced_members_are_written_once_whatever_the_order() {
        let records = [
            r#"{"plays_count":1,"a":2}"#,
            r#"{"models":[],"likes_count":1,"b":0}"#,
            r#"{"z":1,"likes_count":5,"counts_exact":true}"#,
            r#"{"likes_count":1,"likes_count":2,"m":3}"#,
        ];
        for text in records {
            let record = RawRecord::parse(text).expect("an object");
            let replaced = [
                ("likes_count", Cow::Borrowed("7")),
                ("models", Cow::Borrowed("[]")),
                ("plays_count", Cow::Borrowed("8")),
            ];
            let mut merged = JsonOut::default();
            write_merged(&mut merged, &record, &replaced, &["counts_exact"]);
            let names: Vec<String> = RawRecord::parse(merged.as_str())
                .expect("an object")
                .members()
                .map(|(name, _)| name.to_string())
                .collect();
            let mut want: Vec<String> = record
                .members()
                .map(|(name, _)| name.to_string())
                .filter(|n| {
                    !matches!(
                        n.as_str(),
                        "likes_count" | "models" | "plays_count" | "counts_exact"
                    )
                })
                .chain(replaced.iter().map(|(r, _)| r.to_string()))
                .collect();
            want.dedup();
            let mut sorted_names = names.clone();
            sorted_names.sort();
            want.sort();
            assert_eq!(sorted_names, want, "{text} gave {}", merged.as_str());
            let value: Value = serde_json::from_str(merged.as_str()).expect("JSON");
            assert_eq!(
                (value["likes_count"].clone(), value["plays_count"].clone()),
                (json!(7), json!(8))
            );
        }
    }

    /// Videos as the host writes them (members sorted), every counter
    /// exact: links with users, with a user gone, none, and names and
    /// values with escapes.
    const EXACT: &str = r#"[
        {"counts_exact":true,"id":"v1","likes_count":3,"models":[{"platform_users_id":{"id":"u1","n":"\u00e9\""}},{"platform_users_id":null},{"platform_users_id":{"id":"u2"}}],"movie":{"id":"f"},"plays_count":9,"title":"A \"b\"","upload_date":"2025-01-02"},
        {"counts_exact":true,"id":"v2","likes_count":0,"models":[],"movie":null,"plays_count":0,"upload_date":"2025-01-01","z\u00e9":1},
        {"counts_exact":true,"id":"v3","likes_count":1,"models":null,"plays_count":2,"upload_date":"2025-01-01"}
    ]"#;

    /// The one-pass writer writes what the counting writer writes of the
    /// same videos, and the same part.
    #[test]
    fn the_one_pass_writer_writes_what_the_counting_writer_does() {
        for comma in [false, true] {
            let mut fast = JsonOut::default();
            let part = write_exact(EXACT, &mut fast, comma)
                .expect("JSON")
                .expect("every counter exact");
            let videos = RawRecord::parse_list(EXACT).expect("a list");
            let mut counted = JsonOut::default();
            let counted_part = write_counted(
                &videos,
                |video, _| linked_users(video),
                &Counted::default(),
                &mut counted,
                comma,
            )
            .expect("JSON");
            assert_eq!(fast.as_str(), counted.as_str());
            assert_eq!(part, part_of(&videos));
            assert_eq!(counted_part, part);
            assert_eq!(
                part.last,
                Some(Run {
                    date: "2025-01-01".into(),
                    len: 2
                })
            );
            let text = format!("[{}]", fast.as_str().trim_start_matches(','));
            let answer: Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(
                answer[0]["models"],
                serde_json::json!([{"id": "u1", "n": "é\""}, {"id": "u2"}])
            );
            assert!(answer[0].get("counts_exact").is_none());
            assert_eq!(answer[2]["models"], serde_json::json!([]));
        }
    }

    /// A part the one-pass writer does not write is given back whole,
    /// nothing of it left in the answer; text that is not JSON is an error.
    #[test]
    fn a_part_not_written_in_one_pass_is_given_back() {
        let given_back = [
            r#"[{"counts_exact":true,"likes_count":1,"models":[],"plays_count":1},{"counts_exact":false,"likes_count":1,"models":[],"plays_count":1}]"#,
            r#"[{"counts_exact":null,"likes_count":1,"models":[],"plays_count":1}]"#,
            r#"[{"likes_count":1,"models":[],"plays_count":1}]"#,
            r#"[{"counts_exact":true,"models":[],"plays_count":1}]"#,
            r#"[{"counts_exact":true,"likes_count":1,"plays_count":1,"models":[]}]"#,
        ];
        for text in given_back {
            let mut out = JsonOut::default();
            out.raw("[kept");
            assert_eq!(
                write_exact(text, &mut out, true).expect("JSON"),
                None,
                "{text}"
            );
            assert_eq!(out.as_str(), "[kept", "{text}");
        }
        let mut out = JsonOut::default();
        assert!(write_exact(r#"[{"counts_exact":true,"#, &mut out, false).is_err());
        assert!(out.is_empty());
    }
}
