//! `--demo`: a small, believable catalogue (models with photos and banners,
//! videos with movies, articles, viewers, a few recordings) and the curl
//! lines to explore it. Seeded once, on a platform without demo users.
//! Its files are real: embedded pictures and movies, stored like uploads.

use bytes::Bytes;
use chrono::{Duration, Utc};
use serde_json::{json, Value};

use crate::config::ServeArgs;
use crate::files::{self, Files, Location};
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::WireQuery;
use platform_store::values::format_timestamp;

/// Fixed demo tokens, so the printed and documented curl lines work.
pub const ADMIN_TOKEN: &str = "demo-admin-token";
pub const MODEL_TOKEN: &str = "demo-model-token";
pub const VIEWER_TOKEN: &str = "demo-viewer-token";
/// Every demo user's password, to try signing in (`/auth/login`).
pub const DEMO_PASSWORD: &str = "demo-password";
pub const VIEWER2_TOKEN: &str = "demo-viewer2-token";

const MARKER_EMAIL: &str = "aria@demo.local";

/// Demo videos and recordings have fixed ids, so documented curl lines work.
pub fn video_id(n: usize) -> String {
    format!("00000000-0000-4000-a000-{n:012}")
}

pub fn recording_id(n: usize) -> String {
    format!("00000000-0000-4000-b000-{n:012}")
}

struct Ctx<'a, 'b> {
    platform: &'a Platform,
    session: &'a mut Session<'b>,
    who: Who,
}

impl Ctx<'_, '_> {
    fn create(&mut self, collection: &str, data: Value) -> Result<String, PlatformError> {
        self.platform
            .create_one(self.session, &self.who, collection, &data)
    }

    fn update(
        &mut self,
        collection: &str,
        key: &str,
        data: Value,
    ) -> Result<String, PlatformError> {
        self.platform
            .update_one(self.session, &self.who, collection, key, &data)
    }

    /// Sets the fields of `data` that the item holds no value in: what
    /// someone set since (on a demo made by an earlier release) stays.
    fn fill(&mut self, collection: &str, key: &str, data: Value) -> Result<(), PlatformError> {
        let Value::Object(wanted) = data else {
            return Ok(());
        };
        let q = WireQuery {
            fields: Some(platform_store::query::ListParam::List(
                wanted.keys().cloned().collect(),
            )),
            filter: Some(json!({"id": {"_eq": key}})),
            limit: Some(1),
            ..Default::default()
        };
        let rows = self
            .platform
            .read_by_query(self.session, &self.who, collection, &q, None)?;
        let Some(current) = rows.first() else {
            return Ok(());
        };
        let missing: serde_json::Map<String, Value> = wanted
            .into_iter()
            .filter(|(name, _)| current.get(name).is_none_or(Value::is_null))
            .collect();
        if !missing.is_empty() {
            self.update(collection, key, Value::Object(missing))?;
        }
        Ok(())
    }

    /// The users that have no password (passwords are never read back
    /// through the items service, so the store is asked).
    fn users_without_password(&mut self) -> Result<Vec<String>, PlatformError> {
        let schema = self.platform.store.schema();
        let Some(users) = schema.get("platform_users") else {
            return Ok(Vec::new());
        };
        let q = platform_store::query::ReadQuery::select(
            &["id"],
            platform_store::query::Filter::eq("password", Value::Null),
        );
        let rows = match self.session {
            Session::Tx { conn, .. } => conn.select(users, &q)?,
            Session::Auto => {
                platform_store::storage::read_with(self.platform.store.as_ref(), |conn| {
                    conn.select(users, &q)
                })?
            }
        };
        Ok(rows
            .iter()
            .filter_map(|r| r.get("id").and_then(Value::as_str).map(String::from))
            .collect())
    }

    fn id_of(
        &mut self,
        collection: &str,
        field: &str,
        value: &str,
    ) -> Result<String, PlatformError> {
        self.value_of(collection, field, value, "id")
    }

    /// Field `wanted` of the first item whose `field` is `value`.
    fn value_of(
        &mut self,
        collection: &str,
        field: &str,
        value: &str,
        wanted: &str,
    ) -> Result<String, PlatformError> {
        let q = WireQuery {
            filter: Some(json!({ field: {"_eq": value} })),
            limit: Some(1),
            ..Default::default()
        };
        let rows = self
            .platform
            .read_by_query(self.session, &self.who, collection, &q, None)?;
        rows.first()
            .and_then(|r| r.get(wanted))
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| {
                PlatformError::Internal(format!(
                    "no {wanted} of {collection} with {field} = {value}"
                ))
            })
    }
}

fn days_ago(days: i64) -> String {
    format_timestamp(Utc::now() - Duration::days(days))
}

/// A demo model: a user of role Model with an avatar, a banner and three
/// photos (`<slug>-avatar.jpg`, …, `<slug>-photo-3.jpg` in `demo-media`).
struct DemoModel {
    first: &'static str,
    last: &'static str,
    artist: &'static str,
    slug: &'static str,
    email: &'static str,
    token: Option<&'static str>,
    /// Days since the account was made.
    age: i64,
}

const MODELS: [DemoModel; 3] = [
    DemoModel {
        first: "Aria",
        last: "Vale",
        artist: "Aria Vale",
        slug: "aria-vale",
        email: MARKER_EMAIL,
        token: Some(MODEL_TOKEN),
        age: 420,
    },
    DemoModel {
        first: "Bianca",
        last: "Moreau",
        artist: "Bianca M",
        slug: "bianca-moreau",
        email: "bianca@demo.local",
        token: None,
        age: 300,
    },
    DemoModel {
        first: "Chloe",
        last: "Sato",
        artist: "Chloe Sato",
        slug: "chloe-sato",
        email: "chloe@demo.local",
        token: None,
        age: 30,
    },
];

/// The demo videos: title, slug, days since upload (negative: scheduled,
/// not public until then), the slugs of their models. Each has a poster
/// (`<slug>-poster.jpg`) and plays one of the three movies in turn.
const VIDEOS: [(&str, &str, i64, &[&str]); 6] = [
    ("Sunset Session", "sunset-session", 60, &["aria-vale"]),
    (
        "Ocean Drift",
        "ocean-drift",
        40,
        &["aria-vale", "bianca-moreau"],
    ),
    ("City Lights", "city-lights", 21, &["bianca-moreau"]),
    ("Morning Flow", "morning-flow", 10, &["chloe-sato"]),
    (
        "Studio Diaries",
        "studio-diaries",
        2,
        &["aria-vale", "chloe-sato"],
    ),
    ("Coming Soon", "coming-soon", -7, &["bianca-moreau"]),
];

/// The demo's pictures and movies (made by `scripts/make-demo-media.sh`),
/// in the binary so that the demo runs from any folder.
macro_rules! media {
    ($($name:literal),* $(,)?) => {
        [$(($name, include_bytes!(concat!("../demo-media/", $name)) as &[u8])),*]
    };
}

const MEDIA: [(&str, &[u8]); 24] = media![
    "aria-vale-avatar.jpg",
    "aria-vale-banner.jpg",
    "aria-vale-photo-1.jpg",
    "aria-vale-photo-2.jpg",
    "aria-vale-photo-3.jpg",
    "bianca-moreau-avatar.jpg",
    "bianca-moreau-banner.jpg",
    "bianca-moreau-photo-1.jpg",
    "bianca-moreau-photo-2.jpg",
    "bianca-moreau-photo-3.jpg",
    "chloe-sato-avatar.jpg",
    "chloe-sato-banner.jpg",
    "chloe-sato-photo-1.jpg",
    "chloe-sato-photo-2.jpg",
    "chloe-sato-photo-3.jpg",
    "sunset-session-poster.jpg",
    "ocean-drift-poster.jpg",
    "city-lights-poster.jpg",
    "morning-flow-poster.jpg",
    "studio-diaries-poster.jpg",
    "coming-soon-poster.jpg",
    "movie-1.webm",
    "movie-2.webm",
    "movie-3.webm",
];

fn embedded(name: &str) -> Result<&'static [u8], String> {
    MEDIA
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytes)| *bytes)
        .ok_or_else(|| format!("the demo has no medium {name}"))
}

/// One demo file: its bytes and what the host reads of them, as an upload
/// would be read.
struct DemoFile {
    id: String,
    /// `filename_download`.
    name: String,
    /// `filename_disk`: `<id>.<ext>`, as uploads are kept.
    key: String,
    bytes: &'static [u8],
    mime: String,
    size: Option<(u64, u64)>,
}

impl DemoFile {
    fn new(name: String, bytes: &'static [u8]) -> Self {
        let id = uuid::Uuid::new_v4().to_string();
        let head = &bytes[..bytes.len().min(files::HEAD_LEN)];
        let mime = files::content_type(head, None);
        let size = files::image_size(&mime, head);
        let key = format!("{id}{}", files::extension_of(&name));
        Self {
            id,
            name,
            key,
            bytes,
            mime,
            size,
        }
    }
}

/// The files the demo seeds: each model's avatar, banner and photos and,
/// with the catalogue, each video's poster and movie (its own copy, so
/// that deleting one video's file leaves the others' bytes).
fn demo_files(with_catalogue: bool) -> Result<Vec<DemoFile>, String> {
    let mut files = Vec::new();
    for model in &MODELS {
        for part in ["avatar", "banner", "photo-1", "photo-2", "photo-3"] {
            let name = format!("{}-{part}.jpg", model.slug);
            files.push(DemoFile::new(name.clone(), embedded(&name)?));
        }
    }
    if with_catalogue {
        for (n, (_, slug, _, _)) in VIDEOS.iter().enumerate() {
            let poster = format!("{slug}-poster.jpg");
            files.push(DemoFile::new(poster.clone(), embedded(&poster)?));
            let movie = embedded(&format!("movie-{}.webm", n % 3 + 1))?;
            files.push(DemoFile::new(format!("{slug}.webm"), movie));
        }
    }
    Ok(files)
}

/// The demo files, their bytes stored in `location`.
struct Media {
    location: String,
    files: Vec<DemoFile>,
}

impl Media {
    /// Creates the record of the stored file `name`; its id.
    fn record(&self, ctx: &mut Ctx<'_, '_>, name: &str) -> Result<String, PlatformError> {
        let file = self.files.iter().find(|f| f.name == name).ok_or_else(|| {
            PlatformError::Internal(format!("the demo file {name} was not stored"))
        })?;
        ctx.create(
            "platform_files",
            json!({
                "id": file.id,
                "storage": self.location,
                "filename_disk": file.key,
                "filename_download": file.name,
                "title": files::title_from_filename(&file.name),
                "type": file.mime,
                "filesize": file.bytes.len(),
                "width": file.size.map(|s| s.0),
                "height": file.size.map(|s| s.1),
                "uploaded_on": days_ago(200),
            }),
        )
    }
}

/// Writes the bytes of `files` to `location`; when one fails, removes
/// those written, so that no bytes stay without a record.
async fn store(location: &Location, files: &[DemoFile]) -> Result<(), String> {
    for (n, file) in files.iter().enumerate() {
        if let Err(e) = location
            .put(&file.key, Bytes::from_static(file.bytes))
            .await
        {
            remove(location, &files[..=n]).await;
            return Err(format!(
                "cannot store the demo file {} in storage location \"{}\": {e}",
                file.name, location.name
            ));
        }
    }
    Ok(())
}

/// Removes the bytes of `files` (those of records that were not made).
async fn remove(location: &Location, files: &[DemoFile]) {
    for file in files {
        if let Err(e) = location.delete(&file.key).await {
            log::warn!("removing the demo file {} failed: {e}", file.key);
        }
    }
}

/// Whether the demo was seeded already (its first model exists).
fn present(platform: &Platform, session: &mut Session<'_>) -> Result<bool, PlatformError> {
    let found = platform.read_by_query(
        session,
        &Who::system(),
        "platform_users",
        &WireQuery {
            filter: Some(json!({"email": {"_eq": MARKER_EMAIL}})),
            ..Default::default()
        },
        Some(1),
    )?;
    Ok(!found.is_empty())
}

/// Seeds the demo content (unless present) and prints how to explore it.
/// The files' bytes go to the default storage location before their
/// records are made; `runtime` runs the storage's calls.
pub fn seed(
    platform: &Platform,
    files: &Files,
    runtime: &tokio::runtime::Handle,
    serve: &ServeArgs,
) -> Result<(), String> {
    let schema = platform.store.schema();
    let has_service = [
        "videos",
        "articles",
        "recordings",
        "model_photos",
        "videos_models",
    ]
    .iter()
    .all(|c| schema.get(c).is_some());
    // Looked at first, so that a restart writes no bytes.
    let seeded = if present(platform, &mut Session::Auto).map_err(|e| e.to_string())? {
        false
    } else {
        let location = files.storage.default_location();
        let media = Media {
            location: location.name.clone(),
            files: demo_files(has_service)?,
        };
        runtime.block_on(store(location, &media.files))?;
        // Checked again inside the seeding transaction, so that hosts
        // started together seed once (the loser of the race sees the
        // winner's users, and removes the bytes it wrote).
        let seeded = platform.transaction(|session| {
            if present(platform, session)? {
                return Ok(false);
            }
            let mut ctx = Ctx {
                platform,
                session,
                who: Who::system(),
            };
            seed_users(&mut ctx, &media)?;
            if has_service {
                seed_catalogue(&mut ctx, &media)?;
                grant_site_reads(&mut ctx)?;
            }
            Ok(true)
        });
        if !matches!(seeded, Ok(true)) {
            runtime.block_on(remove(location, &media.files));
        }
        seeded.map_err(|e| e.to_string())?
    };
    // What the site's pages read, on a demo seeded now or by an earlier
    // release alike.
    let completed = platform
        .once(crate::platform_schema::OWNER, SITE_DATA, |session| {
            let mut ctx = Ctx {
                platform,
                session,
                who: Who::system(),
            };
            complete_for_the_site(&mut ctx, has_service)
        })
        .map_err(|e| e.to_string())?;
    if completed {
        log::info!("demo content completed with what the site's pages read");
    }
    match (seeded, has_service) {
        (false, _) => log::info!("demo content already present"),
        (true, true) => {
            log::info!("demo content seeded");
            print_site_reads();
        }
        (true, false) => log::warn!(
            "demo users seeded; the svc extension is not loaded, so no catalogue was seeded"
        ),
    }
    print_examples(serve, example_assets(platform, has_service).as_ref());
    Ok(())
}

fn seed_users(ctx: &mut Ctx<'_, '_>, media: &Media) -> Result<(), PlatformError> {
    let model_role = ctx.id_of("platform_roles", "name", "Model")?;
    let viewer_role = ctx.id_of("platform_roles", "name", "Viewer")?;
    for model in &MODELS {
        let slug = model.slug;
        let avatar = media.record(ctx, &format!("{slug}-avatar.jpg"))?;
        let banner = media.record(ctx, &format!("{slug}-banner.jpg"))?;
        let mut user = json!({
            "first_name": model.first, "last_name": model.last, "email": model.email,
            "role": model_role, "artist_name": model.artist, "slug": slug,
            "avatar": avatar, "banner": banner,
            "description": format!("{} creates interactive videos.", model.artist),
            "date_created": days_ago(model.age),
        });
        if let Some(t) = model.token {
            user["token"] = json!(t);
        }
        let user_id = ctx.create("platform_users", user)?;
        for sort in 1..=3 {
            let photo = media.record(ctx, &format!("{slug}-photo-{sort}.jpg"))?;
            ctx.create(
                "model_photos",
                json!({"platform_users_id": user_id, "platform_files_id": photo, "sort": sort}),
            )
            .or_else(|e| {
                if matches!(e, PlatformError::Forbidden(_) | PlatformError::NotFound(_)) {
                    Ok(String::new())
                } else {
                    Err(e)
                }
            })?;
        }
    }
    let viewers = [
        ("Victor", "Lane", "victor@demo.local", VIEWER_TOKEN),
        ("Wendy", "Park", "wendy@demo.local", VIEWER2_TOKEN),
    ];
    for (first, last, email, token) in viewers {
        ctx.create(
            "platform_users",
            json!({"first_name": first, "last_name": last, "email": email, "role": viewer_role,
                   "token": token, "password": DEMO_PASSWORD, "date_created": days_ago(90)}),
        )?;
    }
    Ok(())
}

fn seed_catalogue(ctx: &mut Ctx<'_, '_>, media: &Media) -> Result<(), PlatformError> {
    let aria = ctx.id_of("platform_users", "slug", "aria-vale")?;
    let bianca = ctx.id_of("platform_users", "slug", "bianca-moreau")?;
    let chloe = ctx.id_of("platform_users", "slug", "chloe-sato")?;
    let victor = ctx.id_of("platform_users", "email", "victor@demo.local")?;
    let wendy = ctx.id_of("platform_users", "email", "wendy@demo.local")?;

    let mut first_video = None;
    for (n, (title, slug, age, models)) in VIDEOS.into_iter().enumerate() {
        let movie = media.record(ctx, &format!("{slug}.webm"))?;
        let image = media.record(ctx, &format!("{slug}-poster.jpg"))?;
        let video = ctx.create(
            "videos",
            json!({"id": video_id(n + 1), "slug": slug, "title": title, "description": format!("{title}, an interactive video."),
                   "image": image, "movie": movie, "upload_date": days_ago(age), "featured": age > 30,
                   "premium": false}),
        )?;
        for model in models {
            let model = ctx.id_of("platform_users", "slug", model)?;
            ctx.create(
                "videos_models",
                json!({"videos_id": video, "platform_users_id": model}),
            )?;
        }
        first_video.get_or_insert(video);
    }

    let articles = [
        ("Behind the scenes", "behind-the-scenes", 30, true, &aria),
        (
            "How interactive video works",
            "how-it-works",
            12,
            true,
            &bianca,
        ),
        (
            "Community spotlight",
            "community-spotlight",
            3,
            true,
            &chloe,
        ),
        ("Draft: next season", "next-season", -5, true, &aria),
        ("Archive notes", "archive-notes", 50, false, &bianca),
    ];
    for (title, slug, age, featured, author) in articles {
        ctx.create(
            "articles",
            json!({"slug": slug, "title": title, "excerpt": format!("{title}."),
                   "content": format!("<p>{title}: the full story.</p>"), "publish_date": days_ago(age),
                   "featured": featured, "author": author, "date_created": days_ago(age.max(0) + 1)}),
        )?;
    }

    let events = |n: usize| -> Value {
        Value::Array(
            (0..n)
                .map(|i| {
                    json!({"timestamp": i * 250, "deviceIndex": 0, "deviceName": "Demo Device",
                           "actuatorIndex": 0, "actuatorType": "Vibrate", "value": (i * 37) % 101})
                })
                .collect(),
        )
    };
    let device = json!([{"name": "Demo Device", "index": 0, "capabilities": ["Vibrate"]}]);
    let recordings = [
        ("Slow build", "slow-build", "published", true, &victor),
        ("Quick tease", "quick-tease", "draft", false, &victor),
        ("Wave pattern", "wave-pattern", "published", true, &wendy),
        ("Private mix", "private-mix", "published", false, &aria),
    ];
    for (i, (title, slug, status, public, owner)) in recordings.into_iter().enumerate() {
        ctx.create(
            "recordings",
            json!({"id": recording_id(i + 1), "title": title, "slug": slug, "status": status, "public": public, "user_created": owner,
                   "duration": 12_000 + i * 3_000, "events": events(40 + i * 10), "device_info": device,
                   "tags": ["demo", if i % 2 == 0 { "slow" } else { "fast" }],
                   "linked_video": first_video, "description": format!("{title}, a demo recording."),
                   "date_created": days_ago(20 - i as i64 * 4)}),
        )?;
    }
    Ok(())
}

/// Id, among the platform's migrations, of the demo's completion with what
/// the site's pages read.
const SITE_DATA: &str = "demo_0001_site_data";

/// The demo movies' length, in seconds (`scripts/make-demo-media.sh`).
const MOVIE_SECONDS: u64 = 6;

/// Gives the demo what the site's pages read (docs/decisions.md §9): a
/// password for every demo user, tags as lists, the models' join dates,
/// their avatars in the `avatars` folder the site uploads into, members'
/// own emails; with the catalogue, tags on videos and articles, covers on
/// articles and the movies' duration.
fn complete_for_the_site(ctx: &mut Ctx<'_, '_>, has_service: bool) -> Result<(), PlatformError> {
    let avatars = match ctx.id_of("platform_folders", "name", "avatars") {
        Ok(folder) => folder,
        Err(_) => ctx.create("platform_folders", json!({"name": "avatars"}))?,
    };
    let passwordless = ctx.users_without_password()?;
    let users = MODELS
        .iter()
        .map(|m| ("slug", m.slug, json!(["model", m.slug]), m.age))
        .chain(
            ["victor@demo.local", "wendy@demo.local"]
                .into_iter()
                .map(|email| ("email", email, json!([]), 90)),
        );
    for (key, value, tags, age) in users {
        let id = ctx.id_of("platform_users", key, value)?;
        let mut data = json!({"tags": tags});
        if has_service {
            data["join_date"] = json!(days_ago(age));
        }
        ctx.fill("platform_users", &id, data)?;
        if passwordless.contains(&id) {
            ctx.update("platform_users", &id, json!({"password": DEMO_PASSWORD}))?;
        }
    }
    for model in &MODELS {
        if let Ok(avatar) = ctx.value_of("platform_users", "slug", model.slug, "avatar") {
            ctx.fill("platform_files", &avatar, json!({"folder": avatars}))?;
        }
    }
    // Members read their own email (a field granted on their own row).
    for policy in ["Viewer", "Model"] {
        let policy = ctx.id_of("platform_policies", "name", policy)?;
        ctx.create(
            "platform_permissions",
            json!({"policy": policy, "collection": "platform_users", "action": "read",
                   "permissions": {"id": {"_eq": "$CURRENT_USER"}}, "fields": ["email"]}),
        )?;
    }
    if !has_service {
        return Ok(());
    }
    for (n, (_, slug, _, _)) in VIDEOS.into_iter().enumerate() {
        let id = video_id(n + 1);
        let first_word = slug.split('-').next().unwrap_or(slug);
        ctx.fill("videos", &id, json!({"tags": ["interactive", first_word]}))?;
        if let Ok(movie) = ctx.value_of("videos", "id", &id, "movie") {
            ctx.fill("platform_files", &movie, json!({"duration": MOVIE_SECONDS}))?;
        }
    }
    // Each article's cover is its author's banner.
    let articles = ctx.platform.read_by_query(
        ctx.session,
        &ctx.who,
        "articles",
        &WireQuery {
            fields: Some(platform_store::query::ListParam::List(vec![
                "id".into(),
                "slug".into(),
                "author".into(),
            ])),
            limit: Some(-1),
            ..Default::default()
        },
        None,
    )?;
    for article in articles {
        let field = |name: &str| {
            article
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (id, slug, author) = (field("id"), field("slug"), field("author"));
        let cover = ctx.value_of("platform_users", "id", author, "banner").ok();
        let first_word = slug.split('-').next().unwrap_or(slug);
        ctx.fill(
            "articles",
            id,
            json!({"tags": ["magazine", first_word], "image": cover}),
        )?;
    }
    Ok(())
}

/// The policies the demo lets read the site's public collections.
const SITE_READERS: [&str; 3] = ["Public", "Viewer", "Model"];

/// What the site's pages read, per collection: every field, or the public
/// fields of users (never their email).
const SITE_READS: [(&str, &[&str]); 7] = [
    ("videos", &["*"]),
    ("videos_models", &["*"]),
    ("articles", &["*"]),
    ("model_photos", &["*"]),
    ("platform_files", &["*"]),
    ("platform_comments", &["*"]),
    (
        "platform_users",
        &[
            "id",
            "first_name",
            "last_name",
            "artist_name",
            "slug",
            "avatar",
            "banner",
            "description",
            "title",
            "location",
            "tags",
            "website",
            "join_date",
            "date_created",
        ],
    ),
];

/// Lets visitors and members read what the site shows (docs/decisions.md §9),
/// so that its pages work without an operator writing permissions first.
fn grant_site_reads(ctx: &mut Ctx<'_, '_>) -> Result<(), PlatformError> {
    for policy in SITE_READERS {
        let policy = ctx.id_of("platform_policies", "name", policy)?;
        for (collection, fields) in SITE_READS {
            ctx.create(
                "platform_permissions",
                json!({"policy": policy, "collection": collection, "action": "read",
                       "permissions": null, "fields": fields}),
            )?;
        }
    }
    Ok(())
}

/// Says which reads the demo granted.
fn print_site_reads() {
    let reads: Vec<String> = SITE_READS
        .iter()
        .map(|(collection, fields)| match fields {
            ["*"] => collection.to_string(),
            _ => format!("{collection} ({})", fields.join(", ")),
        })
        .collect();
    println!(
        "\nDemo grants (seeded now, kept in the database): {} may read {}.",
        SITE_READERS.join(", "),
        reads.join(", ")
    );
}

/// The ids of a model's avatar and a video's movie, for the printed
/// examples (none without the catalogue, which grants visitors reads).
fn example_assets(platform: &Platform, has_service: bool) -> Option<(String, String)> {
    if !has_service {
        return None;
    }
    let mut session = Session::Auto;
    let mut ctx = Ctx {
        platform,
        session: &mut session,
        who: Who::system(),
    };
    let avatar = ctx
        .value_of("platform_users", "slug", MODELS[0].slug, "avatar")
        .ok()?;
    let movie = ctx.value_of("videos", "id", &video_id(1), "movie").ok()?;
    Some((avatar, movie))
}

/// Where the admin app is, and how the demo's administrator signs in.
fn admin_app_line(base: &str, admin_email: &str) -> String {
    format!(
        "The admin app: {base}/admin/ (sign in as {admin_email} with the password \
         `{DEMO_PASSWORD}`, unless ADMIN_PASSWORD is set; docs/admin-app.md)."
    )
}

fn print_examples(serve: &ServeArgs, assets: Option<&(String, String)>) {
    let base = format!("http://{}:{}", serve.host, serve.port);
    let (video, recording) = (video_id(1), recording_id(1));
    let assets = assets.map_or_else(String::new, |(avatar, movie)| {
        format!(
            "\x20 curl -o avatar.webp '{base}/assets/{avatar}?width=64&format=webp'\n\
             \x20 curl -o movie.webm {base}/assets/{movie}\n"
        )
    });
    let admin_email = crate::bootstrap::ADMIN_EMAIL
        .get(&crate::settings::Env::process())
        .unwrap_or_default();
    let admin_app = admin_app_line(&base, &admin_email);
    println!(
        "\nDemo platform ready. {admin_app}\n\
         Tokens: admin `{ADMIN_TOKEN}` (unless ADMIN_TOKEN is set), \
         model `{MODEL_TOKEN}`, viewers `{VIEWER_TOKEN}` and `{VIEWER2_TOKEN}`.\n\
         Every demo user signs in with the password `{DEMO_PASSWORD}`: models {MARKER_EMAIL}, \
         bianca@demo.local and chloe@demo.local; viewers victor@demo.local and wendy@demo.local.\nTry:\n\
         \x20 curl {base}/svc/stats\n\
         \x20 curl {base}/svc/models\n\
         \x20 curl {base}/svc/videos/sunset-session\n\
         {assets}\
         \x20 curl -X POST -H 'Authorization: Bearer {VIEWER_TOKEN}' {base}/svc/videos/{video}/like\n\
         \x20 curl -H 'Authorization: Bearer {MODEL_TOKEN}' {base}/svc/analytics\n\
         \x20 curl -H 'Authorization: Bearer {VIEWER_TOKEN}' {base}/svc/recordings\n\
         \x20 curl -X POST -H 'Authorization: Bearer {VIEWER2_TOKEN}' {base}/svc/recordings/{recording}/duplicate\n\
         \x20 curl {base}/svc/community-recordings\n\
         \x20 curl -H 'Authorization: Bearer {ADMIN_TOKEN}' {base}/server/extensions\n\
         \x20 curl {base}/server/specs/oas\n\
         \x20 curl -H 'Content-Type: application/json' -d '{{\"email\":\"victor@demo.local\",\"password\":\"{DEMO_PASSWORD}\"}}' {base}/auth/login\n\
         (docs/api.md lists every endpoint with an example.)\n"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::locations::{Driver, LocationSettings};
    use crate::files::Storage;

    #[test]
    fn the_demo_names_the_admin_app_and_its_administrator_s_sign_in() {
        let line = admin_app_line("http://127.0.0.1:8055", "admin@example.com");
        assert!(line.contains("http://127.0.0.1:8055/admin/ "), "{line}");
        assert!(line.contains("admin@example.com"), "{line}");
        assert!(line.contains(&format!("`{DEMO_PASSWORD}`")), "{line}");
    }

    #[test]
    fn the_media_read_as_uploads_of_them_would() {
        assert_eq!(demo_files(false).unwrap().len(), 15);
        let all = demo_files(true).unwrap();
        assert_eq!(all.len(), 27);
        for file in &all {
            let (kind, size) = (file.mime.as_str(), file.size);
            match file.name.rsplit_once('.').map(|(_, ext)| ext) {
                Some("jpg") => assert!(kind == "image/jpeg" && size.is_some(), "{}", file.name),
                Some("webm") => assert!(kind == "video/webm" && size.is_none(), "{}", file.name),
                _ => panic!("unexpected demo file {}", file.name),
            }
        }
        let mut keys: Vec<&str> = all.iter().map(|f| f.key.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), all.len(), "each file has bytes of its own");
        let avatar = all
            .iter()
            .find(|f| f.name == "aria-vale-avatar.jpg")
            .unwrap();
        assert_eq!(avatar.size, Some((256, 256)));
    }

    #[tokio::test]
    async fn a_failed_store_leaves_no_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(vec![LocationSettings {
            name: "local".into(),
            driver: Driver::Local {
                root: dir.path().to_path_buf(),
            },
        }])
        .unwrap();
        let location = storage.default_location();
        let mut files = demo_files(false).unwrap();
        // A key under a file, which no folder can be made for.
        std::fs::write(dir.path().join("blocked"), b"").unwrap();
        files[2].key = "blocked/x.jpg".into();
        let err = store(location, &files).await.unwrap_err();
        assert!(err.contains(&files[2].name), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec!["blocked"]);

        files.truncate(2);
        store(location, &files).await.unwrap();
        let stored = location.read_all(&files[1].key).await.unwrap();
        assert_eq!(stored.as_ref(), files[1].bytes);
    }
}
