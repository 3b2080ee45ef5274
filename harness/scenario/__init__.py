"""Scenarios: the YAML format of ARCHITECTURE.md as dataclasses, its loader and validator,
and its JSON Schema.

    scenario = load_scenario("scenarios/client-crash-after-hflush.yaml")

raises `ScenarioError` (its `issues` print as `FILE:LINE:COL: field: message`) when the
file cannot run; otherwise every value is checked, durations are seconds and sizes bytes.
"""

from .issues import Issue, ScenarioError
from .loader import (check_scenario_file, check_scenario_text, load_scenario,
                     load_scenario_text, validate_files)
from .model import (CHECK_IDS, FAULT_KINDS, OPERATIONS, AfterFault, AtTime, BandwidthFault,
                    Cluster, CorruptReplicaFault, CountBound, CrashClientFault,
                    CutAfterBytesFault, DeleteReplicaFault, DisconnectFault, Expect, Fault,
                    FileExpectation, HealFault, KillFault, LatencyFault, LinkFault, OnEvent,
                    Operation, PartitionFault, PauseFault, RecoveryCounts, ReplicaFault,
                    ResetPeerFault, RestartFault, ResumeFault, Scenario, SlicerFault, Trigger,
                    between_links)
from faults.kinds import kind_names

from .schema import SCHEMA_PATH, scenario_json_schema, schema_is_current, write_schema

__all__ = [
    "Issue", "ScenarioError", "check_scenario_file", "check_scenario_text", "load_scenario",
    "load_scenario_text", "validate_files", "CHECK_IDS", "FAULT_KINDS", "OPERATIONS",
    "AfterFault", "AtTime", "BandwidthFault", "Cluster", "CorruptReplicaFault", "CountBound",
    "CrashClientFault", "CutAfterBytesFault", "DeleteReplicaFault", "DisconnectFault", "Expect",
    "Fault", "FileExpectation", "HealFault", "KillFault", "LatencyFault", "LinkFault", "OnEvent",
    "Operation", "PartitionFault", "PauseFault", "RecoveryCounts", "ReplicaFault",
    "ResetPeerFault", "RestartFault", "ResumeFault",
    "Scenario", "SlicerFault", "Trigger", "between_links", "SCHEMA_PATH", "scenario_json_schema",
    "schema_is_current", "write_schema", "kind_names",
]
