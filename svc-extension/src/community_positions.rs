//! Where a deep page of the community list starts, in constant work: a kept
//! count tree ([`crate::count_tree`]) of the listed recordings (published
//! and public) by creation date.
//!
//! A date maps to its milliseconds since 1970 (42 bits last until 2109),
//! shifted to the key's top bits: the tree's top level splits the dates in
//! spans of about 199 days, its leaves in spans of 2^18 ms (4.4 minutes).
//! Recordings without a date (last in the list's order) are alone in the
//! first leaf; dates before the second leaf's first (1970-01-01T00:04:22.144Z)
//! count with it, and dates past 2109 in the last leaf.
//!
//! A page that starts in a dated leaf is read among the recordings dated
//! before the next leaf (one range of the `(status, public, date_created)`
//! index; a filter that also kept the undated ones would walk it all), and
//! topped up with undated ones when it reaches past the dated ones.
//!
//! The recordings' hook moves the tree with every write that lists,
//! unlists, moves or deletes a recording, in the writing transaction. A
//! database whose recordings predate the tree is counted once, in one
//! transaction, by the first deep page asked for; the state row's
//! `community_counted` says it was.

use host_sdk::raw::RawRecord;
use host_sdk::{Context, EventKind, Items, ItemsError, RawItemEvent};
use serde_json::{json, Value};

use crate::count_tree::{self, Tree};
use crate::gamification::time::{format_time, parse_time};

/// The collection of the tree's nodes.
pub const COUNTS: &str = "community_recording_counts";
/// Whether the tree counts every listed recording (on `gamification_state`).
pub const COUNTED: &str = "community_counted";

const TREE: Tree = Tree {
    nodes: COUNTS,
    count: "recordings",
    counted: COUNTED,
    rows: "recordings",
    counts: listed,
    field: "date_created",
    key_of: |date| Some(key(date.and_then(Value::as_str))),
};

/// Offsets from which a page starts from the tree: below, walking the
/// index row by row is as cheap.
pub const DEEP_OFFSET: u64 = 1_000;

/// Bits below a date's milliseconds in its key.
const SHIFT: u32 = 22;
/// The greatest milliseconds a key holds (2109-05-15).
const MAX_MS: i64 = (1 << (64 - SHIFT)) - 1;
/// The least key of a date: the second leaf's first (the first leaf holds
/// the recordings without a date).
const FIRST_DATED: u64 = 1 << (64 - 8 * count_tree::LEVELS);

/// The key of a creation date: ordered as the dates are; 0 for no date.
pub fn key(date: Option<&str>) -> u64 {
    match date.and_then(parse_time) {
        None => 0,
        Some(t) => ((t.timestamp_millis().clamp(0, MAX_MS) as u64) << SHIFT).max(FIRST_DATED),
    }
}

/// Where a deep page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStart {
    /// Among the recordings without a date, after `skip` of them.
    Undated { skip: u64 },
    /// Among the recordings dated before `before` (every one for `None`,
    /// undated included), after `skip` of them, then the undated ones.
    Dated { before: Option<String>, skip: u64 },
}

/// The page start of a tree position.
fn start_of(at: count_tree::Position) -> PageStart {
    if at.leaf_top < FIRST_DATED {
        return PageStart::Undated { skip: at.skip };
    }
    let before = at
        .leaf_top
        .checked_add(1)
        .and_then(|next| chrono::DateTime::from_timestamp_millis((next >> SHIFT) as i64))
        .map(format_time);
    PageStart::Dated {
        before,
        skip: at.skip,
    }
}

/// Where a page of the list at `offset` starts (see [`PageStart`]); `None`
/// when there are not that many recordings.
pub fn page_start(
    ctx: &Context<'_>,
    items: &Items<'_>,
    offset: u64,
) -> Result<Option<PageStart>, ItemsError> {
    Ok(TREE.position(ctx, items, offset)?.map(start_of))
}

/// The filter of the listed recordings.
fn listed() -> Value {
    json!({"_and": [{"status": {"_eq": "published"}}, {"public": {"_eq": true}}]})
}

/// A part of the list, read in the list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// Every listed recording.
    Every,
    /// The listed recordings dated before this date.
    Before(&'a str),
    /// The listed recordings without a date.
    Undated,
}

impl Part<'_> {
    pub fn filter(&self) -> Value {
        match self {
            Part::Every => listed(),
            Part::Before(date) => json!({"_and": [listed(), {"date_created": {"_lt": date}}]}),
            Part::Undated => json!({"_and": [listed(), {"date_created": {"_null": true}}]}),
        }
    }

    /// The list's order: newest first (no date last), then by id.
    pub fn sort(&self) -> &'static [&'static str] {
        match self {
            Part::Undated => &["-id"],
            _ => &["-date_created", "-id"],
        }
    }
}

impl PageStart {
    /// The start of the list's page at a shallow `offset`.
    pub fn shallow(offset: u64) -> Self {
        PageStart::Dated {
            before: None,
            skip: offset,
        }
    }

    /// The page's first read: a part of the list, and how many of it to
    /// skip.
    pub fn first(&self) -> (Part<'_>, u64) {
        match self {
            PageStart::Undated { skip } => (Part::Undated, *skip),
            PageStart::Dated { before: None, skip } => (Part::Every, *skip),
            PageStart::Dated {
                before: Some(before),
                skip,
            } => (Part::Before(before), *skip),
        }
    }

    /// The page's second read, when its first brought `got` of `limit`
    /// recordings from before a date: the undated ones that follow
    /// (a part, how many to skip, how many to take).
    pub fn top_up(&self, got: u64, limit: u64) -> Option<(Part<'static>, u64, u64)> {
        let dated = matches!(
            self,
            PageStart::Dated {
                before: Some(_),
                ..
            }
        );
        // An empty first read (rows gone since the tree was read) cannot
        // say where the undated ones would start: the page stays empty.
        (dated && got > 0 && got < limit).then_some((Part::Undated, 0, limit - got))
    }
}

/// The key a recording has in the tree, if it is listed.
fn listed_key(record: Option<&RawRecord<'_>>) -> Option<u64> {
    let record = record?;
    let published = record.str("status").as_deref() == Some("published");
    let public = record.get("public").map(|v| v.get()) == Some("true");
    (published && public).then(|| key(record.str("date_created").as_deref()))
}

/// Moves the tree by a write of recordings (in the writing transaction).
pub fn follow(event: &RawItemEvent<'_>, ctx: &Context<'_>) -> Result<(), ItemsError> {
    let keys = event.keys.iter().map(|id| {
        let before = event
            .before_of(id)
            .filter(|_| event.kind != EventKind::Create);
        let after = event
            .after_of(id)
            .filter(|_| event.kind != EventKind::Delete);
        (listed_key(before.as_ref()), listed_key(after.as_ref()))
    });
    TREE.follow(&ctx.as_admin(), keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A date `ms` milliseconds after 1970, as the platform writes it.
    fn date(ms: i64) -> String {
        format_time(chrono::DateTime::from_timestamp_millis(ms).expect("a date"))
    }

    #[test]
    fn keys_order_as_the_dates() {
        let dates = [
            "1970-01-01T00:04:22.144Z",
            "1970-01-01T00:04:22.145Z",
            "2026-11-28T01:02:03.456Z",
            "2026-11-28T01:02:03.457Z",
            "2109-05-15T07:35:11.103Z",
        ];
        assert_eq!(key(None), 0, "no date: the first leaf, alone");
        assert_eq!(key(Some(dates[0])), FIRST_DATED);
        for early in ["1969-12-31T23:59:59.999Z", "1970-01-01T00:04:22.143Z"] {
            assert_eq!(key(Some(early)), FIRST_DATED, "{early}");
        }
        for pair in dates.windows(2) {
            assert!(key(Some(pair[0])) < key(Some(pair[1])), "{pair:?}");
        }
        assert_eq!(
            key(Some("2200-01-01T00:00:00.000Z")),
            key(Some(&date(MAX_MS)))
        );
    }

    /// Property: for every offset, the page read from where the tree says
    /// it starts is the whole list's page at that offset, ties, missing
    /// dates and
    /// dates out of range included.
    #[test]
    fn the_tree_finds_the_row_at_any_offset() {
        let mut seed = 3u64;
        let mut next = move |below: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) % below
        };
        let now = 1_795_000_000_000i64;
        // (date, id): the list's order is the date newest first (no date
        // last), then the id.
        let mut rows: Vec<(Option<String>, u64)> = (0..3000)
            .map(|id| {
                let date = match next(6) {
                    0 => None,
                    1 => Some(date(now)),
                    2 => Some(date(-(next(1_000_000) as i64))),
                    3 => Some("2300-01-01T00:00:00.000Z".to_string()),
                    4 => Some(date(now - next(300_000) as i64)),
                    _ => Some(date(now - next(365 * 86_400_000) as i64)),
                };
                (date, id)
            })
            .collect();
        let order = |a: &(Option<String>, u64), b: &(Option<String>, u64)| {
            let at = |r: &(Option<String>, u64)| r.0.as_deref().and_then(parse_time);
            (at(b), b.1).cmp(&(at(a), a.1))
        };
        rows.sort_by(order);
        let tree: BTreeMap<i64, i64> =
            count_tree::count_of(rows.iter().map(|r| key(r.0.as_deref())));
        let nodes =
            |(first, last)| Ok::<_, ()>(tree.range(first..=last).map(|(n, u)| (*n, *u)).collect());
        let read = |part: Part<'_>, skip: u64, take: u64| {
            let bound = match part {
                Part::Before(date) => parse_time(date),
                _ => None,
            };
            Ok::<_, ()>(
                rows.iter()
                    .filter(|r| match (part, r.0.as_deref().and_then(parse_time)) {
                        (Part::Every, _) => true,
                        (Part::Before(_), Some(t)) => bound.is_some_and(|b| t < b),
                        (Part::Undated, None) => true,
                        _ => false,
                    })
                    .skip(skip as usize)
                    .take(take as usize)
                    .collect::<Vec<_>>(),
            )
        };
        for offset in 0..rows.len() as u64 {
            let at = count_tree::position(offset, nodes)
                .expect("no read fails")
                .expect("a position inside the rows");
            let start = start_of(at);
            let (part, skip) = start.first();
            let mut page = read(part, skip, 7).expect("no read fails");
            if let Some((part, skip, take)) = start.top_up(page.len() as u64, 7) {
                page.extend(read(part, skip, take).expect("no read fails"));
            }
            let expected: Vec<_> = rows.iter().skip(offset as usize).take(7).collect();
            assert_eq!(page, expected, "offset {offset}");
        }
    }
}
