#!/usr/bin/env bash
# Sets up everything hdfs-chaos needs on this machine, idempotently:
#   - Java 17, a runtime for PySpark, from Debian's packages when missing, as root,
#   - a Python virtualenv in .venv with hdfs-chaos installed (editable) and its test tools,
#   - Shopify's toxiproxy-server (built with `go install` into tools/bin/),
#   - with --docker: a Docker engine and mmdebstrap (tools/setup_docker.sh), then the
#     cluster and Toxiproxy images (skipped when an image of the same sources exists).
# Each missing piece that cannot be installed here is named in one line, with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
want_docker=0
for arg in "$@"; do
  case "$arg" in
    --docker) want_docker=1 ;;
    *) echo "setup: unknown option $arg (use --docker)" >&2; exit 2 ;;
  esac
done
say() { echo "setup: $*" >&2; }
fail() { echo "setup: error: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }

# -- Java, for PySpark: a Java 17 runtime (the verifier compiles nothing) ---------------
if ! command -v java >/dev/null 2>&1; then
  if is_root && command -v apt-get >/dev/null 2>&1; then
    say "installing Java 17 (openjdk-17-jre-headless) for PySpark"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jre-headless >/dev/null \
      || fail "apt-get install openjdk-17-jre-headless failed, and PySpark needs Java"
  else
    fail "Java is missing and PySpark needs it: install a Java 17 runtime (e.g. sudo apt-get install openjdk-17-jre-headless)"
  fi
fi

# -- Python ----------------------------------------------------------------------------
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || fail "Python >= 3.10 is needed ($PY is $("$PY" -V 2>&1))"
if [ ! -x .venv/bin/python ]; then
  say "creating the virtualenv .venv"
  "$PY" -m venv .venv || fail "python3 -m venv failed: install python3-venv (sudo apt-get install python3-venv)"
fi
stamp=.venv/.hdfs-chaos-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing hdfs-chaos and its dependencies into .venv (PySpark is large: the first time takes a while)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[test]" tox \
    || fail "pip install failed (see the messages above)"
  touch "$stamp"
fi

# -- the verifier JVM's class-data sharing archive (harness/reconcile/cds.py) -------------
# Spark then starts from classes already parsed and verified; built once per virtualenv
# and pyspark release (a minute or two: it verifies a few synthetic runs). Without it the
# verifier works the same, only slower to start.
if ! .venv/bin/python -c 'import os, sys; from harness.reconcile.session import cds_archive; sys.exit(not os.path.exists(cds_archive()))' 2>/dev/null; then
  say "building the verifier's class-data sharing archive (once; about a minute)"
  .venv/bin/python -m harness.reconcile.cds >/dev/null \
    || say "warning: no class-data sharing archive (see above); the verifier starts slower without it"
fi

# -- Toxiproxy -------------------------------------------------------------------------
tools/build_toxiproxy.sh >/dev/null

# -- Docker (optional) -----------------------------------------------------------------
if [ "$want_docker" = 1 ]; then
  if tools/setup_docker.sh >&2; then
    say "building the cluster and Toxiproxy images (skipped if current)"
    .venv/bin/hdfs-chaos image build >&2 || fail "the image build failed (see above)"
  else
    say "no Docker engine: the docker backend and its tests will be skipped"
  fi
fi
say "ready: .venv/bin/hdfs-chaos"
