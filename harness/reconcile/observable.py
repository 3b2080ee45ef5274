"""Which system and release a run folder was made on, and the checks that release
cannot judge: a check whose inputs the system's events do not expose (its
`Capabilities.unobservable`, e.g. a Hadoop release's logs) is reported as `skip`
with its reason, never as a silent pass (nor as a failure of facts nobody logged).

The system comes from the run's own log (`harness.run.start` `system`,
`system_version`, written by the runner); a folder made before those fields existed
falls back to its scenario.yaml's `cluster.system` / `cluster.hadoop_version`. So does
whether the Hadoop agent ran (`hadoop_agent`, `cluster.hadoop_agent`): its events feed
the checks listed in harness/systems/hadoop/logmap.AGENT_OBSERVES, which are then judged.
"""

from __future__ import annotations

import json
import os

from .verdict import CheckResult

NOT_OBSERVABLE = "not_observable"   # the expect item status of a listed check so skipped


def run_info(run_dir: str, scenario: dict | None = None) -> tuple[str, str | None, bool]:
    """(system, release, agent) of the run in `run_dir`: ("minihdfs", None, False) unless
    it says; `agent` is whether the Hadoop agent was in its JVMs."""
    cluster = (scenario or {}).get("cluster") or {}
    if not isinstance(cluster, dict):
        cluster = {}
    path = os.path.join(run_dir, "events", "harness.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "harness.run.start":
                    if ev.get("system"):
                        agent = ev.get("hadoop_agent")
                        if agent is None:       # logged before the runner wrote it
                            agent = cluster.get("hadoop_agent")
                        return str(ev["system"]), ev.get("system_version"), agent is True
                    break
    except OSError:
        pass
    if cluster.get("system"):
        version = cluster.get("hadoop_version")
        return (str(cluster["system"]), None if version is None else str(version),
                cluster.get("hadoop_agent") is True)
    return "minihdfs", None, False


def run_system(run_dir: str, scenario: dict | None = None) -> tuple[str, str | None]:
    """(system, release) of the run in `run_dir`: ("minihdfs", None) unless it says."""
    return run_info(run_dir, scenario)[:2]


def skip_reason(check: str, system: str, release: str | None,
                agent: bool = False) -> str | None:
    """Why `check` cannot be judged on `system` `release` (with the Hadoop agent on or
    not), or None if it can."""
    return unobservable(system, release, agent).get(check)


def unobservable(system: str, release: str | None, agent: bool = False) -> dict[str, str]:
    """check id -> why `system` `release` cannot feed it (the system's capabilities; a
    system this tree does not know judges every check, as before it had any)."""
    from harness.systems import SystemError_, get_system
    try:
        sut = get_system(system, release)
    except SystemError_:
        return {}
    return dict(sut.capabilities({"hadoop_agent": agent}).unobservable)


def apply_skips(checks: list[CheckResult], system: str,
                release: str | None, agent: bool = False) -> list[CheckResult]:
    """The checks with each one the release cannot judge turned into a skip with its
    reason; what the check would have said on the partial events is kept
    (`unobserved_status`) so that nothing it found is lost from the verdict."""
    out = []
    skips = unobservable(system, release, agent)
    for c in checks:
        why = skips.get(c.id)
        if why is None:
            out.append(c)
        else:
            out.append(CheckResult(c.id, "skip", c.evidence, reason=why,
                                   unobserved_status=c.status, violations=c.violations))
    return out
