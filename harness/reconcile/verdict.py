"""The typed view of verdict.json: a run's `Verdict`, its checks' `CheckResult`s and its
expectations' `ExpectItem`s. verdict.json is the contract (outside tools read it;
harness/schema/verdict.schema.json describes it): `to_json()` gives its keys in the
order they have always been written, omitting the optional ones a verdict does not
have, and `from_json(to_json(v)) == v`. Keys this version does not know are kept in
`extra` and written back after the known ones.

No Spark here: the runner and the CLI build and read verdicts without the verifier.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

VERDICT_FILE = "verdict.json"
# shipped with the package (pyproject: harness/schema/*.json)
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "schema", "verdict.schema.json")

CHECK_STATUSES = ("pass", "fail", "skip", "error")
EXPECT_STATUSES = ("pass", "fail", "not_observable")


def schema() -> dict:
    """verdict.json's JSON Schema (draft 2020-12)."""
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


class VerdictError(ValueError):
    """A verdict.json that is not a verdict (one line: what is wrong with it)."""


def _need(data: Any, what: str) -> dict:
    if not isinstance(data, dict):
        raise VerdictError(f"{what} is {type(data).__name__}, not a JSON object")
    return data


@dataclasses.dataclass
class CheckResult:
    """One check's outcome in a run (`checks[]`): status pass | fail | skip | error, the
    rows behind it, and for a check the system cannot judge why it skipped (`reason`) and
    what it said before (`unobserved_status`)."""
    id: str
    status: str
    evidence: list[dict] | None = None        # None: the key is absent
    reason: str | None = None
    unobserved_status: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)
    # how many violations the check found (evidence keeps the first ones); not written
    violations: int = dataclasses.field(default=0, compare=False)

    def to_json(self) -> dict:
        out: dict = {"id": self.id, "status": self.status}
        if self.evidence is not None:
            out["evidence"] = self.evidence
        if self.reason:   # a skip the system cannot expose says why and what it said before
            out["reason"] = self.reason
            out["unobserved_status"] = self.unobserved_status
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Any) -> "CheckResult":
        data = dict(_need(data, "a check"))
        if "id" not in data or "status" not in data:
            raise VerdictError(f"a check without id or status: {sorted(data)}")
        return cls(id=data.pop("id"), status=data.pop("status"),
                   evidence=data.pop("evidence", None), reason=data.pop("reason", None),
                   unobserved_status=data.pop("unobserved_status", None), extra=data)

    @property
    def failed(self) -> bool:
        return self.status == "fail"


@dataclasses.dataclass
class ExpectItem:
    """One item of the scenario's `expect:` block as judged (`expect[]`): what it asked,
    status pass | fail | not_observable, and the events behind it (at most
    evidence.MAX_ITEMS; `evidence_more` says how many more)."""
    what: str
    status: str
    evidence: list[dict] | None = None        # None: the key is absent
    evidence_more: int | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict:
        out: dict = {"what": self.what, "status": self.status}
        if self.evidence is not None:
            out["evidence"] = self.evidence
        if self.evidence_more is not None:
            out["evidence_more"] = self.evidence_more
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Any) -> "ExpectItem":
        data = dict(_need(data, "an expect item"))
        if "what" not in data or "status" not in data:
            raise VerdictError(f"an expect item without what or status: {sorted(data)}")
        return cls(what=data.pop("what"), status=data.pop("status"),
                   evidence=data.pop("evidence", None),
                   evidence_more=data.pop("evidence_more", None), extra=data)

    @property
    def failed(self) -> bool:
        return self.status == "fail"


@dataclasses.dataclass
class Verdict:
    """A run's verdict. Optional keys are absent from the JSON when None: `system` and
    `system_version` (written together, by the verifier), `exercised` (by the verifier),
    `metrics` (absent only where no run folder exists), `error` (a verdict without
    checks: the run was interrupted or the verifier broke), `warnings`, `run_status` and
    `run_errors` (a run that did not complete, or completed with errors). `run_dir` is
    where the run lives: never written to verdict.json."""
    scenario: str | None
    passed: bool
    run_id: str | None = None
    system: str | None = None
    system_version: str | None = None
    checks: list[CheckResult] = dataclasses.field(default_factory=list)
    exercised: list[str] | None = None
    expect: list[ExpectItem] = dataclasses.field(default_factory=list)
    metrics: dict | None = None
    error: str | None = None
    warnings: list[str] | None = None
    run_status: str | None = None
    run_errors: list[str] | None = None
    extra: dict = dataclasses.field(default_factory=dict)
    run_dir: str | None = dataclasses.field(default=None, compare=False)

    # -- the JSON ----------------------------------------------------------------------

    def to_json(self) -> dict:
        """verdict.json's object, keys in the order they are written."""
        out: dict = {"scenario": self.scenario}
        if self.run_id is not None:
            out["run_id"] = self.run_id
        if self.system is not None:
            out["system"] = self.system
            out["system_version"] = self.system_version
        out["passed"] = self.passed
        out["checks"] = [c.to_json() for c in self.checks]
        if self.exercised is not None:
            out["exercised"] = self.exercised
        out["expect"] = [e.to_json() for e in self.expect]
        for key in ("metrics", "error", "warnings", "run_status", "run_errors"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Any, run_dir: str | None = None) -> "Verdict":
        data = dict(_need(data, "a verdict"))
        if "passed" not in data:
            raise VerdictError(f"a verdict without 'passed': {sorted(data)}")
        # never in verdict.json; a dict given here may name it
        run_dir = run_dir if run_dir is not None else data.pop("run_dir", None)
        data.pop("run_dir", None)
        checks, expect = data.pop("checks", []), data.pop("expect", [])
        if not isinstance(checks, list) or not isinstance(expect, list):
            raise VerdictError("a verdict's checks and expect must be lists")
        known = {f.name for f in dataclasses.fields(cls)} - {"checks", "expect", "extra",
                                                             "run_dir"}
        kw = {k: data.pop(k) for k in list(data) if k in known}
        kw.setdefault("scenario", None)
        return cls(checks=[CheckResult.from_json(c) for c in checks],
                   expect=[ExpectItem.from_json(e) for e in expect],
                   extra=data, run_dir=run_dir, **kw)

    def dumps(self, indent: int = 2, default=None) -> str:
        return json.dumps(self.to_json(), indent=indent, default=default)

    def write(self, run_dir: str, indent: int = 2, default=None) -> str:
        """Write `run_dir`/verdict.json (atomically); returns its path."""
        path = os.path.join(run_dir, VERDICT_FILE)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=indent, default=default)
            f.write("\n")
        os.replace(tmp, path)
        return path

    @classmethod
    def read(cls, run_dir: str) -> "Verdict | None":
        """`run_dir`/verdict.json, or None where there is none."""
        path = os.path.join(run_dir, VERDICT_FILE)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except ValueError as e:
                raise VerdictError(f"{path}: not JSON: {e}") from None
        return cls.from_json(data, run_dir=run_dir)

    # -- what readers ask --------------------------------------------------------------

    @property
    def failed_checks(self) -> list[str]:
        return [c.id for c in self.checks if c.status == "fail"]

    @property
    def unmet(self) -> list[ExpectItem]:
        return [e for e in self.expect if e.status == "fail"]

    def exercised_ids(self) -> list[str]:
        """The checks this run exercised: its `exercised` list, or, in a verdict written
        before it had one, the checks that passed or failed."""
        if self.exercised is not None:
            return list(self.exercised)
        return [c.id for c in self.checks if c.status in ("pass", "fail")]

    def add_warning(self, text: str) -> None:
        if self.warnings is None:
            self.warnings = []
        self.warnings.append(text)
