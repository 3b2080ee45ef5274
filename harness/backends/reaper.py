"""The docker backend's reaper: a container that removes a run's containers, networks
and volumes as soon as the harness that made them dies, however it dies (the way
Testcontainers' Ryuk does).

The reaper runs from the run's own cluster image (it has Python; no registry), with the
engine's socket mounted and no network. The harness attaches to its stdin and keeps
that connection open for the whole run; the container is created with StdinOnce, so
when the harness's connection to the engine drops (a normal exit, an exception,
SIGKILL) the engine closes the reaper's stdin. On that EOF the reaper removes every
object carrying the run's labels (project, run id, harness identity: nothing else),
itself excepted, and exits; `auto_remove` then removes its container.

A normal stop has removed everything already (DockerBackend.stop) and closes the
connection itself, so the reaper finds nothing and goes. `hdfs-chaos cleanup` stays the
remedy for what a reaper could not reach (an engine restarted meanwhile).
"""

from __future__ import annotations

import json
import os
from typing import Any

from harness.waits import wait_until

# Runs inside the container with the standard library only: the Docker API over the
# mounted unix socket. argv: socket path, the label filters (JSON list).
REAPER_SOURCE = r'''
import http.client, json, socket, sys, time, urllib.parse
SOCK, LABELS = sys.argv[1], json.loads(sys.argv[2])
SELF = socket.gethostname()          # the container's short id

class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(SOCK)

def call(method, path, **query):
    c = Conn("docker")
    try:
        c.request(method, path + ("?" + urllib.parse.urlencode(query) if query else ""))
        r = c.getresponse()
        body = r.read()
    finally:
        c.close()
    return json.loads(body) if body and r.status < 300 else None

print("reaper: watching", LABELS, flush=True)
while sys.stdin.buffer.read(65536):   # until the harness's attach connection drops
    pass
print("reaper: the harness is gone; removing", flush=True)
filters = json.dumps({"label": LABELS})
for attempt in range(60):
    left = 0
    for c in call("GET", "/containers/json", all="1", filters=filters) or []:
        if not c["Id"].startswith(SELF):
            left += 1
            call("DELETE", "/containers/" + c["Id"], force="1", v="1")
    for n in call("GET", "/networks", filters=filters) or []:
        left += 1
        call("DELETE", "/networks/" + n["Id"])
    for v in (call("GET", "/volumes", filters=filters) or {}).get("Volumes") or []:
        left += 1
        call("DELETE", "/volumes/" + v["Name"], force="1")
    print("reaper: pass", attempt, "found", left, flush=True)
    if not left:
        break
    time.sleep(0.5)   # a volume stays busy for a moment after its container goes
'''

REAPER_LABEL = "org.hdfs-chaos.reaper-for"


def engine_socket() -> str | None:
    """The host path of the engine's unix socket, or None (a TCP DOCKER_HOST)."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    return host[len("unix://"):] if host.startswith("unix://") else None


class Reaper:
    """The reaper container of one run, and the harness's connection to it."""

    def __init__(self, client, container_id: str, sock):
        self.client, self.id, self._sock = client, container_id, sock

    @classmethod
    def start(cls, client, image: str, labels: dict[str, str], name: str) -> "Reaper":
        """Create, attach to and start the reaper of the objects carrying all `labels`."""
        path = engine_socket()
        if path is None:
            raise RuntimeError("DOCKER_HOST is not a unix socket: the reaper cannot reach "
                               "the engine (a killed run is removed by `hdfs-chaos cleanup`)")
        api = client.api
        selectors = [f"{k}={v}" for k, v in labels.items()]
        own = {k: v for k, v in labels.items() if k != "org.hdfs-chaos.run-id"}
        own[REAPER_LABEL] = labels.get("org.hdfs-chaos.run-id", "")
        host_config = api.create_host_config(
            binds={path: {"bind": path, "mode": "rw"}}, auto_remove=True, network_mode="none")
        # detach=False with stdin_open: docker-py sets StdinOnce, the engine then closes
        # the reaper's stdin when our attach connection goes
        created = api.create_container(
            image, [path, json.dumps(selectors)], stdin_open=True, detach=False,
            entrypoint=["python3", "-u", "-c", REAPER_SOURCE], labels=own, name=name,
            host_config=host_config)
        cid = created["Id"]
        try:
            sock = api.attach_socket(cid, params={"stdin": 1, "stream": 1})
            api.start(cid)
        except Exception:
            api.remove_container(cid, force=True)
            raise
        return cls(client, cid, sock)

    def running(self) -> bool:
        try:
            return self.client.api.inspect_container(self.id)["State"]["Running"]
        except Exception:
            return False

    def release(self, wait: float = 5.0) -> None:
        """Close our connection (the reaper then removes what is left and exits) and
        wait up to `wait` seconds for its container to go."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        for close in (getattr(getattr(sock, "_sock", None), "close", None), sock.close):
            try:
                if close is not None:
                    close()
            except OSError:
                pass
        def gone() -> bool:   # auto_remove took it
            try:
                self.client.api.inspect_container(self.id)
                return False
            except Exception:
                return True

        wait_until(gone, wait, 0.1)


def start_reaper(client, image: str, labels: dict[str, str], name: str,
                 progress=None) -> Any:
    """The run's Reaper, or None (said through `progress`) where none can run.
    HDFS_CHAOS_REAPER=0 turns it off (what a killed run leaves then waits for
    `hdfs-chaos cleanup`; the test of that remedy needs it)."""
    if os.environ.get("HDFS_CHAOS_REAPER", "1") == "0":
        return None
    try:
        return Reaper.start(client, image, labels, name)
    except Exception as e:   # the run goes on; cleanup stays the remedy
        if progress:
            progress(f"no reaper for this run ({str(e).splitlines()[0][:200]}); "
                     "if the harness is killed, `hdfs-chaos cleanup` removes what it left")
        return None
