"""Every field of a scenario wrong in every way (issue 20): a corpus generated from the
valid `every-feature.yaml` and the published JSON Schema, each file refused by
`hdfs-chaos validate` with exit 2 and only `FILE:LINE[:COL]: ...` lines, never a
traceback.

For every place in the document (every mapping value and list item, at any depth) the
generator tries: each other JSON type in its place (string, integer, negative, float,
boolean, null, list, mapping, a huge number, an empty string), removing it, and adding
an unknown key beside it. A mutation the JSON Schema still accepts is left out (the
hand-written corpus covers the semantic mistakes); the rest must be refused. Plus YAML
that is not a scenario at all (syntax errors, tabs, a list, a scalar, binary bytes,
an empty file, duplicate keys).
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from harness import cli

ROOT = Path(__file__).resolve().parents[2]
VALID = ROOT / "tests" / "scenario_corpus" / "valid" / "every-feature.yaml"
SCHEMA = json.loads((ROOT / "harness" / "schema" / "scenario.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

REPLACEMENTS = ["x", "", 7, -1, 0, 1.5, True, None, [], [1, "a"], {}, {"k": "v"}, 10 ** 30,
                "99999999999TiB", "-5s"]


def _places(doc, path=()):
    """Every (path, value) of the document below the root."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path + (k,), v
            yield from _places(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield path + (i,), v
            yield from _places(v, path + (i,))


def _set(doc, path, value=..., delete=False, add=None):
    out = copy.deepcopy(doc)
    node = out
    for p in path[:-1]:
        node = node[p]
    if delete:
        del node[path[-1]]
    elif add is not None:
        target = node[path[-1]]
        if not isinstance(target, dict):
            return None
        target["no_such_field"] = add
    else:
        node[path[-1]] = value
    return out


def mutations() -> list[tuple[str, dict]]:
    base = yaml.safe_load(VALID.read_text())
    assert VALIDATOR.is_valid(base), "every-feature.yaml no longer matches the schema"
    out, seen = [], set()
    for path, value in _places(base):
        where = ".".join(map(str, path))
        # null where a key may be left out means "not given" to the loader (an empty
        # `key:` in YAML), so it is tried only where the key is required
        optional = VALIDATOR.is_valid(_set(base, path, delete=True))
        candidates = [(f"{where}={json.dumps(r)}", _set(base, path, r)) for r in REPLACEMENTS
                      if (type(r) is not type(value) or r != value)
                      and not (r is None and optional)]
        candidates.append((f"{where} removed", _set(base, path, delete=True)))
        candidates.append((f"{where} + unknown key", _set(base, path, add=1)))
        for name, doc in candidates:
            if doc is None or VALIDATOR.is_valid(doc):
                continue
            key = json.dumps(doc, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append((name, doc))
    # the root itself
    for key in ("name", "cluster", "workload", "faults", "expect"):
        doc = copy.deepcopy(base)
        doc.pop(key, None)
        if not VALIDATOR.is_valid(doc):
            out.append((f"{key} removed", doc))
    return out


ALL_MUTATIONS = mutations()
# all ~2900 files take minutes; the unit suite tries every 4th (each place and kind is
# still reached through its neighbours), HDFS_CHAOS_FULL_CORPUS=1 tries them all
MUTATIONS = ALL_MUTATIONS if os.environ.get("HDFS_CHAOS_FULL_CORPUS") else ALL_MUTATIONS[::4]

NOT_SCENARIOS = {
    "syntax-error.yaml": b"name: x\nworkload: [\n  {id: w1\n",
    "tab-indent.yaml": b"name: x\ncluster:\n\tdatanodes: 3\n",
    "a-list.yaml": b"- name: x\n- name: y\n",
    "a-scalar.yaml": b"just words\n",
    "empty.yaml": b"",
    "binary.yaml": bytes(range(256)) * 4,
    "latin1.yaml": "name: caf\xe9\n".encode("latin-1"),
    "duplicate-key.yaml": b"name: a\nname: b\n",
    "null-doc.yaml": b"~\n",
    "self-alias.yaml": b"name: x\nworkload: &a [*a]\n",
    "huge-int.yaml": b"name: x\nseed: " + b"9" * 5000 + b"\n",
    "two-docs.yaml": b"name: a\n---\nname: b\n",
}


def check_refused(capsys, path: Path) -> str:
    code = cli.main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == 2, f"{path.name}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err + out, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines, f"{path.name}: refused without a word"
    pattern = re.compile(rf"^{re.escape(str(path))}:\d+(:\d+)?: \S")
    bad = [ln for ln in lines if not pattern.match(ln)]
    assert not bad, f"{path.name}: lines without FILE:LINE: {bad}"
    return err


def test_the_generated_corpus_is_large():
    assert len(ALL_MUTATIONS) >= 1000, len(ALL_MUTATIONS)


@pytest.mark.parametrize("name,doc", MUTATIONS, ids=[m[0][:80] for m in MUTATIONS])
def test_every_field_wrong_is_refused_with_file_and_line(tmp_path, capsys, name, doc):
    path = tmp_path / "broken.yaml"
    path.write_text(f"# {name}\n" + yaml.safe_dump(doc, sort_keys=False))
    check_refused(capsys, path)


@pytest.mark.parametrize("fname", sorted(NOT_SCENARIOS))
def test_yaml_that_is_no_scenario_is_refused_with_file_and_line(tmp_path, capsys, fname):
    path = tmp_path / fname
    path.write_bytes(NOT_SCENARIOS[fname])
    check_refused(capsys, path)
