//! The benchmark dataset: sizes at a scale, and its generation through the
//! host's own write path (bulk `POST /items/...` as admin), deterministic
//! from a seed. Dates are relative to the time of generation.

mod import;
mod records;

use std::time::Instant;

use platform_tests::{encode, ADMIN_TOKEN};
use serde_json::json;

use crate::api::Api;
use crate::rng::{mix, uuid, Rng};
use crate::time::{days_before, now_secs};
use import::Importer;
use records::*;

/// How many records of each kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    pub models: usize,
    pub videos: usize,
    pub files: usize,
    pub likes: usize,
    pub video_plays: usize,
    pub recordings: usize,
    pub events_per_recording: usize,
    pub users: usize,
    pub point_actions: usize,
    pub articles: usize,
    /// Videos linked to the model whose analytics are measured.
    pub analytics_videos: usize,
    /// Viewers with tokens that drive the authenticated scenarios (one per
    /// connection at the highest concurrency).
    pub bench_users: usize,
}

impl Sizes {
    /// The issue's default sizes times `scale` (articles are not in the
    /// issue: 50 per unit of scale).
    pub fn at_scale(scale: f64) -> Self {
        Self {
            models: 200,
            videos: 2_000,
            files: 500,
            likes: 20_000,
            video_plays: 50_000,
            recordings: 10_000,
            events_per_recording: 1_000,
            users: 100_000,
            point_actions: 1_000_000,
            articles: 50,
            analytics_videos: 50,
            bench_users: 64,
        }
        .times(scale)
    }

    /// Every count times `factor`, except the events of a recording, the
    /// analytics model's videos and the bench viewers.
    pub fn times(&self, factor: f64) -> Self {
        let n = |base: usize| ((base as f64 * factor).round() as usize).max(2);
        Self {
            models: n(self.models),
            videos: n(self.videos).max(self.analytics_videos + 10),
            files: n(self.files),
            likes: n(self.likes),
            video_plays: n(self.video_plays),
            recordings: n(self.recordings),
            events_per_recording: self.events_per_recording,
            users: n(self.users),
            point_actions: n(self.point_actions),
            articles: n(self.articles),
            analytics_videos: self.analytics_videos,
            bench_users: self.bench_users,
        }
    }

    /// A tiny dataset that still has every kind of record (a few seconds).
    pub fn smoke() -> Self {
        Self {
            models: 6,
            videos: 60,
            files: 10,
            likes: 100,
            video_plays: 200,
            recordings: 12,
            events_per_recording: 1_000,
            users: 200,
            point_actions: 2_000,
            articles: 6,
            analytics_videos: 50,
            bench_users: 4,
        }
    }
}

/// What the scenarios need to address the generated data.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub sizes: Sizes,
    pub seed: u64,
    /// Slugs and ids of videos the public can see.
    pub video_slugs: Vec<String>,
    pub video_ids: Vec<String>,
    /// A spread sample of users having stats.
    pub stat_users: Vec<String>,
    /// A spread sample of published, public recordings (not owned by any
    /// bench user).
    pub public_recordings: Vec<String>,
    /// How many recordings are published and public (the community list).
    pub public_recordings_total: usize,
    /// Tokens of the bench viewers (no likes, own no recordings).
    pub bench_tokens: Vec<String>,
    /// Token of the model linked to `analytics_videos` videos.
    pub analytics_token: String,
}

// Kinds of records, for their deterministic ids.
const FILE: u64 = 1;
const MODEL: u64 = 2;
const USER: u64 = 3;
const VIDEO: u64 = 4;
const RECORDING: u64 = 5;
const BENCH_USER: u64 = 6;
const ARTICLE: u64 = 7;
const PHOTO: u64 = 8;
const LINK: u64 = 9;
const LIKE: u64 = 10;
const PLAY: u64 = 11;
const POINT: u64 = 12;
const STATS: u64 = 13;

/// Records per request for small records: as many as the host takes.
const CHUNK: usize = crate::api::MAX_BATCH;
/// Recordings of 1,000 events per request (each ~110 KB); fewer events,
/// more per request.
const RECORDING_CHUNK: usize = 25;
/// Samples kept for the scenarios.
const SAMPLE: usize = 1_024;

const DECAY_PER_DAY: f64 = 0.005;
/// The svc extension's default decay anchor, 2025-01-01T00:00:00Z.
const ANCHOR_SECS: f64 = 1_735_689_600.0;

static DEVICES: [Device; 2] = [
    Device {
        name: "Device A",
        index: 0,
        capabilities: &["Vibrate"],
    },
    Device {
        name: "Device B",
        index: 1,
        capabilities: &["Vibrate", "Rotate"],
    },
];
const TAGS: [&str; 6] = ["slow", "intense", "wave", "pulse", "tease", "demo"];
const WORDS: [&str; 12] = [
    "sunset", "velvet", "river", "night", "glow", "ember", "tide", "silk", "echo", "bloom",
    "drift", "spark",
];

fn words(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every index `0..n` in a spread sample of at most `SAMPLE`.
fn sample(n: usize, keep: impl Fn(usize) -> bool, id: impl Fn(usize) -> String) -> Vec<String> {
    let kept: Vec<usize> = (0..n).filter(|&i| keep(i)).collect();
    let step = (kept.len() / SAMPLE).max(1);
    kept.iter().step_by(step).map(|&i| id(i)).collect()
}

/// The id of a role by name.
fn role_id(api: &Api, name: &str) -> Result<String, String> {
    let filter = json!({"name": {"_eq": name}}).to_string();
    let answer = api.get(
        &format!("/items/platform_roles?fields=id&filter={}", encode(&filter)),
        Some(ADMIN_TOKEN),
    )?;
    answer["data"][0]["id"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("no role named {name}"))
}

/// Generates the dataset into an empty host.
pub struct Generator<'a> {
    api: &'a Api,
    sizes: Sizes,
    seed: u64,
    now: f64,
    quiet: bool,
    /// Small records per request.
    chunk: usize,
    /// Requests in flight at once.
    importers: usize,
}

/// Which video, user and when, for likes and plays (the plays also set
/// the videos' view counts).
struct Interactions {
    likes: Vec<(usize, usize, f64)>,
    plays: Vec<(usize, Option<usize>, f64)>,
}

impl<'a> Generator<'a> {
    pub fn new(api: &'a Api, sizes: Sizes, seed: u64, quiet: bool) -> Self {
        Self {
            api,
            sizes,
            seed,
            now: now_secs(),
            quiet,
            chunk: CHUNK,
            importers: 1,
        }
    }

    /// `n` import requests in flight at once (see [`Importer::with_senders`]).
    pub fn with_importers(self, n: usize) -> Self {
        Self {
            importers: n.max(1),
            ..self
        }
    }

    /// `chunk` small records per request (a host started with a
    /// `MAX_BATCH_MUTATION` of at least that).
    pub fn with_chunk(self, chunk: usize) -> Self {
        Self {
            chunk: chunk.max(1),
            ..self
        }
    }

    /// Recordings per request: about as many bytes as 25 of 1,000 events.
    fn recording_chunk(&self) -> usize {
        (RECORDING_CHUNK * 1_000 / self.sizes.events_per_recording.max(1)).clamp(1, self.chunk)
    }

    fn rng(&self, stream: u64) -> Rng {
        Rng::derive(self.seed, stream)
    }

    fn id(&self, kind: u64, index: usize) -> String {
        uuid(self.seed, kind, index)
    }

    fn at(&self, days_ago: f64) -> String {
        days_before(self.now, days_ago)
    }

    fn visible(&self, video: usize) -> bool {
        // About 3% of videos are scheduled in the future.
        mix(self.seed ^ mix(VIDEO ^ video as u64)) % 100 >= 3
    }

    fn published_public(&self, recording: usize) -> (&'static str, bool) {
        let mut r = Rng::derive(self.seed ^ RECORDING, recording as u64);
        let status = match r.below(100) {
            0..=79 => "published",
            80..=94 => "draft",
            _ => "archived",
        };
        (status, status == "published" && r.chance(0.6))
    }

    fn say(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    /// Imports everything and returns the handles the scenarios use.
    pub fn run(&self) -> Result<Dataset, String> {
        let s = &self.sizes;
        if s.analytics_videos > s.videos || s.models < 2 || s.files < 2 {
            return Err(format!("sizes too small: {s:?}"));
        }
        let started = Instant::now();
        let importer = Importer::new(self.api, self.quiet).with_senders(self.importers);
        let model_role = role_id(self.api, "Model")?;
        let viewer_role = role_id(self.api, "Viewer")?;
        self.say(&format!(
            "generating (seed {}): {} users, {} models, {} videos, {} recordings x {} events, {} point actions…",
            self.seed, s.users, s.models, s.videos, s.recordings, s.events_per_recording, s.point_actions
        ));

        self.files(&importer)?;
        self.models(&importer, &model_role)?;
        self.users(&importer, &viewer_role)?;
        let interactions = self.interactions();
        self.videos(&importer, &interactions)?;
        self.articles(&importer)?;
        self.likes_and_plays(&importer, &interactions)?;
        // Stats before recordings: publishing a recording awards its owner
        // through the extension's hook, which updates the stats row in place.
        self.points_and_stats(&importer)?;
        self.recordings(&importer)?;
        self.say(&format!("data ready in {:.1?}", started.elapsed()));

        Ok(Dataset {
            sizes: s.clone(),
            seed: self.seed,
            video_slugs: sample(s.videos, |i| self.visible(i), |i| format!("video-{i}")),
            video_ids: sample(s.videos, |i| self.visible(i), |i| self.id(VIDEO, i)),
            stat_users: sample(s.users, |_| true, |i| self.id(USER, i)),
            public_recordings: sample(
                s.recordings,
                |i| self.published_public(i).1,
                |i| self.id(RECORDING, i),
            ),
            public_recordings_total: (0..s.recordings)
                .filter(|&i| self.published_public(i).1)
                .count(),
            bench_tokens: (0..s.bench_users).map(bench_token).collect(),
            analytics_token: ANALYTICS_TOKEN.to_string(),
        })
    }

    fn files(&self, importer: &Importer) -> Result<(), String> {
        let mut rng = self.rng(FILE);
        let movies = self.sizes.files / 2;
        importer.import("platform_files", self.sizes.files, self.chunk, |i| {
            let movie = i < movies;
            File {
                id: self.id(FILE, i),
                storage: "local",
                filename_disk: format!(
                    "{}.{}",
                    self.id(FILE, i),
                    if movie { "mp4" } else { "jpg" }
                ),
                filename_download: format!("file-{i}.{}", if movie { "mp4" } else { "jpg" }),
                title: words(&mut rng, 3),
                mime: if movie { "video/mp4" } else { "image/jpeg" },
                filesize: rng.between(100_000, 500_000_000) as u64,
                width: 1920,
                height: 1080,
                duration: movie.then(|| rng.between(60, 3_600) as u32),
                uploaded_on: self.at(rng.unit() * 1_000.0),
            }
        })
    }

    /// A movie file and an image file, by index.
    fn movie(&self, k: usize) -> String {
        self.id(FILE, k % (self.sizes.files / 2).max(1))
    }

    fn image(&self, k: usize) -> String {
        let movies = self.sizes.files / 2;
        self.id(FILE, movies + k % (self.sizes.files - movies).max(1))
    }

    fn models(&self, importer: &Importer, role: &str) -> Result<(), String> {
        let mut rng = self.rng(MODEL);
        importer.import("platform_users", self.sizes.models, self.chunk, |i| User {
            id: self.id(MODEL, i),
            first_name: format!("Model{i}"),
            last_name: words(&mut rng, 1),
            artist_name: format!("{} {i}", words(&mut rng, 2)),
            role: role.to_string(),
            date_created: self.at(rng.unit() * 1_000.0),
            slug: Some(format!("model-{i}")),
            avatar: Some(self.image(rng.next_u64() as usize)),
            banner: Some(self.image(rng.next_u64() as usize)),
            description: Some(words(&mut rng, 30)),
            token: (i == 0).then(|| ANALYTICS_TOKEN.to_string()),
        })?;
        let mut rng = self.rng(PHOTO);
        importer.import("model_photos", self.sizes.models * 3, self.chunk, |i| {
            ModelPhoto {
                id: self.id(PHOTO, i),
                platform_users_id: self.id(MODEL, i / 3),
                platform_files_id: self.image(rng.next_u64() as usize),
                sort: (i % 3) as u32,
            }
        })
    }

    fn users(&self, importer: &Importer, role: &str) -> Result<(), String> {
        let mut rng = self.rng(USER);
        importer.import("platform_users", self.sizes.users, self.chunk, |i| User {
            id: self.id(USER, i),
            first_name: format!("User{i}"),
            last_name: words(&mut rng, 1),
            artist_name: format!("{} {i}", words(&mut rng, 1)),
            role: role.to_string(),
            date_created: self.at(rng.unit() * 1_000.0),
            slug: None,
            avatar: rng.chance(0.3).then(|| self.image(rng.next_u64() as usize)),
            banner: None,
            description: None,
            token: None,
        })?;
        importer.import("platform_users", self.sizes.bench_users, self.chunk, |i| {
            User {
                id: self.id(BENCH_USER, i),
                first_name: "Bench".into(),
                last_name: format!("Viewer{i}"),
                artist_name: format!("bench {i}"),
                role: role.to_string(),
                date_created: self.at(10.0),
                slug: None,
                avatar: None,
                banner: None,
                description: None,
                token: Some(bench_token(i)),
            }
        })
    }

    fn interactions(&self) -> Interactions {
        let s = &self.sizes;
        let visible: Vec<usize> = (0..s.videos).filter(|&v| self.visible(v)).collect();
        let mut rng = self.rng(LIKE);
        // User `i % users`, round `i / users`: distinct (video, user) pairs
        // while rounds stay below the number of visible videos.
        let likes = (0..s.likes)
            .map(|i| {
                let (user, round) = (i % s.users, i / s.users);
                let base = mix(self.seed ^ user as u64) as usize;
                let video = visible[(base + round) % visible.len()];
                (video, user, rng.unit() * 90.0)
            })
            .collect();
        let mut rng = self.rng(PLAY);
        let plays = (0..s.video_plays)
            .map(|_| {
                let video = visible[rng.below(visible.len())];
                let user = rng.chance(0.7).then(|| rng.below(s.users));
                (video, user, rng.unit() * 90.0)
            })
            .collect();
        Interactions { likes, plays }
    }

    /// The models of video `v`: the analytics model (index 0) on the first
    /// `analytics_videos` videos only, then one to three others.
    fn models_of(&self, v: usize) -> Vec<usize> {
        let mut rng = Rng::derive(self.seed ^ LINK, v as u64);
        let mut models = Vec::with_capacity(4);
        if v < self.sizes.analytics_videos {
            models.push(0);
        }
        for _ in 0..rng.between(1, 3) {
            let m = 1 + rng.below(self.sizes.models - 1);
            if !models.contains(&m) {
                models.push(m);
            }
        }
        models
    }

    fn videos(&self, importer: &Importer, interactions: &Interactions) -> Result<(), String> {
        let s = &self.sizes;
        let mut plays = vec![0u64; s.videos];
        for &(v, _, _) in &interactions.plays {
            plays[v] += 1;
        }
        let mut rng = self.rng(VIDEO);
        importer.import("videos", s.videos, self.chunk, |i| {
            let upload = if self.visible(i) {
                rng.unit() * 1_000.0 + 0.01
            } else {
                -(rng.unit() * 60.0 + 1.0)
            };
            Video {
                id: self.id(VIDEO, i),
                slug: format!("video-{i}"),
                title: format!("{} {i}", words(&mut rng, 3)),
                description: words(&mut rng, 40),
                image: self.image(rng.next_u64() as usize),
                movie: self.movie(rng.next_u64() as usize),
                upload_date: self.at(upload),
                featured: rng.chance(0.1),
                premium: rng.chance(0.2),
                // svc's counter hook counts the likes and plays as they
                // are imported after the videos.
                likes_count: 0,
                plays_count: 0,
                views_count: plays[i] * 3 + rng.below(100) as u64,
            }
        })?;
        let links: Vec<(usize, usize)> = (0..s.videos)
            .flat_map(|v| self.models_of(v).into_iter().map(move |m| (v, m)))
            .collect();
        importer.import("videos_models", links.len(), self.chunk, |i| VideoModel {
            id: self.id(LINK, i),
            videos_id: self.id(VIDEO, links[i].0),
            platform_users_id: self.id(MODEL, links[i].1),
        })
    }

    fn articles(&self, importer: &Importer) -> Result<(), String> {
        let mut rng = self.rng(ARTICLE);
        importer.import("articles", self.sizes.articles, self.chunk, |i| {
            let published = rng.unit() * 400.0 - 40.0;
            Article {
                id: self.id(ARTICLE, i),
                slug: format!("article-{i}"),
                title: words(&mut rng, 5),
                excerpt: words(&mut rng, 25),
                content: words(&mut rng, 400),
                image: self.image(rng.next_u64() as usize),
                publish_date: self.at(published),
                featured: rng.chance(0.7),
                author: self.id(MODEL, rng.below(self.sizes.models)),
                date_created: self.at(published.max(0.0) + 1.0),
            }
        })
    }

    fn likes_and_plays(&self, importer: &Importer, it: &Interactions) -> Result<(), String> {
        importer.import("video_likes", it.likes.len(), self.chunk, |i| {
            let (video, user, days) = it.likes[i];
            Like {
                id: self.id(LIKE, i),
                video_id: self.id(VIDEO, video),
                user_id: self.id(USER, user),
                date_created: self.at(days),
            }
        })?;
        let mut rng = self.rng(PLAY ^ 0xFF);
        importer.import("video_plays", it.plays.len(), self.chunk, |i| {
            let (video, user, days) = it.plays[i];
            let completed = rng.chance(0.35);
            VideoPlay {
                id: self.id(PLAY, i),
                video_id: self.id(VIDEO, video),
                user_id: user.map(|u| self.id(USER, u)),
                session_id: user.is_none().then(|| format!("session-{i}")),
                duration_watched: if completed {
                    600
                } else {
                    rng.below(600) as u32
                },
                completed,
                date_created: self.at(days),
            }
        })
    }

    fn points_and_stats(&self, importer: &Importer) -> Result<(), String> {
        let s = &self.sizes;
        let mut raw = vec![0u64; s.users];
        let mut decay = vec![0.0f64; s.users];
        let mut weighted = vec![0.0f64; s.users];
        let mut playbacks = vec![0u64; s.users];
        let mut completions = vec![0u64; s.users];
        let mut rng = self.rng(POINT);
        importer.import("user_points", s.point_actions, self.chunk, |i| {
            let user = rng.below(s.users);
            let (action, points) = match rng.below(100) {
                0..=69 => ("RECORDING_PLAY", 10),
                70..=89 => ("RECORDING_COMPLETE", 5),
                90..=94 => ("COMMENT_CREATE", 5),
                _ => ("RECORDING_CREATE", 50),
            };
            let age_days = rng.unit() * 365.0;
            let at = self.now - age_days * 86_400.0;
            raw[user] += points as u64;
            decay[user] += points as f64 * (DECAY_PER_DAY * (at - ANCHOR_SECS) / 86_400.0).exp();
            weighted[user] += points as f64 * (-DECAY_PER_DAY * age_days).exp();
            match action {
                "RECORDING_PLAY" => playbacks[user] += 1,
                "RECORDING_COMPLETE" => completions[user] += 1,
                _ => {}
            }
            PointAction {
                id: self.id(POINT, i),
                user_id: self.id(USER, user),
                action,
                points,
                date_created: self.at(age_days),
            }
        })?;
        let updated = self.at(0.0);
        importer.import("user_stats", s.users, self.chunk, |u| UserStats {
            id: self.id(STATS, u),
            user_id: self.id(USER, u),
            total_raw_points: raw[u],
            total_weighted_points: weighted[u],
            decay_sum: decay[u],
            recordings_count: 0,
            playbacks_count: playbacks[u],
            comments_count: 0,
            achievements_count: 0,
            completions_count: completions[u],
            last_updated: updated.clone(),
        })
    }

    fn recordings(&self, importer: &Importer) -> Result<(), String> {
        let s = &self.sizes;
        let mut rng = self.rng(RECORDING);
        importer.import("recordings", s.recordings, self.recording_chunk(), |i| {
            let (status, public) = self.published_public(i);
            let events = events(&mut rng, s.events_per_recording);
            let title = format!("{} {i}", words(&mut rng, 2));
            Recording {
                id: self.id(RECORDING, i),
                status,
                user_created: self.id(USER, rng.below(s.users)),
                date_created: self.at(rng.unit() * 365.0),
                slug: format!("recording-{i}"),
                title,
                description: words(&mut rng, 12),
                duration: events.last().map_or(1, |e| e.timestamp + 100),
                events,
                device_info: &DEVICES,
                tags: (0..rng.below(4))
                    .map(|_| TAGS[rng.below(TAGS.len())])
                    .collect(),
                public,
            }
        })
    }
}

/// Token of the model linked to the analytics videos.
const ANALYTICS_TOKEN: &str = "bench-model-token";

fn bench_token(i: usize) -> String {
    format!("bench-viewer-{i}")
}

/// `n` device events, timestamps rising by 50–250 ms.
pub fn events(rng: &mut Rng, n: usize) -> Vec<Event> {
    let mut t = 0u64;
    (0..n)
        .map(|_| {
            t += rng.between(50, 250) as u64;
            let device = rng.below(2) as u32;
            Event {
                timestamp: t,
                device_index: device,
                device_name: DEVICES[device as usize].name,
                actuator_index: 0,
                actuator_type: if device == 1 && rng.chance(0.5) {
                    "Rotate"
                } else {
                    "Vibrate"
                },
                value: rng.below(101) as u32,
            }
        })
        .collect()
}

/// The body of `POST /svc/recordings` with `n` events.
pub fn new_recording_body(seed: u64, n: usize) -> Result<Vec<u8>, String> {
    let mut rng = Rng::derive(seed, 0xB0D1);
    let events = events(&mut rng, n);
    let body = NewRecording {
        title: "Bench recording".into(),
        description: words(&mut rng, 12),
        duration: events.last().map_or(1, |e| e.timestamp + 100),
        events,
        device_info: &DEVICES,
        tags: vec!["bench"],
    };
    serde_json::to_vec(&body).map_err(|e| format!("serializing a recording: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn to_value<T: serde::Serialize>(v: &T) -> Value {
        serde_json::to_value(v).expect("serializes")
    }

    #[test]
    fn default_scale_is_the_issue_sizes() {
        let s = Sizes::at_scale(1.0);
        assert_eq!(
            (s.models, s.videos, s.files, s.likes, s.video_plays),
            (200, 2_000, 500, 20_000, 50_000)
        );
        assert_eq!(
            (
                s.recordings,
                s.events_per_recording,
                s.users,
                s.point_actions
            ),
            (10_000, 1_000, 100_000, 1_000_000)
        );
        assert_eq!(Sizes::at_scale(4.0).users, 400_000);
    }

    #[test]
    fn recording_body_has_the_events() {
        let body = new_recording_body(1, 1_000).expect("body");
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["events"].as_array().map(Vec::len), Some(1_000));
        assert!(v["events"][0]["deviceIndex"].as_u64().is_some());
        assert_eq!(body, new_recording_body(1, 1_000).expect("body"));
    }

    #[test]
    fn samples_are_spread_and_bounded() {
        let ids = sample(10_000, |i| i % 2 == 0, |i| i.to_string());
        assert!(ids.len() <= 2 * SAMPLE && ids.len() >= SAMPLE / 2);
        assert_eq!(ids[0], "0");
        let few = sample(5, |_| true, |i| i.to_string());
        assert_eq!(few, ["0", "1", "2", "3", "4"]);
    }

    #[test]
    fn records_serialize_as_the_items_api_takes_them() {
        let e = Event {
            timestamp: 1,
            device_index: 0,
            device_name: "D",
            actuator_index: 0,
            actuator_type: "Vibrate",
            value: 5,
        };
        assert_eq!(
            to_value(&e),
            json!({"timestamp": 1, "deviceIndex": 0, "deviceName": "D", "actuatorIndex": 0,
                   "actuatorType": "Vibrate", "value": 5})
        );
    }
}
