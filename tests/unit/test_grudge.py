"""Grudges and links as data: no network, no server."""

import json

import pytest

from faults.grudge import (Grudge, as_links, bridge, complete_grudge, directed, isolate,
                           links_between, links_from, merge)


def test_complete_grudge_cuts_every_pair_across_groups_both_ways():
    g = complete_grudge([["dn1"], ["dn2", "dn3"]])
    assert g == {"dn1": {"dn2", "dn3"}, "dn2": {"dn1"}, "dn3": {"dn1"}}
    assert g.links() == [("dn1", "dn2"), ("dn1", "dn3"), ("dn2", "dn1"), ("dn3", "dn1")]


def test_complete_grudge_of_three_groups_keeps_each_group_whole():
    g = complete_grudge([["a", "b"], ["c"], ["d"]])
    assert g["a"] == {"c", "d"} and g["b"] == {"c", "d"}
    assert g["c"] == {"a", "b", "d"} and g["d"] == {"a", "b", "c"}
    assert "b" not in g["a"]


def test_complete_grudge_rejects_overlapping_or_empty_groups():
    with pytest.raises(ValueError, match="dn2.*group 0 and group 1"):
        complete_grudge([["dn1", "dn2"], ["dn2", "dn3"]])
    with pytest.raises(ValueError, match="empty"):
        complete_grudge([["dn1"], []])
    with pytest.raises(ValueError, match="string"):
        complete_grudge(["dn1", "dn2"])


def test_complete_grudge_of_one_group_is_empty():
    assert complete_grudge([["dn1", "dn2"]]) == {}


def test_directed_is_one_way():
    g = directed([["c1", "dn1"], ("dn1", "dn2"), ["c1", "dn2"]])
    assert g == {"c1": {"dn1", "dn2"}, "dn1": {"dn2"}}
    assert "dn2" not in g


def test_directed_rejects_self_links_and_non_pairs():
    with pytest.raises(ValueError, match="two different nodes"):
        directed([["dn1", "dn1"]])
    with pytest.raises(ValueError, match="pair"):
        directed([["dn1", "dn2", "dn3"]])
    with pytest.raises(ValueError, match="string"):
        directed(["dn1"])


def test_isolate_cuts_one_node_from_all_others_both_ways():
    g = isolate("dn2", ["nn", "dn1", "dn2", "dn3", "c1"])
    assert g["dn2"] == {"nn", "dn1", "dn3", "c1"}
    for other in ("nn", "dn1", "dn3", "c1"):
        assert g[other] == {"dn2"}
    with pytest.raises(ValueError, match="at least one other"):
        isolate("dn1", ["dn1"])


def test_bridge_keeps_the_middle_node_connected_to_both_halves():
    g = bridge(["n1", "n2", "n3", "n4", "n5"])
    # halves [n1 n2] and [n4 n5]; n3 is the bridge
    assert g == {"n1": {"n4", "n5"}, "n2": {"n4", "n5"},
                 "n4": {"n1", "n2"}, "n5": {"n1", "n2"}}
    assert "n3" not in g.nodes()
    with pytest.raises(ValueError):
        bridge(["a", "b"])


def test_grudge_is_printable_comparable_hashable_and_json_able():
    g = Grudge({"dn2": ["dn1"], "dn1": {"dn3", "dn2"}, "dn4": []})
    assert repr(g) == "Grudge({'dn1': ['dn2', 'dn3'], 'dn2': ['dn1']})"
    assert g == Grudge({"dn1": {"dn2", "dn3"}, "dn2": {"dn1"}})
    assert g != Grudge({"dn1": {"dn2"}})
    assert hash(g) == hash(Grudge({"dn1": {"dn2", "dn3"}, "dn2": {"dn1"}}))
    assert json.loads(json.dumps(g.to_json())) == {"dn1": ["dn2", "dn3"], "dn2": ["dn1"]}
    assert g.nodes() == {"dn1", "dn2", "dn3"}
    assert list(g) == ["dn1", "dn2"]


def test_grudge_rejects_self_grudges_and_strings():
    with pytest.raises(ValueError, match="itself"):
        Grudge({"dn1": {"dn1"}})
    with pytest.raises(ValueError, match="string"):
        Grudge({"dn1": "dn2"})
    with pytest.raises(ValueError, match="non-empty string"):
        Grudge({"dn1": {""}})


def test_merge_unions_grudges():
    g = merge(directed([["a", "b"]]), directed([["a", "c"], ["c", "a"]]))
    assert g == {"a": {"b", "c"}, "c": {"a"}}
    assert (directed([["a", "b"]]) | {"b": {"a"}}) == complete_grudge([["a"], ["b"]])


def test_links_between_expands_groups_both_ways_never_within():
    assert links_between([["dn1"], ["dn2", "dn3"]]) == [
        ("dn1", "dn2"), ("dn1", "dn3"), ("dn2", "dn1"), ("dn3", "dn1")]
    assert links_between([["a", "b"]]) == []


def test_links_from_and_as_links_normalise():
    assert links_from(["c1"], ["dn1", "dn2", "c1"]) == [("c1", "dn1"), ("c1", "dn2")]
    assert as_links([["b", "a"], ("a", "b"), ["b", "a"]]) == [("a", "b"), ("b", "a")]
