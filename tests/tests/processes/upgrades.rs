//! Upgrades keep data: today's host, with today's svc, opens the databases
//! earlier releases left (tests/fixtures/databases/<commit>, made by
//! scripts/make-upgrade-fixtures.sh: the demo and a workload through each
//! release's API), migrates them, and then every row that was there is
//! still there unchanged, the old credentials sign in, the derived counts
//! equal their rows, and svc serves and writes on them.
//!
//! Each fixture is read on the backend `TEST_DB` names; a release that ran
//! on SQLite only has no PostgreSQL fixture.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use platform_tests::{
    analytics, id_of, int_of, rec_body, workspace_root, Backend, Database, Host, HostOptions,
    ADMIN_TOKEN,
};
use serde_json::{json, Value};

/// A column whose values a step of today's host is documented to change
/// on an existing database: in every row of its table, or in the rows
/// where another column has a given value.
struct Change {
    table: &'static str,
    column: &'static str,
    only_where: Option<(&'static str, &'static str)>,
    why: &'static str,
}

/// Every documented change; every other value of every row stays.
const CHANGED: &[Change] = &[
    Change {
        table: "platform_fields",
        column: "definition",
        only_where: None,
        why: "0002_reference_rules gives every reference its rule on delete (on_delete)",
    },
    Change {
        table: "platform_permissions",
        column: "fields",
        only_where: Some(("collection", "recordings")),
        why: "0002_member_recordings_narrowed: members write the listed fields of \
              recordings (never `featured`), not *",
    },
    Change {
        table: "platform_permissions",
        column: "permissions",
        only_where: Some(("collection", "recordings")),
        why: "0002_member_recordings_narrowed: members read their own and public \
              recordings, not all",
    },
    Change {
        table: "platform_tracked_changes",
        column: "version",
        only_where: None,
        why: "the schema's version: each migration applied counts one more",
    },
];

/// Tables that gain rows when today's host first opens an old database
/// (table, why); their old rows must all still be there. Every other
/// table keeps exactly its rows.
const GROWS: &[(&str, &str)] = &[
    ("platform_migrations", "each migration applied is recorded"),
    ("platform_fields", "the fields the new migrations add"),
    (
        "platform_aliases",
        "the aliases the new migrations add (policies)",
    ),
    (
        "platform_permissions",
        "the grants of the once-only steps (members read their own role, access, \
         comments and files)",
    ),
];

/// The store's commit counter on PostgreSQL: one row per write
/// transaction, folded into the base's count now and then by design. What
/// must hold is that the count of commits they hold never goes back.
const COMMIT_COUNTER: [&str; 2] = ["platform_commits", "platform_commit_base"];

/// The commits the counter's tables hold, from a snapshot.
fn commits(tables: &BTreeMap<String, Rows>) -> i64 {
    let rows = tables.get("platform_commits").map_or(0, |r| r.rows.len()) as i64;
    let base = tables.get("platform_commit_base").map_or(0, |t| {
        let at = t.columns.iter().position(|c| c == "commits");
        t.rows
            .iter()
            .filter_map(|r| at.and_then(|i| r[i].as_deref()?.parse::<i64>().ok()))
            .sum()
    });
    rows + base
}

/// The folder of the fixture of the release `commit`.
fn fixture(commit: &str) -> PathBuf {
    workspace_root()
        .join("tests/fixtures/databases")
        .join(commit)
}

/// One table's rows over the given columns, each as the database's text,
/// sorted (an order that does not depend on how rows are stored).
#[derive(Debug)]
struct Rows {
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
}

impl Rows {
    fn read(db: &Database, table: &str, columns: &[String]) -> Rows {
        let list = columns
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let mut rows = db.sql_query(&format!("SELECT {list} FROM \"{table}\""));
        rows.sort();
        Rows {
            columns: columns.to_vec(),
            rows,
        }
    }

    /// A checksum of the content, to name it in a report.
    fn checksum(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.rows.hash(&mut h);
        h.finish()
    }
}

/// Every table of the database, every column.
fn snapshot(db: &Database) -> BTreeMap<String, Rows> {
    db.tables()
        .into_iter()
        .map(|t| {
            let columns = db.columns(&t);
            let rows = Rows::read(db, &t, &columns);
            (t, rows)
        })
        .collect()
}

/// `rows` with the values [`CHANGED`] names replaced by one mark, sorted.
fn masked(table: &str, columns: Vec<String>, mut rows: Vec<Vec<Option<String>>>) -> Rows {
    let at = |name: &str| columns.iter().position(|c| c == name);
    for change in CHANGED.iter().filter(|c| c.table == table) {
        let Some(column) = at(change.column) else {
            continue;
        };
        let only_where = change.only_where.map(|(c, v)| (at(c), v));
        for row in &mut rows {
            let applies = match only_where {
                None => true,
                Some((Some(i), value)) => row[i].as_deref() == Some(value),
                Some((None, _)) => false,
            };
            if applies {
                row[column] = Some("(documented change)".into());
            }
        }
    }
    rows.sort();
    Rows { columns, rows }
}

/// What differs between the rows of `before` and the database now, table
/// by table, on the columns that were there, less [`CHANGED`].
fn lost_or_changed(before: &BTreeMap<String, Rows>, db: &Database) -> Vec<String> {
    let tables = db.tables();
    let mut problems = Vec::new();
    for (table, old) in before {
        if COMMIT_COUNTER.contains(&table.as_str()) {
            continue;
        }
        if !tables.contains(table) {
            problems.push(format!("table {table} ({} rows) is gone", old.rows.len()));
            continue;
        }
        let now_columns = db.columns(table);
        let gone: Vec<&String> = old
            .columns
            .iter()
            .filter(|c| !now_columns.contains(c))
            .collect();
        if !gone.is_empty() {
            problems.push(format!("{table}: columns {gone:?} are gone"));
            continue;
        }
        let old = masked(table, old.columns.clone(), old.rows.clone());
        let now = Rows::read(db, table, &old.columns);
        let now = masked(table, now.columns, now.rows);
        let mut missing = Vec::new();
        let mut rest = now.rows.clone();
        for row in &old.rows {
            match rest.iter().position(|r| r == row) {
                Some(at) => {
                    rest.remove(at);
                }
                None => missing.push(row),
            }
        }
        let grows = GROWS.iter().any(|(t, _)| t == table);
        if !missing.is_empty() || (!grows && !rest.is_empty()) {
            problems.push(format!(
                "{table}: {} rows (checksum {:x}) before, {} (checksum {:x}) now; \
                 over {:?}: missing or changed {:?}; new {:?}",
                old.rows.len(),
                old.checksum(),
                now.rows.len(),
                now.checksum(),
                old.columns,
                missing.iter().take(3).collect::<Vec<_>>(),
                rest.iter().take(3).collect::<Vec<_>>(),
            ));
        }
    }
    problems
}

/// The credentials the release accepted (workload.json).
fn credentials(commit: &str) -> Value {
    let path = fixture(commit).join("workload.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The administrator every fixture's release was started with
/// (`ADMIN_EMAIL`, `ADMIN_PASSWORD`): its password was stored even by a
/// release that had no sign-in by password.
const ADMIN_LOGIN: (&str, &str) = ("admin@example.com", "fixture-admin-password");

fn assert_credentials_sign_in(host: &Host, commit: &str) {
    let creds = credentials(commit);
    let tokens = creds["tokens"].as_array().cloned().unwrap_or_default();
    assert!(tokens.len() >= 4, "{commit}: {creds}");
    let (email, password) = ADMIN_LOGIN;
    let mut logins = vec![json!({"email": email, "password": password})];
    for login in creds["passwords"].as_array().cloned().unwrap_or_default() {
        if !logins.contains(&login) {
            logins.push(login);
        }
    }
    for token in &tokens {
        let token = token.as_str().unwrap_or_default();
        let r = host.get("/users/me", Some(token));
        assert_eq!(
            r.status, 200,
            "{commit}: the static token {token}: {}",
            r.body
        );
    }
    for login in logins {
        let r = host.post("/auth/login", None, &login);
        assert_eq!(r.status, 200, "{commit}: sign-in of {login}: {}", r.body);
        let access = r.json()["data"]["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_eq!(host.get("/users/me", Some(&access)).status, 200, "{login}");
    }
}

/// The number `query` answers (one row, one column).
fn count(db: &Database, query: &str) -> i64 {
    db.sql_query_one(query)[0]
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{query}: not a number"))
}

/// Each video's counters equal its rows; each user's stats equal what
/// their rows give, as svc's gamification endpoints answer them, and the
/// leaderboard ranks by weighted points.
fn assert_derived_data_exact(host: &Host, commit: &str) {
    let db = host.database();
    for row in db.sql_query("SELECT \"id\", \"likes_count\", \"plays_count\" FROM \"videos\"") {
        let id = row[0].clone().unwrap_or_default();
        let likes = count(
            db,
            &format!("SELECT COUNT(*) FROM \"video_likes\" WHERE \"video_id\" = '{id}'"),
        );
        let plays = count(
            db,
            &format!("SELECT COUNT(*) FROM \"video_plays\" WHERE \"video_id\" = '{id}'"),
        );
        assert_eq!(
            (row[1].as_deref(), row[2].as_deref()),
            (
                Some(likes.to_string().as_str()),
                Some(plays.to_string().as_str())
            ),
            "{commit}: video {id}'s likes_count and plays_count against its rows"
        );
    }
    let stats = db.sql_query("SELECT \"user_id\" FROM \"user_stats\"");
    assert!(!stats.is_empty(), "{commit}: no user_stats");
    for row in stats {
        let user = row[0].clone().unwrap_or_default();
        let raw = count(
            db,
            &format!(
                "SELECT COALESCE(SUM(\"points\"), 0) FROM \"user_points\" WHERE \"user_id\" = '{user}'"
            ),
        );
        let unlocked = count(
            db,
            &format!(
                "SELECT COUNT(*) FROM \"user_achievements\" \
                 WHERE \"user_id\" = '{user}' AND \"date_unlocked\" IS NOT NULL"
            ),
        );
        let r = host.get(&format!("/svc/gamification/user/{user}"), None);
        assert_eq!(r.status, 200, "{commit}: {}", r.body);
        let answer = r.json();
        let s = &answer["stats"];
        assert_eq!(
            (
                int_of(&s["total_raw_points"], "total_raw_points"),
                int_of(&s["achievements_count"], "achievements_count")
            ),
            (raw, unlocked),
            "{commit}: user {user}'s stats against their points and achievements: {answer}"
        );
        let listed = answer["achievements"].as_array().map_or(0, Vec::len) as i64;
        assert_eq!(
            listed, unlocked,
            "{commit}: {user}'s achievements: {answer}"
        );
    }
    let r = host.get("/svc/gamification/leaderboard?limit=100", None);
    assert_eq!(r.status, 200, "{commit}: {}", r.body);
    let board = r.json();
    let entries = board["data"].as_array().cloned().unwrap_or_default();
    assert!(!entries.is_empty(), "{commit}: empty leaderboard");
    let points = |e: &Value| e["total_weighted_points"].as_f64().unwrap_or(f64::NAN);
    for pair in entries.windows(2) {
        assert!(
            points(&pair[0]) >= points(&pair[1]),
            "{commit}: leaderboard out of order: {} then {}",
            pair[0],
            pair[1]
        );
    }
    for (n, e) in entries.iter().enumerate() {
        assert_eq!(int_of(&e["rank"], "rank"), n as i64 + 1, "{commit}: {e}");
        let user = e["user_id"].as_str().unwrap_or_default();
        let mine = host
            .get(&format!("/svc/gamification/user/{user}"), None)
            .json();
        let above = entries.iter().filter(|o| points(o) > points(e)).count() as i64;
        assert_eq!(
            (
                int_of(&mine["stats"]["rank"], "rank"),
                &mine["stats"]["total_raw_points"]
            ),
            (above + 1, &e["total_raw_points"]),
            "{commit}: entry {n} of the leaderboard ({e}) against the user's own answer {mine}"
        );
    }
}

/// The demo model's analytics equal what the records give, on the first
/// read (which counts the sums a database of an earlier release does not
/// have yet) and after a play is written to the sums it keeps.
fn assert_analytics_match_records(host: &Host, commit: &str) {
    let token = "demo-model-token";
    let me = host.get("/users/me", Some(token)).json()["data"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{commit}: the demo model's token signs in"))
        .to_string();
    let check = |when: &str| {
        let r = host.get("/svc/analytics", Some(token));
        assert_eq!(r.status, 200, "{commit}: {}", r.body);
        let got = analytics::keyed(&r.json());
        assert!(
            got["total_videos"].as_u64().unwrap_or(0) > 0,
            "{commit}: {got}"
        );
        assert_eq!(
            got,
            analytics::expected(host, &me),
            "{commit}: analytics {when}"
        );
    };
    check("on the first read");
    let video = analytics::keyed(&host.get("/svc/analytics", Some(token)).json())["videos"]
        .as_object()
        .and_then(|v| v.keys().next().cloned())
        .unwrap_or_default();
    let r = host.post(
        &format!("/svc/videos/{video}/play"),
        None,
        &json!({"session_id": "upgrade"}),
    );
    assert_eq!(r.status, 200, "{commit}: {}", r.body);
    let play = r.json()["play_id"].as_str().unwrap_or_default().to_string();
    let r = host.patch(
        &format!("/svc/videos/{video}/play/{play}"),
        None,
        &json!({"duration_watched": 12, "completed": true}),
    );
    assert_eq!(r.status, 200, "{commit}: {}", r.body);
    check("after a play");
}

/// A handful of svc's reads and writes on the upgraded platform.
fn assert_svc_serves_and_writes(host: &Host, commit: &str) {
    let r = host.get("/svc/videos?limit=20", None);
    assert_eq!(r.status, 200, "{commit}: {}", r.body);
    let videos = r.json().as_array().cloned().unwrap_or_default();
    assert!(videos.len() >= 5, "{commit}: {} videos", videos.len());
    let video = id_of(&videos[0]);
    let likes = || {
        let v = host.get(
            &format!("/svc/videos/{}", str_field(&videos[0], "slug")),
            None,
        );
        assert_eq!(v.status, 200, "{commit}: {}", v.body);
        int_of(&v.json()["likes_count"], "likes_count")
    };
    let before = likes();
    let token = "demo-model-token";
    let liked = host.post(
        &format!("/svc/videos/{video}/like"),
        Some(token),
        &json!({}),
    );
    assert!(
        matches!(liked.status, 200 | 201),
        "{commit}: {}",
        liked.body
    );
    assert_eq!(likes(), before + 1, "{commit}: a like counts");
    let unliked = host.delete(&format!("/svc/videos/{video}/like"), Some(token));
    assert!(
        matches!(unliked.status, 200 | 204),
        "{commit}: {}",
        unliked.body
    );
    assert_eq!(likes(), before, "{commit}: an unlike counts");

    let viewer = "demo-viewer-token";
    let created = host.post(
        "/svc/recordings",
        Some(viewer),
        &rec_body("After upgrade", None),
    );
    assert!(
        matches!(created.status, 200 | 201),
        "{commit}: {}",
        created.body
    );
    let created = created.json();
    let rec = id_of(created.get("data").unwrap_or(&created));
    let shared = host.patch(
        &format!("/svc/recordings/{rec}"),
        Some(viewer),
        &json!({"status": "published", "public": true}),
    );
    assert_eq!(shared.status, 200, "{commit}: {}", shared.body);
    let community = host.get("/svc/community-recordings?limit=100", None);
    assert_eq!(community.status, 200, "{commit}: {}", community.body);
    assert!(
        community.body.contains(&rec),
        "{commit}: the shared recording is not in the community's: {}",
        community.body
    );
    let play = host.play_recording(&rec, Some("demo-viewer2-token"));
    assert!(!play.is_empty(), "{commit}: no play id");
    host.assert_serving();
}

fn str_field(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_default().to_string()
}

/// Today's host on a copy of `commit`'s database, with every check.
fn upgrade(commit: &str, ran_on_postgres: bool) {
    let backend = Backend::from_env();
    if backend == Backend::Postgres && !ran_on_postgres {
        eprintln!("{commit} ran on SQLite only: no PostgreSQL database to upgrade");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::from_fixture(dir.path(), backend, &fixture(commit));
    let before = snapshot(&db);
    assert!(
        before.get("recordings").is_some_and(|r| !r.rows.is_empty()),
        "{commit}: the fixture holds no recordings"
    );
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    let mut problems = lost_or_changed(&before, host.database());
    let (then, now) = (commits(&before), commits(&snapshot(host.database())));
    if now < then {
        problems.push(format!("the commit counter went back from {then} to {now}"));
    }
    let documented: Vec<String> = CHANGED
        .iter()
        .map(|c| format!("{}.{}: {}", c.table, c.column, c.why))
        .chain(
            GROWS
                .iter()
                .map(|(t, why)| format!("{t} gains rows: {why}")),
        )
        .collect();
    assert!(
        problems.is_empty(),
        "{commit}: the upgrade lost or changed rows:\n{}\n(documented, not counted:\n{})",
        problems.join("\n"),
        documented.join("\n")
    );
    assert_credentials_sign_in(&host, commit);
    assert_derived_data_exact(&host, commit);
    assert_analytics_match_records(&host, commit);
    assert_svc_serves_and_writes(&host, commit);
    // The administrator of the suite is the release's.
    assert_eq!(host.get("/users/me", Some(ADMIN_TOKEN)).status, 200);
}

#[test]
fn a_database_of_1384bd6_keeps_its_data() {
    upgrade("1384bd6", false);
}

#[test]
fn a_database_of_5e6ccaf_keeps_its_data() {
    upgrade("5e6ccaf", true);
}

#[test]
fn a_database_of_2f91566_keeps_its_data() {
    upgrade("2f91566", true);
}
