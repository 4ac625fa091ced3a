//! Backups (docs/operations.md "Backups"): `example-host backup --to`
//! copies a SQLite database while a host serves writes, and `restore
//! --from` brings it back: every write acknowledged before the backup
//! began is in the restored database, none sent after it finished is, the
//! file is sound, and sign-in works on it. A restore that cannot be right
//! (garbage, a newer release's backup, a database in place without
//! `--force`, a host serving the target) is refused and leaves the target
//! as it was. On PostgreSQL both commands refuse, naming `pg_dump` and
//! `pg_restore`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use platform_tests::{
    create_recordings_until, run_host, user_email, Backend, Database, Host, HostOptions,
};
use serde_json::json;

const WRITERS: usize = 3;
/// Acknowledged creates to wait for before the backup starts, and after
/// it ends before the load stops.
const ACKS_AROUND: u64 = 30;
const PASSWORD: &str = "backup-pass-1234";

fn wait_for(acked: &AtomicU64, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.load(Ordering::Relaxed) < at_least {
        assert!(Instant::now() < deadline, "the write load stalled");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The restore `args` into the folder `dir` fails, saying `says`, and
/// leaves `db` byte for byte as it was.
fn assert_restore_refused(dir: &Path, db: &Path, args: &[&str], says: &str) {
    let before = std::fs::read(db).expect("the database is there");
    let (out, text) = run_host(dir, args);
    assert!(
        !out.status.success(),
        "restore {args:?} was not refused: {text}"
    );
    assert!(text.contains(says), "restore {args:?}: {text}");
    assert!(
        std::fs::read(db).expect("the database is still there") == before,
        "a refused restore {args:?} changed the database"
    );
}

#[test]
fn a_backup_under_write_load_restores_every_write_acknowledged_before_it() {
    let host = Host::start(HostOptions::svc());
    let work = tempfile::tempdir().expect("temp dir");
    let backup = work.path().join("platform-backup.db");
    let backup_arg = backup.to_string_lossy().into_owned();
    if host.backend() == Backend::Postgres {
        let (out, text) = run_host(host.data_dir(), &["backup", "--to", &backup_arg]);
        assert!(!out.status.success() && text.contains("pg_dump"), "{text}");
        let (out, text) = run_host(host.data_dir(), &["restore", "--from", &backup_arg]);
        assert!(
            !out.status.success() && text.contains("pg_restore"),
            "{text}"
        );
        assert!(!backup.exists());
        host.assert_serving();
        return;
    }
    host.user_with(
        Some("Viewer"),
        "backup-signin",
        &json!({ "password": PASSWORD }),
    );
    let tokens: Vec<String> = (0..WRITERS).map(|i| format!("backup-w{i}")).collect();
    host.users(Some("Viewer"), &tokens);

    let (stop, acked) = (AtomicBool::new(false), AtomicU64::new(0));
    let (writes, (began, ended, text)) = std::thread::scope(|scope| {
        let load = scope.spawn(|| create_recordings_until(&host, &tokens, &stop, &acked));
        wait_for(&acked, ACKS_AROUND);
        let began = Instant::now();
        // Small steps: the copy spans many commits of the load.
        let (out, text) = run_host(
            host.data_dir(),
            &["backup", "--to", &backup_arg, "--step-pages", "8"],
        );
        let ended = Instant::now();
        wait_for(&acked, acked.load(Ordering::Relaxed) + ACKS_AROUND);
        stop.store(true, Ordering::Relaxed);
        let writes = load.join().expect("the load ran");
        assert!(out.status.success(), "backup: {text}");
        (writes, (began, ended, text))
    });
    let before: BTreeSet<&str> = writes
        .iter()
        .filter(|w| w.acked < began)
        .map(|w| w.id.as_str())
        .collect();
    let after: BTreeSet<&str> = writes
        .iter()
        .filter(|w| w.sent > ended)
        .map(|w| w.id.as_str())
        .collect();
    assert!(!before.is_empty() && !after.is_empty());
    let size = std::fs::metadata(&backup).expect("the backup").len();
    println!(
        "backup: {} ms, {size} bytes, {} creates acknowledged before it began, {} during it, {} sent after it; {}",
        (ended - began).as_millis(),
        before.len(),
        writes.len() - before.len() - after.len(),
        after.len(),
        text.lines()
            .find(|l| l.contains("backup written"))
            .unwrap_or_default()
    );
    let old = host.stop();

    // Restored into a fresh folder.
    let fresh = tempfile::tempdir().expect("temp dir");
    let restored = Database::of_data_dir(fresh.path());
    let Database::Sqlite(db) = &restored else {
        unreachable!("a SQLite folder")
    };
    let (out, text) = run_host(fresh.path(), &["restore", "--from", &backup_arg]);
    assert!(out.status.success(), "restore: {text}");
    assert_eq!(restored.integrity_check(), "ok");

    // What cannot be right is refused, and the database stays as it was.
    assert_restore_refused(
        fresh.path(),
        db,
        &["restore", "--from", &backup_arg],
        "pass --force",
    );
    let garbage = work.path().join("garbage.db");
    std::fs::write(
        &garbage,
        b"not a database, though long enough to look like one".repeat(100),
    )
    .expect("write");
    assert_restore_refused(
        fresh.path(),
        db,
        &["restore", "--force", "--from", &garbage.to_string_lossy()],
        "is not a database of this platform",
    );
    let newer = work.path().join("newer.db");
    std::fs::copy(&backup, &newer).expect("copy");
    Database::Sqlite(newer.clone()).sql(
        "INSERT INTO \"platform_migrations\" (\"owner\", \"id\", \"applied_at\") \
         VALUES ('platform', '9999_from_the_future', '2100-01-01T00:00:00Z')",
    );
    assert_restore_refused(
        fresh.path(),
        db,
        &["restore", "--force", "--from", &newer.to_string_lossy()],
        "newer release",
    );

    let mut opts = HostOptions::svc();
    opts.data_dir = Some(fresh);
    let host = Host::start(opts);
    assert_restore_refused(
        host.data_dir(),
        db,
        &["restore", "--force", "--from", &backup_arg],
        "is in use",
    );
    let stored: BTreeSet<String> = host
        .sql_query("SELECT \"id\" FROM \"recordings\"")
        .into_iter()
        .filter_map(|row| row.into_iter().next().flatten())
        .collect();
    let lost: Vec<&&str> = before.iter().filter(|id| !stored.contains(**id)).collect();
    assert!(
        lost.is_empty(),
        "acknowledged before the backup, not restored: {lost:?}"
    );
    let later: Vec<&&str> = after.iter().filter(|id| stored.contains(**id)).collect();
    assert!(
        later.is_empty(),
        "sent after the backup, yet in it: {later:?}"
    );
    host.session_cookie(&user_email("backup-signin"), PASSWORD);
    host.assert_serving();
    drop(old);
}
