#!/usr/bin/env bash
# Builds the release host, the svc extension and the benchmark driver, then
# runs a benchmark and prints its figures. Usage:
#   scripts/bench.sh gamification [--points 100000] [--users 100000] [--requests 300]
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p example-host -p svc-extension -p platform-bench
exec target/release/platform-bench "$@"
