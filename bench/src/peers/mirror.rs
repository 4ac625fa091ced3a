//! The host's generated data, mirrored into PocketBase: collections of the
//! same names and fields (a video's models as a multi relation instead of
//! the `videos_models` junction), the same records with the same ids, read
//! back from the host after generation (so the counters the host's hooks
//! kept are the same too) and created through PocketBase's batch API.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use platform_tests::ADMIN_TOKEN;
use serde_json::{json, Map, Value};

use crate::api::Api;

/// A field's PocketBase type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Number,
    Bool,
    Date,
    Json,
    /// A single relation to the named collection.
    Relation(&'static str),
    /// A multi relation to the named collection.
    Relations(&'static str),
}

use Kind::*;

/// One mirrored collection.
struct Mirror {
    name: &'static str,
    fields: &'static [(&'static str, Kind)],
    indexes: &'static [&'static str],
    /// Anyone may list and view it (the anonymous rows read it).
    public: bool,
    /// Creates per batch request.
    batch: usize,
}

/// The relation of a recording to the member who created it (PocketBase
/// has no server-side owner: the create rule checks the body's).
pub const AUTHOR: &str = "author";
/// PocketBase's own auth collection, for the members.
pub const MEMBERS: &str = "users";

/// Members may create recordings as themselves (the body names them).
const MEMBER_CREATE_RULE: &str =
    "@request.auth.collectionName = 'users' && @request.body.author = @request.auth.id";

/// In dependency order. The indexes are the host's (svc's schema).
const MIRRORS: [Mirror; 7] = [
    Mirror {
        name: "platform_files",
        fields: &[
            ("storage", Text),
            ("filename_disk", Text),
            ("filename_download", Text),
            ("title", Text),
            ("description", Text),
            ("type", Text),
            ("charset", Text),
            ("folder", Text),
            ("filesize", Number),
            ("width", Number),
            ("height", Number),
            ("duration", Number),
            ("uploaded_on", Date),
            ("tags", Json),
        ],
        indexes: &[],
        public: true,
        batch: 500,
    },
    Mirror {
        name: "platform_users",
        fields: &[
            ("first_name", Text),
            ("last_name", Text),
            ("artist_name", Text),
            ("email", Text),
            ("role", Text),
            ("status", Text),
            ("slug", Text),
            ("title", Text),
            ("description", Text),
            ("location", Text),
            ("language", Text),
            ("website", Text),
            ("avatar", Relation("platform_files")),
            ("banner", Relation("platform_files")),
            ("date_created", Date),
            ("join_date", Date),
            ("tags", Json),
        ],
        indexes: &[],
        public: true,
        batch: 500,
    },
    Mirror {
        name: "videos",
        fields: &[
            ("slug", Text),
            ("title", Text),
            ("description", Text),
            ("image", Relation("platform_files")),
            ("movie", Relation("platform_files")),
            ("upload_date", Date),
            ("featured", Bool),
            ("premium", Bool),
            ("likes_count", Number),
            ("plays_count", Number),
            ("views_count", Number),
            ("tags", Json),
            ("models", Relations("platform_users")),
        ],
        indexes: &[
            "CREATE UNIQUE INDEX idx_videos_slug ON videos (slug)",
            "CREATE INDEX idx_videos_upload_date ON videos (upload_date)",
        ],
        public: true,
        batch: 500,
    },
    Mirror {
        name: "video_likes",
        fields: &[
            ("video_id", Relation("videos")),
            ("user_id", Relation("platform_users")),
            ("date_created", Date),
        ],
        indexes: &[
            "CREATE UNIQUE INDEX idx_video_likes_pair ON video_likes (video_id, user_id)",
            "CREATE INDEX idx_video_likes_user ON video_likes (user_id)",
        ],
        public: false,
        batch: 1000,
    },
    Mirror {
        name: "video_plays",
        fields: &[
            ("video_id", Relation("videos")),
            ("user_id", Relation("platform_users")),
            ("session_id", Text),
            ("duration_watched", Number),
            ("completed", Bool),
            ("date_created", Date),
        ],
        indexes: &["CREATE INDEX idx_video_plays_video ON video_plays (video_id)"],
        public: false,
        batch: 1000,
    },
    Mirror {
        name: "user_stats",
        fields: &[
            ("user_id", Relation("platform_users")),
            ("total_raw_points", Number),
            ("total_weighted_points", Number),
            ("decay_sum", Number),
            ("recordings_count", Number),
            ("playbacks_count", Number),
            ("comments_count", Number),
            ("achievements_count", Number),
            ("completions_count", Number),
            ("last_updated", Date),
        ],
        indexes: &[
            "CREATE UNIQUE INDEX idx_user_stats_user ON user_stats (user_id)",
            "CREATE INDEX idx_user_stats_weighted ON user_stats (total_weighted_points)",
            "CREATE INDEX idx_user_stats_decay ON user_stats (decay_sum)",
        ],
        public: true,
        batch: 1000,
    },
    Mirror {
        name: "recordings",
        fields: &[
            ("status", Text),
            ("user_created", Relation("platform_users")),
            ("date_created", Date),
            ("date_updated", Date),
            ("title", Text),
            ("description", Text),
            ("slug", Text),
            ("duration", Number),
            ("events", Json),
            ("device_info", Json),
            ("tags", Json),
            ("linked_video", Relation("videos")),
            ("featured", Bool),
            ("public", Bool),
            ("original_recording_id", Text),
            (AUTHOR, Relation(MEMBERS)),
        ],
        indexes: &[
            "CREATE INDEX idx_recordings_owner ON recordings (user_created, date_created)",
            "CREATE INDEX idx_recordings_community ON recordings (status, public, date_created)",
        ],
        public: false,
        // ~110 KB each.
        batch: 10,
    },
];

/// The id field: the host's UUIDs kept as they are, PocketBase's own
/// 15-character ids for records it creates.
fn id_field() -> Value {
    json!({
        "name": "id", "type": "text", "primaryKey": true, "required": true, "system": true,
        "min": 15, "max": 36, "pattern": "^[a-z0-9-]+$", "autogeneratePattern": "[a-z0-9]{15}",
    })
}

fn field_json(name: &str, kind: Kind, ids: &HashMap<String, String>) -> Result<Value, String> {
    let relation = |target: &str, max: u32| -> Result<Value, String> {
        let id = ids
            .get(target)
            .ok_or_else(|| format!("PocketBase collection {target} not created before {name}"))?;
        Ok(
            json!({"name": name, "type": "relation", "collectionId": id, "maxSelect": max,
                  "cascadeDelete": false}),
        )
    };
    Ok(match kind {
        Text => json!({"name": name, "type": "text"}),
        Number => json!({"name": name, "type": "number"}),
        Bool => json!({"name": name, "type": "bool"}),
        Date => json!({"name": name, "type": "date"}),
        // Up to 4 MB: a recording's events are ~110 KB.
        Json => json!({"name": name, "type": "json", "maxSize": 4_000_000}),
        Relation(target) => relation(target, 1)?,
        Relations(target) => relation(target, 50)?,
    })
}

/// The collection's definition for `POST /api/collections`.
fn definition(m: &Mirror, ids: &HashMap<String, String>) -> Result<Value, String> {
    let mut fields = vec![id_field()];
    for &(name, kind) in m.fields {
        fields.push(field_json(name, kind, ids)?);
    }
    let public = m.public.then_some("");
    let create = (m.name == "recordings").then_some(MEMBER_CREATE_RULE);
    Ok(json!({
        "name": m.name, "type": "base", "fields": fields, "indexes": m.indexes,
        "listRule": public, "viewRule": public, "createRule": create,
    }))
}

/// The host's records of every mirrored collection, and each video's
/// models in link order.
pub struct HostData {
    records: Vec<(&'static str, Vec<Value>)>,
    models: HashMap<String, Vec<String>>,
}

impl HostData {
    pub fn total(&self) -> usize {
        self.records.iter().map(|(_, r)| r.len()).sum()
    }

    /// `collection: n` for each collection.
    pub fn summary(&self) -> String {
        self.records
            .iter()
            .map(|(name, r)| format!("{name} {}", r.len()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn all_of(api: &Api, collection: &str) -> Result<Vec<Value>, String> {
    let answer = api
        .get(
            &format!("/items/{collection}?limit=-1&sort=id"),
            Some(ADMIN_TOKEN),
        )
        .map_err(|e| format!("reading {collection} back from the host: {e}"))?;
    match answer {
        Value::Object(mut o) => match o.remove("data") {
            Some(Value::Array(records)) => Ok(records),
            _ => Err(format!("reading {collection} back: no data array")),
        },
        _ => Err(format!("reading {collection} back: not an object")),
    }
}

/// Reads every mirrored collection back from the host (as admin).
pub fn export(host: &Api) -> Result<HostData, String> {
    let started = Instant::now();
    let mut records = Vec::new();
    for m in &MIRRORS {
        records.push((m.name, all_of(host, m.name)?));
    }
    let mut models: HashMap<String, Vec<String>> = HashMap::new();
    for link in all_of(host, "videos_models")? {
        if let (Some(video), Some(user)) = (
            link["videos_id"].as_str(),
            link["platform_users_id"].as_str(),
        ) {
            models
                .entry(video.to_string())
                .or_default()
                .push(user.to_string());
        }
    }
    let data = HostData { records, models };
    eprintln!(
        "  read back from the host in {:.1?}: {} ({} video-model links)",
        started.elapsed(),
        data.summary(),
        data.models.values().map(Vec::len).sum::<usize>()
    );
    Ok(data)
}

/// A host record as PocketBase takes it: the id and every mirrored field
/// the host has a value for.
fn convert(m: &Mirror, record: &Value, models: &HashMap<String, Vec<String>>) -> Value {
    let mut out = Map::new();
    let id = record["id"].as_str().unwrap_or_default();
    out.insert("id".into(), Value::String(id.to_string()));
    for &(name, kind) in m.fields {
        let value = match kind {
            Relations(_) if name == "models" => json!(models.get(id).cloned().unwrap_or_default()),
            _ => record.get(name).cloned().unwrap_or(Value::Null),
        };
        if !value.is_null() {
            out.insert(name.to_string(), value);
        }
    }
    Value::Object(out)
}

/// Creates the collections in PocketBase and every record through
/// `/api/batch` (one transaction per batch), with progress lines; then
/// checks the counts.
pub fn load(pb: &Api, token: &str, data: &HostData) -> Result<(), String> {
    let started = Instant::now();
    let mut ids: HashMap<String, String> = HashMap::new();
    let members = pb
        .get(&format!("/api/collections/{MEMBERS}"), Some(token))
        .map_err(|e| format!("PocketBase's {MEMBERS} collection: {e}"))?;
    if let Some(id) = members["id"].as_str() {
        ids.insert(MEMBERS.into(), id.to_string());
    }
    for m in &MIRRORS {
        let body = definition(m, &ids)?.to_string();
        let created = pb
            .post("/api/collections", Some(token), body.as_bytes())
            .map_err(|e| format!("creating the PocketBase collection {}: {e}", m.name))?;
        let id = created["id"]
            .as_str()
            .ok_or_else(|| format!("creating {}: no id in the answer", m.name))?;
        ids.insert(m.name.to_string(), id.to_string());
    }
    for (m, (name, records)) in MIRRORS.iter().zip(&data.records) {
        debug_assert_eq!(m.name, *name);
        let collection_started = Instant::now();
        let mut last_report = Instant::now();
        let url = format!("/api/collections/{}/records", m.name);
        let mut done = 0;
        for chunk in records.chunks(m.batch.max(1)) {
            let requests: Vec<Value> = chunk
                .iter()
                .map(|r| json!({"method": "POST", "url": url, "body": convert(m, r, &data.models)}))
                .collect();
            let body = serde_json::to_vec(&json!({ "requests": requests }))
                .map_err(|e| format!("serializing a batch of {}: {e}", m.name))?;
            pb.post("/api/batch", Some(token), &body)
                .map_err(|e| format!("loading {} into PocketBase: {e}", m.name))?;
            done += chunk.len();
            if last_report.elapsed() >= Duration::from_secs(10) || done == records.len() {
                last_report = Instant::now();
                let secs = collection_started.elapsed().as_secs_f64();
                eprintln!(
                    "  pocketbase {}: {done}/{} in {secs:.1} s ({:.0}/s)",
                    m.name,
                    records.len(),
                    done as f64 / secs.max(1e-9)
                );
            }
        }
        let answer = pb
            .get(&format!("{url}?perPage=1&fields=id"), Some(token))
            .map_err(|e| format!("counting {} in PocketBase: {e}", m.name))?;
        if answer["totalItems"].as_u64() != Some(records.len() as u64) {
            return Err(format!(
                "PocketBase has {} {} records, the host {}",
                answer["totalItems"],
                m.name,
                records.len()
            ));
        }
    }
    eprintln!(
        "  PocketBase loaded in {:.1?}: {} records",
        started.elapsed(),
        data.total()
    );
    Ok(())
}

/// A member of PocketBase's `users` collection, signed in.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: String,
    pub token: String,
}

/// Creates `n` members in PocketBase's `users` and signs each in.
pub fn members(pb: &Api, token: &str, n: usize) -> Result<Vec<Member>, String> {
    let password = "bench-member-pass";
    (0..n)
        .map(|i| {
            let email = format!("bench-viewer-{i}@example.com");
            let body = json!({"email": email, "password": password, "passwordConfirm": password,
                              "verified": true})
            .to_string();
            let created = pb
                .post(
                    &format!("/api/collections/{MEMBERS}/records"),
                    Some(token),
                    body.as_bytes(),
                )
                .map_err(|e| format!("creating the PocketBase member {email}: {e}"))?;
            let id = created["id"]
                .as_str()
                .ok_or_else(|| format!("creating {email}: no id"))?
                .to_string();
            let token = super::pocketbase::auth_token(pb, MEMBERS, &email, password)?;
            Ok(Member { id, token })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_need_their_target_first() {
        let mut ids = HashMap::new();
        assert!(definition(&MIRRORS[2], &ids).is_err());
        ids.insert("platform_files".to_string(), "pbc_1".to_string());
        ids.insert("platform_users".to_string(), "pbc_2".to_string());
        let videos = definition(&MIRRORS[2], &ids).expect("definition");
        let models = videos["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["name"] == "models"))
            .cloned()
            .expect("models field");
        assert_eq!(models["collectionId"], "pbc_2");
        assert_eq!(models["maxSelect"], 50);
        assert_eq!(videos["listRule"], "");
        assert_eq!(videos["createRule"], Value::Null);
    }

    #[test]
    fn every_relation_targets_an_earlier_collection() {
        let mut seen = vec![MEMBERS];
        for m in &MIRRORS {
            for &(name, kind) in m.fields {
                if let Relation(t) | Relations(t) = kind {
                    assert!(seen.contains(&t), "{}.{name} -> {t}", m.name);
                }
            }
            seen.push(m.name);
        }
    }

    #[test]
    fn records_keep_their_id_and_values_and_drop_nulls() {
        let mut models = HashMap::new();
        models.insert("v1".to_string(), vec!["u1".to_string(), "u2".to_string()]);
        let host = json!({"id": "v1", "title": "T", "movie": "f1", "image": null,
                          "likes_count": 3, "extra": 1});
        let pb = convert(&MIRRORS[2], &host, &models);
        assert_eq!(
            pb,
            json!({"id": "v1", "title": "T", "movie": "f1", "likes_count": 3,
                   "models": ["u1", "u2"]})
        );
    }
}
