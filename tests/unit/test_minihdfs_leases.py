"""The LeaseManager's indexes (seed 000) under a fake clock: one lease per holder, by
holder, by path, sorted oldest first; renew, remove, reassign, rename, expiry."""

from __future__ import annotations

import time

import pytest

from minihdfs.leases import NAMENODE_LEASE_HOLDER, LeaseManager, is_namenode_holder


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def lm(clock):
    return LeaseManager(soft_limit=60, hard_limit=3600, clock=clock)


def holders(lm: LeaseManager) -> list[str]:
    return [lease.holder for lease in lm.sorted_leases()]


def check_consistent(lm: LeaseManager) -> None:
    """The three indexes agree with each other."""
    assert sorted(holders(lm)) == sorted(lm.by_holder)
    for holder, lease in lm.by_holder.items():
        assert lease.holder == holder and lease.paths
        for path in lease.paths:
            assert lm.by_path[path] is lease
    assert set(lm.by_path) == {p for lease in lm.by_holder.values() for p in lease.paths}
    keys = [lease.key() for lease in lm.sorted_leases()]
    assert keys == sorted(keys)


def test_one_lease_per_holder_indexed_by_holder_and_path(lm, clock):
    a = lm.add("A", "/f1")
    clock.tick(1)
    assert lm.add("A", "/f2") is a
    b = lm.add("B", "/g")
    assert lm.get("A") is a and lm.get("B") is b and lm.get("C") is None
    assert lm.get_by_path("/f1") is a and lm.get_by_path("/f2") is a
    assert lm.get_by_path("/g") is b and lm.get_by_path("/nope") is None
    assert a.paths == {"/f1", "/f2"}
    assert a.last_update == 101.0          # adding a path renews the lease
    check_consistent(lm)


def test_sorted_oldest_first_and_renew_reorders(lm, clock):
    for holder in ("A", "B", "C"):
        lm.add(holder, f"/{holder}")
        clock.tick(1)
    assert holders(lm) == ["A", "B", "C"]
    lm.renew(lm.get("A"))
    assert holders(lm) == ["B", "C", "A"]
    assert lm.get("A").last_update == clock.now
    clock.tick(1)
    lm.add("B", "/B2")                     # a new path renews too
    assert holders(lm) == ["C", "A", "B"]
    check_consistent(lm)


def test_equal_times_are_ordered_by_holder(lm):
    for holder in ("zz", "aa", "mm"):
        lm.add(holder, f"/{holder}")
    assert holders(lm) == ["aa", "mm", "zz"]
    lm.renew(lm.get("aa"))
    assert holders(lm) == ["aa", "mm", "zz"]
    check_consistent(lm)


def test_remove_drops_a_path_then_the_empty_lease(lm):
    lm.add("A", "/f1")
    lm.add("A", "/f2")
    lm.add("B", "/g")
    lease = lm.get("A")
    lm.remove(lease, "/f1")
    assert lm.get("A") is lease and lease.paths == {"/f2"}
    assert lm.get_by_path("/f1") is None
    lm.remove(lease, "/f2")
    assert lm.get("A") is None and lm.get_by_path("/f2") is None
    assert holders(lm) == ["B"]
    lm.remove(lease, "/f2")                # removing twice is harmless
    check_consistent(lm)


def test_reassign_moves_one_path_to_the_new_holder(lm, clock):
    lm.add("A", "/f1")
    lm.add("A", "/f2")
    clock.tick(5)
    new = lm.reassign(lm.get("A"), "/f1", NAMENODE_LEASE_HOLDER)
    assert new.holder == NAMENODE_LEASE_HOLDER and new.paths == {"/f1"}
    assert lm.get_by_path("/f1") is new and lm.get("A").paths == {"/f2"}
    assert new.last_update == clock.now
    # the last path of a lease: the old lease goes away
    other = lm.reassign(lm.get("A"), "/f2", "B")
    assert lm.get("A") is None and other is lm.get("B")
    # to an existing holder: joins its lease
    joined = lm.reassign(new, "/f1", "B")
    assert joined is other and joined.paths == {"/f1", "/f2"}
    assert lm.get(NAMENODE_LEASE_HOLDER) is None
    check_consistent(lm)


def test_change_path_on_rename_moves_files_and_everything_below(lm):
    lm.add("A", "/dir/a")
    lm.add("A", "/dir/sub/b")
    lm.add("B", "/dir2/c")
    lm.add("B", "/dirx")                   # shares a prefix, not below /dir
    lm.change_path("/dir", "/moved")
    assert lm.get("A").paths == {"/moved/a", "/moved/sub/b"}
    assert lm.get_by_path("/moved/sub/b") is lm.get("A")
    assert lm.get_by_path("/dir/a") is None
    assert lm.get("B").paths == {"/dir2/c", "/dirx"}
    lm.change_path("/dirx", "/y")          # one file
    assert lm.get("B").paths == {"/dir2/c", "/y"} and lm.get_by_path("/y") is lm.get("B")
    lm.change_path("/not-leased", "/z")
    check_consistent(lm)


def test_expired_hard_oldest_first_and_only_those(clock):
    lm = LeaseManager(soft_limit=2, hard_limit=10, clock=clock)
    lm.add("old", "/1")
    clock.tick(3)
    lm.add("mid", "/2")
    clock.tick(3)
    lm.add("new", "/3")
    assert lm.expired_hard() == []
    assert lm.expired_soft(lm.get("old")) and lm.expired_soft(lm.get("mid"))
    assert not lm.expired_soft(lm.get("new"))
    clock.tick(5)                          # old: 11 s, mid: 8 s, new: 5 s
    assert [lease.holder for lease in lm.expired_hard()] == ["old"]
    clock.tick(2.5)                        # old: 13.5, mid: 10.5, new: 7.5
    assert [lease.holder for lease in lm.expired_hard()] == ["old", "mid"]
    lm.renew(lm.get("old"))
    assert [lease.holder for lease in lm.expired_hard()] == ["mid"]
    assert not lm.expired_soft(lm.get("old"))


def test_limits_are_strict(clock):
    lm = LeaseManager(soft_limit=2, hard_limit=10, clock=clock)
    lm.add("A", "/f")
    clock.tick(10)
    assert lm.expired_hard() == []         # exactly the limit is not past it
    clock.tick(0.001)
    assert [lease.holder for lease in lm.expired_hard()] == ["A"]


def test_the_namenodes_holder_is_renamed_once_older_than_the_hard_limit(lm, clock):
    """3.x LeaseManager.getInternalLeaseHolder: the NameNode's holder carries the time it
    was named, and a new name is taken once the old one is older than the hard limit."""
    first = lm.internal_lease_holder()
    assert first.startswith(NAMENODE_LEASE_HOLDER + "-") and is_namenode_holder(first)
    clock.tick(lm.hard_limit)
    assert lm.internal_lease_holder() == first
    clock.tick(1)
    time.sleep(0.002)                       # a later wall-clock millisecond in the name
    second = lm.internal_lease_holder()
    assert second != first and is_namenode_holder(second)
    assert not is_namenode_holder("DFSClient_HDFS_NameNode") and not is_namenode_holder(None)
