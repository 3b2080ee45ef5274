"""The cluster image: built once per source tree, labelled, runnable, dispatching roles."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from harness import images

SESSION_LABEL = "org.hdfs-chaos.test-session"  # as in conftest.py
TEST_REPOSITORY = "hdfs-chaos-test/minihdfs"

pytestmark = pytest.mark.docker


def test_tag_is_the_hash_of_the_source_tree(cluster_image, source_tree):
    assert cluster_image == f"{TEST_REPOSITORY}:{images.source_hash(source_tree)[:12]}"


def test_second_build_of_the_same_source_is_skipped(docker_client, cluster_image, source_tree,
                                                    test_labels):
    before = docker_client.images.get(cluster_image).id
    lines: list[str] = []
    started = time.monotonic()
    again = images.build_image(lines.append, root=source_tree, repository=TEST_REPOSITORY,
                               extra_labels=test_labels)
    assert again == cluster_image
    assert docker_client.images.get(again).id == before
    assert any("up to date" in line and "nothing to build" in line for line in lines), lines
    assert not any(line.lstrip().startswith("Step ") for line in lines), lines
    assert time.monotonic() - started < 10


def test_a_change_of_source_makes_a_new_tag(docker_client, cluster_image, stand_in_image):
    assert stand_in_image != cluster_image
    assert stand_in_image.split(":")[0] == cluster_image.split(":")[0]
    assert docker_client.images.get(stand_in_image).id != docker_client.images.get(cluster_image).id


def test_cluster_image_carries_the_project_labels(docker_client, cluster_image, base_image,
                                                  source_tree, session_id):
    labels = docker_client.images.get(cluster_image).labels
    assert labels[images.PROJECT_LABEL] == "hdfs-chaos"
    assert labels[images.KIND_LABEL] == "cluster"
    assert labels[images.SOURCE_HASH_LABEL] == images.source_hash(source_tree)
    assert labels[images.BASE_LABEL] == base_image
    assert labels[SESSION_LABEL] == session_id


def test_base_image_is_imported_from_debian_with_labels(docker_client, base_image, source_tree):
    image = docker_client.images.get(base_image)
    recipe = images.base_recipe(source_tree)
    assert image.labels[images.PROJECT_LABEL] == "hdfs-chaos"
    assert image.labels[images.KIND_LABEL] == "base"
    assert image.labels[images.SOURCE_HASH_LABEL] == images.base_hash(recipe)
    assert base_image == f"{images.BASE_REPOSITORY}:{images.base_hash(recipe)[:12]}"


def test_present_base_image_is_not_rebuilt(base_image, source_tree, tmp_path):
    lines: list[str] = []
    assert images.ensure_base_image(lines.append, root=source_tree, cache_dir=tmp_path) == base_image
    assert lines == [f"base image {base_image} is present"]
    assert list(tmp_path.glob("rootfs-*.tar")) == []


def test_missing_base_image_is_imported_from_the_cached_rootfs(docker_client, base_image,
                                                               source_tree, tmp_path,
                                                               monkeypatch):
    """A recipe whose image is gone but whose root filesystem is cached is re-imported in
    seconds, without mmdebstrap (here: not on PATH at all)."""
    tree = tmp_path / "tree"
    shutil.copytree(source_tree / "cluster_image", tree / "cluster_image")
    recipe_file = tree / "cluster_image" / "base.json"
    recipe = json.loads(recipe_file.read_text())
    recipe["packages"] = [*recipe["packages"], "hdfs-chaos-test-only-never-installed"]
    recipe_file.write_text(json.dumps(recipe))
    digest = images.base_hash(images.base_recipe(tree))[:12]
    tag = images.base_tag(tree)
    assert tag != base_image and images._find_image(docker_client, tag) is None
    cache = tmp_path / "cache"
    cache.mkdir()
    container = docker_client.containers.create(base_image, ["true"],
                                                labels={images.PROJECT_LABEL: "hdfs-chaos"})
    try:
        with open(cache / f"rootfs-{digest}.tar", "wb") as out:
            for chunk in container.export():
                out.write(chunk)
    finally:
        container.remove(force=True)
    monkeypatch.setenv("PATH", "/nonexistent")
    lines: list[str] = []
    try:
        assert images.ensure_base_image(lines.append, root=tree, cache_dir=cache) == tag
        assert any("using cached root filesystem" in line for line in lines), lines
        assert not any("building the root filesystem" in line for line in lines), lines
        labels = docker_client.images.get(tag).labels
        assert labels[images.KIND_LABEL] == "base"
        assert labels[images.SOURCE_HASH_LABEL] == images.base_hash(images.base_recipe(tree))
    finally:
        if images._find_image(docker_client, tag) is not None:
            docker_client.images.remove(tag, force=True)


def test_container_imports_minihdfs(run_once, cluster_image):
    code, output = run_once(cluster_image, [
        "python3", "-c", "import minihdfs, hdfs_contract.config, hdfs_contract.events; print('imported')"])
    assert (code, output.strip()) == (0, "imported")


def test_image_has_the_tools_faults_use(run_once, cluster_image):
    tools = ["ip", "tc", "ps", "pgrep", "pkill", "tini", "python3"]
    code, output = run_once(cluster_image, ["sh", "-c", 'for t in "$@"; do command -v "$t"; done',
                                            "sh", *tools])
    assert code == 0, output
    assert [line.rsplit("/", 1)[-1] for line in output.split()] == tools


@pytest.mark.parametrize("role,flags", [
    ("namenode", ["--id", "nn", "--rpc", "nn:8020", "--routes", "/run/routes.json",
                  "--config", "/run/conf.json", "--storage", "/data", "--events", "/ev/nn.jsonl"]),
    ("datanode", ["--id", "dn1", "--rpc", "dn1:9867", "--xfer", "dn1:9866", "--rack", "/r1",
                  "--routes", "/run/routes.json", "--config", "/run/conf.json",
                  "--storage", "/data", "--events", "/ev/dn1.jsonl"]),
    ("client", ["--id", "c1", "--routes", "/run/routes.json", "--config", "/run/conf.json",
                "--events", "/ev/c1.jsonl", "--workload", "/run/w.json", "--seed", "7"]),
])
def test_entrypoint_execs_the_node_of_the_role(run_once, stand_in_image, role, flags):
    code, output = run_once(stand_in_image, [role, *flags])
    assert code == 0, output
    started = json.loads(output.strip().splitlines()[-1])
    assert started["argv"] == [role, *flags]
    # exec, not a child of sh: the node's parent is tini, PID 1.
    assert started["ppid"] == 1


def test_entrypoint_without_a_role_prints_usage(run_once, cluster_image):
    code, output = run_once(cluster_image, [])
    assert code == 0
    assert "usage: entrypoint.sh namenode|datanode|client" in output


def test_docker_stop_reaches_the_node_at_once(docker_client, stand_in_image, test_labels):
    container = docker_client.containers.run(stand_in_image, ["datanode", "--id", "dn1", "--sleep"],
                                             detach=True, labels=test_labels, network_mode="none")
    try:
        deadline = time.monotonic() + 30
        while b'"argv"' not in container.logs() and time.monotonic() < deadline:
            time.sleep(0.1)
        started = time.monotonic()
        container.stop(timeout=20)
        stopped_in = time.monotonic() - started
        container.reload()
        # SIGTERM forwarded by tini ends python (143 = 128 + 15), long before the timeout.
        assert container.attrs["State"]["ExitCode"] == 143
        assert stopped_in < 5
    finally:
        container.remove(force=True)


def test_list_images_shows_kinds_and_hashes(docker_client, cluster_image, stand_in_image,
                                            session_id):
    listed = images.list_images(extra_filters={SESSION_LABEL: session_id})
    tags = {tag: entry for entry in listed for tag in entry["tags"]}
    assert set(tags) >= {cluster_image, stand_in_image}
    assert tags[cluster_image]["kind"] == "cluster"
    assert tags[cluster_image]["source_hash"] == cluster_image.rsplit(":", 1)[1]
    everything = images.list_images()
    assert {cluster_image, stand_in_image} <= {t for e in everything for t in e["tags"]}


def test_remove_images_removes_only_the_selected_ones(docker_client, base_image, changed_tree,
                                                      tmp_path, test_labels, cluster_image):
    tree = tmp_path / "removable"
    for folder in images.SOURCE_FOLDERS:
        shutil.copytree(changed_tree / folder, tree / folder)
    (tree / "minihdfs" / "removable.py").write_text("# makes a tree of its own\n")
    case = {**test_labels, "org.hdfs-chaos.test-case": "remove"}
    tag = images.build_image(lambda line: None, root=tree, repository=TEST_REPOSITORY,
                             extra_labels=case)
    removed = images.remove_images(all=False, progress=lambda line: None,
                                   extra_filters={"org.hdfs-chaos.test-case": "remove"})
    assert removed == [tag]
    assert images._find_image(docker_client, tag) is None
    assert images._find_image(docker_client, cluster_image) is not None
    assert images._find_image(docker_client, base_image) is not None


def test_remove_images_refuses_an_image_in_use(docker_client, base_image, changed_tree, tmp_path,
                                               test_labels):
    tree = tmp_path / "in-use"
    for folder in images.SOURCE_FOLDERS:
        shutil.copytree(changed_tree / folder, tree / folder)
    (tree / "minihdfs" / "in_use.py").write_text("# makes a tree of its own\n")
    case = {**test_labels, "org.hdfs-chaos.test-case": "in-use"}
    tag = images.build_image(lambda line: None, root=tree, repository=TEST_REPOSITORY,
                             extra_labels=case)
    container = docker_client.containers.create(tag, ["true"], labels=test_labels,
                                                network_mode="none")
    try:
        with pytest.raises(images.ImageError, match="remove their containers first"):
            images.remove_images(all=True, progress=lambda line: None,
                                 extra_filters={"org.hdfs-chaos.test-case": "in-use"})
        assert images._find_image(docker_client, tag) is not None
    finally:
        container.remove(force=True)


def test_leftovers_of_killed_test_sessions_are_swept(docker_client, sweep_stale_sessions,
                                                     test_labels, session_id):
    # no process has pid 999999999 (above any pid_max), and a label without a pid comes
    # from an older session; this session's own objects stay
    labels = {"dead": {**test_labels, SESSION_LABEL: "999999999-killed"},
              "old": {**test_labels, SESSION_LABEL: "12589f4412"},
              "live": test_labels}
    nets = {k: docker_client.networks.create(f"hdfs-chaos-test-{session_id}-{k}", labels=v)
            for k, v in labels.items()}
    try:
        sweep_stale_sessions()
        left = {n.name for n in docker_client.networks.list(filters={"label": [SESSION_LABEL]})}
        assert nets["live"].name in left
        assert nets["dead"].name not in left and nets["old"].name not in left
    finally:
        for net in nets.values():
            try:
                net.remove()
            except Exception:
                pass
