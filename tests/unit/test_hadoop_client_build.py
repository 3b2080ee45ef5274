"""Where the Hadoop workload client is compiled (harness.systems.hadoop.Hadoop.client_classes)."""

from __future__ import annotations

import os

import harness.systems.hadoop as hadoop


def test_a_client_from_other_sources_is_never_taken_for_up_to_date(tmp_path, monkeypatch):
    # two checkouts share the release cache: B's older-looking edit must not run A's build
    java = tmp_path / "java"
    java.mkdir()
    source = java / "HdfsChaosClient.java"
    monkeypatch.setattr(hadoop, "JAVA_DIR", str(java))
    monkeypatch.setattr(hadoop.fetch, "release_dir", lambda version: tmp_path / "cache" / version)
    builds = []

    def fake_build(cmd, **kw):   # build.sh JAR_DIR OUT_DIR: leaves a class file in OUT_DIR
        out = cmd[-1]
        os.makedirs(out, exist_ok=True)
        open(os.path.join(out, "HdfsChaosClient.class"), "w").close()
        builds.append(out)

    monkeypatch.setattr(hadoop.subprocess, "run", fake_build)
    source.write_text("class HdfsChaosClient { /* checkout A */ }")
    os.utime(source, (1000, 1000))
    first = hadoop.Hadoop("3.4.2").client_classes()
    source.write_text("class HdfsChaosClient { /* checkout B */ }")
    os.utime(source, (1000, 1000))   # same time, other content
    second = hadoop.Hadoop("3.4.2").client_classes()
    assert first != second and builds == [first, second]
    # the same sources again: built once, found again
    assert hadoop.Hadoop("3.4.2").client_classes() == second and len(builds) == 2


def test_state_tools_from_other_sources_are_never_taken_for_up_to_date(tmp_path, monkeypatch):
    # the state tool (HdfsChaosState) shares the release cache the same way
    from harness.systems.hadoop import state
    sources = tmp_path / "javatools"
    sources.mkdir()
    source = sources / "HdfsChaosState.java"
    monkeypatch.setattr(state, "SOURCES", str(sources))
    monkeypatch.setattr(state.fetch, "release_dir", lambda version: tmp_path / "cache" / version)
    monkeypatch.setattr(state.fetch, "lib_dir", lambda version: tmp_path / "lib")
    builds = []

    class Done:
        returncode = 0
        stderr = ""

    def fake_javac(cmd, **kw):   # javac -nowarn -d OUT ...
        builds.append(cmd[cmd.index("-d") + 1])
        return Done()

    monkeypatch.setattr(state.subprocess, "run", fake_javac)
    source.write_text("class HdfsChaosState { /* checkout A */ }")
    os.utime(source, (1000, 1000))
    first = state.tools_dir("3.4.2")
    source.write_text("class HdfsChaosState { /* checkout B */ }")
    os.utime(source, (1000, 1000))
    second = state.tools_dir("3.4.2")
    assert first != second and builds == [first, second]
    assert state.tools_dir("3.4.2") == second and len(builds) == 2
