//! example-host: a small content platform that loads every extension of its
//! extensions folder and serves them over HTTP, on SQLite or PostgreSQL.
//!
//! The binary (`src/main.rs`) only calls [`run`]. The library exists for
//! [`testkit`]: an extension's own tests run it against this host, in
//! process, on a throwaway database.

mod access;
mod accounts;
mod app;
mod auth;
mod backups;
mod bootstrap;
mod comments;
mod config;
mod credentials;
mod demo;
mod env_settings;
mod extensions;
pub mod files;
mod http;
mod items;
mod logging;
mod mail;
mod memory;
mod migration_plan;
mod migration_rule;
mod permissions;
mod platform;
mod platform_schema;
mod scaffold;
mod schema_model;
mod settings;
mod settings_table;
mod signin;
pub mod testkit;
mod throttle;

pub use app::run;
/// The host's routes, declared once (what the tests check the router and
/// the OpenAPI document against).
pub use http::routes;
