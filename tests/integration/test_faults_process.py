"""Node faults on real processes through LocalProcessControl: a small Python loop that
appends a byte to a file every 20 ms stands in for a node, so progress is measurable."""

import os
import signal
import subprocess
import sys
import time

import pytest

from faults.base import harness_log
from faults.process import CrashClient, Kill, LocalProcessControl, Pause, Restart, Resume
from hdfs_contract.events import read_events

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TICKER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
while True:
    os.write(fd, b".")
    time.sleep(0.02)
"""
STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture
def nodes(tmp_path):
    """Starts tickers by node id; every process started is killed at the end."""
    started = []

    def start(node, script=TICKER):
        proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / node)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        started.append(proc)
        return proc

    start.progress = lambda node: os.path.getsize(tmp_path / node) \
        if os.path.exists(tmp_path / node) else 0
    start.started = started
    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        proc.wait()
        proc.stdout.close()


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def grows(nodes, node, within=5.0):
    before = nodes.progress(node)
    return wait_for(lambda: nodes.progress(node) > before + 2, within)


@pytest.fixture
def log(tmp_path):
    return harness_log(str(tmp_path / "harness.jsonl"))


def event_names(log):
    return [e["event"] for e in read_events(log.path)]


def test_kill_ends_the_process_and_heal_starts_it_again(nodes, log):
    control = LocalProcessControl({"dn1": nodes("dn1")}, restart=nodes)
    first = control.process("dn1")
    assert grows(nodes, "dn1")
    fault = Kill("dn1", control=control, log=log)
    fault.inject()
    assert first.poll() == -signal.SIGKILL
    size = nodes.progress("dn1")
    time.sleep(0.2)
    assert nodes.progress("dn1") == size
    fault.heal()
    assert control.process("dn1") is not first and control.running("dn1")
    assert grows(nodes, "dn1")
    assert event_names(log) == ["harness.fault.inject", "harness.node.kill",
                                "harness.node.start", "harness.fault.heal"]


def test_pause_stops_progress_and_heal_continues_it(nodes, log):
    control = LocalProcessControl({"dn2": nodes("dn2")})
    assert grows(nodes, "dn2")
    fault = Pause("dn2", control=control, log=log)
    fault.inject()
    time.sleep(0.1)  # a write already under way may still land
    frozen = nodes.progress("dn2")
    time.sleep(0.5)
    assert nodes.progress("dn2") == frozen
    assert control.running("dn2")  # paused is not dead
    fault.heal()
    assert grows(nodes, "dn2")
    assert event_names(log) == ["harness.fault.inject", "harness.node.pause",
                                "harness.node.resume", "harness.fault.heal"]


def test_a_resume_fault_continues_a_paused_node(nodes, log):
    control = LocalProcessControl({"dn3": nodes("dn3")})
    Pause("dn3", control=control, log=log).inject()
    time.sleep(0.1)
    frozen = nodes.progress("dn3")
    time.sleep(0.3)
    assert nodes.progress("dn3") == frozen
    Resume("dn3", control=control, log=log).inject()
    assert grows(nodes, "dn3")


def test_restart_brings_the_node_back_after_down(nodes, log):
    control = LocalProcessControl({"nn": nodes("nn")}, restart=nodes)
    first = control.process("nn")
    fault = Restart("nn", down=0.3, control=control, log=log)
    start = time.monotonic()
    fault.inject()  # returns at once; the node is down now
    assert first.poll() == -signal.SIGTERM
    assert fault.wait(10)
    assert time.monotonic() - start >= 0.3
    assert control.process("nn") is not first and control.running("nn")
    assert grows(nodes, "nn")
    assert event_names(log) == ["harness.fault.inject", "harness.node.stop",
                                "harness.node.start", "harness.fault.heal"]


def test_crash_client_kills_and_heal_leaves_it_dead(nodes, log):
    client = nodes("c1")
    control = LocalProcessControl({"c1": client}, restart=nodes)
    fault = CrashClient("c1", control=control, log=log)
    fault.inject()
    assert client.poll() == -signal.SIGKILL
    fault.heal()
    assert control.process("c1") is client and not control.running("c1")


def test_graceful_stop_of_a_paused_node_still_ends_it(nodes):
    control = LocalProcessControl({"dn1": nodes("dn1")}, stop_timeout=5)
    control.pause("dn1")
    control.stop("dn1")  # SIGTERM stays pending on a stopped process without SIGCONT
    assert control.process("dn1").poll() == -signal.SIGTERM


def test_graceful_stop_kills_a_node_that_ignores_sigterm(nodes):
    proc = nodes("dn1", STUBBORN)
    assert proc.stdout.readline() == b"ready\n"
    control = LocalProcessControl({"dn1": proc}, stop_timeout=0.5)
    control.stop("dn1")
    assert proc.poll() == -signal.SIGKILL


def test_start_of_a_running_node_does_nothing(nodes):
    control = LocalProcessControl({"dn1": nodes("dn1")}, restart=nodes)
    first = control.process("dn1")
    control.start("dn1")
    assert control.process("dn1") is first and len(nodes.started) == 1
