"""The leak census on the docker backend: a harness SIGKILLed in each phase of a run
leaves no container, network or volume of that run (its reaper removes them), and no
process or port on the host (issue 20)."""

from __future__ import annotations

import time

import pytest

from harness.backends import docker as backend
from tests.census import CENSUS_SCENARIO, PHASES, Harness, wait_clean

# The reaper sees its stdin close at once; removing ~6 containers, a network and 4
# volumes through the engine takes a few seconds on a loaded 2-core VM.
WITHIN = 30.0


def run_objects(engine, harness_pid: int) -> list[str]:
    """Every container (reapers included), network and volume made by that harness."""
    ours = {"label": [f"{backend.PROJECT_LABEL}={backend.PROJECT}", backend.HARNESS_LABEL]}
    def made_by(labels):
        return (labels or {}).get(backend.HARNESS_LABEL, "").split(":")[1:2] == [str(harness_pid)]
    # sparse: no inspect per container, which fails on one removed meanwhile (a reaper)
    return ([f"container {(c.attrs.get('Names') or [c.id[:12]])[0].lstrip('/')}"
             for c in engine.containers.list(all=True, sparse=True, filters=ours)
             if made_by(c.attrs.get("Labels"))]
            + [f"network {n.name}" for n in engine.networks.list(filters=ours)
               if made_by(n.attrs.get("Labels"))]
            + [f"volume {v.name}" for v in engine.volumes.list(filters=ours)
               if made_by(v.attrs.get("Labels"))])


@pytest.mark.parametrize("phase", PHASES)
def test_sigkill_of_the_harness_leaves_nothing_on_docker(docker_client, tmp_path, phase):
    engine = docker_client
    scenario = tmp_path / "leak-census.yaml"
    scenario.write_text(CENSUS_SCENARIO)
    results = tmp_path / "results"
    results.mkdir()
    harness = Harness(str(scenario), str(results), backend="docker")
    seen_objects: set[str] = set()

    def cluster_starting() -> bool:
        made = run_objects(engine, harness.proc.pid)
        seen_objects.update(made)
        return any(o.endswith("-nn") for o in made)

    harness.cluster_starting = cluster_starting
    try:
        harness.kill_at(phase, timeout=240)
    finally:
        if harness.proc.poll() is None:
            harness.proc.kill()
    seen_objects.update(run_objects(engine, harness.proc.pid))
    assert any(o.endswith("-reaper") for o in seen_objects) or phase != "cluster", seen_objects
    start = time.monotonic()
    left = run_objects(engine, harness.proc.pid)
    while left and time.monotonic() - start < WITHIN:
        time.sleep(0.2)
        left = run_objects(engine, harness.proc.pid)
    took = time.monotonic() - start
    _, host_left = wait_clean(harness, max(1.0, 20.0 - took))
    print(f"docker census {phase}: {len(seen_objects)} objects seen; "
          f"left after {took:.1f}s: {left}; host: {host_left}")
    assert not left, f"left {WITHIN:.0f}s after SIGKILL in phase {phase}: {left}"
    assert not host_left, f"left on the host after SIGKILL in phase {phase}: {host_left}"
