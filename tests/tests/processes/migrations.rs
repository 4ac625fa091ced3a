//! What operators see of migrations (docs/operations.md "Upgrading"):
//! `migrate status` lists every migration owner by owner, `migrate
//! --dry-run` prints what would run and writes nothing, `migrate` applies
//! them, and a database migrated by a newer release is refused before
//! anything is written: the platform's at start, an extension's at its
//! load. Every test runs on the suite's backend (`TEST_DB`).

use std::path::Path;

use platform_tests::database::Database;
use platform_tests::{run_host as run, Host, HostOptions};

/// Forgets that svc's last migration ran, as on a database of the release
/// before it.
fn forget_last_svc_migration(dir: &Path) {
    let forgotten = Database::of_data_dir(dir).sql(
        "DELETE FROM \"platform_migrations\" WHERE \"owner\" = 'svc' AND \"id\" = '0011_member_recordings_narrowed'",
    );
    assert_eq!(forgotten, 1);
}

#[test]
fn status_dry_run_and_migrate_say_and_do_what_a_start_would() {
    let host = Host::start(HostOptions::svc());
    let dir = host.stop();
    let (out, text) = run(dir.path(), &["migrate", "status"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("0 pending migration(s)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("platform") && l.contains("applied") && l.contains("0001_core")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("svc")
            && l.contains("applied")
            && l.contains("0009_member_grants")),
        "{text}"
    );

    forget_last_svc_migration(dir.path());
    let (out, text) = run(dir.path(), &["migrate", "--dry-run"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 pending migration(s)"), "{text}");
    assert!(
        text.contains("would apply svc/0011_member_recordings_narrowed:")
            && text.contains("\"op\":\"change_grant\""),
        "{text}"
    );
    // The dry run wrote nothing.
    let (_, text) = run(dir.path(), &["migrate", "status"]);
    assert!(text.contains("1 pending migration(s)"), "{text}");

    let (out, text) = run(dir.path(), &["migrate"]);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[svc] applied migration 0011_member_recordings_narrowed"),
        "{text}"
    );
    let (_, text) = run(dir.path(), &["migrate", "status"]);
    assert!(text.contains("0 pending migration(s)"), "{text}");
}

#[test]
fn a_database_a_newer_release_migrated_is_refused_before_anything_is_written() {
    let host = Host::start(HostOptions::svc());
    let dir = host.stop();
    let db = Database::of_data_dir(dir.path());
    let count = |db: &Database| {
        db.sql_query("SELECT COUNT(*) FROM \"platform_migrations\"")[0][0]
            .clone()
            .unwrap_or_default()
    };
    db.sql(
        "INSERT INTO \"platform_migrations\" (\"owner\", \"id\", \"applied_at\") \
         VALUES ('platform', '9999_from_a_newer_release', '2030-01-01T00:00:00.000Z')",
    );
    forget_last_svc_migration(dir.path());
    let before = count(&db);
    let (out, text) = run(dir.path(), &["migrate"]);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("migrated by a newer release of `platform`")
            && text.contains("9999_from_a_newer_release"),
        "{text}"
    );
    assert_eq!(count(&db), before, "nothing was written");
    let (out, text) = run(dir.path(), &["migrate", "status"]);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("unknown (newer release) 9999_from_a_newer_release"),
        "{text}"
    );

    // An extension's newer migrations refuse that extension, and the
    // platform's own were those of this release.
    db.sql(
        "DELETE FROM \"platform_migrations\" WHERE \"id\" = '9999_from_a_newer_release'; \
         INSERT INTO \"platform_migrations\" (\"owner\", \"id\", \"applied_at\") \
         VALUES ('svc', '9999_from_a_newer_svc', '2030-01-01T00:00:00.000Z')",
    );
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    assert!(
        host.log().contains("migrated by a newer release of `svc`"),
        "{}",
        host.log()
    );
    assert_eq!(host.get("/svc/stats", None).status, 404);
    assert_eq!(host.get("/server/ping", None).status, 200);
}
