"""The JSON Schema of scenarios: generated from the model, published, and in agreement
with the loader on valid files."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from harness.scenario import FAULT_KINDS, SCHEMA_PATH, scenario_json_schema
from harness.scenario.schema import schema_text
from hdfs_contract.catalogue import EVENTS
from hdfs_contract.config import KEYS

CORPUS = Path(__file__).resolve().parent.parent / "scenario_corpus"
VALID = sorted((CORPUS / "valid").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_published_schema_is_up_to_date():
    assert SCHEMA_PATH.read_text() == schema_text(), (
        "harness/schema/scenario.schema.json is stale: run `hdfs-chaos schema --write`")


def test_published_schema_is_a_valid_draft_2020_12_schema(validator):
    assert validator.schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_scenarios_validate_against_the_schema(validator, path):
    errors = [f"{list(e.absolute_path)}: {e.message}"
              for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def test_the_architecture_example_validates_against_the_schema(validator):
    document = yaml.safe_load((CORPUS / "valid" / "architecture-example.yaml").read_text())
    validator.validate(document)


@pytest.mark.parametrize("name, where", [
    ("unknown-fault-kind", ["faults", 1, "kind"]),
    ("unknown-keys", []),
    ("config-keys", ["cluster", "config"]),
    ("unknown-event", ["faults", 0, "at"]),
    ("op-fields", ["workload", 0]),
    ("negative-durations", ["timeout"]),
])
def test_the_schema_catches_shape_errors_too(validator, name, where):
    text = (CORPUS / f"{name}.yaml").read_text()
    paths = [list(e.absolute_path) for e in validator.iter_errors(yaml.safe_load(text))]
    assert where in paths


def test_the_schema_knows_every_kind_key_and_event():
    schema = scenario_json_schema()
    defs = schema["$defs"]
    assert defs["fault"]["properties"]["kind"]["enum"] == list(FAULT_KINDS)
    assert all(f"fault.{kind}" in defs for kind in FAULT_KINDS)
    config = defs["cluster"]["properties"]["config"]["properties"]
    assert set(config) == set(KEYS)
    assert set(defs["event_trigger"]["properties"]["event"]["enum"]) == EVENTS
    assert schema["required"] == ["name"]
