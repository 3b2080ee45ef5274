"""The leak census on the local backend: a harness SIGKILLed in each phase of a run
leaves no process, no listening port, no Toxiproxy proxy (issue 20).

Each case runs `hdfs-chaos run` as its own process, kills it with SIGKILL when the run
reaches the phase, and gives what it started a few seconds to go (on a loaded 2-core
machine a SIGKILLed Python node takes well under one; the JVM of the verify phase exits
when its stdin closes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hdfs_contract import lifeline
from tests.census import CENSUS_SCENARIO, PHASES, Harness, alive, wait_clean

# Seconds for everything of a killed run to go. Nodes and Toxiproxy die with the harness
# (PR_SET_PDEATHSIG); the verifier's JVM exits when PySpark's pipe to its stdin closes,
# after Spark's shutdown hooks, which take seconds (docs/reliability.md).
WITHIN = {"verify": 20.0}
WITHIN_DEFAULT = 5.0

pytestmark = pytest.mark.skipif(not lifeline.supported(), reason="needs Linux prctl")


@pytest.mark.parametrize("phase", PHASES)
def test_sigkill_of_the_harness_leaves_nothing(tmp_path, phase):
    scenario = tmp_path / "leak-census.yaml"
    scenario.write_text(CENSUS_SCENARIO)
    results = tmp_path / "results"
    results.mkdir()
    harness = Harness(str(scenario), str(results))
    harness.kill_at(phase)
    assert any("minihdfs.node" in c for c in harness.seen.values()), "the census saw no node"
    within = WITHIN.get(phase, WITHIN_DEFAULT)
    took, left = wait_clean(harness, within)
    print(f"census {phase}: {len(harness.seen)} processes and {len(harness.ports)} ports "
          f"seen, all gone {took:.2f}s after SIGKILL")
    assert not left, f"left {within:.0f}s after SIGKILL in phase {phase}: " + "; ".join(left)


CHILD = """
import sys, threading, time
from hdfs_contract import lifeline
box = []
t = threading.Thread(target=lambda: box.append(lifeline.popen(["sleep", "300"])))
t.start(); t.join()          # the forking thread is gone: the child must live on
print(box[0].pid, flush=True)
time.sleep(300)
"""


def test_child_started_from_a_finished_thread_lives_until_its_parent_is_killed():
    """PDEATHSIG fires when the forking *thread* exits: a node restarted by a Timer
    thread must survive that thread, and die with the harness."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    parent = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, env=env,
                              start_new_session=True)
    try:
        pid = int(parent.stdout.readline())
        with open(f"/proc/{pid}/stat") as f:
            key = (pid, f.read().rsplit(") ", 1)[1].split()[19])
        time.sleep(0.5)
        assert alive(key), "the child died with the thread that started it"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 5
        while alive(key) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(key), "the child outlived its SIGKILLed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
