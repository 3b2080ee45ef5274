"""Containers of the cluster and Toxiproxy images talking on a network the tests create."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from harness import images

pytestmark = pytest.mark.docker

TEST_TOXIPROXY_REPOSITORY = "hdfs-chaos-test/toxiproxy"

# Polls a URL until it answers (the server container may still be starting), prints it.
FETCH = textwrap.dedent('''\
    import sys, time, urllib.request
    deadline = time.monotonic() + 30
    while True:
        try:
            body = urllib.request.urlopen(sys.argv[1], timeout=2).read().decode()
            print(body)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                sys.exit(f"no answer from {sys.argv[1]}: {e}")
            time.sleep(0.2)
''')


@pytest.fixture
def network(docker_client, test_labels, session_id, request):
    """An internal bridge network of this test: containers reach each other and nothing else."""
    name = f"hdfs-chaos-test-{session_id}-{request.node.name[:20]}".replace("[", "-").replace("]", "")
    net = docker_client.networks.create(name, driver="bridge", internal=True, labels=test_labels)
    yield net
    net.reload()
    for container in net.containers:
        container.remove(force=True)
    net.remove()


def _serve(docker_client, image, network, name, command, labels):
    return docker_client.containers.run(image, command, name=name, detach=True, labels=labels,
                                        network=network.name)


def _fetch(docker_client, image, network, url, labels) -> tuple[int, str]:
    client = docker_client.containers.run(image, ["python3", "-c", FETCH, url], detach=True,
                                          labels=labels, network=network.name)
    try:
        code = client.wait(timeout=60)["StatusCode"]
        return code, client.logs().decode(errors="replace")
    finally:
        client.remove(force=True)


def test_two_containers_talk_on_a_network_of_our_own(docker_client, cluster_image, network,
                                                     test_labels, session_id):
    assert network.attrs["Labels"][images.PROJECT_LABEL] == "hdfs-chaos"
    web = f"web-{session_id}"
    _serve(docker_client, cluster_image, network, web,
           ["python3", "-m", "http.server", "8000", "--directory", "/opt/hdfs-chaos"], test_labels)
    code, output = _fetch(docker_client, cluster_image, network,
                          f"http://{web}:8000/entrypoint.sh", test_labels)
    assert code == 0, output
    assert output.startswith("#!/bin/sh")


def test_toxiproxy_image_wraps_the_given_binary(docker_client, base_image, source_tree, tmp_path,
                                                test_labels, run_once):
    stand_in = tmp_path / "toxiproxy-server"
    stand_in.write_text('#!/bin/sh\necho "toxiproxy stand-in $*"\n')
    stand_in.chmod(0o755)
    tag = images.build_toxiproxy_image(stand_in, lambda line: None, root=source_tree,
                                       repository=TEST_TOXIPROXY_REPOSITORY, extra_labels=test_labels)
    labels = docker_client.images.get(tag).labels
    assert labels[images.PROJECT_LABEL] == "hdfs-chaos"
    assert labels[images.KIND_LABEL] == "toxiproxy"
    assert labels[images.BASE_LABEL] == base_image
    code, output = run_once(tag, [])
    assert (code, output.strip()) == (0, "toxiproxy stand-in -host 0.0.0.0 -port 8474")
    lines: list[str] = []
    assert images.build_toxiproxy_image(stand_in, lines.append, root=source_tree,
                                        repository=TEST_TOXIPROXY_REPOSITORY,
                                        extra_labels=test_labels) == tag
    assert any("up to date" in line for line in lines), lines


def test_toxiproxy_image_refuses_a_missing_binary(tmp_path):
    with pytest.raises(images.ImageError, match="toxiproxy-server binary not found at"):
        images.build_toxiproxy_image(tmp_path / "nope", lambda line: None)


def _real_toxiproxy_server() -> Path:
    path = Path(os.environ.get("HDFS_CHAOS_TOXIPROXY_SERVER") or images.DEFAULT_TOXIPROXY_BINARY)
    if not path.is_file():
        pytest.fail(f"toxiproxy-server not found at {path}: build it into tools/bin/ "
                    f"or set HDFS_CHAOS_TOXIPROXY_SERVER")
    return path


def test_real_toxiproxy_proxies_between_cluster_containers(docker_client, cluster_image, network,
                                                           source_tree, test_labels, session_id):
    tag = images.build_toxiproxy_image(_real_toxiproxy_server(), lambda line: None,
                                       root=source_tree, repository=TEST_TOXIPROXY_REPOSITORY,
                                       extra_labels=test_labels)
    web, proxy = f"web-{session_id}", f"toxiproxy-{session_id}"
    _serve(docker_client, cluster_image, network, web,
           ["python3", "-m", "http.server", "8000", "--directory", "/opt/hdfs-chaos"], test_labels)
    _serve(docker_client, tag, network, proxy, None, test_labels)
    # A client container creates the proxy through the API, then fetches through it.
    create = textwrap.dedent(f'''\
        import json, time, urllib.request
        body = json.dumps({{"name": "web", "listen": "0.0.0.0:9000", "upstream": "{web}:8000"}})
        for _ in range(100):
            try:
                request = urllib.request.Request("http://{proxy}:8474/proxies", body.encode(),
                                                 {{"Content-Type": "application/json"}})
                print(urllib.request.urlopen(request, timeout=2).read().decode())
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise SystemExit("toxiproxy API never answered")
    ''')
    client = docker_client.containers.run(cluster_image, ["python3", "-c", create], detach=True,
                                          labels=test_labels, network=network.name)
    try:
        assert client.wait(timeout=60)["StatusCode"] == 0, client.logs().decode()
        assert json.loads(client.logs().decode())["upstream"] == f"{web}:8000"
    finally:
        client.remove(force=True)
    code, output = _fetch(docker_client, cluster_image, network,
                          f"http://{proxy}:9000/entrypoint.sh", test_labels)
    assert code == 0, output
    assert output.startswith("#!/bin/sh")
