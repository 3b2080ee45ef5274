"""BlockPlacementPolicyDefault of the mini-HDFS (seed 001): writer-local first, second on
another rack, third on the second's rack, excluded nodes never, and the pipeline ordered
by network distance from the writer."""

from __future__ import annotations

import random

import pytest

from minihdfs.placement import BlockPlacementPolicy, distance

RACKS = {"dn1": "/r1", "dn2": "/r1", "dn3": "/r1",
         "dn4": "/r2", "dn5": "/r2", "dn6": "/r2",
         "dn7": "/r3", "dn8": "/r3"}
SEEDS = range(40)


def policy(seed: int) -> BlockPlacementPolicy:
    return BlockPlacementPolicy(random.Random(seed))


def test_distance_is_hadoop_network_topology():
    assert distance(RACKS, "dn1", "dn1") == 0
    assert distance(RACKS, "dn1", "dn2") == 2
    assert distance(RACKS, "dn1", "dn4") == 4
    assert distance(RACKS, "client", "dn1") == 4      # a client is on no rack we know


@pytest.mark.parametrize("seed", SEEDS)
def test_writer_local_first_then_another_rack_then_the_seconds_rack(seed):
    targets = policy(seed).choose_targets("dn5", 3, RACKS)
    assert len(targets) == 3 and len(set(targets)) == 3
    first, second, third = targets
    assert first == "dn5"
    assert RACKS[second] != RACKS[first]
    assert RACKS[third] == RACKS[second]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_writer_that_is_no_datanode_gets_a_random_first_node(seed):
    targets = policy(seed).choose_targets("c1", 3, RACKS)
    assert len(set(targets)) == 3
    assert RACKS[targets[1]] != RACKS[targets[0]]
    assert RACKS[targets[2]] == RACKS[targets[1]]


def test_first_nodes_of_a_non_datanode_writer_are_spread():
    firsts = {policy(seed).choose_targets("c1", 1, RACKS)[0] for seed in range(200)}
    assert len(firsts) >= 5


@pytest.mark.parametrize("seed", SEEDS)
def test_excluded_nodes_are_never_chosen(seed):
    excluded = {"dn5", "dn4", "dn1"}
    targets = policy(seed).choose_targets("dn5", 3, RACKS, excluded=excluded)
    assert len(targets) == 3 and not set(targets) & excluded
    assert RACKS[targets[1]] != RACKS[targets[0]]
    room = [n for n, r in RACKS.items() if r == RACKS[targets[1]]
            and n not in excluded and n not in targets[:2]]
    if room:   # the second's rack has a free node: the third goes there
        assert RACKS[targets[2]] == RACKS[targets[1]]


@pytest.mark.parametrize("seed", SEEDS)
def test_excluding_all_but_two_gives_two(seed):
    excluded = set(RACKS) - {"dn2", "dn7"}
    assert sorted(policy(seed).choose_targets("dn1", 3, RACKS, excluded=excluded)) == ["dn2", "dn7"]
    assert policy(seed).choose_targets("dn1", 3, RACKS, excluded=set(RACKS)) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_one_rack_only_still_gives_distinct_nodes(seed):
    one_rack = {f"dn{i}": "/default-rack" for i in range(1, 6)}
    targets = policy(seed).choose_targets("dn3", 3, one_rack)
    assert targets[0] == "dn3" and len(set(targets)) == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_more_than_three_replicas(seed):
    targets = policy(seed).choose_targets("dn1", 5, RACKS)
    assert len(set(targets)) == 5 and targets[0] == "dn1"


@pytest.mark.parametrize("seed", SEEDS)
def test_additional_datanode_respects_the_chosen_ones(seed):
    # getAdditionalDatanode: dn1 (/r1) and dn4 (/r2) are in the pipeline, dn5 failed
    new = policy(seed).choose_targets("c1", 1, RACKS, chosen=["dn1", "dn4"], excluded={"dn5"})
    assert len(new) == 1 and new[0] not in ("dn1", "dn4", "dn5")
    assert RACKS[new[0]] == "/r2"          # the third replica goes on the second's rack
    # two chosen on one rack: the next one goes to another rack
    new = policy(seed).choose_targets("c1", 1, RACKS, chosen=["dn1", "dn2"])
    assert RACKS[new[0]] != "/r1"


def test_pipeline_ordered_by_distance_from_the_writer():
    p = policy(0)
    # writer dn1 on /r1: itself, then its rack, then the other rack
    assert p.pipeline_order("dn1", ["dn4", "dn2", "dn1"], RACKS) == ["dn1", "dn2", "dn4"]
    # each next hop is the nearest to the previous node
    assert p.pipeline_order("dn4", ["dn1", "dn7", "dn5", "dn2"], RACKS) == ["dn5", "dn1", "dn2", "dn7"]
    # a client writer: every node is as far; the order of the list then the racks decide
    assert p.pipeline_order("c1", ["dn4", "dn1", "dn5"], RACKS) == ["dn4", "dn5", "dn1"]
    assert p.pipeline_order("c1", [], RACKS) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_chosen_targets_ordered_as_a_pipeline_start_at_the_writer(seed):
    p = policy(seed)
    targets = p.choose_targets("dn2", 3, RACKS)
    order = p.pipeline_order("dn2", targets, RACKS)
    assert order[0] == "dn2" and sorted(order) == sorted(targets)
    assert [distance(RACKS, a, b) for a, b in zip(order, order[1:])] == [4, 2]
