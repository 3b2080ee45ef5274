"""The link mesh (one Toxiproxy proxy per directed link and service) and network faults.

Every mini-HDFS process dials peer Y's service S at `routes[Y][S]`; the mesh makes that
address the listen address of a proxy of its own, `X->Y.S`, whose upstream is Y's real
address. So every directed link X -> Y can be slowed, cut or refused on its own, and
nothing else sees it. Who dials whom (the talkers): clients dial the NameNode's rpc and
every DataNode's xfer and rpc; DataNodes dial the NameNode and every other DataNode;
the NameNode dials nobody. In general: X dials every service of Y, unless X is the
NameNode. A link nobody dials (nn -> dn1, dn1 -> c1) has no proxy; faults skip it.

A fault on link X -> Y acts on the connections X opens to Y, in both directions of
those connections unless `streams` says otherwise (`upstream`: bytes X sends,
`downstream`: bytes Y answers). It does not touch connections Y opens to X: give the
link Y -> X too for that (`links_between` and `complete_grudge` do).

Data first: `plan_proxies` and `routing_maps` are pure; `LinkMesh` applies the plan to
a Toxiproxy server. Faults (`Partition`, `Latency`, ...) are data until inject().
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from faults.base import Fault, FaultError
from faults.grudge import Grudge, Link, as_links
from faults.toxiproxy_server import ToxiproxyAPI, ToxiproxyError, ToxiproxyNotFound
from hdfs_contract.events import EventLog

NAMENODE = "nn"
STREAMS = ("upstream", "downstream")

Listen = Mapping[str, Mapping[str, str]]   # node -> service -> "host:port"
Routes = dict[str, dict[str, str]]          # peer -> service -> "host:port" to dial


# --- the plan: pure data -----------------------------------------------------------------

@dataclass(frozen=True, order=True)
class ProxySpec:
    """One proxy of the plan: the connections `src` opens to `dst`'s `service`."""

    src: str
    dst: str
    service: str
    upstream: str  # dst's real listen address

    @property
    def link(self) -> Link:
        return (self.src, self.dst)

    def name(self, prefix: str = "") -> str:
        """The proxy's name on the server, e.g. `c1->dn2.xfer`."""
        return f"{prefix}{self.src}->{self.dst}.{self.service}"


def _check_address(address: Any, what: str) -> None:
    host, sep, port = str(address).rpartition(":")
    if not (isinstance(address, str) and sep and host and port.isdigit()
            and 0 < int(port) < 65536):
        raise ValueError(f"{what}: expected 'host:port', got {address!r}")


def plan_proxies(listen: Listen, clients: Iterable[str] = (),
                 namenode: str = NAMENODE) -> list[ProxySpec]:
    """Every proxy the talkers need, sorted: for each X that dials (every node but the
    NameNode, clients included) and every other Y with services, one per service of Y.

    `listen` maps each server node to its real `{service: "host:port"}`; clients have
    no services and may be left out of it. Raises ValueError on a malformed map or a
    client that claims services.
    """
    clients = list(dict.fromkeys(clients))
    for node, services in listen.items():
        if not isinstance(node, str) or not node or any(c in node for c in "->. /"):
            raise ValueError(f"node id {node!r} must be a plain name like nn, dn1, c1")
        if not isinstance(services, Mapping):
            raise ValueError(f"listen[{node!r}] must map service -> 'host:port'")
        for service, address in services.items():
            _check_address(address, f"listen[{node!r}][{service!r}]")
        if node in clients and services:
            raise ValueError(f"client {node!r} has services {sorted(services)}; "
                             f"clients only dial")
    for client in clients:
        if not isinstance(client, str) or not client or any(c in client for c in "->. /"):
            raise ValueError(f"client id {client!r} must be a plain name like c1")
    if namenode not in listen:
        raise ValueError(f"no NameNode {namenode!r} in the listen map "
                         f"(nodes: {sorted(listen)})")
    dialers = [n for n in list(listen) + clients if n != namenode]
    specs = {ProxySpec(src, dst, service, address)
             for src in dialers for dst, services in listen.items() if dst != src
             for service, address in services.items()}
    return sorted(specs)


def routing_maps(specs: Iterable[ProxySpec], addresses: Mapping[ProxySpec, str],
                 nodes: Iterable[str] = ()) -> dict[str, Routes]:
    """For each process X, its routing map `{Y: {service: address of proxy X->Y}}`.

    `addresses` gives the address processes dial for each proxy. Every node of `nodes`
    gets a map, an empty one if it dials nobody (the NameNode).
    """
    maps: dict[str, Routes] = {n: {} for n in nodes}
    for spec in specs:
        maps.setdefault(spec.src, {}).setdefault(spec.dst, {})[spec.service] = \
            addresses[spec]
    return {n: {peer: dict(sorted(svc.items())) for peer, svc in sorted(r.items())}
            for n, r in sorted(maps.items())}


# --- the mesh: the plan applied to a server ---------------------------------------------

@dataclass(frozen=True)
class MeshProxy:
    """A created proxy: its spec, its server-side name, where it listens, and the
    address the processes dial (the listen port on the advertised host)."""

    spec: ProxySpec
    name: str
    listen: str
    address: str

    @property
    def link(self) -> Link:
        return self.spec.link

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "src": self.spec.src, "dst": self.spec.dst,
                "service": self.spec.service, "upstream": self.spec.upstream,
                "listen": self.listen, "address": self.address}


class LinkMesh:
    """One Toxiproxy proxy per directed link and service, and the routing maps to use them.

    `listen` is the real `{node: {service: "host:port"}}` of the servers, `clients` the
    client ids. Proxies listen on `proxy_host` at a port the server picks; processes
    dial them at `advertise_host` (default: `proxy_host`; for Toxiproxy in a container,
    the container's name). `prefix` namespaces proxy names when meshes share a server.
    Nothing touches the server until `create()`; `destroy()` removes every proxy.
    """

    def __init__(self, api: ToxiproxyAPI, listen: Listen, clients: Iterable[str] = (), *,
                 namenode: str = NAMENODE, proxy_host: str = "127.0.0.1",
                 advertise_host: str | None = None, prefix: str = ""):
        self.api = api
        self.listen = {n: dict(s) for n, s in listen.items()}
        self.clients = list(dict.fromkeys(clients))
        self.namenode = namenode
        self.proxy_host = proxy_host
        self.advertise_host = advertise_host or proxy_host
        if not re.fullmatch(r"[A-Za-z0-9_.:-]*", prefix):
            # proxy names go into API URL paths: a '/' would split them
            raise ValueError(f"mesh prefix {prefix!r} may only use letters, digits, _ . : -")
        self.prefix = prefix
        self.specs = plan_proxies(self.listen, self.clients, namenode)
        self.nodes = sorted(set(self.listen) | set(self.clients))
        self._proxies: dict[ProxySpec, MeshProxy] = {}
        self._by_link: dict[Link, list[MeshProxy]] = {}
        self._disabled_by: dict[str, set[str]] = {}  # proxy name -> faults holding it down
        self._lock = threading.RLock()

    # -- lifecycle
    def create(self) -> "LinkMesh":
        """Creates every proxy on the server (all or none: a failure removes those made)."""
        with self._lock:
            if self._proxies:
                raise ToxiproxyError("this mesh is already created")
            names = [spec.name(self.prefix) for spec in self.specs]
            # one request for all (populate), after one look that none exists: populate
            # would replace a proxy of the same name (another mesh's) where create refuses
            taken = sorted(set(names) & set(self.api.proxies()))
            if taken:
                raise ToxiproxyError(f"a proxy of that name exists on the server: "
                                     f"{', '.join(taken)}")
            try:
                made = self.api.populate([{"name": n, "listen": f"{self.proxy_host}:0",
                                           "upstream": spec.upstream}
                                          for n, spec in zip(names, self.specs)])
                for spec, proxy in zip(self.specs, made):
                    port = proxy["listen"].rpartition(":")[2]
                    self._proxies[spec] = MeshProxy(spec, proxy["name"], proxy["listen"],
                                                    f"{self.advertise_host}:{port}")
            except BaseException:
                for name in names:   # a refusal keeps the proxies made before it
                    try:
                        self.api.destroy_proxy(name)
                    except ToxiproxyError:   # not made, or the server is gone
                        pass
                self.destroy()
                raise
            for proxy in self._proxies.values():
                self._by_link.setdefault(proxy.link, []).append(proxy)
            return self

    def destroy(self) -> None:
        """Removes every proxy of this mesh from the server (those already gone are fine)."""
        with self._lock:
            for proxy in list(self._proxies.values()):
                try:
                    self.api.destroy_proxy(proxy.name)
                except ToxiproxyNotFound:
                    pass
            self._proxies.clear()
            self._by_link.clear()
            self._disabled_by.clear()

    def __enter__(self) -> "LinkMesh":
        return self.create()

    def __exit__(self, *exc: Any) -> None:
        self.destroy()

    # -- routing
    def routes(self, node: str) -> Routes:
        """The routing map of process `node`: `{peer: {service: "host:port"}}`."""
        self._check_nodes([node])
        return self.all_routes()[node]

    def all_routes(self) -> dict[str, Routes]:
        """Every process's routing map, the NameNode's empty."""
        self._require_created()
        return routing_maps(self._proxies, {s: p.address for s, p in self._proxies.items()},
                            self.nodes)

    # -- looking up proxies
    @property
    def proxies(self) -> list[MeshProxy]:
        return [self._proxies[s] for s in sorted(self._proxies)]

    def links(self) -> list[Link]:
        """Every directed link that has proxies (someone dials it)."""
        return sorted(self._by_link)

    def proxies_of(self, src: str, dst: str) -> list[MeshProxy]:
        """The proxies of link src -> dst, one per service; [] if src never dials dst."""
        self._check_nodes([src, dst])
        self._require_created()
        return list(self._by_link.get((src, dst), []))

    def proxy(self, src: str, dst: str, service: str) -> MeshProxy:
        """The proxy that carries src's connections to dst's `service`."""
        for proxy in self.proxies_of(src, dst):
            if proxy.spec.service == service:
                return proxy
        raise KeyError(f"no proxy {src}->{dst}.{service}: "
                       f"{src} does not dial {service} of {dst}")

    def select(self, links: Iterable[Iterable[str]]) -> list[MeshProxy]:
        """The proxies of the given links (links nobody dials contribute none).

        Raises ValueError if a link names a node this mesh does not know.
        """
        pairs = as_links(links)
        self._check_nodes([n for pair in pairs for n in pair])
        self._require_created()
        return [p for pair in pairs for p in self._by_link.get(pair, [])]

    def _check_nodes(self, nodes: Iterable[str]) -> None:
        unknown = sorted(set(nodes) - set(self.nodes))
        if unknown:
            raise ValueError(f"unknown node(s) {unknown}; the mesh has {self.nodes}")

    def _require_created(self) -> None:
        if not self._proxies and self.specs:
            raise ToxiproxyError("the mesh has no proxies yet: call create() first")

    # -- effects
    def add_toxic(self, proxies: Iterable[MeshProxy], name: str, type: str,
                  attributes: Mapping[str, Any], streams: Iterable[str] = STREAMS) -> None:
        """Adds toxic `name` on each stream of each proxy: all or none (on a failure the
        toxics already added are removed again)."""
        streams = _check_streams(streams)
        done: list[tuple[MeshProxy, str]] = []
        with self._lock:
            try:
                for proxy in proxies:
                    for stream in streams:
                        self.api.add_toxic(proxy.name, f"{name}.{stream}", type, stream,
                                           dict(attributes))
                        done.append((proxy, stream))
            except BaseException:
                for proxy, stream in done:
                    self._remove_one(proxy, f"{name}.{stream}")
                raise

    def remove_toxic(self, proxies: Iterable[MeshProxy], name: str,
                     streams: Iterable[str] = STREAMS) -> None:
        """Removes toxic `name` from each stream of each proxy (already gone is fine)."""
        with self._lock:
            for proxy in proxies:
                for stream in _check_streams(streams):
                    self._remove_one(proxy, f"{name}.{stream}")

    def _remove_one(self, proxy: MeshProxy, toxic: str) -> None:
        try:
            self.api.remove_toxic(proxy.name, toxic)
        except ToxiproxyNotFound:
            pass  # removed by reset() or destroy() meanwhile

    def disable(self, proxies: Iterable[MeshProxy], holder: str) -> None:
        """Takes the proxies down for `holder` (a fault id): their listener closes, live
        connections are dropped, new ones refused. Kept down until every holder enabled."""
        with self._lock:
            done: list[MeshProxy] = []
            try:
                for proxy in proxies:
                    holders = self._disabled_by.setdefault(proxy.name, set())
                    if not holders:
                        self.api.set_enabled(proxy.name, False)
                    holders.add(holder)
                    done.append(proxy)
            except BaseException:
                self.enable(done, holder)
                raise

    def enable(self, proxies: Iterable[MeshProxy], holder: str) -> None:
        """Releases `holder`'s hold; a proxy listens again (same port) once none is left."""
        with self._lock:
            for proxy in proxies:
                holders = self._disabled_by.get(proxy.name, set())
                holders.discard(holder)
                if not holders:
                    self._disabled_by.pop(proxy.name, None)
                    self.api.set_enabled(proxy.name, True)

    def reset(self) -> None:
        """Heals the whole mesh: removes every toxic and enables every proxy of it."""
        with self._lock:
            state = self.api.proxies()
            for proxy in self._proxies.values():
                current = state.get(proxy.name)
                if current is None:
                    continue
                for toxic in current.get("toxics") or []:
                    self._remove_one(proxy, toxic["name"])
                if not current.get("enabled", True):
                    self.api.set_enabled(proxy.name, True)
            self._disabled_by.clear()

    def to_json(self) -> list[dict[str, str]]:
        """Every proxy as `{name, src, dst, service, upstream, listen, address}`."""
        return [p.to_json() for p in self.proxies]

    def __repr__(self) -> str:
        return (f"<LinkMesh {len(self._proxies) or len(self.specs)} proxies "
                f"{'created' if self._proxies else 'planned'} on {self.api.url}>")


def _check_streams(streams: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(streams, str):
        streams = STREAMS if streams == "both" else (streams,)
    out = tuple(dict.fromkeys(streams))
    bad = [s for s in out if s not in STREAMS]
    if bad or not out:
        raise ValueError(f"streams must be among {list(STREAMS)} (or 'both'), got {list(out)}")
    return out


# --- network faults -----------------------------------------------------------------------

class NetworkFault(Fault):
    """A fault on the proxies of some links of a mesh."""

    def __init__(self, *, mesh: LinkMesh | None = None, log: EventLog | None = None,
                 fault_id: str | None = None):
        super().__init__(fault_id=fault_id, log=log)
        self.mesh = mesh
        self._targets: list[MeshProxy] = []

    def _links(self) -> list[Link]:
        raise NotImplementedError

    def _prepare(self) -> None:
        if self.mesh is None:
            raise FaultError(f"fault {self.fault_id!r} has no mesh to act on")
        self._targets = self.mesh.select(self._links())
        if not self._targets:
            raise FaultError(f"fault {self.fault_id!r}: nobody dials along any of the links "
                             f"{[f'{s}->{d}' for s, d in self._links()]}, so there is "
                             f"nothing to break (the NameNode dials nobody, nobody dials "
                             f"a client)")


class ToxicFault(NetworkFault):
    """A fault that adds one Toxiproxy toxic to the chosen streams of every proxy of
    its links, and removes it on heal."""

    toxic_type: ClassVar[str] = ""
    default_streams: ClassVar[tuple[str, ...]] = STREAMS

    def __init__(self, links: Iterable[Iterable[str]], *,
                 streams: Iterable[str] | str | None = None, mesh: LinkMesh | None = None,
                 log: EventLog | None = None, fault_id: str | None = None):
        super().__init__(mesh=mesh, log=log, fault_id=fault_id)
        self.links = as_links(links)
        if not self.links:
            raise ValueError(f"{self.kind}: no links given")
        self.streams = _check_streams(streams if streams is not None
                                      else self.default_streams)

    def _links(self) -> list[Link]:
        return self.links

    @property
    def target(self) -> list[str]:
        return [f"{s}->{d}" for s, d in self.links]

    @property
    def params(self) -> dict[str, Any]:
        return {**self._fault_params(), "streams": list(self.streams)}

    def _fault_params(self) -> dict[str, Any]:
        """The fault's parameters in the harness's units (seconds, bytes)."""
        raise NotImplementedError

    def attributes(self) -> dict[str, int]:
        """The toxic's attributes in Toxiproxy's units (ms, KB/s, us, bytes)."""
        raise NotImplementedError

    def _apply(self) -> None:
        self.mesh.add_toxic(self._targets, self.fault_id, self.toxic_type,
                            self.attributes(), self.streams)

    def _undo(self) -> None:
        self.mesh.remove_toxic(self._targets, self.fault_id, self.streams)


def _non_negative(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{what} must be a number >= 0, got {value!r}")
    return value


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


class Partition(NetworkFault):
    """Applies a grudge: every node stops reaching the nodes it holds a grudge against.

    `blackhole` adds a timeout toxic with timeout 0 on both streams of every affected
    proxy: bytes vanish, connections (old and new) stay open and hang, as behind a
    dropped route. `reject` disables the affected proxies: live connections are
    dropped and new ones refused, as from a host that is down. Heal restores both.
    """

    kind = "partition"
    MODES = ("blackhole", "reject")

    def __init__(self, grudge: Mapping[str, Iterable[str]], mode: str = "blackhole", *,
                 mesh: LinkMesh | None = None, log: EventLog | None = None,
                 fault_id: str | None = None):
        super().__init__(mesh=mesh, log=log, fault_id=fault_id)
        self.grudge = grudge if isinstance(grudge, Grudge) else Grudge(grudge)
        if not self.grudge:
            raise ValueError("partition: the grudge is empty; nobody would be cut off")
        if mode not in self.MODES:
            raise ValueError(f"partition: mode must be one of {list(self.MODES)}, "
                             f"got {mode!r}")
        self.mode = mode

    def _links(self) -> list[Link]:
        return self.grudge.links()

    @property
    def target(self) -> dict[str, list[str]]:
        return self.grudge.to_json()

    @property
    def params(self) -> dict[str, Any]:
        return {"mode": self.mode}

    def _apply(self) -> None:
        if self.mode == "blackhole":
            self.mesh.add_toxic(self._targets, self.fault_id, "timeout", {"timeout": 0})
        else:
            self.mesh.disable(self._targets, self.fault_id)

    def _undo(self) -> None:
        if self.mode == "blackhole":
            self.mesh.remove_toxic(self._targets, self.fault_id)
        else:
            self.mesh.enable(self._targets, self.fault_id)


class Latency(ToxicFault):
    """Delays every chunk on the links by `latency` seconds, +/- `jitter` seconds.

    On both streams by default, so a request/answer round trip on a link grows by
    about twice `latency`.
    """

    kind = "latency"
    toxic_type = "latency"

    def __init__(self, links: Iterable[Iterable[str]], latency: float, jitter: float = 0.0,
                 **kw: Any):
        super().__init__(links, **kw)
        self.latency = _non_negative(latency, "latency: latency (seconds)")
        self.jitter = _non_negative(jitter, "latency: jitter (seconds)")

    def _fault_params(self) -> dict[str, Any]:
        return {"latency": self.latency, "jitter": self.jitter}

    def attributes(self) -> dict[str, int]:
        return {"latency": _ms(self.latency), "jitter": _ms(self.jitter)}


class Bandwidth(ToxicFault):
    """Limits each stream of each connection on the links to `rate` bytes per second.

    Toxiproxy counts in KB/s of 1000 bytes: `rate` is rounded to that, at least 1 KB/s.
    """

    kind = "bandwidth"
    toxic_type = "bandwidth"

    def __init__(self, links: Iterable[Iterable[str]], rate: int, **kw: Any):
        super().__init__(links, **kw)
        if _non_negative(rate, "bandwidth: rate (bytes/s)") <= 0:
            raise ValueError("bandwidth: rate must be > 0 bytes/s (use partition to stop "
                             "traffic)")
        self.rate = rate

    def _fault_params(self) -> dict[str, Any]:
        return {"rate": self.rate}

    def attributes(self) -> dict[str, int]:
        return {"rate": max(1, int(round(self.rate / 1000)))}


class CutAfterBytes(ToxicFault):
    """Closes each connection on the links once `nbytes` bytes have crossed it.

    Counted per connection and per stream, on the `upstream` stream (what the dialer
    sends) by default: a client -> DataNode xfer link cut after 100000 bytes breaks the
    pipeline in the middle of a packet. A connection opened later gets the same budget.
    """

    kind = "cut_after_bytes"
    toxic_type = "limit_data"
    default_streams = ("upstream",)

    def __init__(self, links: Iterable[Iterable[str]], nbytes: int, **kw: Any):
        super().__init__(links, **kw)
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise ValueError(f"cut_after_bytes: bytes must be an integer >= 0, got {nbytes!r}")
        self.nbytes = nbytes

    def _fault_params(self) -> dict[str, Any]:
        return {"bytes": self.nbytes}

    def attributes(self) -> dict[str, int]:
        return {"bytes": self.nbytes}


class ResetPeer(ToxicFault):
    """Resets connections on the links: the first bytes to cross one (in a stream the
    toxic is on) are swallowed, and `timeout` seconds later the connection is reset.

    Toxiproxy sets SO_LINGER 0 only on connections opened while the toxic is present, so
    those get a TCP RST (ECONNRESET); connections already open at inject are closed
    with an ordinary FIN instead (the dialer sees end of stream).
    """

    kind = "reset_peer"
    toxic_type = "reset_peer"

    def __init__(self, links: Iterable[Iterable[str]], timeout: float = 0.0, **kw: Any):
        super().__init__(links, **kw)
        self.timeout = _non_negative(timeout, "reset_peer: timeout (seconds)")

    def _fault_params(self) -> dict[str, Any]:
        return {"timeout": self.timeout}

    def attributes(self) -> dict[str, int]:
        return {"timeout": _ms(self.timeout)}


class Slicer(ToxicFault):
    """Slices the byte stream into small pieces (`average_size` +/- `size_variation`
    bytes) sent `delay` seconds apart: every byte still arrives, in many short reads."""

    kind = "slicer"
    toxic_type = "slicer"

    def __init__(self, links: Iterable[Iterable[str]], average_size: int,
                 size_variation: int = 0, delay: float = 0.0, **kw: Any):
        super().__init__(links, **kw)
        for value, what in ((average_size, "average_size"), (size_variation, "size_variation")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"slicer: {what} must be an integer >= 0, got {value!r}")
        if average_size < 1:
            raise ValueError("slicer: average_size must be at least 1 byte")
        if size_variation >= average_size:
            raise ValueError(f"slicer: size_variation ({size_variation}) must be smaller "
                             f"than average_size ({average_size})")
        self.average_size, self.size_variation = average_size, size_variation
        self.delay = _non_negative(delay, "slicer: delay (seconds)")

    def _fault_params(self) -> dict[str, Any]:
        return {"average_size": self.average_size, "size_variation": self.size_variation,
                "delay": self.delay}

    def attributes(self) -> dict[str, int]:
        return {"average_size": self.average_size, "size_variation": self.size_variation,
                "delay": int(round(self.delay * 1_000_000))}
