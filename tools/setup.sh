#!/usr/bin/env bash
# Sets up everything hdfs-chaos needs on this machine, idempotently:
#   - Java 17, a runtime for PySpark, from Debian's packages when missing, as root,
#   - a Python virtualenv in .venv with hdfs-chaos installed (editable), its test tools
#     and argcomplete (shell completion),
#   - Shopify's toxiproxy-server (built with `go install` into tools/bin/),
#   - with --docker: a Docker engine and mmdebstrap (tools/setup_docker.sh), then the
#     cluster and Toxiproxy images (skipped when an image of the same sources exists).
#   - with --hadoop [VERSION] (default 3.4.2; repeatable): a JDK and Maven from Debian's
#     packages when missing, then that Apache Hadoop release's jars into the per-version
#     cache (harness/systems/hadoop/fetch.py; skipped when already there).
#   - with --browser: headless Chromium and chromedriver from Debian's packages
#     (tools/setup_browser.sh), for the test that opens the HTML reports in a browser.
# Each missing piece that cannot be installed here is named in one line, with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
want_docker=0
want_browser=0
hadoop_versions=()
while [ $# -gt 0 ]; do
  case "$1" in
    --docker) want_docker=1 ;;
    --browser) want_browser=1 ;;
    --hadoop)
      if [ $# -gt 1 ] && [[ "$2" =~ ^[0-9] ]]; then hadoop_versions+=("$2"); shift
      else hadoop_versions+=("3.4.2"); fi ;;
    --hadoop=*) hadoop_versions+=("${1#--hadoop=}") ;;
    *) echo "setup: unknown option $1 (use --docker, --hadoop [VERSION], --browser)" >&2; exit 2 ;;
  esac
  shift
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
  # pip's own output (and setuptools' warnings about the editable install) goes to a
  # log that is shown only when pip fails: the terminal keeps setup's one-line progress.
  piplog=$(mktemp)
  if ! { .venv/bin/python -m pip install -q --upgrade pip \
         && .venv/bin/python -m pip install -q -e ".[test,completion]" tox; } >"$piplog" 2>&1; then
    cat "$piplog" >&2
    rm -f "$piplog"
    fail "pip install failed (see pip's messages above)"
  fi
  rm -f "$piplog"
  touch "$stamp"
fi

# -- the verifier JVM's class-data sharing archive (harness/reconcile/cds.py) -------------
# Spark then starts from classes already parsed and verified; built once per virtualenv
# and pyspark release (a minute or two: it verifies a few synthetic runs). Without it the
# verifier works the same, only slower to start.
if ! .venv/bin/python -c 'import os, sys; from harness.reconcile.sparkjvm import cds_archive; sys.exit(not os.path.exists(cds_archive()))' 2>/dev/null; then
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
# -- a headless browser (optional), for the reports' browser test ------------------------
if [ "$want_browser" = 1 ]; then
  tools/setup_browser.sh >&2 || say "no headless Chromium: the browser test will be skipped"
fi
# -- Apache Hadoop (optional): a JDK (javac for the workload client), Maven, the jars --
if [ "${#hadoop_versions[@]}" -gt 0 ]; then
  for tool in javac:openjdk-17-jdk-headless mvn:maven; do
    if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
      if is_root && command -v apt-get >/dev/null 2>&1; then
        say "installing ${tool#*:} for Hadoop"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${tool#*:}" >/dev/null \
          || fail "apt-get install ${tool#*:} failed, and --hadoop needs ${tool%%:*}"
      else
        fail "${tool%%:*} is missing and --hadoop needs it: sudo apt-get install ${tool#*:}"
      fi
    fi
  done
  for v in "${hadoop_versions[@]}"; do
    say "fetching Apache Hadoop $v (once; cached)"
    # fetch.main, not `-m ...fetch`: the package imports fetch first, and runpy warns
    PYTHONPATH="$ROOT" .venv/bin/python -c \
      'import sys; from harness.systems.hadoop.fetch import main; sys.exit(main(sys.argv[1:]))' \
      "$v" >/dev/null \
      || fail "fetching Hadoop $v failed (see above)"
  done
fi
say "ready: .venv/bin/hdfs-chaos"
