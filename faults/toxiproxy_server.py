"""Shopify's toxiproxy-server: finding or building the binary, running it, talking to it.

The binary is looked up as `$TOXIPROXY_SERVER`, then `toxiproxy-server` on PATH, then
`tools/bin/toxiproxy-server` in this project; failing those it is built once with
`go install` of the pinned module version (needs Go >= 1.23 and the Go module proxy).
`python -m faults.toxiproxy_server` (what tools/build_toxiproxy.sh runs) does just that
and prints the path.

`ToxiproxyServer` runs one server process on a free port and stops it (also at
interpreter exit). `ToxiproxyAPI` talks to a server at a given host and port through
toxiproxy-python; where that library falls short the HTTP API is used directly, each
place saying why.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

import requests
import tenacity
import toxiproxy
from toxiproxy import exceptions as toxiproxy_errors
from toxiproxy.api import APIConsumer

from hdfs_contract import lifeline

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY_VERSION = "v2.12.0"
BINARY_NAME = "toxiproxy-server"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
TOOLS_BIN = PROJECT_ROOT / "tools" / "bin"


class ToxiproxyError(RuntimeError):
    """Toxiproxy is missing, would not start, or refused a request."""


class ToxiproxyNotFound(ToxiproxyError):
    """The server has no such proxy or toxic."""


# --- the binary -----------------------------------------------------------------------

def find_binary() -> str | None:
    """The toxiproxy-server to use, or None if there is none yet (see the module doc)."""
    explicit = os.environ.get("TOXIPROXY_SERVER")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise ToxiproxyError(f"TOXIPROXY_SERVER={explicit} is not an executable file")
        return explicit
    on_path = shutil.which(BINARY_NAME)
    if on_path:
        return on_path
    local = TOOLS_BIN / BINARY_NAME
    return str(local) if os.access(local, os.X_OK) else None


def build_binary(dest_dir: Path = TOOLS_BIN) -> str:
    """Builds toxiproxy-server into `dest_dir` with `go install`; returns its path.

    Serialised by a lock file so parallel test workers build it once; the result is
    renamed into place atomically, so a half-built binary is never picked up.
    """
    go = shutil.which("go")
    if go is None:
        raise ToxiproxyError("toxiproxy-server is not on PATH and Go is not installed to build "
                             "it: install Go >= 1.23 (or put toxiproxy-server on PATH, or set "
                             "TOXIPROXY_SERVER), then run tools/build_toxiproxy.sh")
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / BINARY_NAME
    with open(dest_dir / ".toxiproxy-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(target, os.X_OK):  # another worker built it while we waited
            return str(target)
        with tempfile.TemporaryDirectory(dir=dest_dir, prefix=".gobin-") as gobin:
            env = dict(os.environ, GOBIN=gobin, GOTOOLCHAIN="local")
            proc = subprocess.run([go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
                                  env=env, capture_output=True, text=True)
            built = Path(gobin) / "server"
            if proc.returncode != 0 or not built.exists():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                raise ToxiproxyError(f"building toxiproxy-server with `go install "
                                     f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}` failed: "
                                     + " | ".join(tail))
            os.replace(built, target)
    return str(target)


def ensure_binary() -> str:
    """The path of a toxiproxy-server, building it first if there is none."""
    return find_binary() or build_binary()


# --- the server process ----------------------------------------------------------------

def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ToxiproxyServer:
    """One toxiproxy-server process of ours, API on `host:port` (a free port by default).

    Use as a context manager or call start()/stop(). Proxies it creates listen wherever
    they are told (the mesh asks for `127.0.0.1:0`). The process is also stopped when
    the interpreter exits (weakref.finalize runs at exit), and the kernel kills it when
    the harness dies any other way, SIGKILL included (hdfs_contract.lifeline).
    """

    def __init__(self, binary: str | None = None, host: str = "127.0.0.1",
                 port: int | None = None, log_path: str | None = None,
                 log_level: str = "warn"):
        self.binary = binary
        self.host = host
        self.port = port
        self.log_path = log_path
        self.log_level = log_level
        self.process: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 15.0) -> "ToxiproxyServer":
        """Starts the server and waits until its API answers; retries a port taken meanwhile."""
        if self.process is not None:
            raise ToxiproxyError(f"toxiproxy-server is already running on {self.address}")
        binary = self.binary or ensure_binary()
        fixed_port = self.port is not None
        attempts = 1 if fixed_port else 3
        last_error = ""
        for _ in range(attempts):
            if not fixed_port:
                self.port = free_port(self.host)
            out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
            try:
                # tied to this process: a harness killed with SIGKILL leaves no server
                self.process = lifeline.popen(
                    [binary, "-host", self.host, "-port", str(self.port)],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                    env=dict(os.environ, LOG_LEVEL=self.log_level))
            finally:
                if out is not subprocess.DEVNULL:
                    out.close()
            self._finalizer = weakref.finalize(self, _terminate, self.process)
            if self._wait_ready(timeout):
                return self
            last_error = (f"exited with code {self.process.returncode}"
                          if self.process.poll() is not None
                          else f"API did not answer within {timeout:.0f}s")
            self.stop()
        raise ToxiproxyError(f"toxiproxy-server on {self.host}:{self.port} {last_error}"
                             + (f" (log: {self.log_path})" if self.log_path else ""))

    def _wait_ready(self, timeout: float) -> bool:
        api = self.api()

        def answers() -> bool:   # False at once when the server has exited
            if self.process.poll() is not None:
                return False
            api.version(timeout=1.0)
            return True

        try:
            # a short poll: the server answers soon after its spawn, and every run waits
            return tenacity.Retrying(stop=tenacity.stop_after_delay(timeout),
                                     wait=tenacity.wait_fixed(0.01), reraise=True,
                                     retry=tenacity.retry_if_exception_type(ToxiproxyError))(answers)
        except ToxiproxyError:
            return False

    def api(self) -> "ToxiproxyAPI":
        """A client for this server's API."""
        return ToxiproxyAPI(self.host, self.port)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the server (SIGTERM, then SIGKILL after `timeout`); idempotent."""
        if self.process is None:
            return
        _terminate(self.process, timeout)
        if self._finalizer is not None:
            self._finalizer.detach()
        self.process = None

    def __enter__(self) -> "ToxiproxyServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running() else "stopped"
        return f"<ToxiproxyServer {self.address} {state}>"


def _terminate(process: subprocess.Popen, timeout: float = 5.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the API ---------------------------------------------------------------------------

# toxiproxy-python keeps the server address in class attributes of APIConsumer, shared by
# the whole process; every call below points it at its own server under this lock, so
# two ToxiproxyAPI objects (two servers) never talk to each other's server.
_API_LOCK = threading.RLock()


class ToxiproxyAPI:
    """The HTTP API of one toxiproxy server at `host:port`, through toxiproxy-python.

    Proxies are named by string; toxics by (proxy, toxic name). Errors of the server
    (unknown proxy, duplicate name, bad toxic) become ToxiproxyError with its message.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 8474, timeout: float = 10.0):
        self.host, self.port, self.timeout = host, int(port), timeout
        self._server = toxiproxy.Toxiproxy()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _call(self, what: str, fn, *args: Any, **kwargs: Any) -> Any:
        with _API_LOCK:
            APIConsumer.host, APIConsumer.port = self.host, self.port
            try:
                return fn(*args, **kwargs)
            except (toxiproxy_errors.NotFound, toxiproxy_errors.ProxyExists,
                    toxiproxy_errors.InvalidToxic) as exc:
                detail = exc.args[0] if exc.args else b""
                if isinstance(detail, bytes):
                    detail = detail.decode(errors="replace").strip()
                error = (ToxiproxyNotFound if isinstance(exc, toxiproxy_errors.NotFound)
                         else ToxiproxyError)
                raise error(f"toxiproxy {self.host}:{self.port}: {what}: "
                                     f"{type(exc).__name__} {detail}") from None
            except requests.RequestException as exc:
                raise ToxiproxyError(f"toxiproxy {self.host}:{self.port}: {what}: "
                                     f"{type(exc).__name__}: {exc}") from None

    def _http(self, method: str, path: str, timeout: float | None = None,
              what: str | None = None, **kwargs: Any) -> Any:
        """A direct HTTP call, for what toxiproxy-python cannot do (each caller says what)."""
        what = what or f"{method} {path}"
        try:
            resp = requests.request(method, self.url + path, timeout=timeout or self.timeout,
                                    **kwargs)
        except requests.RequestException as exc:
            raise ToxiproxyError(f"toxiproxy {self.host}:{self.port}: {what}: "
                                 f"{type(exc).__name__}") from None
        if resp.status_code >= 300:
            raise ToxiproxyError(f"toxiproxy {self.host}:{self.port}: {what}: "
                                 f"HTTP {resp.status_code} {resp.text.strip()}")
        return resp.json() if resp.content else None

    def version(self, timeout: float | None = None) -> str:
        """The server's version string; raises ToxiproxyError if it does not answer.

        Direct HTTP: toxiproxy-python's version() has no timeout and returns None when
        the port is closed, which makes a poor readiness probe.
        """
        return self._http("GET", "/version", timeout=timeout)["version"]

    def create_proxy(self, name: str, listen: str, upstream: str,
                     enabled: bool = True) -> dict[str, Any]:
        """Creates a proxy; returns `{name, listen, upstream, enabled}` with the real
        listen address (a port 0 request comes back as the port the server chose).

        Direct HTTP: toxiproxy-python's create() builds its Proxy from whatever the server
        answers, so a refusal (a listen address in use) surfaced as KeyError 'name'."""
        made = self._http("POST", "/proxies", json={"name": name, "listen": listen,
                                                    "upstream": upstream, "enabled": enabled},
                          what=f"create proxy {name}")
        return {"name": made["name"], "listen": made["listen"], "upstream": made["upstream"],
                "enabled": made["enabled"]}

    def populate(self, proxies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Creates many proxies in one request (`[{name, listen, upstream, enabled}]`);
        returns them as create_proxy does, in the order given. A proxy of the same name
        is replaced (the server's rule): callers that must not clobber one check first.
        On a refusal the proxies made before it stay; the error names the refusal.

        Direct HTTP: toxiproxy-python has no populate; one request instead of one per
        proxy (a run's mesh has dozens)."""
        made = self._http("POST", "/populate", json=[
            {"name": p["name"], "listen": p["listen"], "upstream": p["upstream"],
             "enabled": p.get("enabled", True)} for p in proxies],
            what=f"create {len(proxies)} proxies")
        by_name = {m["name"]: m for m in (made or {}).get("proxies") or []}
        return [{"name": m["name"], "listen": m["listen"], "upstream": m["upstream"],
                 "enabled": m["enabled"]} for m in (by_name[p["name"]] for p in proxies)]

    def proxies(self) -> dict[str, dict[str, Any]]:
        """Every proxy with its state and toxics: `{name: {listen, upstream, enabled,
        toxics: [{name, type, stream, attributes}]}}`.

        Direct HTTP: toxiproxy-python's proxies() drops the toxics that GET /proxies
        returns, which would cost one more request per proxy.
        """
        return self._http("GET", "/proxies")

    def _proxy(self, name: str) -> toxiproxy.Proxy:
        # toxiproxy-python's Proxy methods only use the name; no need to fetch the rest.
        return toxiproxy.Proxy(name=name, upstream="", enabled=True, listen="")

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enables (listen again, same port) or disables (close the listener and drop
        every connection) a proxy."""
        proxy = self._proxy(name)
        self._call(f"{'enable' if enabled else 'disable'} {name}",
                   proxy.enable if enabled else proxy.disable)

    def add_toxic(self, proxy: str, name: str, type: str, stream: str,
                  attributes: dict[str, Any], toxicity: float = 1.0) -> None:
        """Adds toxic `name` of `type` to one stream (`upstream`: what the dialer sends,
        `downstream`: what comes back) of a proxy; live connections get it too."""
        self._call(f"add toxic {name} to {proxy}", self._proxy(proxy).add_toxic,
                   name=name, type=type, stream=stream, attributes=attributes,
                   toxicity=toxicity)

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call(f"remove toxic {name} from {proxy}", self._proxy(proxy).destroy_toxic,
                   name)

    def toxics(self, proxy: str) -> dict[str, dict[str, Any]]:
        """`{toxic name: {type, stream, attributes}}` of one proxy."""
        found = self._call(f"list toxics of {proxy}", self._proxy(proxy).toxics)
        return {n: {"type": t.type, "stream": t.stream, "attributes": t.attributes}
                for n, t in found.items()}

    def destroy_proxy(self, name: str) -> None:
        self._call(f"destroy proxy {name}", self._proxy(name).destroy)

    def reset(self) -> None:
        """Server-wide: removes every toxic and enables every proxy."""
        self._call("reset", self._server.reset)

    def __repr__(self) -> str:
        return f"<ToxiproxyAPI {self.url}>"


def main(argv: list[str] | None = None) -> int:
    """Finds or builds toxiproxy-server and prints its path; one-line error on failure."""
    try:
        print(ensure_binary())
    except ToxiproxyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
