"""tools/setup_browser.sh with fake commands on PATH: nothing to do when Chromium and
chromedriver are there, apt-get for what is missing as root, one line with the fix
otherwise."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "setup_browser.sh"


def _run(tmp_path: Path, uid: int, present: list[str]) -> tuple[subprocess.CompletedProcess, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "apt-calls"
    fakes = {"id": f"echo {uid}", "apt-get": f'echo "$*" >> {calls}'}
    fakes.update({name: "exit 0" for name in present})
    for name, body in fakes.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    result = subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True,
                            env={"PATH": str(bin_dir)}, timeout=60)
    return result, calls.read_text() if calls.exists() else ""


def test_nothing_to_do_when_both_are_installed(tmp_path):
    result, calls = _run(tmp_path, 0, ["chromium", "chromedriver"])
    assert result.returncode == 0 and "nothing to do" in result.stdout
    assert calls == ""


def test_root_installs_only_what_is_missing(tmp_path):
    result, calls = _run(tmp_path, 0, ["chromium"])
    assert result.returncode == 0, result.stderr
    assert calls.splitlines()[-1].split()[-1] == "chromium-driver"
    assert "chromium " not in calls.splitlines()[-1]


def test_without_root_one_line_with_the_fix(tmp_path):
    result, calls = _run(tmp_path, 1000, [])
    assert result.returncode == 1 and calls == ""
    assert result.stderr.strip().splitlines() == [
        "setup_browser: missing chromium chromium-driver: install them (Debian: sudo apt-get "
        "install chromium chromium-driver); the browser test skips without them"]
