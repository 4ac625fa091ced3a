#!/usr/bin/env bash
# Builds the ABI-compatibility fixtures that cannot be workspace members.
#
# Each of these carries its own package named `host-sdk` (abi_stable checks
# the package name of every type), so each is its own workspace with its
# own Cargo.lock:
#   sdk-1.0-ext      host-sdk 1.0.0, on the frozen tests/fixtures/frozen-abi/v1_0
#   sdk-1.7-ext      host-sdk 1.7.0, on the frozen tests/fixtures/frozen-abi/v1_7
#   sdk-1.7-members  host-sdk 1.7.0 too: relies on the members' rules a 1.7 host seeded
#   sdk-newer-minor  host-sdk 1.99.0, a minor newer than the host's
#   layout-mismatch  host-sdk 1.1.0 with a different root module layout
# They are built into target/fixtures/debug/. The other fixtures
# (fixture-ext, no-root-module, other-major) are workspace members, built by
# `cargo build --workspace` into target/debug/.
#
# Usage: scripts/build-fixtures.sh   (from any directory)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target_dir="${CARGO_TARGET_DIR:-target}/fixtures"
fixtures=(sdk-1.0-ext sdk-1.7-ext sdk-1.7-members sdk-newer-minor layout-mismatch)
case "$(uname -s)" in
    Darwin) ext=dylib ;;
    *) ext=so ;;
esac
libs=("libsdk_1_0_ext.$ext" "libsdk_1_7_ext.$ext" "libsdk_1_7_members.$ext" "libsdk_newer_minor.$ext" "liblayout_mismatch.$ext")

for fixture in "${fixtures[@]}"; do
    echo "building tests/fixtures/$fixture" >&2
    cargo build --locked --manifest-path "tests/fixtures/$fixture/Cargo.toml" --target-dir "$target_dir"
done

for lib in "${libs[@]}"; do
    case "$target_dir" in /*) path="$target_dir/debug/$lib" ;; *) path="$root/$target_dir/debug/$lib" ;; esac
    if [[ ! -f "$path" ]]; then
        echo "error: expected $path after the build" >&2
        exit 1
    fi
    echo "$path"
done
