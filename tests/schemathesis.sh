#!/usr/bin/env bash
# Runs schemathesis (https://schemathesis.readthedocs.io, from PyPI) against
# the platform's OpenAPI document, `GET /server/specs/oas`.
#
# Not part of `scripts/test.sh`: it needs Python 3 and network access to PyPI
# on its first run. Usage, from anywhere in the repository:
#
#     tests/schemathesis.sh
#
# What it does:
#   1. creates a Python venv under target/schemathesis-venv (once) and
#      installs schemathesis 4.x into it;
#   2. builds the workspace (debug) and starts example-host with the svc
#      extension and the demo data on a free port, in a temporary folder
#      under target/;
#   3. gives schemathesis real ids of the demo data for the path parameters
#      (video, recording, plays, model and video slugs, a user), so the
#      operations reach their logic instead of answering 404;
#   4. runs every documented operation with the checks `not_a_server_error`
#      and `response_schema_conformance`, authenticated as the administrator
#      (`ST_TOKEN` to use another token, e.g. demo-viewer-token);
#   5. stops the host and prints the number of generated cases, failures and
#      schema errors.
#
# Exit status: 0 when schemathesis found no failure and no schema error,
# except the 500s docs/service-api.md itself mandates (PATCH
# /svc/recordings/:id: "a missing record or any failure gives 500"), which are
# listed but do not count; 1 otherwise; 2 when the set-up failed.
#
# Knobs (environment): ST_MAX_EXAMPLES (cases per operation and phase,
# default 25), ST_SEED (default 1; "random" for a fresh seed), ST_TOKEN,
# ST_KEEP=1 to keep the temporary folder (reports, host log).

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/schemathesis-venv"
MAX_EXAMPLES="${ST_MAX_EXAMPLES:-25}"
SEED="${ST_SEED:-1}"
ADMIN_TOKEN_VALUE="schemathesis-admin-token"
TOKEN="${ST_TOKEN:-$ADMIN_TOKEN_VALUE}"

die() {
    echo "schemathesis.sh: $*" >&2
    exit 2
}

# ---- 1. schemathesis in a venv
if [ ! -x "$VENV/bin/st" ]; then
    echo "==> creating $VENV and installing schemathesis from PyPI"
    python3 -m venv "$VENV" || die "python3 -m venv failed"
    "$VENV/bin/pip" install --quiet --upgrade pip || die "pip upgrade failed"
    "$VENV/bin/pip" install --quiet 'schemathesis>=4,<5' || die "installing schemathesis failed"
fi
echo "==> $("$VENV/bin/st" --version)"

# ---- 2. build and start the host with demo data
echo "==> building the workspace"
cargo build --workspace --quiet || die "cargo build failed"
HOST_BIN="$TARGET/debug/example-host"
LIB="$TARGET/debug/libsvc_extension.so"
[ -x "$HOST_BIN" ] && [ -f "$LIB" ] || die "missing $HOST_BIN or $LIB"

WORK="$(mktemp -d "$TARGET/schemathesis-run.XXXXXX")"
mkdir -p "$WORK/extensions" "$WORK/report"
cp "$LIB" "$WORK/extensions/"
HOST_PID=""
cleanup() {
    if [ -n "$HOST_PID" ] && kill -0 "$HOST_PID" 2>/dev/null; then
        kill "$HOST_PID" 2>/dev/null || true
        wait "$HOST_PID" 2>/dev/null || true
    fi
    if [ "${ST_KEEP:-0}" != "1" ]; then
        rm -rf "$WORK"
    else
        echo "==> kept $WORK"
    fi
}
trap cleanup EXIT

ADMIN_TOKEN="$ADMIN_TOKEN_VALUE" LOG_LEVEL=info RUST_LOG= \
    "$HOST_BIN" --db "$WORK/data/platform.db" --extensions "$WORK/extensions" \
    --port 0 --demo >"$WORK/host.out" 2>"$WORK/host.log" &
HOST_PID=$!
BASE=""
for _ in $(seq 1 300); do
    BASE="$(grep -o 'listening on http://[0-9.:]*' "$WORK/host.log" 2>/dev/null | head -n1 | sed 's/listening on //')" || true
    [ -n "$BASE" ] && break
    kill -0 "$HOST_PID" 2>/dev/null || { cat "$WORK/host.log" >&2; die "the host exited"; }
    sleep 0.1
done
# Should the log line change: fall back to the port the kernel gave.
if [ -z "$BASE" ]; then
    PORT="$(ss -ltnp 2>/dev/null | grep "pid=$HOST_PID," | grep -o '127.0.0.1:[0-9]*' | head -n1 | cut -d: -f2)" || true
    [ -n "${PORT:-}" ] && BASE="http://127.0.0.1:$PORT"
fi
[ -n "$BASE" ] || die "the host did not start listening"
echo "==> host at $BASE (pid $HOST_PID)"

# ---- 3. ids of the demo data for path parameters
VIDEO="00000000-0000-4000-a000-000000000001"
RECORDING="00000000-0000-4000-b000-000000000001"
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
VIDEO_PLAY="$(curl -sf -X POST -H 'Content-Type: application/json' -d '{}' "$BASE/svc/videos/$VIDEO/play" | json_field '["play_id"]')" || die "no video play"
RECORDING_PLAY="$(curl -sf -X POST "$BASE/svc/recordings/$RECORDING/play" | json_field '["play_id"]')" || die "no recording play"
USER_ID="$(curl -sf "$BASE/svc/gamification/leaderboard?limit=1" | json_field '["data"][0]["user_id"]')" || die "no user"
cat >"$WORK/schemathesis.toml" <<EOF
[[operations]]
include-path-regex = '^/svc/videos/\{id\}/play/\{playId\}$'
parameters = { "path.id" = "$VIDEO", "path.playId" = "$VIDEO_PLAY" }

[[operations]]
include-path-regex = '^/svc/recordings/\{id\}/play/\{playId\}$'
parameters = { "path.id" = "$RECORDING", "path.playId" = "$RECORDING_PLAY" }

[[operations]]
include-path-regex = '^/svc/videos/\{id\}(/like|/like-status|/play)$'
parameters = { "path.id" = "$VIDEO" }

[[operations]]
include-path-regex = '^/svc/videos/\{slug\}$'
parameters = { "path.slug" = "sunset-session" }

[[operations]]
include-path-regex = '^/svc/models/\{slug\}$'
parameters = { "path.slug" = "aria-vale" }

[[operations]]
include-path-regex = '^/svc/recordings/\{id\}(/duplicate|/play)?$'
parameters = { "path.id" = "$RECORDING" }

[[operations]]
include-path-regex = '^/svc/gamification/user/\{id\}$'
parameters = { "path.id" = "$USER_ID" }

[[operations]]
include-path-regex = '^/items/'
parameters = { "path.collection" = "videos", "path.id" = "$VIDEO" }
EOF

# ---- 4. run
SEED_ARGS=(--seed "$SEED")
[ "$SEED" = "random" ] && SEED_ARGS=()
echo "==> schemathesis: $MAX_EXAMPLES examples per operation, checks not_a_server_error,response_schema_conformance"
set +e
"$VENV/bin/st" --config-file "$WORK/schemathesis.toml" run "$BASE/server/specs/oas" \
    --checks not_a_server_error,response_schema_conformance \
    -H "Authorization: Bearer $TOKEN" \
    --max-examples "$MAX_EXAMPLES" --workers 1 --request-timeout 30 \
    "${SEED_ARGS[@]}" \
    --report junit,json --report-dir "$WORK/report" \
    >"$WORK/schemathesis.out" 2>&1
ST_STATUS=$?
set -e
sed -n '/= FAILURES =/,$p;/= ERRORS =/,/= FAILURES =/p' "$WORK/schemathesis.out" | head -n 200
kill -0 "$HOST_PID" 2>/dev/null || { echo "the host died during the run" >&2; tail -n 50 "$WORK/host.log" >&2; exit 1; }

# ---- 5. figures
python3 - "$WORK/report" "$ST_STATUS" <<'PY'
import glob, json, sys
import xml.etree.ElementTree as ET

report, st_status = sys.argv[1], int(sys.argv[2])
# 500s docs/service-api.md mandates: "PATCH /recordings/:id ... A missing record
# or any failure gives 500."
MANDATED = {"PATCH /svc/recordings/{id}"}
summary = json.load(open(glob.glob(f"{report}/json*.json")[0]))
cases = summary["test_cases"]["generated"]
failures, mandated, errors = [], [], []
for tc in ET.parse(glob.glob(f"{report}/junit*.xml")[0]).getroot().iter("testcase"):
    op = tc.get("name")
    for child in tc:
        text = " ".join(((child.get("message") or "") + " " + (child.text or "")).split())
        if child.tag == "failure":
            if op in MANDATED and "Server error" in text and "Response violates schema" not in text:
                mandated.append((op, text))
            else:
                failures.append((op, text))
        elif child.tag == "error":
            errors.append((op, text))
errors = sorted(set(errors))
print(f"schemathesis: {cases} generated cases over {summary['operations']['tested']} operations, "
      f"{len(failures)} failures, {len(mandated)} mandated 500s of docs/service-api.md (not counted), "
      f"{len(errors)} errors (schemathesis exit {st_status})")
for op, text in failures:
    print(f"  FAILURE {op}: {text[:400]}")
for op, text in mandated:
    print(f"  mandated {op}: {text[:200]}")
for op, text in errors:
    print(f"  ERROR {op}: {text[:300]}")
sys.exit(1 if failures or errors else 0)
PY
