//! The scenarios of the issue, as request sources over a generated dataset.

use std::sync::Arc;

use bytes::Bytes;
use hyper::Method;

use crate::dataset::{new_recording_body, Dataset};
use crate::driver::{Req, Source};
use crate::rng::mix;

/// How a scenario's cost may grow with the data (issue targets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `/server/ping`: the floor of the HTTP stack.
    Floor,
    /// Answers or aggregates that grow with the data: ×4 data ≤ 4.5× cost.
    List,
    /// Answers of a fixed size, and writes: ×4 data ≤ 1.5× cost.
    Point,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Floor => "floor",
            Class::List => "list",
            Class::Point => "point",
        }
    }

    /// The largest allowed ×4/×1 latency ratio.
    pub fn growth_limit(self) -> Option<f64> {
        match self {
            Class::Floor => None,
            Class::List => Some(4.5),
            Class::Point => Some(1.5),
        }
    }
}

/// One scenario: what to send, how to judge it.
#[derive(Clone)]
pub struct Scenario {
    /// A short stable id (the first column of every result row).
    pub id: &'static str,
    pub label: &'static str,
    pub class: Class,
    /// Requests come in pairs (like, unlike).
    pub paired: bool,
    pub source: Source,
}

/// Ids of every scenario, in the order they run.
pub const IDS: [&str; 14] = [
    "ping",
    "stats",
    "videos-50",
    "videos-all",
    "video-slug",
    "models",
    "articles",
    "leaderboard",
    "user",
    "recording-get",
    "recording-post",
    "recording-play",
    "like-unlike",
    "analytics",
];

/// A pseudo-random pick in `0..n`, different per worker and iteration.
pub fn pick(worker: usize, iteration: u64, n: usize) -> usize {
    (mix(((worker as u64) << 40) ^ iteration) % n.max(1) as u64) as usize
}

fn fixed(req: Req) -> Source {
    Arc::new(move |_, _| req.clone())
}

fn nonempty(what: &str, v: &[String]) -> Result<Arc<Vec<String>>, String> {
    if v.is_empty() {
        Err(format!("the dataset has no {what}"))
    } else {
        Ok(Arc::new(v.to_vec()))
    }
}

/// A bench viewer's token for a worker.
fn viewer(tokens: &[String], worker: usize) -> &str {
    &tokens[worker % tokens.len()]
}

pub fn all(data: &Dataset) -> Result<Vec<Scenario>, String> {
    let slugs = nonempty("visible videos", &data.video_slugs)?;
    let videos = nonempty("visible videos", &data.video_ids)?;
    let users = nonempty("users with stats", &data.stat_users)?;
    let recordings = nonempty("public recordings", &data.public_recordings)?;
    let tokens = nonempty("bench viewers", &data.bench_tokens)?;
    let body = Bytes::from(new_recording_body(
        data.seed,
        data.sizes.events_per_recording,
    )?);
    let analytics = Req::get("/svc/analytics").token(&data.analytics_token);

    let scenario = |id, label, class, source| Scenario {
        id,
        label,
        class,
        paired: false,
        source,
    };
    let mut list = vec![
        scenario(
            "ping",
            "GET /server/ping",
            Class::Floor,
            fixed(Req::get("/server/ping")),
        ),
        scenario(
            "stats",
            "GET /svc/stats",
            Class::List,
            fixed(Req::get("/svc/stats")),
        ),
        scenario(
            "videos-50",
            "GET /svc/videos?limit=50",
            Class::Point,
            fixed(Req::get("/svc/videos?limit=50")),
        ),
        scenario(
            "videos-all",
            "GET /svc/videos (all)",
            Class::List,
            fixed(Req::get("/svc/videos")),
        ),
        scenario("video-slug", "GET /svc/videos/:slug", Class::Point, {
            let slugs = slugs.clone();
            Arc::new(move |w, i| {
                Req::get(format!("/svc/videos/{}", slugs[pick(w, i, slugs.len())]))
            })
        }),
        scenario(
            "models",
            "GET /svc/models",
            Class::List,
            fixed(Req::get("/svc/models")),
        ),
        scenario(
            "articles",
            "GET /svc/articles",
            Class::List,
            fixed(Req::get("/svc/articles")),
        ),
        scenario(
            "leaderboard",
            "GET /svc/gamification/leaderboard",
            Class::Point,
            fixed(Req::get("/svc/gamification/leaderboard")),
        ),
        scenario("user", "GET /svc/gamification/user/:id", Class::Point, {
            let users = users.clone();
            Arc::new(move |w, i| {
                Req::get(format!(
                    "/svc/gamification/user/{}",
                    users[pick(w, i, users.len())]
                ))
            })
        }),
        scenario(
            "recording-get",
            "GET /svc/recordings/:id (authenticated)",
            Class::Point,
            {
                let (recordings, tokens) = (recordings.clone(), tokens.clone());
                Arc::new(move |w, i| {
                    let id = &recordings[pick(w, i, recordings.len())];
                    Req::get(format!("/svc/recordings/{id}")).token(viewer(&tokens, w))
                })
            },
        ),
        scenario(
            "recording-post",
            "POST /svc/recordings (1,000 events)",
            Class::Point,
            {
                let tokens = tokens.clone();
                Arc::new(move |w, _| {
                    Req::new(Method::POST, "/svc/recordings")
                        .token(viewer(&tokens, w))
                        .body(body.clone())
                })
            },
        ),
        scenario(
            "recording-play",
            "POST /svc/recordings/:id/play (authenticated, awards points)",
            Class::Point,
            {
                let (recordings, tokens) = (recordings.clone(), tokens.clone());
                Arc::new(move |w, i| {
                    let id = &recordings[pick(w, i, recordings.len())];
                    Req::new(Method::POST, format!("/svc/recordings/{id}/play"))
                        .token(viewer(&tokens, w))
                })
            },
        ),
        Scenario {
            paired: true,
            ..scenario(
                "like-unlike",
                "POST + DELETE /svc/videos/:id/like (alternating)",
                Class::Point,
                {
                    let (videos, tokens) = (videos.clone(), tokens.clone());
                    Arc::new(move |w, i| {
                        // Both requests of a pair on the same video; a
                        // worker sharing its viewer with another may race
                        // it and get the expected 400.
                        let video = &videos[pick(w, i / 2, videos.len())];
                        let method = if i % 2 == 0 {
                            Method::POST
                        } else {
                            Method::DELETE
                        };
                        Req::new(method, format!("/svc/videos/{video}/like"))
                            .token(viewer(&tokens, w))
                            .tolerate(400)
                    })
                },
            )
        },
        scenario(
            "analytics",
            "GET /svc/analytics (a model with 50 videos)",
            Class::Point,
            fixed(analytics),
        ),
    ];
    // Keep the order of IDS (the smoke test checks every id has a row).
    list.sort_by_key(|s| IDS.iter().position(|id| *id == s.id));
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Sizes;

    fn dataset() -> Dataset {
        Dataset {
            sizes: Sizes::smoke(),
            seed: 1,
            video_slugs: vec!["video-1".into()],
            video_ids: vec!["v1".into()],
            stat_users: vec!["u1".into()],
            public_recordings: vec!["r1".into()],
            public_recordings_total: 1,
            bench_tokens: vec!["t0".into(), "t1".into()],
            analytics_token: "m".into(),
        }
    }

    #[test]
    fn every_issue_scenario_once_in_order() {
        let list = all(&dataset()).expect("scenarios");
        let ids: Vec<&str> = list.iter().map(|s| s.id).collect();
        assert_eq!(ids, IDS);
    }

    #[test]
    fn like_pairs_alternate_on_one_video() {
        let list = all(&dataset()).expect("scenarios");
        let like = list.iter().find(|s| s.id == "like-unlike").expect("like");
        assert!(like.paired);
        let (a, b) = ((like.source)(3, 10), (like.source)(3, 11));
        assert_eq!((a.method, b.method), (Method::POST, Method::DELETE));
        assert_eq!(a.path, b.path);
        assert_eq!(a.tolerated, Some(400));
    }
}
