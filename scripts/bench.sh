#!/usr/bin/env bash
# Builds the release host, the svc extension and the benchmark driver (and,
# with --inprocess, the host with svc linked in, example-host-inprocess), then
# runs a benchmark and prints its figures. Usage:
#   scripts/bench.sh [--inprocess] load [--scale 1] [--seed 42] [--duration-secs 5] [--smoke]
#   scripts/bench.sh gamification [--points 100000] [--users 100000] [--requests 300]
#   scripts/bench.sh recording-create [--prior 20000] [--events 1000] [--requests 200]
#   scripts/bench.sh memory
#   scripts/bench.sh assets [--duration-secs 5]
#   scripts/bench.sh compare [--duration-secs 10] [--only ID,..] [--keep]
#   scripts/bench.sh sign-in [--attempts 20] [--duration-secs 5] [--flood 32]
#   scripts/bench.sh peers [--duration-secs 5] [--only ID,..] [--cold-starts 5] [--smoke] [--keep] [--db both] [--scale large]
#   scripts/bench.sh several-hosts [--duration-secs 10] [--concurrency 16] --db postgres
# Each takes --db sqlite|postgres|postgres://... (the database of the hosts);
# peers also --db both (a column for each).
# See docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."

inprocess=0
if [[ "${1:-}" == "--inprocess" ]]; then
  inprocess=1
  shift
fi

target="${CARGO_TARGET_DIR:-target}"
echo "==> building the release host, svc extension and benchmark driver" >&2
cargo build --release -p example-host -p svc-extension -p platform-bench
if [[ "$inprocess" == 1 ]]; then
  echo "==> building the in-process host (svc linked in): example-host-inprocess" >&2
  cargo build --release -p example-host --features inprocess --bin example-host-inprocess
fi
export PLATFORM_PROFILE="${PLATFORM_PROFILE:-release}"
exec "$target/release/platform-bench" "$@"
