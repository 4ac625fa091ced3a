//! The records the dataset imports, as the items API takes them.

use serde::Serialize;

#[derive(Serialize)]
pub struct File {
    pub id: String,
    pub storage: &'static str,
    pub filename_disk: String,
    pub filename_download: String,
    pub title: String,
    #[serde(rename = "type")]
    pub mime: &'static str,
    pub filesize: u64,
    pub width: u32,
    pub height: u32,
    pub duration: Option<u32>,
    pub uploaded_on: String,
}

#[derive(Serialize)]
pub struct User {
    pub id: String,
    pub first_name: String,
    pub last_name: String,
    pub artist_name: String,
    pub role: String,
    pub date_created: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub banner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

#[derive(Serialize)]
pub struct ModelPhoto {
    pub id: String,
    pub platform_users_id: String,
    pub platform_files_id: String,
    pub sort: u32,
}

#[derive(Serialize)]
pub struct Video {
    pub id: String,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub image: String,
    pub movie: String,
    pub upload_date: String,
    pub featured: bool,
    pub premium: bool,
    pub likes_count: u64,
    pub plays_count: u64,
    pub views_count: u64,
}

#[derive(Serialize)]
pub struct VideoModel {
    pub id: String,
    pub videos_id: String,
    pub platform_users_id: String,
}

#[derive(Serialize)]
pub struct Article {
    pub id: String,
    pub slug: String,
    pub title: String,
    pub excerpt: String,
    pub content: String,
    pub image: String,
    pub publish_date: String,
    pub featured: bool,
    pub author: String,
    pub date_created: String,
}

#[derive(Serialize)]
pub struct Like {
    pub id: String,
    pub video_id: String,
    pub user_id: String,
    pub date_created: String,
}

#[derive(Serialize)]
pub struct VideoPlay {
    pub id: String,
    pub video_id: String,
    pub user_id: Option<String>,
    pub session_id: Option<String>,
    pub duration_watched: u32,
    pub completed: bool,
    pub date_created: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub timestamp: u64,
    pub device_index: u32,
    pub device_name: &'static str,
    pub actuator_index: u32,
    pub actuator_type: &'static str,
    pub value: u32,
}

#[derive(Serialize)]
pub struct Device {
    pub name: &'static str,
    pub index: u32,
    pub capabilities: &'static [&'static str],
}

#[derive(Serialize)]
pub struct Recording {
    pub id: String,
    pub status: &'static str,
    pub user_created: String,
    pub date_created: String,
    pub title: String,
    pub description: String,
    pub slug: String,
    pub duration: u64,
    pub events: Vec<Event>,
    pub device_info: &'static [Device],
    pub tags: Vec<&'static str>,
    pub public: bool,
}

/// The body of `POST /svc/recordings` (the caller owns it, the host sets
/// the rest).
#[derive(Serialize)]
pub struct NewRecording {
    pub title: String,
    pub description: String,
    pub duration: u64,
    pub events: Vec<Event>,
    pub device_info: &'static [Device],
    pub tags: Vec<&'static str>,
}

#[derive(Serialize)]
pub struct PointAction {
    pub id: String,
    pub user_id: String,
    pub action: &'static str,
    pub points: u32,
    pub date_created: String,
}

#[derive(Serialize)]
pub struct UserStats {
    pub id: String,
    pub user_id: String,
    pub total_raw_points: u64,
    pub total_weighted_points: f64,
    pub decay_sum: f64,
    pub recordings_count: u64,
    pub playbacks_count: u64,
    pub comments_count: u64,
    pub achievements_count: u64,
    pub completions_count: u64,
    pub last_updated: String,
}
