"""tools/setup_docker.sh and the one-line errors of harness.images.

The script's branches that would install packages or start an engine run against stand-in
commands on a PATH of their own, so they change nothing on the machine; the idempotent
branch runs the real script against the real engine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import images

pytestmark = pytest.mark.docker

SCRIPT = images.REPO_ROOT / "tools" / "setup_docker.sh"
# Real commands the script uses besides the ones each test fakes.
REAL_TOOLS = ["bash", "sed", "sort", "mkdir", "dirname", "tail", "sleep", "setsid", "nohup",
              "awk", "printf", "cat", "touch", "chmod"]


def _fake_path(tmp_path: Path, fakes: dict[str, str]) -> Path:
    """A bin folder holding the real tools above and the given stand-in scripts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in REAL_TOOLS:
        real = shutil.which(tool)
        assert real, f"{tool} is needed by the test itself"
        (bin_dir / tool).symlink_to(real)
    for name, body in fakes.items():
        (bin_dir / name).write_text(f"#!{shutil.which('bash')}\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _run(bin_dir: Path, tmp_path: Path, timeout_s: int = 10,
         pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "STATE": str(tmp_path),
           "HDFS_CHAOS_DOCKERD_LOG": str(tmp_path / "log" / "dockerd.log"),
           "HDFS_CHAOS_DOCKERD_TIMEOUT": str(timeout_s)}
    return subprocess.run([shutil.which("bash"), str(SCRIPT)], env=env, capture_output=True,
                          text=True, timeout=60, pass_fds=pass_fds)


# A docker client that answers once the stand-in dockerd has "started".
FAKE_DOCKER = ('[ -f "$STATE/engine-up" ] || exit 1\n'
               '[ "$1" = info ] && [ "${2:-}" = --format ] && echo 99.0-fake\nexit 0')
FAKE_DOCKERD = 'echo "fake dockerd"; touch "$STATE/engine-up"; sleep 3'


def test_does_nothing_when_an_engine_answers(docker_client):
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "nothing to do" in result.stdout


def test_not_root_gets_one_line_saying_what_is_missing(tmp_path):
    bin_dir = _fake_path(tmp_path, {"id": "echo 1000", "docker": "exit 1", "apt-get": "exit 1",
                                    "mmdebstrap": "echo 'mmdebstrap 1.3.5'"})
    result = _run(bin_dir, tmp_path)
    assert result.returncode == 1
    if not Path("/etc/debian_version").exists():
        pytest.fail("this test expects a Debian machine")  # as the project's machines are
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "missing a Docker engine" in lines[0] and "rerun as root" in lines[0]


def test_root_installs_what_is_missing_and_starts_dockerd(tmp_path):
    # apt-get "installs" by copying stand-ins from a package folder into the PATH.
    packages = tmp_path / "packages"
    packages.mkdir()
    for name, body in {"docker": FAKE_DOCKER, "dockerd": FAKE_DOCKERD,
                       "mmdebstrap": "echo 'mmdebstrap 1.3.5'"}.items():
        (packages / name).write_text(f"#!{shutil.which('bash')}\n{body}\n")
        (packages / name).chmod(0o755)
    fake_apt = ('echo "$*" >> "$STATE/apt.calls"\n'
                '[ "$1" = install ] || exit 0\n'
                f'for f in {packages}/*; do cat "$f" > "$(dirname "$0")/${{f##*/}}"; '
                'chmod 755 "$(dirname "$0")/${f##*/}"; done')
    bin_dir = _fake_path(tmp_path, {"id": "echo 0", "apt-get": fake_apt, "pgrep": "exit 1"})
    result = _run(bin_dir, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = (tmp_path / "apt.calls").read_text().splitlines()
    assert calls[0].startswith("update")
    assert calls[1].startswith("install") and calls[1].split()[-2:] == ["docker.io", "mmdebstrap"]
    assert "starting dockerd in the background" in result.stdout
    assert "Docker engine 99.0-fake answers" in result.stdout
    assert "fake dockerd" in (tmp_path / "log" / "dockerd.log").read_text()


def test_dockerd_keeps_none_of_the_callers_descriptors(tmp_path):
    # A CI runner's pipe or lock held open by the engine would outlive the job.
    dockerd = ('for f in /proc/$$/fd/*; do echo "${f##*/}"; done > "$STATE/dockerd.fds"\n'
               + FAKE_DOCKERD)
    bin_dir = _fake_path(tmp_path, {"id": "echo 0", "docker": FAKE_DOCKER, "pgrep": "exit 1",
                                    "apt-get": "exit 1", "dockerd": dockerd,
                                    "mmdebstrap": "echo 'mmdebstrap 1.3.5'"})
    held = os.open(tmp_path / "held.lock", os.O_CREAT | os.O_RDWR)
    try:
        result = _run(bin_dir, tmp_path, pass_fds=(held,))
    finally:
        os.close(held)
    assert result.returncode == 0, result.stdout + result.stderr
    fds = (tmp_path / "dockerd.fds").read_text().split()
    assert {"0", "1", "2"} <= set(fds)
    assert str(held) not in fds


def test_root_with_a_dockerd_that_dies_says_so_at_once(tmp_path):
    bin_dir = _fake_path(tmp_path, {"id": "echo 0", "docker": "exit 1", "pgrep": "exit 1",
                                    "apt-get": "exit 1",
                                    "dockerd": "echo 'fake dockerd: cannot start' >&2; exit 1",
                                    "mmdebstrap": "echo 'mmdebstrap 1.3.5'"})
    result = _run(bin_dir, tmp_path, timeout_s=30)
    assert result.returncode == 1
    assert "dockerd exited at once" in result.stderr
    assert "cannot start" in result.stderr  # the log's tail is shown


def test_root_with_a_silent_engine_gives_up_after_the_timeout(tmp_path):
    bin_dir = _fake_path(tmp_path, {"id": "echo 0", "docker": "exit 1", "pgrep": "exit 1",
                                    "apt-get": "exit 1",
                                    "dockerd": "echo 'fake dockerd: hanging'; exec sleep 6",
                                    "mmdebstrap": "echo 'mmdebstrap 1.3.5'"})
    result = _run(bin_dir, tmp_path, timeout_s=2)
    assert result.returncode == 1
    assert "no Docker engine answers after 2s" in result.stderr
    assert "hanging" in result.stderr


def test_no_engine_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(images.ImageError) as raised:
        images.build_image(lambda line: None)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("no Docker engine answers at unix:///nonexistent/docker.sock: "
                              "run tools/setup_docker.sh (as root) or start dockerd")


def test_missing_mmdebstrap_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(images.shutil, "which", lambda name: None)
    with pytest.raises(images.ImageError, match=r"^mmdebstrap is not installed: run "
                                                r"tools/setup_docker.sh \(as root\)"):
        images._build_rootfs(images.base_recipe(), tmp_path / "rootfs.tar", lambda line: None)


def test_source_hash_ignores_bytecode_and_sees_the_exec_bit(tmp_path):
    for folder in images.SOURCE_FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "minihdfs" / "node.py").write_text("print('node')\n")
    (tmp_path / "cluster_image" / "entrypoint.sh").write_text("#!/bin/sh\n")
    first = images.source_hash(tmp_path)
    (tmp_path / "minihdfs" / "__pycache__").mkdir()
    (tmp_path / "minihdfs" / "__pycache__" / "node.cpython-311.pyc").write_bytes(b"\0")
    assert images.source_hash(tmp_path) == first
    os.chmod(tmp_path / "cluster_image" / "entrypoint.sh", 0o755)
    assert images.source_hash(tmp_path) != first
    assert [rel for rel, _ in images.source_files(tmp_path)] == [
        "cluster_image/entrypoint.sh", "minihdfs/node.py"]
