"""Fixtures of the Docker tests: an engine (or a skip), labelled test images, cleanup.

Everything these tests create carries `org.hdfs-chaos.project=hdfs-chaos` and a label
naming this test session, and is removed when the session ends: containers, networks,
the test images, and the base image if this session had to import it. The images are
built from a copy of minihdfs/ and cluster_image/ into their own repository
(`hdfs-chaos-test/...`), so the user's images are never touched.
"""

from __future__ import annotations

import os
import shutil
import textwrap
import uuid
from pathlib import Path

import pytest

from harness import images

SESSION_LABEL = "org.hdfs-chaos.test-session"
TEST_REPOSITORY = "hdfs-chaos-test/minihdfs"
TEST_TOXIPROXY_REPOSITORY = "hdfs-chaos-test/toxiproxy"

# Replaces minihdfs/node.py in the "changed" tree: says how it was started, so the
# entrypoint's dispatch is checked whatever state the real node module is in.
STAND_IN_NODE = textwrap.dedent('''\
    """Stand-in for minihdfs.node in the image tests: prints how it was started."""
    import json, os, sys, time
    print(json.dumps({"argv": sys.argv[1:], "pid": os.getpid(), "ppid": os.getppid()}), flush=True)
    if "--sleep" in sys.argv:
        time.sleep(600)
''')


@pytest.fixture(scope="session")
def docker_client():
    """The engine's client; skips the Docker tests (only) when no engine answers."""
    try:
        return images.docker_client()
    except images.ImageError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def session_id() -> str:
    """`<pid>-<random>`: the pid tells a later session whether this one still runs."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:10]}"


def _session_alive(label: str) -> bool:
    pid = label.split("-", 1)[0] if "-" in label else ""
    if not pid.isdigit():
        return False            # an older label without a pid: its session is long gone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_sessions(client, keep, strict: bool = True) -> None:
    """Removes the containers, networks and test images of every test session whose
    label `keep(label)` rejects: in that order, since images in use cannot go. Not
    `strict`: an object that cannot be removed (another process removed it first) is
    passed over."""
    import docker.errors

    def stale(obj):
        # containers and images have .labels; a network has its labels in attrs only
        labels = obj.labels if hasattr(obj, "labels") else obj.attrs.get("Labels")
        label = (labels or {}).get(SESSION_LABEL)
        return label is not None and not keep(label)

    def remove(fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except docker.errors.APIError:
            if strict:
                raise
    mine = {"label": [SESSION_LABEL]}
    for container in client.containers.list(all=True, filters=mine):
        if stale(container):
            remove(container.remove, force=True)
    for network in client.networks.list(filters=mine):
        if stale(network):
            remove(network.remove)
    for image in client.images.list(filters=mine):
        if stale(image):
            for tag in image.tags or [image.id]:
                remove(client.images.remove, tag, force=True)


@pytest.fixture(scope="session")
def test_labels(session_id) -> dict[str, str]:
    """The labels of every object these tests create."""
    return {**images.LABELS, SESSION_LABEL: session_id}


@pytest.fixture
def sweep_stale_sessions(docker_client):
    """Removes what killed test sessions left behind (as every session does at start)."""
    return lambda: _remove_sessions(docker_client, _session_alive)


@pytest.fixture(scope="session", autouse=True)
def remove_everything_created(request, session_id):
    """At the end of the session, removes every container, network and image it made;
    at its start, what test sessions that were killed before their end left behind (a
    left-over test image of the same source would otherwise stand in for this session's
    build)."""
    try:
        _remove_sessions(images.docker_client(), _session_alive, strict=False)
    except images.ImageError:
        pass
    yield
    try:
        client = images.docker_client()
    except images.ImageError:
        return
    _remove_sessions(client, lambda label: label != session_id)
    base = getattr(request.config, "_hdfs_chaos_base_created", None)
    if base:
        children = [i for i in client.images.list(filters={"label": [f"{images.BASE_LABEL}={base}"]})]
        if not children:
            client.images.remove(base)


def _copy_source(root: Path) -> Path:
    for folder in images.SOURCE_FOLDERS:
        shutil.copytree(images.REPO_ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


@pytest.fixture(scope="session")
def source_tree(tmp_path_factory) -> Path:
    """A copy of the repository's minihdfs/ and cluster_image/, taken once per session."""
    return _copy_source(tmp_path_factory.mktemp("source"))


@pytest.fixture(scope="session")
def changed_tree(tmp_path_factory, source_tree) -> Path:
    """The same tree with minihdfs/node.py replaced by the stand-in."""
    root = tmp_path_factory.mktemp("changed")
    for folder in images.SOURCE_FOLDERS:
        shutil.copytree(source_tree / folder, root / folder)
    (root / "minihdfs" / "node.py").write_text(STAND_IN_NODE)
    return root


@pytest.fixture(scope="session")
def base_image(request, docker_client, source_tree):
    """The base image; remembered for removal if this session had to import it."""
    tag = images.base_tag(source_tree)
    existed = images._find_image(docker_client, tag) is not None
    images.ensure_base_image(print, root=source_tree, client=docker_client)
    if not existed:
        request.config._hdfs_chaos_base_created = tag
    return tag


@pytest.fixture(scope="session")
def build_log() -> list[str]:
    return []


@pytest.fixture(scope="session")
def cluster_image(docker_client, base_image, source_tree, test_labels, build_log):
    """The cluster image of the unchanged source tree, in the test repository."""
    return images.build_image(build_log.append, root=source_tree, repository=TEST_REPOSITORY,
                              extra_labels=test_labels)


@pytest.fixture(scope="session")
def stand_in_image(docker_client, base_image, changed_tree, test_labels):
    """The cluster image of the changed tree, whose node module is the stand-in."""
    return images.build_image(lambda line: None, root=changed_tree, repository=TEST_REPOSITORY,
                              extra_labels=test_labels)


@pytest.fixture
def run_once(docker_client, test_labels):
    """Runs a container to its end with no network; returns (exit code, output)."""
    def run(image: str, command: list[str], timeout: float = 60) -> tuple[int, str]:
        container = docker_client.containers.run(image, command, detach=True, labels=test_labels,
                                                 network_mode="none")
        try:
            status = container.wait(timeout=timeout)
            return status["StatusCode"], container.logs().decode(errors="replace")
        finally:
            container.remove(force=True)
    return run
