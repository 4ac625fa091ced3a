//! # svc-extension
//!
//! The content, interaction and recording service of SPEC.md, as a platform
//! extension mounted at `/svc`. It never opens the database: its collections
//! ship as migrations ([`schema`]) and every read and write goes through the
//! item services the host hands each handler.
//!
//! * [`achievements`]: the seeded achievements, as data.
//! * [`schema`]: the migrations creating and seeding the collections.
//! * [`stats`]: `GET /stats`.

pub mod achievements;
pub mod schema;
pub mod stats;

use host_sdk::Extension;

/// The extension's id: its mount point (`/svc`) and log target.
pub const ID: &str = "svc";

/// Builds the extension: migrations and routes.
pub fn extension() -> Extension {
    let mut ext = Extension::new(
        ID,
        "Content, interaction and recording service",
        env!("CARGO_PKG_VERSION"),
    );
    for (id, steps) in schema::migrations() {
        ext = ext.migration(id, steps);
    }
    ext.routes(|r| {
        r.get("/stats", stats::handler).summary("Site-wide counts");
    })
}

host_sdk::export_extension!(extension);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity() {
        let ext = extension();
        assert_eq!(ext.id(), "svc");
    }

    #[test]
    fn registers_both_migrations_in_order() {
        let ext = extension();
        let ids: Vec<&str> = ext.migrations().iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["0001_collections", "0002_seed_achievements"]);
        assert_eq!(ext.migrations()[0].1.len(), 12);
        assert_eq!(ext.migrations()[1].1.len(), 1);
    }

    #[test]
    fn registers_the_stats_route() {
        let paths = extension().router().openapi_paths();
        assert_eq!(paths["/stats"]["get"]["summary"], "Site-wide counts");
        assert_eq!(paths.as_object().map(|p| p.len()), Some(1));
    }
}
