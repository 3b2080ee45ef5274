"""The link mesh of a Hadoop run: one Toxiproxy proxy per directed link and service, as
for the mini-HDFS (faults/network.py), but each at a fixed address.

Hadoop hands out DataNodes by host name and port (the NameNode's block locations carry
`dnj.hdfs` and DataNode j's real transfer and IPC ports), so a proxy cannot listen on a
port of its own choosing: the port is the real one, and the *address* tells the links
apart. Source X (number x) reaches node Y (number y) at 127.1.x.y, where one proxy per
service of Y listens at Y's real port; X's hosts file maps `Y.hdfs` to 127.1.x.y
(cluster.py writes it from `routes(X)`). The NameNode is number 0, DataNode j is j,
clients are 200, 201, ... in the order given. Everything else (select, toxics,
disable/enable, reset) is LinkMesh's, so faults act on it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from faults.network import LinkMesh, MeshProxy
from faults.toxiproxy_server import ToxiproxyAPI

FIRST_CLIENT = 200


def node_numbers(nodes: Iterable[str], clients: Iterable[str]) -> dict[str, int]:
    """Each node's number in the 127.1.x.y plan."""
    out: dict[str, int] = {}
    for node in nodes:
        if node == "nn":
            out[node] = 0
        elif node.startswith("dn") and node[2:].isdigit() and 0 < int(node[2:]) < FIRST_CLIENT:
            out[node] = int(node[2:])
        else:
            raise ValueError(f"hadoop node id {node!r}: expected nn or dn1..dn{FIRST_CLIENT - 1}")
    for i, client in enumerate(dict.fromkeys(clients)):
        if FIRST_CLIENT + i > 255:
            raise ValueError("at most 56 clients fit in the 127.1.x.y plan")
        out[client] = FIRST_CLIENT + i
    return out


def link_host(numbers: dict[str, int], src: str, dst: str) -> str:
    return f"127.1.{numbers[src]}.{numbers[dst]}"


class HadoopLinkMesh(LinkMesh):
    """LinkMesh whose proxy of link X -> Y, service S listens at 127.1.x.y:<Y's S port>."""

    def __init__(self, api: ToxiproxyAPI, listen, clients: Iterable[str] = (), *,
                 prefix: str = ""):
        super().__init__(api, listen, clients, prefix=prefix)
        self.numbers = node_numbers(list(self.listen), self.clients)

    def create(self) -> "HadoopLinkMesh":
        with self._lock:
            if self._proxies:
                raise RuntimeError("this mesh is already created")
            try:
                for spec in self.specs:
                    port = spec.upstream.rpartition(":")[2]
                    listen = f"{link_host(self.numbers, spec.src, spec.dst)}:{port}"
                    made = self.api.create_proxy(spec.name(self.prefix), listen, spec.upstream)
                    self._proxies[spec] = MeshProxy(spec, made["name"], made["listen"], listen)
            except BaseException:
                self.destroy()
                raise
            for proxy in self._proxies.values():
                self._by_link.setdefault(proxy.link, []).append(proxy)
            return self
