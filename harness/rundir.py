"""What a results folder must hold before `verify` or `report` spends a JVM on it.

`check_run_dir(path)` returns one line saying what is wrong with a
folder given as a run (and how to fix it), or None. It looks only at the shape the
runner writes (docs/scenarios.md, "Results of a run"): `events/*.jsonl`, a `scenario.yaml` that
loads, and `final_state.json` / `verdict.json` that are JSON objects where present.
Damaged event lines are not its business: the verifier counts them and check I1 judges
them.
"""

from __future__ import annotations

import json
import os


def _json_problem(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    except ValueError as e:
        return f"is not JSON (line {getattr(e, 'lineno', '?')}: {getattr(e, 'msg', e)})"
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    return None if isinstance(doc, dict) else "is not a JSON object"


def check_run_dir(path: str) -> str | None:
    """One line on what keeps `path` from being verified (or reported), or None."""
    if not os.path.isdir(path):
        return f"{path}: not a folder (give the results/<run-id> folder of a run)"
    events = os.path.join(path, "events")
    logs = sorted(n for n in os.listdir(events) if n.endswith(".jsonl")) \
        if os.path.isdir(events) else []
    if not logs:
        return (f"{path}: no events/*.jsonl in it, so it is not the folder of a run "
                "(`hdfs-chaos run` writes results/<run-id>/events/)")
    scenario = os.path.join(path, "scenario.yaml")
    if not os.path.isfile(scenario):
        return (f"{path}: scenario.yaml is missing; the checks need the scenario the run "
                "ran (copy it back, or run the scenario again)")
    from harness.scenario import check_scenario_file
    _, issues = check_scenario_file(scenario)
    if issues:
        return (f"{path}: scenario.yaml does not load ({issues[0]}); restore the file as "
                "the run wrote it")
    for name, fix in (("final_state.json", "delete it (the checks that need it then skip) "
                       "or run the scenario again"),
                      ("verdict.json", f"delete it and run `hdfs-chaos verify {path}`")):
        doc = os.path.join(path, name)
        if os.path.exists(doc):
            problem = _json_problem(doc)
            if problem:
                return f"{path}: {name} {problem}: {fix}"
    return None


def check_run_dirs(paths: list[str]) -> str | None:
    """The first problem among several folders (one line), or None."""
    for p in paths:
        problem = check_run_dir(p)
        if problem:
            return problem
    return None
