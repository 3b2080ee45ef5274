"""The Spark Connect server's bookkeeping (harness/reconcile/connect.py) and which Spark a
command uses: an explicit --remote, `off`, the server of `spark up`, or a local one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from harness.reconcile import connect


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(connect.REMOTE_ENV, raising=False)
    return tmp_path


def _write_state(pid: int, port: int) -> None:
    os.makedirs(connect.state_dir(), exist_ok=True)
    with open(os.path.join(connect.state_dir(), "server.json"), "w") as f:
        json.dump({"pid": pid, "port": port, "log": "x.log", "started": 0.0,
                   "pyspark": "4"}, f)


def test_no_server_no_remote():
    assert connect.status() is None
    assert connect.remote_url() is None


def test_explicit_remote_wins_and_off_means_local(monkeypatch):
    monkeypatch.setenv(connect.REMOTE_ENV, "sc://spark.example:15002")
    assert connect.remote_url() == "sc://spark.example:15002"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        _write_state(os.getpid(), listener.getsockname()[1])
        monkeypatch.setenv(connect.REMOTE_ENV, "off")
        assert connect.remote_url() is None


def test_a_running_server_that_answers_is_used():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        _write_state(os.getpid(), port)     # a live pid stands for the server
        assert connect.remote_url() == f"sc://127.0.0.1:{port}"
    # the port no longer answers (the server is still starting or hung): a local session
    assert connect.remote_url() is None


def test_a_dead_servers_state_is_forgotten():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _write_state(gone.pid, 15002)
    assert connect.status() is None
    assert not os.path.exists(os.path.join(connect.state_dir(), "server.json"))
    assert connect.down() is None


def test_the_server_runs_the_verifiers_settings_with_the_full_jit():
    cmd = connect._submit_command(15123, "3g")
    assert cmd[cmd.index("--class") + 1] == connect.SERVER_CLASS
    assert cmd[cmd.index("--driver-memory") + 1] == "3g"
    confs = dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert confs["spark.connect.grpc.binding.port"] == "15123"
    assert confs["spark.sql.session.timeZone"] == "UTC"
    assert "spark.buffer.pageSize" in confs
    java = confs["spark.driver.extraJavaOptions"]
    assert "-XX:+UseParallelGC" in java and "TieredStopAtLevel" not in java


def test_get_spark_connects_to_the_remote(monkeypatch):
    from harness.reconcile import session
    seen = []
    monkeypatch.setattr(session, "_connect", lambda url: seen.append(url) or "SESSION")
    # both saved before the call: the process's own session and master come back after
    monkeypatch.setattr(session, "_spark", None)
    monkeypatch.setattr(session, "_master", None)
    monkeypatch.setattr(session.atexit, "register", lambda fn: None)
    monkeypatch.setenv(connect.REMOTE_ENV, "sc://127.0.0.1:1")
    assert session.get_spark() == "SESSION"
    assert seen == ["sc://127.0.0.1:1"]


@pytest.mark.parametrize("value", ["localhost:15002", "spark://h:7077"])
def test_cli_refuses_a_remote_that_is_not_a_connect_url(value, capsys):
    from harness.cli import main
    with pytest.raises(SystemExit) as e:
        main(["verify", "--remote", value, "x"])
    assert e.value.code == 2
    assert "not a Spark Connect URL" in capsys.readouterr().err


def test_cli_spark_status_down_without_a_server(capsys):
    from harness.cli import main
    assert main(["spark", "status"]) == 1
    assert capsys.readouterr().out.startswith("down")
    assert main(["spark", "down"]) == 0
    assert "no Spark Connect server was up" in capsys.readouterr().out


def test_the_verify_path_imports_no_fault_machinery_nor_report_libraries():
    """What `hdfs-chaos verify` imports before its first request to the server: the CLI,
    the run-folder check (which validates scenario.yaml) and the verifier, but not the
    Toxiproxy client and its HTTP library (network faults), nor the report's plotting."""
    code = ("import sys, harness.cli, harness.rundir, harness.reconcile.api; "
            "print(' '.join(m for m in ('faults.network', 'faults.toxiproxy_server', "
            "'requests', 'matplotlib', 'jinja2', 'jsonschema') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.stdout.split() == []


def test_faults_names_load_on_first_use():
    """faults/ gives every name of its __all__, from the submodule that defines it."""
    import faults
    from faults.network import Partition
    assert faults.Partition is Partition
    assert all(getattr(faults, name) is not None for name in faults.__all__)
    with pytest.raises(AttributeError):
        faults.NoSuchFault   # noqa: B018
