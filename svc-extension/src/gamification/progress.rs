//! Achievement progress by code (docs/service-api.md rule 5), as a pure
//! function of what is known about a user.

use chrono::{DateTime, Months, TimeZone, Utc};

/// Everything rule 5 reads about one user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Published recordings.
    pub published: u64,
    /// Published recordings with `featured` true.
    pub featured_published: u64,
    /// Recording plays on recordings created by others.
    pub plays_on_others: u64,
    /// Recording plays with `completed` true.
    pub completed_plays: u64,
    /// Comments on recordings.
    pub comments: u64,
    /// Account creation.
    pub created: Option<DateTime<Utc>>,
    /// 1 + users with strictly greater weighted points (None: not needed).
    pub rank: Option<u64>,
}

/// The last account-creation instant that is an early adopter: one month
/// after the reference date 2025-01-01.
pub fn early_adopter_cutoff() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 2, 1, 0, 0, 0)
        .single()
        .unwrap_or_else(Utc::now)
}

/// Progress of `code` for a user at `now`; unknown codes are 0.
pub fn progress(code: &str, facts: &Facts, now: DateTime<Utc>) -> u64 {
    let flag = |b: bool| u64::from(b);
    match code {
        "first_recording" | "recording_10" | "recording_50" | "recording_100" => facts.published,
        "featured_recording" => facts.featured_published,
        "first_play" | "play_100" | "play_500" => facts.plays_on_others,
        "completionist_10" | "completionist_100" => facts.completed_plays,
        "first_comment" | "comment_50" | "comment_250" => facts.comments,
        "early_adopter" => flag(facts.created.is_some_and(|c| c <= early_adopter_cutoff())),
        // A calendar year: created on 2025-03-10, one year old from 2026-03-10.
        "one_year" => flag(
            facts
                .created
                .and_then(|c| c.checked_add_months(Months::new(12)))
                .is_some_and(|anniversary| anniversary <= now),
        ),
        "balanced_creator" => flag(facts.published >= 50 && facts.plays_on_others >= 100),
        "top_10_rank" => flag(facts.rank.is_some_and(|r| r <= 10)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
    }

    #[test]
    fn counts_map_to_their_codes() {
        let f = Facts {
            published: 12,
            featured_published: 2,
            plays_on_others: 101,
            completed_plays: 7,
            comments: 3,
            ..Default::default()
        };
        let now = at(2026, 1, 1);
        for (code, want) in [
            ("first_recording", 12),
            ("recording_10", 12),
            ("recording_50", 12),
            ("recording_100", 12),
            ("featured_recording", 2),
            ("first_play", 101),
            ("play_100", 101),
            ("play_500", 101),
            ("completionist_10", 7),
            ("completionist_100", 7),
            ("first_comment", 3),
            ("comment_50", 3),
            ("comment_250", 3),
            ("balanced_creator", 0),
            ("no_such_code", 0),
            ("top_10_rank", 0),
        ] {
            assert_eq!(progress(code, &f, now), want, "{code}");
        }
        let balanced = Facts {
            published: 50,
            plays_on_others: 100,
            ..Default::default()
        };
        assert_eq!(progress("balanced_creator", &balanced, now), 1);
        let ranked = Facts {
            rank: Some(10),
            ..Default::default()
        };
        assert_eq!(progress("top_10_rank", &ranked, now), 1);
        let ranked = Facts {
            rank: Some(11),
            ..Default::default()
        };
        assert_eq!(progress("top_10_rank", &ranked, now), 0);
    }

    #[test]
    fn dates_of_the_special_achievements() {
        let now = at(2026, 3, 10);
        let with = |c| Facts {
            created: Some(c),
            ..Default::default()
        };
        assert_eq!(progress("early_adopter", &with(at(2025, 2, 1)), now), 1);
        assert_eq!(
            progress(
                "early_adopter",
                &with(at(2025, 2, 1) + chrono::Duration::milliseconds(1)),
                now
            ),
            0
        );
        assert_eq!(progress("early_adopter", &with(at(2020, 5, 5)), now), 1);
        assert_eq!(progress("one_year", &with(at(2025, 3, 10)), now), 1);
        assert_eq!(progress("one_year", &with(at(2025, 3, 11)), now), 0);
        assert_eq!(progress("early_adopter", &Facts::default(), now), 0);
    }
}
