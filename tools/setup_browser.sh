#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian's chromium, chromium-driver), which
# tests/integration/test_reports_in_browser.py drives to look at the HTML reports.
#
# Idempotent: when both commands are there it does nothing. On Debian as root it installs
# them with apt-get; anywhere else it prints one line saying what to install, and exits 1.
set -euo pipefail

say() { echo "setup_browser: $*"; }
fail() { echo "setup_browser: $*" >&2; exit 1; }

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ "${#missing[@]}" -eq 0 ]; then
  say "chromium and chromedriver are installed: nothing to do"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  fail "missing ${missing[*]}: install them (Debian: sudo apt-get install ${missing[*]}); the browser test skips without them"
fi
say "installing ${missing[*]} from Debian's packages"
DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
  || fail "apt-get install ${missing[*]} failed; the browser test skips without them"
