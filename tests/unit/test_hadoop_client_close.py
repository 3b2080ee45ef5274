"""The Hadoop workload client's close() (HdfsChaosClient.Stream.close), compiled against
the cached 3.4.2 jars and driven without a cluster: a close that fails on the
DataStreamer's error marks the stream failed (client.stream.error), a RemoteException of
the NameNode's answer to close's own complete() does not."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess

import pytest

import harness.systems.hadoop as hadoop
from harness.systems.hadoop import fetch

VERSION = "3.4.2"

# Stream.close on a stream whose close() throws a RemoteException; "streamer" gives it
# the stack trace ipc.Client fills in the DataStreamer's thread, "complete" the caller's
PROBE = """
import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.ipc.RemoteException;

public class CloseProbe {
    public static void main(String[] a) throws Exception {
        Configuration conf = new Configuration();
        conf.setBoolean("fs.automatic.close", false);
        DistributedFileSystem fs = new DistributedFileSystem();
        fs.initialize(java.net.URI.create("hdfs://127.0.0.1:1"), conf);   // never called
        HdfsChaosClient client = new HdfsChaosClient(
            fs, new HdfsChaosClient.EventLog(a[0], "c1", "client"), 0);
        final RemoteException e = new RemoteException(
            "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException", "lease expired");
        if (a[1].equals("streamer")) {
            e.setStackTrace(new StackTraceElement[]{
                new StackTraceElement("org.apache.hadoop.ipc.Client", "call", "Client.java", 1),
                new StackTraceElement("org.apache.hadoop.hdfs.DataStreamer",
                                      "addDatanode2ExistingPipeline", "DataStreamer.java", 1),
                new StackTraceElement("org.apache.hadoop.hdfs.DataStreamer", "run",
                                      "DataStreamer.java", 1)});
        }
        OutputStream failing = new OutputStream() {
            @Override public void write(int b) { }
            @Override public void close() throws IOException { throw e; }
        };
        HdfsChaosClient.Stream s = client.new Stream(
            new FSDataOutputStream(failing, null), "/f", "create");
        try {
            s.close();
        } catch (RemoteException expected) {
            Runtime.getRuntime().halt(0);
        }
        Runtime.getRuntime().halt(3);
    }
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    lib = fetch.lib_dir(VERSION)
    if shutil.which("javac") is None or not glob.glob(str(lib / "hadoop-common-*.jar")):
        pytest.skip(f"needs javac and the cached Hadoop {VERSION} jars ({lib})")
    work = tmp_path_factory.mktemp("close-probe")
    classes = work / "classes"
    subprocess.run(["bash", os.path.join(hadoop.JAVA_DIR, "build.sh"), str(lib), str(classes)],
                   check=True, capture_output=True)
    (work / "CloseProbe.java").write_text(PROBE)
    cp = f"{classes}:{lib}/*"
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes),
                    str(work / "CloseProbe.java")], check=True, capture_output=True)

    def run(kind: str) -> list[dict]:
        events = work / f"{kind}.jsonl"
        proc = subprocess.run(["java", "-cp", cp, "CloseProbe", str(events), kind],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return [json.loads(line) for line in events.read_text().splitlines()]
    return run


def test_a_close_failing_on_the_datastreamers_remote_exception_fails_the_stream(probe):
    events = probe("streamer")
    names = [e["event"] for e in events]
    assert names == ["client.stream.open", "client.stream.error", "client.close"]
    error, close = events[1], events[2]
    assert error["error"] == "LeaseExpiredException" and error["path"] == "/f"
    assert close["ok"] is False and close["error"] == "LeaseExpiredException"


def test_a_remote_exception_of_close_own_complete_does_not_fail_the_stream(probe):
    events = probe("complete")
    assert [e["event"] for e in events] == ["client.stream.open", "client.close"]
    assert events[1]["ok"] is False and events[1]["error"] == "LeaseExpiredException"
