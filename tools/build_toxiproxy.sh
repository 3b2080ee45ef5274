#!/usr/bin/env bash
# Makes sure a toxiproxy-server binary exists for hdfs-chaos and prints its path.
# Looks at $TOXIPROXY_SERVER, toxiproxy-server on PATH, tools/bin/toxiproxy-server;
# otherwise builds Shopify's server into tools/bin/ with `go install` (needs Go >= 1.23).
# Same order and version as faults/toxiproxy_server.py, which builds on first use too;
# this script needs nothing but bash and Go, so setup can run it before pip install.
set -euo pipefail
MODULE=github.com/Shopify/toxiproxy/v2/cmd/server
VERSION=v2.12.0   # keep equal to TOXIPROXY_VERSION in faults/toxiproxy_server.py
BIN_DIR="$(cd "$(dirname "$0")" && pwd)/bin"
TARGET="$BIN_DIR/toxiproxy-server"

if [[ -n "${TOXIPROXY_SERVER:-}" ]]; then
  [[ -x "$TOXIPROXY_SERVER" ]] || { echo "error: TOXIPROXY_SERVER=$TOXIPROXY_SERVER is not executable" >&2; exit 1; }
  echo "$TOXIPROXY_SERVER"; exit 0
fi
if command -v toxiproxy-server >/dev/null 2>&1; then command -v toxiproxy-server; exit 0; fi
if [[ -x "$TARGET" ]]; then echo "$TARGET"; exit 0; fi
if ! command -v go >/dev/null 2>&1; then
  echo "error: toxiproxy-server is not on PATH and Go is not installed to build it: install Go >= 1.23 (or put toxiproxy-server on PATH) and rerun $0" >&2
  exit 1
fi
mkdir -p "$BIN_DIR"
exec 9>"$BIN_DIR/.toxiproxy-build.lock"
flock 9                      # one build at a time (parallel setups, test workers)
if [[ -x "$TARGET" ]]; then echo "$TARGET"; exit 0; fi
GOBIN_TMP="$(mktemp -d "$BIN_DIR/.gobin-XXXXXX")"
trap 'rm -rf "$GOBIN_TMP"' EXIT
if ! GOBIN="$GOBIN_TMP" GOTOOLCHAIN=local go install "$MODULE@$VERSION" >"$GOBIN_TMP/build.log" 2>&1; then
  echo "error: go install $MODULE@$VERSION failed: $(tail -n 3 "$GOBIN_TMP/build.log" | tr '\n' ' ')" >&2
  exit 1
fi
mv "$GOBIN_TMP/server" "$TARGET"   # same folder: an atomic rename, never a half binary
echo "$TARGET"
