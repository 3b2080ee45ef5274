"""The JSON Schema of the scenario format, generated from the model's field declarations.

Published at harness/schema/scenario.schema.json so that editors (yaml-language-server:
`# yaml-language-server: $schema=...`) complete and check scenarios as they are typed.
The schema checks shapes, names and units; only the loader checks what needs the whole
file (node ids against the cluster, fault references, replication vs DataNodes).
"""

from __future__ import annotations

import json
from pathlib import Path

from .model import SCENARIO

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "scenario.schema.json"
SCHEMA_ID = "https://hdfs-chaos.invalid/schema/scenario.schema.json"


def scenario_json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a scenario file."""
    defs: dict = {}
    root = SCENARIO.object_schema(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "hdfs-chaos scenario",
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    """The schema as published: stable key order, two-space indent, final newline."""
    return json.dumps(scenario_json_schema(), indent=2) + "\n"


def write_schema(path: str | Path = SCHEMA_PATH) -> Path:
    """Write the schema to `path` (by default the published file); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_text(), encoding="utf-8")
    return path


def schema_is_current(path: str | Path = SCHEMA_PATH) -> bool:
    """True when the published file equals what the model generates now."""
    try:
        return Path(path).read_text(encoding="utf-8") == schema_text()
    except OSError:
        return False
