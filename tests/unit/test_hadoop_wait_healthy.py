"""A Hadoop cluster is healthy when the NameNode counts every DataNode live and has left
safe mode: a restarted NameNode counts a DataNode live at its registration, before its
block report, and refuses reads until the reports are in. A small HTTP server plays the
NameNode's /jmx servlet."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hdfs_contract.errors import ClusterError
from harness.systems.hadoop.cluster import HadoopCluster
from harness.systems.hadoop.state import java_failure


def _serve(states):
    """/jmx answers FSNamesystemState with 3 live DataNodes and the next FSState of
    `states` (the last one repeats); returns the server and the list of answers."""
    answered = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            state = states[min(len(answered), len(states) - 1)]
            answered.append(state)
            body = json.dumps({"beans": [{"NumLiveDataNodes": 3, "FSState": state}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, answered


def _cluster(tmp_path, server):
    c = HadoopCluster(str(tmp_path / "c"), "3.4.2", 3)
    c.nodes["nn"]["http"] = f"127.0.0.1:{server.server_address[1]}"
    return c


def test_live_datanodes_in_safe_mode_are_not_yet_healthy(tmp_path):
    server, answered = _serve(["safeMode"] * 3 + ["Operational"])
    try:
        _cluster(tmp_path, server).wait_healthy(timeout=30)
    finally:
        server.shutdown()
    assert answered[:4] == ["safeMode"] * 3 + ["Operational"]


def test_a_namenode_that_stays_in_safe_mode_fails_the_wait_and_says_so(tmp_path):
    server, _ = _serve(["safeMode"])
    try:
        with pytest.raises(ClusterError, match=r"3 of 3 DataNodes live, NameNode safeMode"):
            _cluster(tmp_path, server).wait_healthy(timeout=1)
    finally:
        server.shutdown()


def test_a_java_failure_names_its_exception_before_the_stack_tail():
    stack = "\n".join(f"\tat org.apache.hadoop.X.y(X.java:{i})" for i in range(60))
    err = ("log4j:WARN No appenders\nException in thread \"main\" org.apache.hadoop.ipc."
           "RemoteException(org.apache.hadoop.hdfs.server.namenode.SafeModeException): "
           "Zero blocklocations for /kept. Name node is in safe mode.\n" + stack)
    short = java_failure(err)
    assert short.startswith("Exception in thread \"main\"") and "Zero blocklocations" in short
    assert short.endswith("(X.java:59)") and len(short) < 800
    assert java_failure("java.io.IOException: x") == "java.io.IOException: x"
