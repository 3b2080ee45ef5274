"""Stand-ins for tests of the faults: TCP echo servers on 127.0.0.1 playing nodes, and
an in-memory Toxiproxy API for unit tests without a server.

An `EchoServer` answers every byte it receives with the same byte, so a test can tell
through which proxy a connection went (each server has a name and greets with it on
request) and measure delay, throughput and cuts without a mini-HDFS cluster.
"""

from __future__ import annotations

import json
import socket
import threading
import time

from faults.toxiproxy_server import ToxiproxyError, ToxiproxyNotFound

WHO = b"?who\n"  # ask the server its name; everything else is echoed


class EchoServer:
    """A threaded echo server named `name` on `host` at a free port; `stop()` ends it and
    every connection it has."""

    def __init__(self, name: str, host: str = "127.0.0.1"):
        self.name = name
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(64)
        self.address = "%s:%d" % self._sock.getsockname()
        self.accepted = 0
        self.received: list[int] = []   # bytes received, per connection in accept order
        self.reads: list[int] = []      # recv calls that returned data, per connection
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, name=f"echo-{name}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                index = self.accepted
                self.accepted += 1
                self.received.append(0)
                self.reads.append(0)
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn, index), daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                with self._lock:
                    self.received[index] += len(data)
                    self.reads[index] += 1
                conn.sendall(self.name.encode() + b"\n" if data == WHO else data)
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def stop(self) -> None:
        self._stopped.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self._thread.join(5)


class EchoCluster:
    """Echo servers standing in for a mini-HDFS cluster: `nn` with rpc, `dn1..dnN` with
    rpc and xfer, each service its own server named `<node>.<service>`; `listen` is the
    real-address map a LinkMesh takes. `stop()` ends them all."""

    def __init__(self, datanodes: int = 3, clients: int = 2, host: str = "127.0.0.1"):
        self.servers: dict[str, dict[str, EchoServer]] = {}
        try:
            self.servers["nn"] = {"rpc": EchoServer("nn.rpc", host)}
            for i in range(1, datanodes + 1):
                self.servers[f"dn{i}"] = {s: EchoServer(f"dn{i}.{s}", host)
                                          for s in ("rpc", "xfer")}
        except BaseException:
            self.stop()
            raise
        self.clients = [f"c{i}" for i in range(1, clients + 1)]

    @property
    def listen(self) -> dict[str, dict[str, str]]:
        return {n: {s: e.address for s, e in svc.items()} for n, svc in self.servers.items()}

    def server(self, node: str, service: str) -> EchoServer:
        return self.servers[node][service]

    def stop(self) -> None:
        for services in self.servers.values():
            for server in services.values():
                server.stop()


def connect(address: str, timeout: float = 5.0) -> socket.socket:
    """A TCP connection to 'host:port' with `timeout` on every operation."""
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.settimeout(timeout)
    return sock


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """Reads exactly `n` bytes, or fewer if the peer closes first."""
    chunks, got = [], 0
    while got < n:
        data = sock.recv(min(65536, n - got))
        if not data:
            break
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def who(address: str, timeout: float = 5.0) -> str:
    """The name of the echo server a connection to `address` ends up at."""
    with connect(address, timeout) as sock:
        sock.sendall(WHO)
        line = b""
        while not line.endswith(b"\n"):
            data = sock.recv(256)
            if not data:
                raise ConnectionError(f"{address} closed before answering")
            line += data
        return line.decode().strip()


def echo_time(address: str, payload: bytes = b"ping", timeout: float = 10.0) -> float:
    """Seconds for `payload` to go to `address` and come back whole on a new connection
    (the connect included); raises if it does not come back whole."""
    start = time.monotonic()
    with connect(address, timeout) as sock:
        sender = threading.Thread(target=sock.sendall, args=(payload,), daemon=True)
        sender.start()  # send and receive at once: big payloads would fill both buffers
        back = recv_exactly(sock, len(payload))
        sender.join(timeout)
    if back != payload:
        raise ConnectionError(f"{address}: sent {len(payload)} bytes, got back {len(back)}")
    return time.monotonic() - start


class InMemoryToxiproxy:
    """Just enough of ToxiproxyAPI, in memory, for unit tests of the mesh and faults.

    `fail_on_create` (a proxy name) and `fail_on_toxic` ((proxy, toxic name)) make
    those calls fail; `calls` records toxic and enable requests in order.
    """

    url = "fake://toxiproxy"

    def __init__(self, fail_on_create=None, fail_on_toxic=None):
        self.proxies_ = {}
        self.next_port = 20000
        self.fail_on_create, self.fail_on_toxic = fail_on_create, fail_on_toxic
        self.calls = []

    def create_proxy(self, name, listen, upstream, enabled=True):
        if name == self.fail_on_create:
            raise ToxiproxyError(f"cannot create {name}")
        if name in self.proxies_:
            raise ToxiproxyError("ProxyExists")
        self.next_port += 1
        host = listen.rpartition(":")[0]
        self.proxies_[name] = {"name": name, "listen": f"{host}:{self.next_port}",
                               "upstream": upstream, "enabled": enabled, "toxics": []}
        return dict(self.proxies_[name])

    def populate(self, proxies):
        """As the server: in order, replacing a proxy of the same name; a refusal keeps
        those made before it."""
        made = []
        for p in proxies:
            self.proxies_.pop(p["name"], None)
            made.append(self.create_proxy(p["name"], p["listen"], p["upstream"],
                                          p.get("enabled", True)))
        return made

    def _get(self, name):
        if name not in self.proxies_:
            raise ToxiproxyNotFound(name)
        return self.proxies_[name]

    def destroy_proxy(self, name):
        self._get(name)
        del self.proxies_[name]

    def add_toxic(self, proxy, name, type, stream, attributes, toxicity=1.0):
        self.calls.append(("add", proxy, name))
        if (proxy, name) == self.fail_on_toxic:
            raise ToxiproxyError("bad toxic")
        p = self._get(proxy)
        if any(t["name"] == name for t in p["toxics"]):
            raise ToxiproxyError("toxic exists")
        p["toxics"].append({"name": name, "type": type, "stream": stream,
                            "attributes": attributes})

    def remove_toxic(self, proxy, name):
        p = self._get(proxy)
        before = len(p["toxics"])
        p["toxics"] = [t for t in p["toxics"] if t["name"] != name]
        if len(p["toxics"]) == before:
            raise ToxiproxyNotFound(name)

    def set_enabled(self, name, enabled):
        self.calls.append(("enabled", name, enabled))
        self._get(name)["enabled"] = enabled

    def proxies(self):
        return json.loads(json.dumps(self.proxies_))
