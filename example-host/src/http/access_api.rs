//! `/permissions/me`, `/policies/me/globals` and `/roles/me`: what the
//! caller may do, as Directus 11 answers (`crate::access`). The rest of
//! `/roles`, `/policies` and `/permissions` is `collection_api`'s.

use axum::response::Response;

use super::as_caller::AsCaller;
use super::items_api::{data, data_text};
use super::HttpError;

/// `GET /permissions/me` (the SDK's `readUserPermissions`).
pub async fn permissions_me(call: AsCaller) -> Result<Response, HttpError> {
    call.run(|c| Ok(data(crate::access::collection_access(c.platform, &c.who)?)))
        .await
}

/// `GET /policies/me/globals` (the SDK's `readPolicyGlobals`).
pub async fn policy_globals(call: AsCaller) -> Result<Response, HttpError> {
    call.run(|c| Ok(data(crate::access::policy_globals(c.platform, &c.who)?)))
        .await
}

/// `GET /roles/me` (the SDK's `readRolesMe`).
pub async fn roles_me(call: AsCaller) -> Result<Response, HttpError> {
    call.run(|c| {
        let q = c.query()?;
        Ok(data_text(&crate::access::read_own_roles(
            c.platform, &c.who, q,
        )?))
    })
    .await
}
