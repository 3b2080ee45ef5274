"""Rules the library's scenarios (scenarios/*.yaml) keep so that they run alike on both
systems."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario import load_scenario

LIBRARY = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))


def _expects_no_lease_recovery(sc) -> bool:
    bound = sc.expect.recoveries.lease if sc.expect.recoveries else None
    return bound is not None and bound.op == "==" and bound.value == 0


@pytest.mark.parametrize("path", LIBRARY, ids=[p.stem for p in LIBRARY])
def test_no_short_hard_limit_where_no_lease_must_expire(path):
    # Hadoop's client renews its lease every 30 s (LeaseRenewer: half the hard-coded soft
    # limit), so with a 5 s hard limit a write that takes over 5 s on a loaded machine
    # loses its lease to the NameNode (seen on 3.4.2: replace-always, w1
    # LeaseExpiredException, "not the lease owner (=HDFS_NameNode...)")
    sc = load_scenario(path)
    if "hadoop" not in tuple(sc.systems) or not _expects_no_lease_recovery(sc):
        pytest.skip("a lease may expire in it, or it does not run on Hadoop")
    assert "lease.hard-limit" not in sc.cluster.config, \
        f"{path.name} expects no lease recovery but shortens lease.hard-limit"


def test_the_library_is_found():
    assert len(LIBRARY) >= 30
