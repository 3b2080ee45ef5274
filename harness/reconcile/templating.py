"""The HTML of the reports: the Jinja2 environment over templates/*.html.j2 (run report,
suite index), and the few views of a verdict that both reports show.

Templates hold the markup; report.py and suite.py hand them plain data. Autoescape is on
for every template: evidence and log lines are quoted from the run's logs and may hold
anything, `<` included.
"""

from __future__ import annotations

import functools
import json

import jinja2

# a check that found cases to judge passes or fails; skip means nothing exercised it,
# error that the check itself broke (it proved nothing either)
EXERCISED_STATUSES = ("pass", "fail")


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.reconcile", "templates"),
        autoescape=True,
        # a misspelt name in a template is an error in the tests, not an empty cell
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["json"] = _json
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)


def _json(value, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, default=str)


def exercised(verdict: "Verdict") -> list[str]:
    """The ids of the checks this run exercised: the verdict's own `exercised` list, or,
    in a verdict written before it had one, the checks that passed or failed."""
    return [str(c) for c in verdict.exercised_ids()]


def check_title(check_id: str) -> str:
    from .checks import BY_ID
    c = BY_ID.get(check_id)
    return c.title if c is not None else ""
