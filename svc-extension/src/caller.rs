//! Who is calling, for the endpoints that need someone.

use host_sdk::{ApiError, Context};

/// The caller's user id, or 401 `Unauthorized`.
pub fn require_user<'c>(ctx: &'c Context<'_>) -> Result<&'c str, ApiError> {
    ctx.user_id()
        .ok_or_else(|| ApiError::unauthorized("Unauthorized"))
}
