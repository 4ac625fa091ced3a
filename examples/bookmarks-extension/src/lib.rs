//! Bookmarks of svc's videos: an extension built on another one's
//! collections.
//!
//! - It requires svc (0.x): a host loads svc first, and refuses bookmarks
//!   when svc is missing.
//! - `bookmarks` refers to svc's `videos`; the reference refuses the delete
//!   of a video that is bookmarked, so a before-write hook on `videos`
//!   deletes a video's bookmarks first, inside the delete's transaction
//!   (docs/extensions.md, "The order of a write").
//! - Members (`Viewer`, `Model`) read, create and delete their own
//!   bookmarks, by grants in a migration.
//! - `GET /bookmarks/mine`, `POST /bookmarks` (a typed route: `{video,
//!   note?}`; 409 `Already bookmarked`), `DELETE /bookmarks/:id` (204; 404
//!   `Bookmark not found` for a missing one and someone else's alike).
//!
//! Its tests (`tests/bookmarks.rs`) mount svc and this extension on the
//! test kit, on SQLite or PostgreSQL (`TEST_DB`).

use host_sdk::prelude::*;
use host_sdk::schema::{Collection, Field, Grant, OnDelete};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A bookmark to create.
#[derive(Deserialize, JsonSchema)]
struct NewBookmark {
    /// The id of one of svc's videos.
    video: String,
    /// A note of the member's own.
    #[serde(default)]
    note: Option<String>,
}

fn own() -> serde_json::Value {
    json!({"user_created": {"_eq": "$CURRENT_USER"}})
}

pub fn extension() -> Extension {
    let mut ext = Extension::new("bookmarks", "Bookmarks", env!("CARGO_PKG_VERSION"))
        // Loaded after svc, whose `videos` its migration refers to.
        .requires("svc", ">=0.1, <1")
        .migration(
            "0001_bookmarks",
            vec![Collection::new("bookmarks")
                .field(Field::reference_with("video", "videos", OnDelete::Refuse).not_null())
                .field(Field::text("note"))
                .field(Field::uuid("user_created"))
                .field(Field::timestamp("date_created"))
                .unique(&["video", "user_created"])
                .build()],
        );
    let mut grants = Vec::new();
    for role in ["Viewer", "Model"] {
        grants.push(Grant::new(role, "bookmarks", "read").filter(own()).build());
        grants.push(
            Grant::new(role, "bookmarks", "create")
                .fields(&["video", "note"])
                .presets(json!({"user_created": "$CURRENT_USER"}))
                .build(),
        );
        grants.push(
            Grant::new(role, "bookmarks", "delete")
                .filter(own())
                .build(),
        );
    }
    ext = ext.migration("0002_member_grants", grants);
    ext.before_write_in(&["videos"], |write, ctx| {
        if write.kind != EventKind::Delete {
            return Ok(());
        }
        let admin = ctx.as_admin();
        for video in &write.keys {
            let query = Query::new()
                .filter(json!({"video": {"_eq": video}}))
                .limit(-1);
            for bookmark in admin.read_by_query("bookmarks", &query)? {
                if let Some(id) = bookmark["id"].as_str() {
                    admin.delete_one("bookmarks", id)?;
                }
            }
        }
        Ok(())
    })
    .routes(|r| {
        r.get("/bookmarks/mine", |_req, ctx| {
            let query = Query::new().sort(&["-date_created"]).limit(-1);
            Ok(Response::ok(
                &ctx.as_caller().read_by_query("bookmarks", &query)?,
            ))
        })
        .summary("The caller's bookmarks, newest first")
        .authenticated();
        r.post_json("/bookmarks", |new: NewBookmark, _req, ctx| {
            let created = ctx
                .as_caller()
                .create_one("bookmarks", &json!({"video": new.video, "note": new.note}));
            match created {
                Ok(id) => Ok(Response::created(&json!({"id": id}))),
                Err(ItemsError::NotUnique(_)) => Err(ApiError::conflict("Already bookmarked")),
                Err(e) => Err(e.into()),
            }
        })
        .summary("Bookmark a video")
        .authenticated()
        .response(201, "{id} of the new bookmark");
        r.delete("/bookmarks/:id", |req, ctx| {
            // Someone else's bookmark and a missing one answer alike.
            let missing = ApiError::not_found("Bookmark not found");
            ctx.as_caller().delete_one_or(
                "bookmarks",
                req.path_param("id").unwrap_or_default(),
                missing,
            )?;
            Ok(Response::no_content())
        })
        .summary("Delete an own bookmark")
        .authenticated();
    })
}

host_sdk::export_extension!(extension);
