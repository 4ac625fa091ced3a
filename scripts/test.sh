#!/usr/bin/env bash
# Runs the whole test suite: builds the host, the extensions and the ABI
# fixtures (the integration tests start real host processes), then tests.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> building the workspace (host, extensions, fixtures)"
cargo build --workspace
echo "==> building the host with the svc extension linked in (feature inprocess)"
cargo build -p example-host --features inprocess --target-dir target/inprocess
echo "==> building the standalone ABI fixtures"
bash scripts/build-fixtures.sh
echo "==> running the tests"
cargo test --workspace --no-fail-fast "$@"
