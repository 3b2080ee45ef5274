"""Each harness process takes its ports from its own slice (harness/ports.py)."""

import multiprocessing


def _run_claims(directory, got, release):
    from harness import ports
    from hdfs_contract import ports as contract_ports
    ports.PORT_SLOTS_DIR = directory
    first = ports.claim_run_ports()
    again = ports.claim_run_ports()        # a second run in the same process keeps its slice
    got.put((first, again, contract_ports.port_range(), contract_ports.free_port()))
    release.wait(60)


def test_two_harness_processes_pick_ports_from_different_slices(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    got, release = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_run_claims, args=(str(tmp_path), got, release))
             for _ in range(2)]
    try:
        for p in procs:
            p.start()
        results = sorted(got.get(timeout=60) for _ in procs)
    finally:
        release.set()
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    assert [r[0] for r in results] == [(20000, 21500), (21500, 23000)]
    for first, again, now, port in results:
        assert again is None and now == first and first[0] <= port < first[1]


def test_every_slot_taken_leaves_the_whole_range(monkeypatch, tmp_path):
    import fcntl

    from harness import ports
    from hdfs_contract import ports as contract_ports
    monkeypatch.setattr(ports, "PORT_SLOTS_DIR", str(tmp_path))
    monkeypatch.setattr(ports, "PORT_SLOTS", 1)
    monkeypatch.setattr(ports, "_SLOT_FD", None)
    monkeypatch.setattr(contract_ports.ALLOCATOR, "range", (20000, 32000))
    with open(tmp_path / "slot-0.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert ports.claim_run_ports() is None
        assert contract_ports.port_range() == (20000, 32000)


def test_the_allocator_hands_out_ports_of_its_range_once_and_refuses_a_bad_range():
    import pytest

    from hdfs_contract.ports import PortAllocator
    alloc = PortAllocator((24000, 24050))
    got = [alloc.free_port() for _ in range(20)]
    assert len(set(got)) == 20 and all(24000 <= p < 24050 for p in got)
    assert alloc.set_range((25000, 25010)) == (25000, 25010)
    assert 25000 <= alloc.free_port() < 25010
    for bad in ((0, 10), (30000, 30000), (30000, 70000)):
        with pytest.raises(ValueError, match="port range"):
            alloc.set_range(bad)
