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
