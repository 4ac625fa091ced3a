#!/usr/bin/env bash
# Runs the whole test suite: builds the host, the extensions and the ABI
# fixtures (the integration tests start real host processes), then tests:
# the workspace with every host on SQLite, then the integration tests again
# with every host on PostgreSQL (a throwaway server per test process, from
# the binaries `pg_config --bindir` names, or the server of
# TEST_DATABASE_URL). Arguments go to both `cargo test` runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The PostgreSQL pass needs the server binaries or TEST_DATABASE_URL; says
# how to get them and fails otherwise.
require_postgres() {
    if [ -z "${TEST_DATABASE_URL:-}" ]; then
        pg_bin="$(pg_config --bindir 2>/dev/null || true)"
        if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ] || [ ! -x "$pg_bin/postgres" ]; then
            echo "PostgreSQL's server binaries (initdb, postgres) were not found: the suite runs on" >&2
            echo "PostgreSQL too. Install them (Debian/Ubuntu: apt-get install postgresql-15; they" >&2
            echo "are then in the folder \`pg_config --bindir\` prints), or set TEST_DATABASE_URL to" >&2
            echo "a postgres://user:password@host:port/database URL of a server where that user" >&2
            echo "may create databases." >&2
            exit 1
        fi
    fi
}

echo "==> building the workspace (host, extensions, fixtures)"
cargo build --workspace
echo "==> building the host with the svc extension linked in (feature inprocess)"
cargo build -p example-host --features inprocess --target-dir target/inprocess
echo "==> building the standalone ABI fixtures"
bash scripts/build-fixtures.sh

status=0
echo "==> running the tests on SQLite (TEST_DB=sqlite)"
TEST_DB=sqlite cargo test --workspace --no-fail-fast "$@" || status=$?
echo "==> running the integration tests on PostgreSQL (TEST_DB=postgres)"
require_postgres
TEST_DB=postgres cargo test -p platform-tests --no-fail-fast "$@" || status=$?
exit "$status"
