"""The explorer (issue 19): systematic fault-schedule exploration, FATE-style.

    points.py     failure points of a run (event, node, occurrence, filters)
    schedules.py  faults applicable at a point, schedules as plain scenario YAML,
                  the novelty-first queue
    shrink.py     shrinking candidates of a failing schedule
    engine.py     the exploration loop: workers, batched verification, state, findings
    report.py     the HTML summary
`hdfs-chaos explore BASE.yaml` (harness.cli) drives engine.explore().
"""
