//! The same data gives the same answers, byte for byte, on SQLite and on
//! PostgreSQL (docs/decisions.md §8): one host on each, the same items written
//! through the API (ids and timestamps given), then the public reads, a
//! recording of 1,000 events and `/items` reads compared as bytes.
//!
//! It needs both databases, so it runs in the suite's PostgreSQL pass
//! (`TEST_DB=postgres`); the SQLite pass says so and skips it.

use platform_tests::{encode, Backend, Host, HostOptions, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

const T0: &str = "2026-03-01T10:00:00.000Z";
const VIEWER: &str = "backends-viewer";

fn uuid(kind: u8, n: u32) -> String {
    format!("00000000-0000-4000-8{kind:03x}-{n:012x}")
}

/// Events with the values JSON makes hard: fractions, exponents, large
/// integers, negative zero, escapes and characters beyond ASCII.
fn events() -> Value {
    let events: Vec<Value> = (0..1000u32)
        .map(|i| {
            json!({
                "timestamp": i * 37,
                "deviceIndex": i % 3,
                "deviceName": format!("Dévice \"{}\" \\ ✓ 😀", i % 3),
                "actuatorIndex": 0,
                "actuatorType": if i % 2 == 0 { "Vibrate" } else { "Rotate" },
                "value": match i % 5 {
                    0 => json!(0.1 + f64::from(i) / 7.0),
                    1 => json!(1e-7),
                    2 => json!(9_007_199_254_740_993i64),
                    3 => json!(-0.0),
                    _ => json!(i),
                },
            })
        })
        .collect();
    Value::Array(events)
}

/// Writes the same catalogue, users, recording, likes and plays.
fn seed(host: &Host) {
    let role = |name| host.id_by_name("platform_roles", name);
    let (model, viewer) = (role("Model"), role("Viewer"));
    for (i, (first, last)) in [("Ada", "Lovelace"), ("Émile", "Zola «z»")]
        .iter()
        .enumerate()
    {
        host.admin_create(
            "platform_users",
            &json!({
                "id": uuid(1, i as u32), "first_name": first, "last_name": last,
                "email": format!("model{i}@backends.local"), "token": format!("model-{i}"),
                "role": model, "slug": format!("model-{i}"), "artist_name": format!("{first} ✓"),
                "description": "Line one\nline \"two\" \\ 😀", "date_created": T0,
            }),
        );
    }
    host.admin_create(
        "platform_users",
        &json!({
            "id": uuid(1, 9), "first_name": "Vi", "last_name": "Ewer",
            "email": "viewer@backends.local", "token": VIEWER, "role": viewer,
            "date_created": T0,
        }),
    );
    let titles = ["Alpha", "beta", "Ça va", "Zeta \"quoted\"", "émoji 😀"];
    for (i, title) in titles.iter().enumerate() {
        let upload = (i != 2).then(|| format!("2026-02-0{}T08:00:00.000Z", i + 1));
        host.admin_create(
            "videos",
            &json!({
                "id": uuid(2, i as u32), "slug": format!("video-{i}"), "title": title,
                "description": format!("About {title}"), "upload_date": upload,
                "featured": i % 2 == 0, "premium": i == 3, "views_count": i * 1000,
            }),
        );
        host.admin_create(
            "videos_models",
            &json!({"id": uuid(3, i as u32), "videos_id": uuid(2, i as u32),
                    "platform_users_id": uuid(1, (i % 2) as u32)}),
        );
    }
    for i in 0..2u32 {
        host.admin_create(
            "articles",
            &json!({
                "id": uuid(4, i), "slug": format!("article-{i}"), "title": format!("Article {i} ✓"),
                "excerpt": "Short", "content": "Long\ttext", "author": uuid(1, i),
                "publish_date": format!("2026-01-1{i}T00:00:00.000Z"), "date_created": T0,
            }),
        );
    }
    host.admin_create(
        "recordings",
        &json!({
            "id": uuid(5, 1), "user_created": uuid(1, 9), "date_created": T0,
            "title": "Long ride", "description": "1,000 events", "duration": 36963.5,
            "status": "published", "public": true, "tags": ["long", "ünïcode"],
            "device_info": [{"index": 0, "name": "Dévice", "capabilities": ["Vibrate", "Rotate"]}],
            "events": events(), "linked_video": uuid(2, 0),
        }),
    );
    for (i, video) in [0u32, 0, 1, 3].iter().enumerate() {
        let user = if i % 2 == 0 { uuid(1, 9) } else { uuid(1, 0) };
        if i < 3 {
            host.admin_create(
                "video_likes",
                &json!({"id": uuid(6, i as u32), "video_id": uuid(2, *video + i as u32 % 2),
                        "user_id": user, "date_created": T0}),
            );
        }
        host.admin_create(
            "video_plays",
            &json!({"id": uuid(7, i as u32), "video_id": uuid(2, *video), "user_id": user,
                    "session_id": format!("s{i}"), "duration_watched": 12.25 * i as f64,
                    "completed": i == 1, "date_created": T0}),
        );
    }
}

/// The reads compared: (path, token).
fn reads() -> Vec<(String, Option<&'static str>)> {
    let mut reads: Vec<(String, Option<&'static str>)> = [
        "/svc/stats",
        "/svc/models",
        "/svc/models/model-1",
        "/svc/videos",
        "/svc/videos?limit=2",
        "/svc/videos/video-4",
        "/svc/articles",
        "/svc/community-recordings",
    ]
    .iter()
    .map(|p| (p.to_string(), None))
    .collect();
    let recording = uuid(5, 1);
    reads.push((format!("/svc/recordings/{recording}"), Some(VIEWER)));
    reads.push(("/svc/recordings".into(), Some(VIEWER)));
    reads.push((
        format!("/svc/videos/{}/like-status", uuid(2, 0)),
        Some(VIEWER),
    ));
    let filtered = |collection: &str, filter: Value, rest: &str| {
        format!(
            "/items/{collection}?filter={}&{rest}",
            encode(&filter.to_string())
        )
    };
    let items = [
        "/items/videos?sort=-title&limit=-1".to_string(),
        "/items/videos?sort=upload_date,title&fields=title,upload_date,likes_count,plays_count"
            .into(),
        "/items/videos?sort=-upload_date&fields=slug".into(),
        "/items/videos?aggregate[count]=*&aggregate[sum]=views_count&aggregate[avg]=views_count&groupBy[]=featured".into(),
        "/items/videos?aggregate[min]=upload_date&aggregate[max]=title&aggregate[countDistinct]=premium".into(),
        "/items/video_plays?aggregate[sum]=duration_watched&groupBy[]=date(date_created)".into(),
        filtered("videos", json!({"title": {"_icontains": "A"}}), "fields=title&sort=title"),
        filtered(
            "videos",
            json!({"_or": [{"featured": {"_eq": true}}, {"upload_date": {"_null": true}}]}),
            "fields=id,featured,premium&sort=id",
        ),
        filtered(
            "videos",
            json!({"title": {"_gt": "Z"}, "views_count": {"_in": [0, 4000]}}),
            "fields=title",
        ),
        filtered(
            "recordings",
            json!({"tags": {"_contains": "long"}}),
            "fields=id,tags,device_info,duration",
        ),
        filtered(
            "platform_users",
            json!({"email": {"_ends_with": "backends.local"}}),
            "fields=id,first_name,last_name,email&sort=last_name",
        ),
    ];
    for query in items {
        reads.push((query, Some(ADMIN_TOKEN)));
    }
    reads.push((format!("/items/recordings/{recording}"), Some(ADMIN_TOKEN)));
    reads
}

/// The answer with the ids each install makes for itself (roles,
/// policies, seeded achievements) replaced by their names.
fn comparable(host: &Host, r: &Resp) -> String {
    let mut body = r.body.clone();
    for role in ["Administrator", "Model", "Viewer"] {
        let id = host.id_by_name("platform_roles", role);
        body = body.replace(&id, &format!("<role {role}>"));
    }
    format!("{} {}\n{body}", r.status, r.content_type)
}

#[test]
fn the_same_data_gives_the_same_bytes_on_both_databases() {
    if Backend::from_env() != Backend::Postgres {
        eprintln!("skipped in the SQLite pass: it runs in the PostgreSQL pass (TEST_DB=postgres)");
        return;
    }
    let sqlite = Host::start(HostOptions::svc().backend(Backend::Sqlite));
    let postgres = Host::start(HostOptions::svc().backend(Backend::Postgres));
    assert_eq!(sqlite.backend(), Backend::Sqlite);
    assert_eq!(postgres.backend(), Backend::Postgres);
    seed(&sqlite);
    seed(&postgres);
    let mut compared = 0;
    for (path, token) in reads() {
        let (a, b) = (sqlite.get(&path, token), postgres.get(&path, token));
        assert_eq!(a.status, 200, "{path} on SQLite: {}", a.body);
        let (a, b) = (comparable(&sqlite, &a), comparable(&postgres, &b));
        if a != b {
            let at = a
                .bytes()
                .zip(b.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            let from = at.saturating_sub(80);
            panic!(
                "{path}: the answers differ at byte {at}:\n  SQLite:     …{}\n  PostgreSQL: …{}",
                &a[from..(at + 80).min(a.len())],
                &b[from..(at + 80).min(b.len())],
            );
        }
        compared += 1;
    }
    // The recording came back whole, on both.
    let one = sqlite.get(&format!("/svc/recordings/{}", uuid(5, 1)), Some(VIEWER));
    assert_eq!(one.json()["events"].as_array().map(Vec::len), Some(1000));
    eprintln!("{compared} answers identical on SQLite and PostgreSQL");
}
