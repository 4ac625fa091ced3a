//! # svc-extension
//!
//! The content, interaction and recording service of docs/service-api.md, as a
//! platform extension mounted at `/svc`. It never opens the database: its
//! collections ship as migrations ([`schema`]) and every read and write goes
//! through the item services the host hands each handler.
//!
//! * [`achievements`]: the seeded achievements, as data.
//! * [`schema`]: the migrations creating and seeding the collections.
//! * [`stats`]: `GET /stats`.
//! * [`models`], [`videos`], [`articles`]: the public reads.
//! * [`likes`], [`video_plays`]: likes and plays of videos; [`counters`]:
//!   their counters, kept by an in-transaction hook on every write.
//! * [`analytics`]: the creator's summary, from [`video_days`] (plays,
//!   likes and watch time per video and day, and each video's whole) and
//!   [`creator_days`] (plays and likes per creator and day), kept by hooks.
//! * [`play_input`]: the play-update bodies shared by video and recording
//!   plays.
//! * [`recordings`], [`recording_input`], [`slug`], [`community`],
//!   [`community_positions`], [`recording_plays`]: recordings under the
//!   caller's permissions, their validation, duplication, the community
//!   list (its deep pages from a kept count tree) and plays.
//! * [`gamification`]: scores, achievements, the leaderboard and the hooks
//!   that keep a user's stats row.
//! * [`records`], [`params`], [`failure`]: batch reads and expansions
//!   (past 256 values a batch reads the whole collection once), query
//!   parameters, and how failures are answered; `caller`: the caller.
//! * [`api`]: the shapes of every route's query, body and answer, from
//!   which the OpenAPI document is derived.
//! * [`upcoming`]: when a cached public list next changes by the clock
//!   alone, so its answer expires then.
//! * [`duration`]: durations, finite and non-negative.
//! * [`count_tree`]: the kept count trees behind ranks and deep pages.
//!
//! Each endpoint is a thin handler over plain functions that take `Items`
//! and batch their reads, so a request costs a constant number of item
//! calls.

// The library's own allocations (parsing the host's answers, writing its
// own) take thread-local heaps, not the C library's few locked arenas.
#[cfg(feature = "allocator")]
#[global_allocator]
static ALLOCATOR: host_sdk::allocator::Allocator = host_sdk::allocator::Allocator;

pub mod achievements;
pub mod analytics;
pub mod api;
pub mod articles;
mod caller;
pub mod community;
pub mod community_positions;
pub mod count_tree;
pub mod counters;
pub mod creator_days;
pub mod duration;
pub mod failure;
pub mod gamification;
pub mod likes;
pub mod models;
pub mod own_writes;
pub mod params;
pub mod play_input;
pub mod recording_input;
pub mod recording_plays;
pub mod recordings;
pub mod records;
pub mod schema;
pub mod slug;
pub mod stats;
pub mod upcoming;
pub mod video_days;
pub mod video_plays;
pub mod video_text;
pub mod videos;

use std::time::Duration;

use host_sdk::{Extension, Router, Schedule};

/// The extension's id: its mount point (`/svc`) and log target.
pub const ID: &str = "svc";

/// Builds the extension: migrations and routes.
pub fn extension() -> Extension {
    let mut ext = Extension::new(
        ID,
        "Content, interaction and recording service",
        env!("CARGO_PKG_VERSION"),
    );
    for (id, steps) in schema::migrations() {
        ext = ext.migration(id, steps);
    }
    ext.before_commit_in(&counters::WATCHED, counters::before_commit)
        .before_write_in(&counters::VIDEOS, counters::before_write)
        .before_commit_in(&video_days::WATCHED, video_days::before_commit)
        .before_write_in(&[video_days::DAYS], video_days::before_write)
        .before_commit_in(&[creator_days::LINKS], creator_days::links_before_commit)
        .before_write_in(&[creator_days::DAYS], creator_days::before_write)
        .before_commit_in(
            &[gamification::shown_users::USERS],
            gamification::shown_users::users_before_commit,
        )
        .hooks_read(
            gamification::shown_users::USERS,
            &gamification::shown_users::USER_FIELDS,
        )
        .before_commit_raw_in(
            &gamification::hooks::WATCHED,
            gamification::hooks::before_commit,
        )
        .hooks_read("recordings", &gamification::hooks::RECORDING_FIELDS)
        .schedule(
            "recalculate-stats",
            Schedule::Every(Duration::from_secs(3600)),
            gamification::recalc::recalculate,
        )
        .routes(routes)
}

/// The largest body of a route that reads a few fields (a play, a like):
/// anything bigger is refused by the host before it is read.
const SMALL_BODY: u64 = 64 * 1024;
/// The deepest nesting such a body needs (its fields are scalars).
const SMALL_DEPTH: u32 = 8;

/// Every route of docs/service-api.md, with what the OpenAPI document says of
/// it.
fn routes(r: &mut Router) {
    r.get("/stats", stats::handler)
        .cached()
        .same_for_every_caller()
        .summary("Site-wide counts")
        .response_type::<stats::SiteCounts>(200, "Site-wide counts");
    r.get("/models", models::list)
        .cached()
        .same_for_every_caller()
        .summary("Models, newest id first")
        .query_type::<api::ModelsQuery>()
        .response_type::<Vec<api::ModelRecord>>(200, "Model user records");
    r.get("/models/:slug", models::one)
        .cached()
        .same_for_every_caller()
        .summary("One model by slug")
        .response_type::<api::ModelRecord>(200, "A model user record")
        .response(404, "Model not found");
    r.get("/videos", videos::list)
        .cached()
        .same_for_every_caller()
        .summary("Published videos, newest first")
        .query_type::<api::VideosQuery>()
        .response_type::<Vec<api::VideoRecord>>(200, "Videos with models, movie and live counts");
    r.get("/videos/:slug", videos::one)
        .cached()
        .same_for_every_caller()
        .summary("One published video by slug")
        .response_type::<api::VideoRecord>(200, "A video")
        .response(404, "Video not found");
    r.get("/articles", articles::list)
        .cached()
        .same_for_every_caller()
        .summary("Featured published articles")
        .query_type::<api::ArticlesQuery>()
        .response_type::<Vec<api::ArticleRecord>>(200, "Articles with author");
    r.post("/videos/:id/like", likes::like)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Like a video")
        .authenticated()
        .response_type::<api::LikeAnswer>(200, "Liked; the new counter")
        .response(400, "Already liked")
        .response(401, "Unauthorized")
        .response(404, "Video not found");
    r.delete("/videos/:id/like", likes::unlike)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Unlike a video")
        .authenticated()
        .response_type::<api::LikeAnswer>(200, "Unliked; the new counter")
        .response(400, "Not liked")
        .response(401, "Unauthorized")
        .response(404, "Video not found");
    r.get("/videos/:id/like-status", likes::status)
        .summary("Whether the caller likes a video")
        .response_type::<api::LikeStatus>(200, "Whether the caller likes it");
    r.post("/videos/:id/play", video_plays::record)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Record a play of a video")
        .body_type::<api::VideoPlayBody>()
        .response_type::<api::VideoPlayStarted>(200, "The play and the new counter")
        .response(404, "Video not found");
    r.patch("/videos/:id/play/:playId", video_plays::update)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Update a play of a video")
        .body_type::<api::VideoPlayProgress>()
        .response_type::<api::Success>(200, "Updated")
        .response(404, "Play record not found");
    r.get("/analytics", analytics::handler)
        .summary("The caller's video analytics")
        .authenticated()
        .response_type::<api::Analytics>(200, "Totals, plays and likes by date, per-video figures")
        .response(401, "Unauthorized");
    r.get("/recordings", recordings::list)
        .summary("The caller's recordings, newest first")
        .authenticated()
        .query_type::<api::RecordingsQuery>()
        .response_type::<Vec<api::RecordingRecord>>(200, "Recordings")
        .response(401, "Unauthorized");
    r.post("/recordings", recordings::create)
        .summary("Create a recording")
        .authenticated()
        .body_type::<api::NewRecordingBody>()
        .response_type::<api::RecordingRecord>(201, "The created recording")
        .response(400, "A missing or invalid field")
        .response(401, "Unauthorized");
    r.get("/recordings/:id", recordings::one)
        .summary("One recording: the owner's, or a public one")
        .authenticated()
        .response_type::<api::RecordingRecord>(200, "The recording")
        .response(403, "Forbidden")
        .response(404, "Recording not found");
    r.patch("/recordings/:id", recordings::update)
        .summary("Update an own recording")
        .authenticated()
        .body_type::<api::RecordingChanges>()
        .response(200, "The result of the update")
        .response(403, "Forbidden");
    r.delete("/recordings/:id", recordings::archive)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Archive an own recording")
        .authenticated()
        .response_type::<api::Success>(200, "Archived")
        .response(403, "Forbidden")
        .response(404, "Recording not found");
    r.post("/recordings/:id/duplicate", recordings::duplicate)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Copy a publicly shared recording")
        .authenticated_with("Authentication required")
        .response_type::<api::Data<api::RecordingRecord>>(201, "The copy")
        .response(401, "Authentication required")
        .response(403, "Recording is not publicly shared");
    r.get("/community-recordings", community::list)
        .cached()
        .same_for_every_caller()
        .summary("Published public recordings, newest first")
        .query_type::<api::WindowQuery>()
        .response_type::<api::Data<Vec<api::CommunityRecording>>>(200, "Public recordings");
    r.post("/recordings/:id/play", recording_plays::record)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Record a play of a recording")
        .response_type::<api::RecordingPlayStarted>(200, "The play")
        .response(404, "Recording not found");
    r.patch("/recordings/:id/play/:playId", recording_plays::update)
        .max_body(SMALL_BODY)
        .max_depth(SMALL_DEPTH)
        .summary("Update a play of a recording")
        .body_type::<api::RecordingPlayProgress>()
        .response_type::<api::Success>(200, "Updated")
        .response(404, "Play record not found");
    r.get(
        "/gamification/leaderboard",
        gamification::endpoints::leaderboard,
    )
    .summary("Users by weighted points")
    .query_type::<api::WindowQuery>()
    .response(200, "{data: [...]}");
    r.get("/gamification/user/:id", gamification::endpoints::user)
        .summary("A user's stats, rank, achievements and recent points")
        .response(200, "{stats, achievements, recent_points}");
    r.get(
        "/gamification/achievements",
        gamification::endpoints::achievements,
    )
    .summary("Published achievements")
    .response(200, "{data: [...]}");
}

host_sdk::export_extension!(extension);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity() {
        let ext = extension();
        assert_eq!(ext.id(), "svc");
    }

    /// The extension registers the schema's migrations (their ids and
    /// order are checked in `schema`), each with its steps.
    #[test]
    fn registers_the_migrations_in_order() {
        let ext = extension();
        let registered: Vec<(&str, usize)> = ext
            .migrations()
            .iter()
            .map(|(id, steps)| (id.as_str(), steps.len()))
            .collect();
        let declared: Vec<(&str, usize)> = schema::migrations()
            .iter()
            .map(|(id, steps)| (*id, steps.len()))
            .collect();
        assert_eq!(registered, declared);
        assert_eq!(ext.migrations()[0].1.len(), 12);
        assert_eq!(ext.migrations()[1].1.len(), 1);
    }

    #[test]
    fn registers_every_route_of_the_spec_implemented_so_far() {
        let paths = extension().router().openapi_paths();
        assert_eq!(paths["/stats"]["get"]["summary"], "Site-wide counts");
        let expected = [
            ("/stats", "get"),
            ("/models", "get"),
            ("/models/{slug}", "get"),
            ("/videos", "get"),
            ("/videos/{slug}", "get"),
            ("/articles", "get"),
            ("/videos/{id}/like", "post"),
            ("/videos/{id}/like", "delete"),
            ("/videos/{id}/like-status", "get"),
            ("/videos/{id}/play", "post"),
            ("/videos/{id}/play/{playId}", "patch"),
            ("/analytics", "get"),
            ("/recordings", "get"),
            ("/recordings", "post"),
            ("/recordings/{id}", "get"),
            ("/recordings/{id}", "patch"),
            ("/recordings/{id}", "delete"),
            ("/recordings/{id}/duplicate", "post"),
            ("/community-recordings", "get"),
            ("/recordings/{id}/play", "post"),
            ("/recordings/{id}/play/{playId}", "patch"),
            ("/gamification/leaderboard", "get"),
            ("/gamification/user/{id}", "get"),
            ("/gamification/achievements", "get"),
        ];
        for (path, method) in expected {
            assert!(paths[path][method].is_object(), "{method} {path} missing");
        }
        let registered: usize = paths
            .as_object()
            .map(|p| {
                p.values()
                    .filter_map(|m| m.as_object())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        assert_eq!(registered, expected.len());
    }
}
