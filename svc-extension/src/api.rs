//! The shapes of svc's query strings, bodies and answers, as its OpenAPI
//! document describes them (their JSON Schemas are derived from these
//! types). The small answers are built from them, so the document and the
//! answers cannot disagree; the record lists, written as text from the
//! stored rows, are described by the record types here.
//!
//! Parameters and bodies are read by the rules of docs/service-api.md and
//! docs/decisions.md §7 (an unusable `limit` counts as absent, errors are
//! `{error}` without `details`): [`crate::params`], [`crate::play_input`] and
//! [`crate::recording_input`] read them; these types say what they take.

use host_sdk::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `GET /models`.
#[derive(JsonSchema)]
#[allow(dead_code)] // documentation of the query string only
pub struct ModelsQuery {
    /// Caps the number of models (not a positive integer: no cap).
    pub limit: Option<u64>,
    /// Accepted and ignored.
    pub featured: Option<String>,
}

/// `GET /videos`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct VideosQuery {
    /// Only the videos linked to this user.
    pub model_id: Option<String>,
    /// Caps the number of videos.
    pub limit: Option<u64>,
}

/// `GET /articles`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ArticlesQuery {
    /// Caps the number of articles.
    pub limit: Option<u64>,
    /// Accepted and ignored.
    pub featured: Option<String>,
}

/// `GET /recordings`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct RecordingsQuery {
    /// Exact status.
    pub status: Option<String>,
    /// Recordings whose tags contain it.
    pub tags: Option<String>,
    /// Exact linked video.
    pub linked_video: Option<String>,
    /// Page size, 50 by default.
    pub limit: Option<u64>,
    /// Page, from 1.
    pub page: Option<u64>,
}

/// A window of a list: `GET /community-recordings` and the leaderboard.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct WindowQuery {
    /// Page size (the leaderboard clamps it to 500).
    pub limit: Option<u64>,
    /// Items skipped.
    pub offset: Option<u64>,
}

/// What a recording's status may be.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum RecordingStatus {
    Draft,
    Published,
    Archived,
}

/// `POST /recordings`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct NewRecordingBody {
    pub title: String,
    /// Not 0.
    pub duration: f64,
    /// Non-empty: the recorded device events.
    pub events: Vec<Value>,
    /// The device: its name, index and capabilities.
    pub device_info: Value,
    pub description: Option<String>,
    /// `[]` by default.
    pub tags: Option<Vec<Value>>,
    /// A video's id.
    pub linked_video: Option<String>,
    /// `draft` by default.
    pub status: Option<RecordingStatus>,
}

/// `PATCH /recordings/:id`: each field applied only when present.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct RecordingChanges {
    /// Also makes a new slug.
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<Value>>,
    pub status: Option<RecordingStatus>,
    pub public: Option<bool>,
    pub linked_video: Option<String>,
}

/// `POST /videos/:id/play`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct VideoPlayBody {
    pub session_id: Option<String>,
}

/// `PATCH /videos/:id/play/:playId`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct VideoPlayProgress {
    pub duration_watched: Option<f64>,
    pub completed: Option<bool>,
}

/// `PATCH /recordings/:id/play/:playId`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct RecordingPlayProgress {
    pub duration_played: Option<f64>,
    /// The first `true` awards the caller.
    pub completed: Option<bool>,
}

/// A like or an unlike done.
#[derive(Serialize, JsonSchema)]
pub struct LikeAnswer {
    pub liked: bool,
    /// The video's counter after it.
    pub likes_count: i64,
}

/// `GET /videos/:id/like-status`.
#[derive(Serialize, JsonSchema)]
pub struct LikeStatus {
    pub liked: bool,
}

/// `{success: true}`.
#[derive(Serialize, JsonSchema)]
pub struct Success {
    pub success: bool,
}

impl Success {
    pub const YES: Success = Success { success: true };
}

/// A video play recorded.
#[derive(Serialize, JsonSchema)]
pub struct VideoPlayStarted {
    pub success: bool,
    pub play_id: String,
    /// The video's counter after it.
    pub plays_count: i64,
}

/// A recording play recorded.
#[derive(Serialize, JsonSchema)]
pub struct RecordingPlayStarted {
    pub success: bool,
    pub play_id: String,
}

/// `{data: ...}`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Data<T> {
    pub data: T,
}

/// A stored file, as references to files are expanded.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct FileRecord {
    pub id: String,
    pub filename_download: Option<String>,
    #[serde(rename = "type")]
    pub mime_type: Option<String>,
}

/// A model: the stored user record (and its other fields), expanded.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ModelRecord {
    pub id: String,
    pub slug: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub artist_name: Option<String>,
    pub avatar: Option<String>,
    pub role: Option<String>,
    pub date_created: Option<String>,
    /// `{platform_files_id: <file>}` each.
    pub photos: Vec<Value>,
    pub banner: Option<FileRecord>,
}

/// A published video, expanded, with live counts.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct VideoRecord {
    pub id: String,
    pub slug: String,
    pub title: Option<String>,
    pub upload_date: String,
    pub movie: Option<FileRecord>,
    /// Live count of its likes.
    pub likes_count: i64,
    /// Live count of its plays.
    pub plays_count: i64,
    pub views_count: i64,
    /// The user records of its models.
    pub models: Vec<Value>,
}

/// A featured published article, its author expanded.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ArticleRecord {
    pub id: Value,
    pub publish_date: String,
    pub featured: bool,
    /// The author's user record.
    pub author: Option<Value>,
}

/// A device-control recording.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct RecordingRecord {
    pub id: String,
    pub title: String,
    pub slug: String,
    pub description: Option<String>,
    pub duration: f64,
    pub events: Vec<Value>,
    pub device_info: Value,
    pub tags: Vec<Value>,
    pub linked_video: Option<String>,
    pub status: RecordingStatus,
    pub public: bool,
    pub featured: bool,
    pub original_recording_id: Option<String>,
    pub user_created: String,
    pub date_created: String,
}

/// A public recording in the community list.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct CommunityRecording {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    pub slug: String,
    pub duration: f64,
    pub tags: Vec<Value>,
    pub date_created: String,
    /// `{id, first_name, last_name, avatar}` of its owner.
    pub user_created: Value,
}

/// `GET /analytics`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Analytics {
    pub total_videos: u64,
    pub total_likes: i64,
    pub total_plays: i64,
    /// `YYYY-MM-DD` → plays created that day.
    pub plays_by_date: Option<std::collections::BTreeMap<String, u64>>,
    /// `YYYY-MM-DD` → likes created that day.
    pub likes_by_date: Option<std::collections::BTreeMap<String, u64>>,
    /// Per video: id, title, slug, upload_date, likes, plays, views,
    /// average watch time.
    pub videos: Vec<Value>,
}
