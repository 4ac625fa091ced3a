//! The extension of docs/extensions.md, compiled by the
//! workspace so that the document stays true.

use host_sdk::prelude::*;
use host_sdk::schema::{Collection, Field, Grant};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What `POST /hello/notes` takes.
#[derive(Deserialize, JsonSchema)]
struct NewNote {
    /// The note's text; not empty.
    body: String,
}

/// The extension: what the library exports, and what its tests mount.
pub fn extension() -> Extension {
    Extension::new("hello", "Hello", env!("CARGO_PKG_VERSION"))
        .migration(
            "0001_notes",
            vec![Collection::new("notes")
                .field(Field::text("body"))
                .field(Field::timestamp("date_created"))
                .field(Field::uuid("user_created"))
                .build()],
        )
        // Viewers read and write their own notes (the platform fills
        // `user_created` with the caller).
        .migration(
            "0002_grants",
            vec![
                Grant::new("Viewer", "notes", "read")
                    .filter(json!({"user_created": {"_eq": "$CURRENT_USER"}}))
                    .build(),
                Grant::new("Viewer", "notes", "create")
                    .fields(&["body"])
                    .build(),
            ],
        )
        .routes(|r| {
            // GET /hello/notes/:id — read as the caller: permissions apply.
            // Someone else's note and a missing one answer alike, so ids
            // cannot be probed.
            r.get("/notes/:id", |req, ctx| {
                let note = ctx.as_caller().read_one_or(
                    "notes",
                    req.path_param("id").unwrap_or_default(),
                    ApiError::not_found("Note not found"),
                )?;
                Ok(Response::ok(&note))
            })
            .summary("One note");
            // POST /hello/notes — signed-in callers only (401 otherwise);
            // two writes, atomically (run again from the start if the
            // database asks: a conflict with another host).
            // The body is read into `NewNote` before the handler runs (400
            // "Invalid JSON body", serde's reason in `details`, otherwise)
            // and documented as `NewNote` in the OpenAPI document.
            r.post_json("/notes", |note: NewNote, _req, ctx| {
                let id = ctx.transaction(|tx| {
                    let id = tx
                        .as_admin()
                        .create_one("notes", &json!({"body": note.body}))?;
                    tx.as_admin()
                        .create_one("notes", &json!({"body": "audit"}))?;
                    Ok::<_, ApiError>(id)
                })?;
                log::info!("note {id} created"); // appears in the host's log, target `hello`
                Ok(Response::created(&json!({"id": id})))
            })
            .authenticated()
            .response(201, "{id} of the new note");
        })
        // Inside the writing transaction: refuse, or write with the write.
        .before_commit_in(&["notes"], |event, _tx| {
            let empty = event.after.iter().any(|n| n["body"] == json!(""));
            if empty {
                return Err(ApiError::bad_request("A note needs a body").into());
            }
            Ok(())
        })
        // After the commit: react to what is done.
        .after_commit_in(Collections::All, |event, _ctx| {
            log::debug!("{:?} on {}", event.kind, event.collection);
            Ok(())
        })
        .schedule(
            "cleanup",
            Schedule::Every(std::time::Duration::from_secs(3600)),
            |_ctx| Ok(()),
        )
}

host_sdk::export_extension!(extension);
