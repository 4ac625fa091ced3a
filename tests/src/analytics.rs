//! `GET /svc/analytics` as docs/service-api.md defines it, computed from
//! the records the test reads as admin: what the service's kept sums must
//! equal after any sequence of writes.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::Host;

/// A number as JavaScript prints it: integral values without a fraction.
fn js(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn day(record: &Value) -> Option<String> {
    record["date_created"]
        .as_str()
        .map(|t| t.chars().take(10).collect())
}

/// The analytics of `user` (a model's id) from the records: per video the
/// counters, its plays' completed count and mean watch time; plays and
/// likes per UTC day. Videos are keyed by id (the order of videos uploaded
/// at the same instant is not the contract's).
pub fn expected(host: &Host, user: &str) -> Value {
    let links = host.admin_find(
        "videos_models",
        &json!({"platform_users_id": {"_eq": user}}),
    );
    let ids: Vec<&str> = links
        .iter()
        .filter_map(|l| l["videos_id"].as_str())
        .collect();
    if ids.is_empty() {
        return json!({"total_videos": 0, "total_likes": 0, "total_plays": 0, "videos": {}});
    }
    let in_videos = json!({"video_id": {"_in": ids}});
    let videos = host.admin_find("videos", &json!({"id": {"_in": ids}}));
    let plays = host.admin_find("video_plays", &in_videos);
    let likes = host.admin_find("video_likes", &in_videos);
    let by_day = |records: &[Value]| {
        let mut out = BTreeMap::<String, u64>::new();
        for r in records {
            if let Some(d) = day(r) {
                *out.entry(d).or_default() += 1;
            }
        }
        out
    };
    let (plays_by_date, likes_by_date) = (by_day(&plays), by_day(&likes));
    let (mut total_likes, mut total_plays) = (0.0, 0.0);
    let mut per_video = Map::new();
    for v in &videos {
        let id = v["id"].as_str().unwrap_or_default();
        let mine: Vec<&Value> = plays.iter().filter(|p| p["video_id"] == id).collect();
        let completed = mine.iter().filter(|p| p["completed"] == true).count() as u64;
        let watched: Vec<f64> = mine
            .iter()
            .filter_map(|p| p["duration_watched"].as_f64())
            .collect();
        let mean = (!watched.is_empty())
            .then(|| watched.iter().sum::<f64>() / watched.len() as f64)
            .map_or(0, |m| (m + 0.5).floor() as i64);
        let likes = v["likes_count"].as_f64().unwrap_or(0.0);
        let plays = v["plays_count"].as_f64().unwrap_or(0.0);
        total_likes += likes;
        total_plays += plays;
        let rate = if plays <= 0.0 {
            json!(0)
        } else {
            js(completed as f64 / plays.floor() * 100.0)
        };
        per_video.insert(
            id.to_string(),
            json!({"id": id, "title": v["title"], "slug": v["slug"],
                   "upload_date": v["upload_date"], "likes": js(likes), "plays": js(plays),
                   "completed_plays": completed, "completion_rate": rate,
                   "avg_watch_time": mean}),
        );
    }
    json!({
        "total_videos": videos.len(),
        "total_likes": js(total_likes),
        "total_plays": js(total_plays),
        "plays_by_date": plays_by_date,
        "likes_by_date": likes_by_date,
        "videos": per_video,
    })
}

/// An answer of `GET /svc/analytics` with its videos keyed by id, as
/// [`expected`] gives them; the videos' order is checked here
/// (`-upload_date`).
pub fn keyed(answer: &Value) -> Value {
    let mut out = answer.clone();
    let videos = answer["videos"].as_array().cloned().unwrap_or_default();
    let dates: Vec<&str> = videos
        .iter()
        .map(|v| v["upload_date"].as_str().unwrap_or(""))
        .collect();
    assert!(
        dates.windows(2).all(|w| w[0] >= w[1]),
        "videos not by upload_date descending: {answer}"
    );
    out["videos"] = Value::Object(
        videos
            .into_iter()
            .map(|v| (v["id"].as_str().unwrap_or_default().to_string(), v))
            .collect(),
    );
    out
}
