#!/usr/bin/env bash
# Builds everything and starts the host with the svc extension and demo data
# on http://127.0.0.1:8055 (override with HOST/PORT). Extra arguments go to
# the host. The database lives in ./data; delete it to start afresh. It
# prints the admin app's address (http://127.0.0.1:8055/admin/) and how its
# administrator signs in.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p example-host -p svc-extension
mkdir -p extensions
for lib in target/release/libsvc_extension.so target/release/libsvc_extension.dylib target/release/svc_extension.dll; do
    if [ -f "$lib" ]; then
        cp "$lib" extensions/
    fi
done
exec target/release/example-host --extensions ./extensions --demo "$@"
