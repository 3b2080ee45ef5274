"""The docker backend's plan and bookkeeping as plain data, and its one-line error when
no engine answers: no Docker engine needed."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys

import pytest

from harness.backends import BackendError, get_backend
from harness.backends import docker as backend
from harness.runner import run_scenario
from harness.scenario import load_scenario_text

net = ipaddress.ip_network


def test_free_subnet_skips_every_overlapping_network():
    pool = net("10.213.0.0/22")
    used = [net("10.213.0.0/24"), net("10.213.1.128/25"), net("172.17.0.0/16")]
    assert backend.free_subnet(used, pool) == net("10.213.2.0/24")
    assert backend.free_subnet(used, pool, start=3) == net("10.213.3.0/24")
    # from the last one on, wrapping round to the first free
    assert backend.free_subnet(used + [net("10.213.3.0/24")], pool, start=3) == net("10.213.2.0/24")


def test_free_subnet_says_what_to_do_when_the_pool_is_full():
    with pytest.raises(BackendError, match="no free /24 left in 10.213.0.0/23.*hdfs-chaos cleanup"):
        backend.free_subnet([net("10.213.0.0/23")], net("10.213.0.0/23"))


def test_plan_gives_fixed_addresses_volumes_and_names():
    plans = backend.plan_cluster(3, ["c1", "c2"], {"dn2": "/r2"}, net("10.213.7.0/24"), "hc-x")
    assert {n: p.ip for n, p in plans.items()} == {
        "toxiproxy": "10.213.7.2", "nn": "10.213.7.10", "dn1": "10.213.7.11",
        "dn2": "10.213.7.12", "dn3": "10.213.7.13", "c1": "10.213.7.100", "c2": "10.213.7.101"}
    assert plans["dn2"].rack == "/r2" and plans["dn1"].rack == "/default-rack"
    assert plans["nn"].volume == "hc-x-nn-storage" and plans["dn3"].volume == "hc-x-dn3-storage"
    assert plans["c1"].volume is None and plans["toxiproxy"].volume is None
    assert plans["dn1"].container == "hc-x-dn1"
    assert backend.listen_map(plans) == {
        "nn": {"rpc": "10.213.7.10:8020"},
        "dn1": {"rpc": "10.213.7.11:9867", "xfer": "10.213.7.11:9866"},
        "dn2": {"rpc": "10.213.7.12:9867", "xfer": "10.213.7.12:9866"},
        "dn3": {"rpc": "10.213.7.13:9867", "xfer": "10.213.7.13:9866"}}


def test_plan_refuses_more_datanodes_than_a_subnet_holds():
    with pytest.raises(BackendError, match="at most 89 DataNodes"):
        backend.plan_cluster(90, [], {}, net("10.213.7.0/24"), "hc-x")


def test_commands_listen_everywhere_and_wait_for_the_routing_map():
    plans = backend.plan_cluster(1, ["c1"], {}, net("10.213.7.0/24"), "hc-x")
    paths = {"routes": "/r/dn1.json", "config": "/r/config.json", "events": "/e/dn1.jsonl",
             "workload": "/r/w.json", "gates": "/r/gates"}
    dn = backend.node_command(plans["dn1"], paths, 7)
    assert dn[:3] == ["datanode", "--id", "dn1"]
    assert "0.0.0.0:9867" in dn and "0.0.0.0:9866" in dn and backend.STORAGE_PATH in dn
    assert backend.node_command(plans["nn"], paths, 7)[-2:] == ["--seed", "7"]
    wrapped = backend.await_file("/r/dn1.json", dn)
    assert wrapped[:2] == ["sh", "-c"] and wrapped[3:] == ["/r/dn1.json", *dn]
    client = backend.client_command(plans["c1"], paths, 7)
    assert client[:3] == ["client", "--id", "c1"] and client[-2:] == ["--gate-dir", "/r/gates"]


def test_name_prefix_is_a_valid_docker_name():
    prefix = backend.name_prefix("weird name/with:chars-20260101-s1", "abc123")
    assert prefix == "hdfs-chaos-weird-name-with-chars-20260101-s1-abc123"


def test_a_run_is_live_while_its_harness_lives():
    me = socket.gethostname()
    live = {backend.RUN_LABEL: "r1", backend.HARNESS_LABEL: backend.harness_identity()}
    assert backend.run_is_live(live) is False      # our pid, but no run r1 in progress here
    backend._LIVE_RUNS.add("r1")
    try:
        assert backend.run_is_live(live) is True
    finally:
        backend._LIVE_RUNS.discard("r1")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        other = {backend.RUN_LABEL: "r2", backend.HARNESS_LABEL: backend.harness_identity(child.pid)}
        assert backend.run_is_live(other) is True
    finally:
        child.kill()
        child.wait()
    assert backend.run_is_live(other) is False      # its harness is gone
    reused = {backend.RUN_LABEL: "r3", backend.HARNESS_LABEL: f"{me}:{os.getpid()}:1"}
    backend._LIVE_RUNS.add("r3")
    try:   # same pid, another start time: a reused pid, not our run
        assert backend.run_is_live(reused) is False
    finally:
        backend._LIVE_RUNS.discard("r3")
    # another host's harness cannot be seen from here: never touch its objects
    assert backend.run_is_live({backend.RUN_LABEL: "r4",
                                backend.HARNESS_LABEL: "elsewhere:1:1"}) is True


def test_no_engine_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(BackendError) as info:
        backend.engine()
    message = str(info.value)
    assert message.startswith("no Docker engine answers at unix:///nonexistent/docker.sock: "
                              "run tools/setup_docker.sh (as root) or start dockerd")
    assert "\n" not in message


def test_a_run_without_an_engine_reports_that_line(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setitem(sys.modules, "harness.reconcile.api", None)   # no Spark needed here
    assert get_backend("docker") is backend.DockerBackend
    scenario = load_scenario_text("name: no-engine\nworkload:\n"
                                  "  - {id: w1, client: c1, op: write, path: /f, size: 1KiB}\n")
    verdict = run_scenario(scenario, backend="docker", results_dir=str(tmp_path))
    assert verdict.passed is False and verdict.run_status == "error"
    assert any("no Docker engine answers at unix:///nonexistent/docker.sock" in e
               for e in verdict.run_errors), verdict.run_errors
