//! Writes that must not stall the host: a recording's create costs the same
//! whatever its owner's history (the stats row follows each publication by
//! one, and the `recordings` achievements read it rather than recounting),
//! and an array create on `/items` is bounded (`MAX_BATCH_MUTATION`, 400
//! past it, nothing written), so one request cannot hold the writer for
//! longer than a bounded write does.

use platform_tests::{id_of, rec_body, Host, HostOptions, ADMIN_TOKEN, MAX_BATCH};
use serde_json::{json, Value};

/// A host whose counters only the test's requests move, the same way each
/// time: schedule claims far away, and one pooled connection (PostgreSQL
/// counts a statement's prepare as a round trip the first time each
/// connection makes it).
fn quiet_host(opts: HostOptions) -> Host {
    Host::start(
        opts.arg("--schedule-lease-secs")
            .arg("3600")
            .arg("--db-pool-max")
            .arg("1"),
    )
}

/// `n` published recordings of `user`, written straight into the database
/// (as an import by another process would: no hook, no stats), ids
/// prefixed by `tag`.
fn seed_published(host: &Host, user: &str, tag: &str, n: usize) {
    let events = json!([{"timestamp": 0, "deviceIndex": 0, "deviceName": "D",
                         "actuatorIndex": 0, "actuatorType": "Vibrate", "value": 40}]);
    let devices = json!([{"name": "D", "index": 0, "capabilities": ["Vibrate"]}]);
    host.sql(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) \
         INSERT INTO \"recordings\" (\"id\", \"status\", \"user_created\", \"date_created\", \
           \"title\", \"slug\", \"duration\", \"events\", \"device_info\", \"tags\") \
         SELECT '{tag}-' || i, 'published', '{user}', '2025-06-01T00:00:00.000Z', \
           'Seeded', 'seeded', 2500, '{events}', '{devices}', '[]' FROM n"
    ));
    let owned = host.admin_count("recordings", Some(&json!({"user_created": {"_eq": user}})));
    assert_eq!(owned, n as u64, "seeded recordings of {tag}");
}

/// A published recording created through `POST /svc/recordings`; its id.
fn publish(host: &Host, token: &str, title: &str) -> String {
    let r = host.post(
        "/svc/recordings",
        Some(token),
        &rec_body(title, Some("published")),
    );
    assert_eq!(r.status, 201, "create: {}", r.body);
    id_of(&r.json())
}

/// The database round trips and rows read of `/server/metrics`.
fn counters(host: &Host) -> (u64, u64) {
    (
        host.metric("database_round_trips"),
        host.metric("database_rows_read"),
    )
}

/// What `write` costs the database (round trips, rows read), with the
/// asking included the same way each time.
fn cost(host: &Host, write: impl FnOnce()) -> (u64, u64) {
    let (trips, rows) = counters(host);
    write();
    let (trips_after, rows_after) = counters(host);
    (trips_after - trips, rows_after - rows)
}

/// Asserts that two creates cost the same but for their moves in svc's
/// rank tree, which the two users' scores decide (not their histories). At
/// each of the tree's levels where a user's node changes, the tree's read
/// finds the two nodes or not, and each is updated or deleted (found, then
/// written) or made: up to four round trips and four rows read per level,
/// for one user and not the other. A cost that grew with the history
/// (2,000 recordings) would be far past that.
fn same_up_to_the_rank_tree(few: (u64, u64), many: (u64, u64), what: &str) {
    let levels = u64::from(svc_extension::count_tree::LEVELS);
    let (trips, rows) = (few.0.abs_diff(many.0), few.1.abs_diff(many.1));
    assert!(
        trips <= 4 * levels && rows <= 4 * levels,
        "{what}: {few:?} against {many:?}"
    );
}

/// The stats row of `user`, read as admin.
fn stats_row(host: &Host, user: &str) -> Value {
    let rows = host.admin_find("user_stats", &json!({"user_id": {"_eq": user}}));
    assert_eq!(rows.len(), 1, "stats rows of {user}: {rows:?}");
    rows[0].clone()
}

/// The row of `user` for the achievement `code`, if any.
fn achievement_row(host: &Host, user: &str, code: &str) -> Option<Value> {
    let achievement = host.admin_find("achievements", &json!({"code": {"_eq": code}}));
    let id = id_of(&achievement[0]);
    host.admin_find(
        "user_achievements",
        &json!({"_and": [{"user_id": {"_eq": user}}, {"achievement_id": {"_eq": id}}]}),
    )
    .into_iter()
    .next()
}

#[test]
fn a_recording_create_costs_the_same_after_ten_recordings_or_two_thousand() {
    let host = quiet_host(HostOptions::svc());
    let few = host.user(Some("Viewer"), "few-recordings");
    let many = host.user(Some("Viewer"), "many-recordings");
    seed_published(&host, &few, "few", 10);
    seed_published(&host, &many, "many", 2000);
    // The first award of each computes their stats row from the records
    // (once); from then on the row is the ledger's own. A second create by
    // each (and one through the items API) leaves every statement the
    // measured ones make prepared (PostgreSQL counts a prepare as a round
    // trip, the first time a connection makes it).
    publish(&host, "few-recordings", "First of few");
    publish(&host, "many-recordings", "First of many");
    assert_eq!(stats_row(&host, &few)["recordings_count"], 11);
    assert_eq!(stats_row(&host, &many)["recordings_count"], 2001);
    let through_items = |token: &str| {
        let r = host.post(
            "/items/recordings",
            Some(token),
            &rec_body("Through items", Some("published")),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    for token in ["few-recordings", "many-recordings"] {
        publish(&host, token, "Warm");
        through_items(token);
    }

    // A published recording through the service: the write, its award,
    // the `recordings` check, the stats row, the answer.
    let by_few = cost(&host, || {
        publish(&host, "few-recordings", "Second of few");
    });
    let by_many = cost(&host, || {
        publish(&host, "many-recordings", "Second of many");
    });
    same_up_to_the_rank_tree(
        by_few,
        by_many,
        "POST /svc/recordings (round trips, rows read): 13 prior recordings vs 2,003",
    );

    // The same through the items API.
    let by_few = cost(&host, || through_items("few-recordings"));
    let by_many = cost(&host, || through_items("many-recordings"));
    same_up_to_the_rank_tree(
        by_few,
        by_many,
        "POST /items/recordings (round trips, rows read): 14 prior recordings vs 2,004",
    );
    assert_eq!(stats_row(&host, &few)["recordings_count"], 15);
    assert_eq!(stats_row(&host, &many)["recordings_count"], 2005);
}

#[test]
fn the_recordings_achievements_read_the_published_count_from_the_stats_row() {
    let host = Host::in_process_svc();
    let user = host.user(Some("Viewer"), "counted-creator");
    publish(&host, "counted-creator", "First");
    let row = stats_row(&host, &user);
    assert_eq!(row["recordings_count"], 1);
    // An import that knows its rows are exact writes the count and says
    // so: the ledger believes it.
    host.admin_patch(
        "user_stats",
        &id_of(&row),
        &json!({"recordings_count": 9, "ledger_verified": true}),
    );
    assert!(
        achievement_row(&host, &user, "recording_10").is_some_and(|r| r["date_unlocked"].is_null()),
        "recording_10 is not unlocked yet"
    );

    // One more publication: the tenth, by the row.
    let tenth = publish(&host, "counted-creator", "Tenth");
    assert_eq!(stats_row(&host, &user)["recordings_count"], 10);
    let unlocked = achievement_row(&host, &user, "recording_10").expect("recording_10 row");
    assert_eq!(unlocked["progress"], 10, "{unlocked}");
    assert!(unlocked["date_unlocked"].is_string(), "{unlocked}");

    // Archiving one takes it off the row, by one.
    let r = host.delete(&format!("/svc/recordings/{tenth}"), Some("counted-creator"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(stats_row(&host, &user)["recordings_count"], 9);
    // And publishing it again puts it back, without a second award.
    let r = host.patch(
        &format!("/svc/recordings/{tenth}"),
        Some("counted-creator"),
        &json!({"status": "published"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(stats_row(&host, &user)["recordings_count"], 10);
    let awards = host.admin_count(
        "user_points",
        Some(&json!({"_and": [{"recording_id": {"_eq": tenth}},
                              {"action": {"_eq": "RECORDING_CREATE"}}]})),
    );
    assert_eq!(awards, 1, "RECORDING_CREATE once per recording");
}

/// `n` small recording bodies (drafts: no award).
fn drafts(n: usize, tag: &str) -> Value {
    Value::Array(
        (0..n)
            .map(|i| rec_body(&format!("{tag} {i}"), None))
            .collect(),
    )
}

fn assert_refused_past(host: &Host, token: &str, limit: usize) {
    let before = host.admin_count("recordings", None);
    let r = host.post("/items/recordings", Some(token), &drafts(limit + 1, "past"));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"errors": [{
            "message": format!("Invalid payload. Exceeded max batch mutation limit of {limit}."),
            "extensions": {"code": "INVALID_PAYLOAD"},
        }]}),
        "{}",
        r.body
    );
    assert_eq!(
        host.admin_count("recordings", None),
        before,
        "nothing of a refused array is written"
    );
    let r = host.post("/items/recordings", Some(token), &drafts(limit, "at"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(limit));
    assert_eq!(host.admin_count("recordings", None), before + limit as u64);
}

#[test]
fn an_array_create_past_the_default_bound_is_refused_and_writes_nothing() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "batcher");
    assert_refused_past(&host, "batcher", MAX_BATCH);
    // An administrator is bound the same way.
    assert_refused_past(&host, ADMIN_TOKEN, MAX_BATCH);
    // A single item is no array: never refused by the bound.
    let r = host.post(
        "/items/recordings",
        Some("batcher"),
        &rec_body("Alone", None),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn the_array_bound_is_configured_by_flag_or_environment() {
    let by_flag = Host::start(HostOptions::svc().arg("--max-batch-mutation").arg("3"));
    by_flag.user(Some("Viewer"), "flagged");
    assert_refused_past(&by_flag, "flagged", 3);

    let mut opts = HostOptions::svc();
    opts.env
        .push(("MAX_BATCH_MUTATION".to_string(), "5".to_string()));
    let by_env = Host::start(opts);
    by_env.user(Some("Viewer"), "enved");
    assert_refused_past(&by_env, "enved", 5);
}
