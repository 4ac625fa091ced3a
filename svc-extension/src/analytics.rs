//! `GET /analytics`: the caller's videos (linked through `models`), their
//! counters, plays and likes per UTC day, and per-video completion.
//! A constant number of calls, each reading a row per video or per day:
//! the sums kept on each video's header ([`crate::video_days`]) and per
//! creator and day ([`crate::creator_days`]).

use host_sdk::{ApiError, Context, ItemsError, Query, Request, Response};
use serde_json::{json, Map, Value};

use crate::caller::require_user;
use crate::creator_days;
use crate::failure::Failure;
use crate::records::{ids_of, str_field};
use crate::video_days;
use crate::videos::videos_of;

const ANALYTICS: Failure = Failure::new("Failed to get analytics");

/// A number as JavaScript prints it: integral values without a fraction
/// (not finite: 0).
pub fn js_number(x: f64) -> Value {
    match js_form(x) {
        JsForm::Integer(i) => json!(i),
        JsForm::Fraction(f) => serde_json::Number::from_f64(f).map_or(json!(0), Value::Number),
    }
}

/// Appends [`js_number`]'s text of `x` to `out`, building no value: a
/// leaderboard page writes a hundred.
pub fn write_js_number(out: &mut Vec<u8>, x: f64) {
    // Writing into a `Vec` cannot fail.
    let _ = match js_form(x) {
        JsForm::Integer(i) => serde_json::to_writer(out, &i),
        JsForm::Fraction(f) => serde_json::to_writer(out, &f),
    };
}

/// How [`js_number`] prints a number.
enum JsForm {
    Integer(i64),
    /// Finite.
    Fraction(f64),
}

fn js_form(x: f64) -> JsForm {
    if !x.is_finite() {
        JsForm::Integer(0)
    } else if x.fract() == 0.0 && x.abs() < 9.0e15 {
        JsForm::Integer(x as i64)
    } else {
        JsForm::Fraction(x)
    }
}

/// JavaScript's `Math.round`: halves round towards +∞.
pub fn js_round(x: f64) -> i64 {
    (x + 0.5).floor() as i64
}

/// `completed_plays / plays * 100`, 0 when there are no plays.
pub fn completion_rate(completed: u64, plays: u64) -> Value {
    if plays == 0 {
        json!(0)
    } else {
        js_number(completed as f64 / plays as f64 * 100.0)
    }
}

fn number(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

/// The caller's analytics. Their days (and their videos' sums) are counted
/// first where they are not kept yet, in a transaction; then each video's
/// header and the caller's days give every sum.
pub fn summary(ctx: &Context<'_>, user: &str) -> Result<Value, ItemsError> {
    let items = ctx.as_admin();
    let ids = videos_of(&items, user)?;
    if ids.is_empty() {
        return Ok(json!({"total_videos": 0, "total_likes": 0, "total_plays": 0, "videos": []}));
    }
    let videos = items.read_by_query(
        "videos",
        &Query::new()
            .filter(json!({"id": {"_in": ids}}))
            .fields(&[
                "id",
                "title",
                "slug",
                "upload_date",
                "likes_count",
                "plays_count",
            ])
            .sort(&["-upload_date"]),
    )?;
    let ids = ids_of(&videos, "id");
    creator_days::ensure_kept(ctx, user)?;
    let mut figures = video_days::figures(&items, &ids)?;
    if figures.len() < ids.len() {
        // A video unkept since (a write of its sums by hand): counted now.
        video_days::ensure_kept(ctx, &ids)?;
        figures = video_days::figures(&items, &ids)?;
    }
    let (plays_by_date, likes_by_date) = creator_days::by_day(&items, user)?;

    let mut total_likes = 0.0;
    let mut total_plays = 0.0;
    let per_video: Vec<Value> = videos
        .iter()
        .map(|v| {
            let id = str_field(v, "id").unwrap_or_default();
            let likes = number(v.get("likes_count"));
            let plays = number(v.get("plays_count"));
            total_likes += likes;
            total_plays += plays;
            let video_days::Figures {
                completed: completed_plays,
                mean_watch,
            } = figures.get(id).copied().unwrap_or_default();
            json!({
                "id": id,
                "title": v.get("title"),
                "slug": v.get("slug"),
                "upload_date": v.get("upload_date"),
                "likes": js_number(likes),
                "plays": js_number(plays),
                "completed_plays": completed_plays,
                "completion_rate": completion_rate(completed_plays, plays.max(0.0) as u64),
                "avg_watch_time": mean_watch.map(js_round).unwrap_or(0),
            })
        })
        .collect();
    let mut out = Map::new();
    out.insert("total_videos".into(), json!(videos.len()));
    out.insert("total_likes".into(), js_number(total_likes));
    out.insert("total_plays".into(), js_number(total_plays));
    out.insert("plays_by_date".into(), json!(plays_by_date));
    out.insert("likes_by_date".into(), json!(likes_by_date));
    out.insert("videos".into(), Value::Array(per_video));
    Ok(Value::Object(out))
}

/// `GET /analytics` (auth).
pub fn handler(_req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let user = require_user(ctx)?;
    let body = summary(ctx, user).map_err(ANALYTICS.of())?;
    Ok(Response::ok(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js_number(50.0).to_string(), "50");
        assert_eq!(js_number(100.0 / 3.0).to_string(), "33.333333333333336");
        assert_eq!(completion_rate(1, 2), json!(50));
        assert_eq!(completion_rate(3, 0), json!(0));
    }

    /// The writer prints what the value would.
    #[test]
    fn numbers_are_written_as_their_values_print() {
        let mut x = 1.0e-9_f64;
        let mut samples = vec![
            0.0,
            -0.0,
            50.0,
            -3.0,
            100.0 / 3.0,
            8.9e15,
            9.1e15,
            1e300,
            f64::NAN,
            f64::INFINITY,
        ];
        while x < 1e20 {
            samples.extend([x, -x, x * 1.37, x.round()]);
            x *= 3.3;
        }
        for x in samples {
            let mut out = Vec::new();
            write_js_number(&mut out, x);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                js_number(x).to_string(),
                "{x}"
            );
        }
    }

    #[test]
    fn rounding_is_math_round() {
        assert_eq!(js_round(2.5), 3);
        assert_eq!(js_round(2.49), 2);
        assert_eq!(js_round(0.0), 0);
        assert_eq!(js_round(-2.5), -2);
    }
}
