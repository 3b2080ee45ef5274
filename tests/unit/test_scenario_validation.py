"""Validation: every broken scenario of the corpus gives exactly its expected messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.scenario import (Issue, ScenarioError, check_scenario_file, check_scenario_text,
                              load_scenario, load_scenario_text, validate_files)

CORPUS = Path(__file__).resolve().parent.parent / "scenario_corpus"
BROKEN = sorted(CORPUS.glob("*.yaml"))
VALID = sorted((CORPUS / "valid").glob("*.yaml"))
POSITIONED = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): \S")


def expected_messages(path: Path) -> list[str]:
    return [line[len("# expect: "):].rstrip("\n")
            for line in path.read_text().splitlines() if line.startswith("# expect: ")]


def _short(issue: Issue) -> str:
    field = f"{issue.field}: " if issue.field else ""
    return f"{issue.line}:{issue.col}: {field}{issue.message}"


def test_the_corpus_is_large_enough():
    assert len(BROKEN) >= 20
    assert all(expected_messages(p) for p in BROKEN), "every broken file says what it expects"


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_scenario_gives_exactly_its_expected_messages(path):
    scenario, issues = check_scenario_file(path)
    assert scenario is None
    assert [_short(i) for i in issues] == expected_messages(path)
    for issue in issues:
        assert str(issue).startswith(f"{path}:{issue.line}:{issue.col}: ")


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_scenarios_have_no_issue(path):
    scenario, issues = check_scenario_file(path)
    assert issues == []
    assert scenario is not None


# Each error class of the brief, and a corpus message that shows it is caught.
ERROR_CLASSES = {
    "unknown key with a suggestion": "unknown key 'timout' (did you mean 'timeout'?)",
    "unknown fault kind": "unknown fault kind 'partitoin' (did you mean 'partition'?)",
    "unknown config key": "unknown configuration key 'dfs.replicaton' (did you mean",
    "bad config value": "cluster.config.dfs.blocksize: expected a size",
    "config rule across keys": "dfs.blocksize must be a multiple of dfs.bytes-per-checksum",
    "wrong type": "cluster.datanodes: expected a whole number, got 'three'",
    "unknown node": "unknown node 'c2'",
    "node beyond the cluster": "unknown node 'dn7'; the cluster has 3 DataNodes",
    "unknown fault reference": "unknown fault 'crsh' (did you mean 'crash'?)",
    "event not in the catalogue": "unknown event 'client.hflsh' (did you mean 'client.hflush'?)",
    "event logged by another role": "dn.pipeline.error is logged by DataNodes, but 'nn'",
    "replication above DataNodes": "replication 4 needs at least 4 DataNodes, the cluster has 3",
    "nth below 1": "nth: must be at least 1, got 0",
    "negative duration": "a duration cannot be negative (-1s)",
    "duplicate id": "duplicate id 'k'",
    "resume never paused": "resume of 'dn2', which no pause fault stops",
    "crash_client on a non-client": "crash_client needs a client, but 'dn1' is a DataNode",
    "disk fault on a non-DataNode": "corrupt_replica needs a DataNode, but 'c1' is a client",
    "YAML syntax": "the { opened on line 5 is not closed (check for a missing '}' or ',')",
    "YAML indentation": "bad indentation: this line does not line up with the lines above it",
    "YAML indentation of a key": "bad indentation: this key is indented deeper than the keys",
    "YAML ': ' in a value": "a second ': ' on one line: a value that contains ': ' must be quoted",
    "YAML unclosed quote": "a quoted string that is never closed (check for its closing quote)",
    "unknown key of a fault kind": "unknown key 'target'; a partition fault takes: kind, id, at,",
    "missing required key": "missing required key 'name'",
    "trigger after the timeout": "is past the scenario timeout (30s)",
    "waiting cycle": "these faults wait for each other and never fire: a -> b -> c -> a",
}


@pytest.mark.parametrize("what", ERROR_CLASSES)
def test_every_error_class_is_in_the_corpus(what):
    everything = "\n".join(m for p in BROKEN for m in expected_messages(p))
    assert ERROR_CLASSES[what] in everything


def test_all_errors_of_a_file_are_raised_together():
    path = CORPUS / "unknown-keys.yaml"
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert len(caught.value.issues) == len(expected_messages(path)) == 5
    lines = str(caught.value).splitlines()
    assert len(lines) == 5
    assert all(POSITIONED.match(line) for line in lines)
    assert lines[0] == f"{path}:8:1: timout: unknown key 'timout' (did you mean 'timeout'?)"


def test_message_format_names_file_line_column_and_field():
    text = "name: x\nworkload: []\nfaults:\n  - {id: a, kind: kil, target: dn1, at: 1s}\n"
    _, issues = check_scenario_text(text, "s.yaml")
    assert [str(i) for i in issues] == [
        "s.yaml:4:19: faults[0].kind: unknown fault kind 'kil' (did you mean 'kill'?)"]


def test_a_missing_file_is_one_line_without_position(tmp_path):
    path = tmp_path / "absent.yaml"
    _, issues = check_scenario_file(path)
    assert [str(i) for i in issues] == [f"{path}: cannot read: No such file or directory"]


def test_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    _, issues = check_scenario_file(path)
    assert len(issues) == 1 and "not UTF-8 text" in issues[0].message


def test_names_are_unique_across_files(tmp_path):
    body = "workload: [{id: w1, client: c1, op: read, path: /f}]\n"
    (tmp_path / "a.yaml").write_text("name: same\n" + body)
    (tmp_path / "b.yaml").write_text("# b\nname: same\n" + body)
    (tmp_path / "c.yaml").write_text("name: other\n" + body)
    paths = [str(tmp_path / n) for n in ("a.yaml", "b.yaml", "c.yaml")]
    scenarios, issues = validate_files(paths)
    assert [str(i) for i in issues] == [
        f"{paths[1]}:2:1: name: scenario name 'same' is already used by {paths[0]}"]
    assert sorted(scenarios) == [paths[0], paths[2]]


def test_problems_in_one_fault_do_not_hide_or_fake_problems_elsewhere():
    # fault `a` has a wrong kind: its id still counts (the `after: a` of fault b
    # resolves) and its trigger is still checked
    text = """
name: x
workload: [{id: w1, client: c1, op: read, path: /f}]
faults:
  - {id: a, kind: kil, target: dn1, at: {after: zz}}
  - {id: b, kind: kill, target: dn2, at: {after: a}}
"""
    _, issues = check_scenario_text(text, "s.yaml")
    assert [_short(i) for i in issues] == [
        "5:19: faults[0].kind: unknown fault kind 'kil' (did you mean 'kill'?)",
        "5:49: faults[0].at.after: unknown fault 'zz' (faults: a, b)",
    ]


def test_an_unknown_datanode_count_does_not_fake_unknown_datanodes():
    text = """
name: x
cluster: {datanodes: many}
workload: [{id: w1, client: c1, op: read, path: /f}]
faults: [{id: k, kind: kill, target: dn9, at: 1s}]
"""
    _, issues = check_scenario_text(text, "s.yaml")
    assert [_short(i) for i in issues] == [
        "3:22: cluster.datanodes: expected a whole number, got 'many'"]


def test_event_triggers_may_name_harness_events_and_the_harness_node():
    scenario = load_scenario_text("""
name: x
workload: [{id: w1, client: c1, op: read, path: /f}]
faults:
  - {id: a, kind: kill, target: dn1, at: 1s}
  - {id: b, kind: kill, target: dn2,
     at: {event: harness.fault.inject, node: harness, where: {fault: a}, delay: 1s}}
""")
    assert scenario.faults[1].at.where == {"fault": "a"}


def test_quoted_yaml_booleans_are_fine_as_ids():
    scenario = load_scenario_text(
        "name: x\nworkload: [{id: 'no', client: c1, op: read, path: /f}]\n")
    assert scenario.workload[0].id == "no"
