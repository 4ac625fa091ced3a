//! Demo content.

pub const ADMIN_TOKEN: &str = "demo-admin-token";

pub fn seed(_p: &crate::items::Platform, _a: &crate::config::ServeArgs) -> Result<(), String> { Ok(()) }
