#!/usr/bin/env bash
# Builds the ABI-compatibility fixtures that cannot be workspace members.
#
# `tests/fixtures/sdk-1.0-ext` and `tests/fixtures/layout-mismatch` each carry
# their own package named `host-sdk` (abi_stable checks the package name of
# every type), so each is its own workspace. They are built into
# target/fixtures/debug/. The other fixtures (fixture-ext, no-root-module,
# other-major) are workspace members, built by `cargo build --workspace`
# into target/debug/.
#
# Usage: scripts/build-fixtures.sh   (from any directory)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target_dir="${CARGO_TARGET_DIR:-target}/fixtures"
fixtures=(sdk-1.0-ext layout-mismatch)
case "$(uname -s)" in
    Darwin) ext=dylib ;;
    *) ext=so ;;
esac
libs=("libsdk_1_0_ext.$ext" "liblayout_mismatch.$ext")

for fixture in "${fixtures[@]}"; do
    echo "building tests/fixtures/$fixture" >&2
    cargo build --manifest-path "tests/fixtures/$fixture/Cargo.toml" --target-dir "$target_dir"
done

for lib in "${libs[@]}"; do
    case "$target_dir" in /*) path="$target_dir/debug/$lib" ;; *) path="$root/$target_dir/debug/$lib" ;; esac
    if [[ ! -f "$path" ]]; then
        echo "error: expected $path after the build" >&2
        exit 1
    fi
    echo "$path"
done
