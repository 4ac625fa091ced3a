//! `--demo`: a small, believable catalogue (models with photos and banners,
//! videos with movies, articles, viewers, a few recordings) and the curl
//! lines to explore it. Seeded once, on a platform without demo users.

use chrono::{Duration, Utc};
use serde_json::{json, Value};

use crate::config::ServeArgs;
use crate::items::{ItemsError, Platform, Session, Who};
use crate::query::WireQuery;
use crate::values::format_timestamp;

/// Fixed demo tokens, so the printed and documented curl lines work.
pub const ADMIN_TOKEN: &str = "demo-admin-token";
pub const MODEL_TOKEN: &str = "demo-model-token";
pub const VIEWER_TOKEN: &str = "demo-viewer-token";
/// The demo viewers' password, to try signing in (`/auth/login`).
pub const VIEWER_PASSWORD: &str = "demo-password";
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
    fn create(&mut self, collection: &str, data: Value) -> Result<String, ItemsError> {
        self.platform
            .create_one(self.session, &self.who, collection, &data)
    }

    fn id_of(&mut self, collection: &str, field: &str, value: &str) -> Result<String, ItemsError> {
        let q = WireQuery {
            filter: Some(json!({ field: {"_eq": value} })),
            limit: Some(1),
            ..Default::default()
        };
        let rows = self
            .platform
            .read_by_query(self.session, &self.who, collection, &q, None)?;
        rows.first()
            .and_then(|r| r.get("id"))
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| ItemsError::Internal(format!("no {collection} with {field} = {value}")))
    }
}

fn days_ago(days: i64) -> String {
    format_timestamp(Utc::now() - Duration::days(days))
}

/// Seeds the demo content (unless present) and prints how to explore it.
pub fn seed(platform: &Platform, serve: &ServeArgs) -> Result<(), String> {
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
    // Checked inside the seeding transaction, so that hosts started
    // together seed once (the loser of the race sees the winner's users).
    let seeded = platform
        .transaction(|session| {
            let present = !platform
                .read_by_query(
                    session,
                    &Who::system(),
                    "platform_users",
                    &WireQuery {
                        filter: Some(json!({"email": {"_eq": MARKER_EMAIL}})),
                        ..Default::default()
                    },
                    Some(1),
                )?
                .is_empty();
            if present {
                return Ok(false);
            }
            let mut ctx = Ctx {
                platform,
                session,
                who: Who::system(),
            };
            seed_users(&mut ctx)?;
            if has_service {
                seed_catalogue(&mut ctx)?;
                grant_site_reads(&mut ctx)?;
            }
            Ok(true)
        })
        .map_err(|e| e.to_string())?;
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
    print_examples(serve);
    Ok(())
}

fn file(
    ctx: &mut Ctx<'_, '_>,
    name: &str,
    kind: &str,
    size: (i64, i64),
) -> Result<String, ItemsError> {
    let ext = if kind.starts_with("video") {
        "mp4"
    } else {
        "jpg"
    };
    ctx.create(
        "platform_files",
        json!({
            "storage": "local",
            "filename_disk": format!("{}.{ext}", uuid::Uuid::new_v4()),
            "filename_download": format!("{name}.{ext}"),
            "title": name,
            "type": kind,
            "filesize": size.0 * size.1 / 4,
            "width": size.0,
            "height": size.1,
            "duration": if kind.starts_with("video") { json!(600) } else { Value::Null },
            "uploaded_on": days_ago(200),
        }),
    )
}

fn seed_users(ctx: &mut Ctx<'_, '_>) -> Result<(), ItemsError> {
    let model_role = ctx.id_of("platform_roles", "name", "Model")?;
    let viewer_role = ctx.id_of("platform_roles", "name", "Viewer")?;
    let models = [
        (
            "Aria",
            "Vale",
            "Aria Vale",
            "aria-vale",
            MARKER_EMAIL,
            Some(MODEL_TOKEN),
            420,
        ),
        (
            "Bianca",
            "Moreau",
            "Bianca M",
            "bianca-moreau",
            "bianca@demo.local",
            None,
            300,
        ),
        (
            "Chloe",
            "Sato",
            "Chloe Sato",
            "chloe-sato",
            "chloe@demo.local",
            None,
            30,
        ),
    ];
    for (first, last, artist, slug, email, token, age) in models {
        let avatar = file(ctx, &format!("{slug}-avatar"), "image/jpeg", (400, 400))?;
        let banner = file(ctx, &format!("{slug}-banner"), "image/jpeg", (1920, 480))?;
        let mut user = json!({
            "first_name": first, "last_name": last, "email": email, "role": model_role,
            "artist_name": artist, "slug": slug, "avatar": avatar, "banner": banner,
            "description": format!("{artist} creates interactive videos."),
            "date_created": days_ago(age),
        });
        if let Some(t) = token {
            user["token"] = json!(t);
        }
        let user_id = ctx.create("platform_users", user)?;
        for sort in 1..=3 {
            let photo = file(
                ctx,
                &format!("{slug}-photo-{sort}"),
                "image/jpeg",
                (1200, 1600),
            )?;
            ctx.create(
                "model_photos",
                json!({"platform_users_id": user_id, "platform_files_id": photo, "sort": sort}),
            )
            .or_else(|e| {
                if matches!(e, ItemsError::Forbidden(_) | ItemsError::NotFound(_)) {
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
                   "token": token, "password": VIEWER_PASSWORD, "date_created": days_ago(90)}),
        )?;
    }
    Ok(())
}

fn seed_catalogue(ctx: &mut Ctx<'_, '_>) -> Result<(), ItemsError> {
    let aria = ctx.id_of("platform_users", "slug", "aria-vale")?;
    let bianca = ctx.id_of("platform_users", "slug", "bianca-moreau")?;
    let chloe = ctx.id_of("platform_users", "slug", "chloe-sato")?;
    let victor = ctx.id_of("platform_users", "email", "victor@demo.local")?;
    let wendy = ctx.id_of("platform_users", "email", "wendy@demo.local")?;

    let videos: [(&str, &str, i64, Vec<&String>); 6] = [
        ("Sunset Session", "sunset-session", 60, vec![&aria]),
        ("Ocean Drift", "ocean-drift", 40, vec![&aria, &bianca]),
        ("City Lights", "city-lights", 21, vec![&bianca]),
        ("Morning Flow", "morning-flow", 10, vec![&chloe]),
        ("Studio Diaries", "studio-diaries", 2, vec![&aria, &chloe]),
        // Scheduled: not public until its upload date.
        ("Coming Soon", "coming-soon", -7, vec![&bianca]),
    ];
    let mut first_video = None;
    for (n, (title, slug, age, models)) in videos.into_iter().enumerate() {
        let movie = file(ctx, slug, "video/mp4", (1920, 1080))?;
        let image = file(ctx, &format!("{slug}-poster"), "image/jpeg", (1280, 720))?;
        let video = ctx.create(
            "videos",
            json!({"id": video_id(n + 1), "slug": slug, "title": title, "description": format!("{title}, an interactive video."),
                   "image": image, "movie": movie, "upload_date": days_ago(age), "featured": age > 30,
                   "premium": false}),
        )?;
        for model in models {
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
fn grant_site_reads(ctx: &mut Ctx<'_, '_>) -> Result<(), ItemsError> {
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

fn print_examples(serve: &ServeArgs) {
    let base = format!("http://{}:{}", serve.host, serve.port);
    let (video, recording) = (video_id(1), recording_id(1));
    println!(
        "\nDemo platform ready. Tokens: admin `{ADMIN_TOKEN}` (unless ADMIN_TOKEN is set), \
         model `{MODEL_TOKEN}`, viewers `{VIEWER_TOKEN}` and `{VIEWER2_TOKEN}`.\nTry:\n\
         \x20 curl {base}/svc/stats\n\
         \x20 curl {base}/svc/models\n\
         \x20 curl {base}/svc/videos/sunset-session\n\
         \x20 curl -X POST -H 'Authorization: Bearer {VIEWER_TOKEN}' {base}/svc/videos/{video}/like\n\
         \x20 curl -H 'Authorization: Bearer {MODEL_TOKEN}' {base}/svc/analytics\n\
         \x20 curl -H 'Authorization: Bearer {VIEWER_TOKEN}' {base}/svc/recordings\n\
         \x20 curl -X POST -H 'Authorization: Bearer {VIEWER2_TOKEN}' {base}/svc/recordings/{recording}/duplicate\n\
         \x20 curl {base}/svc/community-recordings\n\
         \x20 curl -H 'Authorization: Bearer {ADMIN_TOKEN}' {base}/server/extensions\n\
         \x20 curl {base}/server/specs/oas\n\
         \x20 curl -H 'Content-Type: application/json' -d '{{\"email\":\"victor@demo.local\",\"password\":\"{VIEWER_PASSWORD}\"}}' {base}/auth/login\n\
         (README.md lists every endpoint with an example.)\n"
    );
}
