//! svc's handlers against the real host, in process (the test kit): the
//! docs/service-api.md's state tables and texts, and derived data kept exact
//! whichever way a write comes in.

use example_host::testkit::{TestHost, TestUser};
use host_sdk::{ItemsError, Query};
use serde_json::{json, Value};

fn svc() -> TestHost {
    TestHost::start(svc_extension::extension()).expect("the test host starts")
}

/// A published video, written as an administrator would.
fn video(host: &TestHost, slug: &str) -> String {
    host.context(None, |ctx| {
        ctx.as_admin().create_one(
            "videos",
            &json!({"slug": slug, "title": slug, "upload_date": "2020-01-01T00:00:00Z"}),
        )
    })
    .expect("the video is created")
}

fn stored_likes_count(host: &TestHost, video: &str) -> Value {
    let stored = host.context(None, |ctx| ctx.as_admin().read_one("videos", video));
    stored.expect("the video reads").expect("the video exists")["likes_count"].clone()
}

fn member(host: &TestHost, email: &str) -> TestUser {
    host.create_user(email, "Model")
        .expect("the member is created")
}

#[test]
fn likes_follow_the_spec_state_table() {
    let host = svc();
    let video = video(&host, "first");
    let ann = member(&host, "ann@example.com");
    let as_ann = host.as_user(&ann);
    let like = format!("/videos/{video}/like");

    let r = host.anonymous().post(&like, &json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    let r = as_ann.post(&like, &json!({}));
    assert_eq!(
        (r.status, r.json()),
        (200, json!({"liked": true, "likes_count": 1}))
    );
    let r = as_ann.post(&like, &json!({}));
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "Already liked"}))
    );
    let status = format!("/videos/{video}/like-status");
    assert_eq!(as_ann.get(&status).json(), json!({"liked": true}));
    assert_eq!(
        host.anonymous().get(&status).json(),
        json!({"liked": false})
    );

    let r = as_ann.delete(&like);
    assert_eq!(
        (r.status, r.json()),
        (200, json!({"liked": false, "likes_count": 0}))
    );
    let r = as_ann.delete(&like);
    assert_eq!((r.status, r.json()), (400, json!({"error": "Not liked"})));
    assert_eq!(stored_likes_count(&host, &video), json!(0));
}

#[test]
fn a_like_written_outside_the_route_keeps_the_counter_exact() {
    let host = svc();
    let video = video(&host, "counted");
    let ann = member(&host, "ann@example.com");
    // Through the items service, as an administrator's tool would: the
    // in-transaction hook keeps the counter.
    let like = host
        .context(None, |ctx| {
            ctx.as_admin().create_one(
                "video_likes",
                &json!({"video_id": video, "user_id": ann.id}),
            )
        })
        .expect("the like is written");
    assert_eq!(stored_likes_count(&host, &video), json!(1));
    // The route sees it.
    let r = host
        .as_user(&ann)
        .post(&format!("/videos/{video}/like"), &json!({}));
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "Already liked"}))
    );
    host.context(None, |ctx| ctx.as_admin().delete_one("video_likes", &like))
        .expect("the like is deleted");
    assert_eq!(stored_likes_count(&host, &video), json!(0));
}

/// `Query::without` paths (SDK 1.18): a field left out below a relation
/// `fields` follows is neither read nor written; a path nothing follows,
/// or to a field the related collection lacks, is refused.
#[test]
fn fields_are_left_out_below_the_relations_a_read_follows() {
    let host = svc();
    let video = video(&host, "linked");
    let ann = member(&host, "ann@example.com");
    host.context(None, |ctx| {
        ctx.as_admin().create_one(
            "videos_models",
            &json!({"videos_id": video, "platform_users_id": ann.id}),
        )
    })
    .expect("the model is linked");
    let read = |fields: &[&str], without: &[&str]| {
        host.context(None, |ctx| {
            ctx.as_admin()
                .read_by_query("videos", &Query::new().fields(fields).without(without))
        })
    };
    let private = [
        "models.platform_users_id.email",
        "models.platform_users_id.password",
        "models.platform_users_id.token",
    ];
    let videos = read(&["*", "models.platform_users_id.*"], &private).expect("the read");
    let user = &videos[0]["models"][0]["platform_users_id"];
    assert_eq!(user["id"], json!(ann.id), "{videos:?}");
    assert!(user.get("role").is_some(), "{user}");
    for field in ["email", "password", "token"] {
        assert!(user.get(field).is_none(), "{field} in {user}");
    }
    // The links' key to their video can be left out of them: they are
    // still found by it.
    let videos = read(&["*", "models.*"], &["models.videos_id"]).expect("the read");
    let link = &videos[0]["models"][0];
    assert_eq!(link["platform_users_id"], json!(ann.id), "{videos:?}");
    assert!(link.get("videos_id").is_none(), "{link}");
    // Without the path, the administrator's read has the email.
    let videos = read(&["*", "models.platform_users_id.*"], &[]).expect("the read");
    assert_eq!(
        videos[0]["models"][0]["platform_users_id"]["email"],
        json!(ann.email)
    );

    let refused = |fields: &[&str], without: &[&str]| match read(fields, without) {
        Err(ItemsError::InvalidQuery(message)) => message,
        other => panic!("{fields:?} without {without:?}: {other:?}"),
    };
    assert!(
        refused(&["*"], &["models.platform_users_id.email"]).contains("\"models\" is not followed")
    );
    assert!(refused(&["*", "movie.*"], &["models.email"]).contains("\"models\" is not followed"));
    assert!(refused(
        &["*", "models.platform_users_id.*"],
        &["models.platform_users_id.nope"]
    )
    .contains("\"nope\""));
}

#[test]
fn recordings_are_private_until_shared_and_then_duplicable() {
    let host = svc();
    let ann = member(&host, "ann@example.com");
    let bob = member(&host, "bob@example.com");
    let r = host.as_user(&ann).post(
        "/recordings",
        &json!({"title": "Slow Wave!", "duration": 12, "events": [{"t": 0}], "device_info": {"d": 1}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let recording = r.json();
    assert_eq!(recording["slug"], "slow-wave");
    assert_eq!(recording["public"], false);
    let id = recording["id"].as_str().unwrap_or_default().to_string();

    let r = host.as_user(&bob).get(&format!("/recordings/{id}"));
    assert_eq!((r.status, r.json()), (403, json!({"error": "Forbidden"})));
    let r = host
        .as_user(&bob)
        .post(&format!("/recordings/{id}/duplicate"), &json!({}));
    assert_eq!(
        (r.status, r.json()),
        (403, json!({"error": "Recording is not publicly shared"}))
    );
    let r = host
        .anonymous()
        .post(&format!("/recordings/{id}/duplicate"), &json!({}));
    assert_eq!(
        (r.status, r.json()),
        (401, json!({"error": "Authentication required"}))
    );

    let r = host.as_user(&ann).patch(
        &format!("/recordings/{id}"),
        &json!({"public": true, "status": "published"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = host
        .as_user(&bob)
        .post(&format!("/recordings/{id}/duplicate"), &json!({}));
    assert_eq!(r.status, 201, "{}", r.text());
    let copy = r.json()["data"].clone();
    assert_eq!(copy["title"], "Slow Wave! (Copy)");
    assert_eq!(copy["original_recording_id"], json!(id));
    assert_eq!(copy["user_created"], json!(bob.id));
    // Bob's copy is his own and private; Ann's list holds only hers.
    let mine = host.context(Some(&bob), |ctx| {
        ctx.as_caller().read_by_query(
            "recordings",
            &Query::new().filter(json!({"user_created": {"_eq": "$CURRENT_USER"}})),
        )
    });
    assert_eq!(mine.expect("bob reads his recordings").len(), 1);
    let r = host.as_user(&ann).get("/recordings");
    // A plain array, the caller's own only (docs/service-api.md).
    let titles: Vec<Value> = r
        .json()
        .as_array()
        .map(|list| list.iter().map(|rec| rec["title"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(titles, [json!("Slow Wave!")], "{}", r.text());
}

#[test]
fn the_stats_schedule_runs_on_demand_and_unknown_routes_say_so() {
    let host = svc();
    host.run_schedule("recalculate-stats")
        .expect("the schedule runs on an empty platform");
    let r = host.anonymous().get("/nowhere");
    assert_eq!(
        (r.status, r.json()),
        (404, json!({"error": "Route not found"}))
    );
    let r = host.anonymous().put("/videos", &json!({}));
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(r.allow.as_deref(), Some("GET"));
}

/// The schema the OpenAPI document gives for `method path`'s `status`
/// answer.
fn documented(method: &str, path: &str, status: &str) -> Value {
    let paths = svc_extension::extension().router().openapi_paths();
    paths[path][method]["responses"][status]["content"]["application/json"]["schema"].clone()
}

/// The property names of an object schema, sorted.
fn properties(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// The member names of an answer, sorted.
fn members(answer: &Value) -> Vec<String> {
    let mut names: Vec<String> = answer
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn answers_have_the_shapes_the_openapi_document_gives() {
    let host = svc();
    let video = video(&host, "documented");
    let ann = member(&host, "ann@example.com");
    let as_ann = host.as_user(&ann);

    let like = as_ann.post(&format!("/videos/{video}/like"), &json!({}));
    let schema = documented("post", "/videos/{id}/like", "200");
    assert_eq!(members(&like.json()), properties(&schema), "{schema}");
    assert_eq!(schema["properties"]["liked"]["type"], "boolean");

    let status = as_ann.get(&format!("/videos/{video}/like-status"));
    let schema = documented("get", "/videos/{id}/like-status", "200");
    assert_eq!(members(&status.json()), properties(&schema));

    let play = as_ann.post(&format!("/videos/{video}/play"), &json!({}));
    let schema = documented("post", "/videos/{id}/play", "200");
    assert_eq!(members(&play.json()), properties(&schema));
    let play_id = play.json()["play_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let done = as_ann.patch(
        &format!("/videos/{video}/play/{play_id}"),
        &json!({"duration_watched": 3, "completed": true}),
    );
    let schema = documented("patch", "/videos/{id}/play/{playId}", "200");
    assert_eq!(members(&done.json()), properties(&schema));

    let stats = host.anonymous().get("/stats");
    assert_eq!(
        members(&stats.json()),
        properties(&documented("get", "/stats", "200"))
    );
    // Errors have the one error shape; bodies are required and typed.
    let error = documented("post", "/videos/{id}/like", "400");
    assert_eq!(error["properties"]["error"]["type"], "string");
    let paths = svc_extension::extension().router().openapi_paths();
    let body = &paths["/recordings"]["post"]["requestBody"];
    assert_eq!(body["required"], true);
    let required = &body["content"]["application/json"]["schema"]["required"];
    for field in ["title", "duration", "events", "device_info"] {
        assert!(
            required
                .as_array()
                .is_some_and(|r| r.contains(&json!(field))),
            "{body}"
        );
    }
    let limit = paths["/videos"]["get"]["parameters"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "limit").cloned())
        .unwrap_or_default();
    assert_eq!(
        (limit["in"].clone(), limit["required"].clone()),
        (json!("query"), json!(false))
    );
}

/// A new member-writable field of recordings is one migration: the field,
/// and the members' create and update rules widened from the fields svc
/// granted (`Step::ChangeGrant`); a rule an administrator changed is kept.
#[test]
fn a_new_member_writable_field_is_one_migration() {
    use host_sdk::schema::{change_grant, Field, GrantRule, Step};
    use svc_extension::schema::MEMBER_RECORDING_FIELDS;

    let with_mood: Vec<&str> = MEMBER_RECORDING_FIELDS
        .iter()
        .copied()
        .chain(["mood"])
        .collect();
    let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
    let moods = |widen: bool| {
        let mut steps = vec![Step::AddField {
            collection: "recordings".into(),
            field: Field::string("mood"),
        }];
        if widen {
            for policy in ["Model", "Viewer"] {
                steps.push(change_grant(
                    policy,
                    "recordings",
                    "create",
                    GrantRule::all().fields(&MEMBER_RECORDING_FIELDS),
                    GrantRule::all().fields(&with_mood),
                ));
                steps.push(change_grant(
                    policy,
                    "recordings",
                    "update",
                    GrantRule::all()
                        .filter(own.clone())
                        .fields(&MEMBER_RECORDING_FIELDS),
                    GrantRule::all().filter(own.clone()).fields(&with_mood),
                ));
            }
        }
        host_sdk::Extension::new("moods", "Moods", "0.1.0")
            .requires("svc", ">=0.1")
            .migration("0001_mood", steps)
    };
    let create = |host: &TestHost, user: &TestUser| {
        host.context(Some(user), |ctx| {
            ctx.as_caller().create_one(
                "recordings",
                &json!({"title": "Calm", "duration": 1000, "mood": "calm"}),
            )
        })
    };

    // The field alone: members may not write it.
    let host = TestHost::start_all(vec![svc_extension::extension(), moods(false)])
        .expect("the test host starts");
    let ann = member(&host, "ann@example.com");
    assert!(create(&host, &ann).is_err());

    // With the widened rules: they may, on create and on update.
    let host = TestHost::start_all(vec![svc_extension::extension(), moods(true)])
        .expect("the test host starts");
    let ann = member(&host, "ann@example.com");
    let id = create(&host, &ann).expect("a member writes the new field");
    let changed = host.context(Some(&ann), |ctx| {
        ctx.as_caller()
            .update_one("recordings", &id, &json!({"mood": "bright"}))
    });
    assert!(changed.is_ok(), "{changed:?}");
    let stored = host
        .context(None, |ctx| ctx.as_admin().read_one("recordings", &id))
        .expect("the recording reads")
        .expect("it exists");
    assert_eq!(stored["mood"], "bright");
}
