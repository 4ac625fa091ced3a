#!/usr/bin/env bash
# Makes the databases of earlier releases that tests/tests/processes/upgrades.rs opens
# with today's host: tests/fixtures/databases/<commit>/. The suite does not
# run this script; it is how the committed fixtures were made, and how to
# add the fixture of a new release (name its commit).
#
# For each commit, the release's own `example-host` and `svc-extension`
# (debug builds, from `git archive` of the commit, all commits sharing one
# target folder so that each build after the first reuses the
# dependencies) start with `--demo` on a new SQLite file, and, where the
# release runs on PostgreSQL, on a new database of a throwaway cluster.
# The workload of upgrade-workload.py then goes through the release's HTTP
# API, its schedule `recalculate-stats` runs once, and the host stops. Kept:
#   platform.db.gz        the SQLite file (checkpointed, vacuumed, gzipped)
#   postgres.sql.gz       `pg_dump --no-owner --no-privileges --column-inserts`
#                         of the PostgreSQL database (plain SQL, gzipped)
#   workload.json         the credentials the release accepted (the same on
#                         either database)
# The stored bytes of uploads are not kept: the test compares rows.
#
# Usage: scripts/make-upgrade-fixtures.sh [COMMIT...]
#   (default: 1384bd6 5e6ccaf 2f91566)
# Settings: UPGRADE_FIXTURES_WORK (default /tmp/upgrade-fixtures) holds the
# sources, the builds (CARGO_TARGET_DIR there unless set) and the scratch
# databases. PostgreSQL's server binaries come from `pg_config --bindir`;
# as root, the cluster runs as the `postgres` system user.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${UPGRADE_FIXTURES_WORK:-/tmp/upgrade-fixtures}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
out_root="$root/tests/fixtures/databases"
commits=("$@")
[ ${#commits[@]} -gt 0 ] || commits=(1384bd6 5e6ccaf 2f91566)
# The suite's administrator token (tests/src/lib.rs ADMIN_TOKEN): today's
# host starts on a fixture with the token the release was started with.
admin_token="test-admin-token"
mkdir -p "$work"

build() {
    local commit=$1 src="$work/src/$1"
    if [ ! -d "$src" ]; then
        mkdir -p "$src"
        git -C "$root" archive "$commit" | tar -x -C "$src"
        # git archive stamps files with the commit's time; a later stamp
        # keeps cargo from taking another commit's build of the same crate
        # for fresh.
        find "$src" -type f -exec touch {} +
    fi
    (cd "$src" && cargo build -p example-host -p svc-extension)
    mkdir -p "$work/bin/$commit/extensions"
    cp "$CARGO_TARGET_DIR/debug/example-host" "$work/bin/$commit/"
    cp "$CARGO_TARGET_DIR/debug/libsvc_extension.so" "$work/bin/$commit/extensions/"
}

# A throwaway cluster: PG_URL (its administrator's URL, no database).
pg_start() {
    local bin dir owner=()
    bin="$(pg_config --bindir)"
    dir="$work/pg"
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$dir"
        owner=(runuser -u postgres --)
    fi
    "${owner[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >/dev/null
    PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "${owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
        -o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    PG_URL="postgres://postgres@127.0.0.1:$PG_PORT"
    PG_STOP=("${owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast stop)
}

# Starts the release's host on `--db $2` with the demo; HOST_PID, HOST_URL.
host_start() {
    local commit=$1 db=$2 dir=$3
    mkdir -p "$dir/uploads"
    ADMIN_TOKEN="$admin_token" ADMIN_EMAIL=admin@example.com ADMIN_PASSWORD=fixture-admin-password \
        PUBLIC_REGISTRATION=true STORAGE_LOCAL_ROOT="$dir/uploads" LOG_LEVEL=info RUST_LOG=info \
        "$work/bin/$commit/example-host" --db "$db" --extensions "$work/bin/$commit/extensions" \
        --port 0 --demo >"$dir/host.log" 2>&1 &
    HOST_PID=$!
    for _ in $(seq 300); do
        HOST_URL=$(grep -o 'listening on http://[^ ]*' "$dir/host.log" | head -1 | cut -d' ' -f3 || true)
        [ -n "$HOST_URL" ] && return 0
        kill -0 "$HOST_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$dir/host.log" >&2
    echo "the host of $commit did not start" >&2
    exit 1
}

host_stop() {
    kill -TERM "$HOST_PID"
    wait "$HOST_PID" || true
    HOST_PID=""
}

# The workload on one database, then the release's hourly recalculation.
load() {
    local commit=$1 db=$2 dir=$3
    host_start "$commit" "$db" "$dir"
    python3 "$root/scripts/upgrade-workload.py" "$HOST_URL" "$admin_token" "$dir/workload.json"
    host_stop
    ADMIN_TOKEN="$admin_token" "$work/bin/$commit/example-host" --db "$db" \
        --extensions "$work/bin/$commit/extensions" schedule run svc recalculate-stats
}

PG_URL=""
HOST_PID=""
cleanup() {
    [ -z "$HOST_PID" ] || kill -TERM "$HOST_PID" 2>/dev/null || true
    [ -z "$PG_URL" ] || "${PG_STOP[@]}" >/dev/null 2>&1 || true
}
trap cleanup EXIT

for commit in "${commits[@]}"; do
    echo "== $commit"
    build "$commit"
    out="$out_root/$commit"
    scratch="$work/run/$commit"
    rm -rf "$scratch" "$out"
    mkdir -p "$scratch/sqlite" "$out"

    load "$commit" "$scratch/sqlite/platform.db" "$scratch/sqlite"
    python3 - "$scratch/sqlite/platform.db" "$scratch/platform.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
con.execute("VACUUM INTO ?", (sys.argv[2],))
PY
    gzip -9nc "$scratch/platform.db" >"$out/platform.db.gz"
    cp "$scratch/sqlite/workload.json" "$out/workload.json"

    # A release on PostgreSQL names `postgres://` URLs in its README.
    if grep -q 'postgres://' "$work/src/$commit/README.md"; then
        [ -n "$PG_URL" ] || pg_start
        name="fixture_$commit"
        psql -q "$PG_URL/postgres" -c "CREATE DATABASE $name"
        mkdir -p "$scratch/postgres"
        load "$commit" "$PG_URL/$name" "$scratch/postgres"
        # psql's meta-commands (\restrict) are left out: the test loads the
        # dump as plain SQL statements.
        pg_dump --no-owner --no-privileges --column-inserts "$PG_URL/$name" |
            grep -v '^\\' | gzip -9n >"$out/postgres.sql.gz"
    fi
    ls -l "$out"
done
