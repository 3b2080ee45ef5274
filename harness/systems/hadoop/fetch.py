"""Fetches the jars of one Apache Hadoop release into a per-version cache, once.

Owns the cache layout: ``<cache>/<version>/lib/*.jar`` (hadoop-hdfs, hadoop-common,
hadoop-hdfs-client and their dependencies, copied by Maven from Maven Central) and
``<cache>/<version>/webroot/webapps/{hdfs,datanode,secondary,static,journal}``: the
Maven jars ship no ``webapps/`` and the NameNode's HTTP server refuses to start
without it, while empty folders on the classpath are enough (JMX still answers).
The cache root is ``$HDFS_CHAOS_HADOOP_CACHE`` or ``~/.cache/hdfs-chaos/hadoop``.

The Byteman agent jar (issue 32: events from inside the JVMs, harness/systems/hadoop/
agent.py) goes to ``<cache>/agent/byteman-<BYTEMAN_VERSION>.jar``, shared by every release.

    python -m harness.systems.hadoop.fetch [VERSION]     # default 3.4.2, and the agent jar
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_VERSION = "3.4.2"
POM = Path(__file__).with_name("pom.xml")
WEBAPPS = ("hdfs", "datanode", "secondary", "static", "journal")
# the newest 4.0.x on Maven Central (works on Java 17); only its main jar is fetched: the
# optional byteman-jigsaw artifact it names is not served, and the agent does not need it
BYTEMAN_VERSION = "4.0.27"
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([.-][A-Za-z0-9.-]+)?$")


def is_release(version: str) -> bool:
    """Whether `version` names a release the way Maven Central does (3.4.2, 3.3.6-foo)."""
    return bool(_VERSION_RE.match(version))


class FetchError(Exception):
    """A fetch that cannot proceed; the message is one line naming the fix."""


def cache_root() -> Path:
    env = os.environ.get("HDFS_CHAOS_HADOOP_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "hdfs-chaos" / "hadoop"


def release_dir(version: str) -> Path:
    return cache_root() / version


def build_dir(version: str, kind: str, sources: list[str]) -> str:
    """Where `sources` compiled for `version` go: a folder per source content, so that
    checkouts sharing the release cache never run each other's build, whatever the
    files' times."""
    digest = hashlib.sha256()
    for path in sorted(sources):
        with open(path, "rb") as f:
            digest.update(f.read())
    return os.path.join(str(release_dir(version)), f"{kind}-{digest.hexdigest()[:12]}")


def lib_dir(version: str) -> Path:
    return release_dir(version) / "lib"


def webroot(version: str) -> Path:
    """The classpath entry holding the empty ``webapps/`` folders."""
    return release_dir(version) / "webroot"


def _stamp(version: str) -> Path:
    # Written last: a fetch interrupted half way is redone, never trusted.
    return release_dir(version) / ".fetched"


def is_fetched(version: str) -> bool:
    return _stamp(version).is_file() and any(lib_dir(version).glob("hadoop-hdfs-*.jar"))


def check_tools() -> None:
    if shutil.which("java") is None:
        raise FetchError("java is missing: install a Java 17 JDK "
                         "(sudo apt-get install openjdk-17-jdk-headless)")
    if shutil.which("mvn") is None:
        raise FetchError("mvn is missing: install Maven (sudo apt-get install maven) "
                         "or run tools/setup.sh --hadoop")


def fetch(version: str = DEFAULT_VERSION, *, quiet: bool = True) -> Path:
    """Makes sure the jars of ``version`` are cached; returns the release directory."""
    if not is_release(version):
        raise FetchError(f"hadoop version {version!r} is not a release number: "
                         f"use e.g. {DEFAULT_VERSION}")
    rel = release_dir(version)
    if not is_fetched(version):
        check_tools()
        rel.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="lib.", dir=rel))
        cmd = ["mvn", "-B", "-f", str(POM), f"-Dhadoop.version={version}",
               "dependency:copy-dependencies", f"-DoutputDirectory={tmp}",
               "-DincludeScope=runtime"]
        if quiet:
            cmd.insert(1, "-q")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
            raise FetchError(f"mvn could not fetch hadoop {version} (is it a release on "
                             f"Maven Central?): {' | '.join(tail)}")
        lib = lib_dir(version)
        if lib.exists():
            shutil.rmtree(lib)
        tmp.rename(lib)
        _stamp(version).write_text(f"{version}\n")
    for name in WEBAPPS:
        (webroot(version) / "webapps" / name).mkdir(parents=True, exist_ok=True)
    return rel


def agent_jar() -> Path:
    """Where the Byteman agent jar is (whether fetched or not)."""
    return cache_root() / "agent" / f"byteman-{BYTEMAN_VERSION}.jar"


def require_agent_jar() -> Path:
    """The Byteman agent jar, or a one-line error naming the fix."""
    jar = agent_jar()
    if not jar.is_file():
        raise FetchError(f"the hadoop agent needs {jar}, which is missing: run "
                         f"tools/setup.sh --hadoop (or python -m harness.systems.hadoop.fetch)")
    return jar


def fetch_agent(*, quiet: bool = True) -> Path:
    """Makes sure the Byteman jar is cached (the main artifact alone, no dependency)."""
    jar = agent_jar()
    if jar.is_file():
        return jar
    check_tools()
    jar.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="agent.", dir=jar.parent))
    cmd = ["mvn", "-B", "-f", str(POM), "dependency:copy",
           f"-Dartifact=org.jboss.byteman:byteman:{BYTEMAN_VERSION}:jar",
           f"-DoutputDirectory={tmp}", "-Dmdep.overWriteReleases=true"]
    if quiet:
        cmd.insert(1, "-q")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    got = tmp / jar.name
    if proc.returncode != 0 or not got.is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise FetchError(f"mvn could not fetch org.jboss.byteman:byteman:{BYTEMAN_VERSION} "
                         f"(the hadoop agent): {' | '.join(tail)}")
    got.rename(jar)     # whole or not at all: a half-copied jar never has the final name
    shutil.rmtree(tmp, ignore_errors=True)
    return jar


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python -m harness.systems.hadoop.fetch [VERSION]", file=sys.stderr)
        return 2
    version = args[0] if args else DEFAULT_VERSION
    try:
        rel = fetch(version)
        fetch_agent()
    except FetchError as exc:
        print(f"hadoop fetch: error: {exc}", file=sys.stderr)
        return 2
    print(rel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
