"""Findings of the explorer on real Hadoop that no JIRA names yet, each a scenario in
docs/findings/: its run on an affected release must fail the check that caught it, for
the reason the triage gives (docs/hadoop.md "Findings on Hadoop"). If the harness stopped
seeing the bug, this test fails. Real JVMs, no mocks; skipped without Java or the jars."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest

from tests import hadoop_support as hs

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.spark,
              pytest.mark.timeout(600)]

FINDINGS = Path(__file__).resolve().parent.parent.parent / "docs" / "findings"


def test_a_restarted_namenode_reissues_the_stamp_of_an_unfinished_append_setup(tmp_path):
    """B1 fails: the restarted NameNode's lease recovery takes as recovery id the stamp
    updateBlockForPipeline gave the append before the restart (logged, then lost to the
    impending stamp of its replay), and the DataNodes refuse that recovery."""
    hs.fetched_or_skip(hs.RELEASE)
    from harness.runner import run_scenario
    verdict = run_scenario(str(FINDINGS / "nn-restart-reissues-gs.yaml"), "local",
                           str(tmp_path), hadoop_version=hs.RELEASE)
    checks = {c.id: c for c in verdict.checks}
    assert not verdict.passed and checks["B1"].status == "fail", \
        {k: c.status for k, c in checks.items()}
    bad = [e for e in checks["B1"].evidence if e.get("event") == "nn.recovery.start"]
    assert bad and all(e["recovery_id"] <= e["max_prior_gs"] for e in bad), bad
    [run] = glob.glob(str(tmp_path / "nn-restart-reissues-gs-*"))
    refused = [ln for dn in ("dn1", "dn2", "dn3")
               for ln in open(os.path.join(run, "logs", f"{dn}.log"), errors="replace")
               if "THIS IS NOT SUPPOSED TO HAPPEN: replica.getGenerationStamp() >= recoveryId"
               in ln]
    assert refused
    # the stamp was handed out before the restart: the DataNodes' append replicas have it
    events = [json.loads(ln) for f in glob.glob(os.path.join(run, "events", "dn*.jsonl"))
              for ln in open(f) if ln.strip()]
    appended = {e["gs"] for e in events
                if e["event"] == "dn.replica.state" and e.get("reason") == "append"}
    assert {e["recovery_id"] for e in bad} & appended
