"""The link mesh on a real toxiproxy-server, with echo servers standing in for nodes:
every link goes through its own proxy, and a fault on one link touches only that link."""

import uuid

import pytest

from faults.grudge import directed
from faults.network import Latency, LinkMesh, Partition
from faults.testing import EchoCluster, connect, echo_time, who
from faults.toxiproxy_server import (ToxiproxyAPI, ToxiproxyError, ToxiproxyServer,
                                     ensure_binary)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def server():
    try:
        ensure_binary()
    except ToxiproxyError as exc:
        pytest.skip(str(exc))
    srv = ToxiproxyServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def cluster():
    c = EchoCluster(datanodes=3, clients=2)
    yield c
    c.stop()


@pytest.fixture
def mesh(server, cluster):
    m = LinkMesh(server.api(), cluster.listen, cluster.clients,
                 prefix=f"{uuid.uuid4().hex[:6]}:").create()
    yield m
    m.destroy()


def test_server_answers_and_stops(tmp_path):
    srv = ToxiproxyServer(log_path=str(tmp_path / "toxiproxy.log")).start()
    try:
        assert srv.running()
        assert srv.api().version()
        port = srv.port
    finally:
        srv.stop()
    assert not srv.running()
    with pytest.raises(ToxiproxyError):
        ToxiproxyAPI("127.0.0.1", port).version(timeout=1)


def test_every_link_reaches_the_right_service_through_its_own_proxy(mesh, cluster):
    routes = mesh.all_routes()
    assert routes["nn"] == {}
    real = {a for svc in cluster.listen.values() for a in svc.values()}
    seen = set()
    for node, table in routes.items():
        for peer, services in table.items():
            for service, address in services.items():
                assert address not in real  # never the node itself
                assert address not in seen  # never another link's proxy
                seen.add(address)
                assert who(address) == f"{peer}.{service}", (node, peer, service)
    assert len(seen) == len(mesh.proxies) == 29


def test_a_link_whose_proxy_is_down_is_cut_while_the_node_itself_still_answers(
        mesh, cluster):
    link = mesh.select([["c1", "dn2"]])
    mesh.disable(link, "test")
    try:
        with pytest.raises(ConnectionRefusedError):
            connect(mesh.routes("c1")["dn2"]["xfer"], timeout=2)
        assert who(cluster.listen["dn2"]["xfer"]) == "dn2.xfer"
        assert who(mesh.routes("c2")["dn2"]["xfer"]) == "dn2.xfer"
    finally:
        mesh.enable(link, "test")
    assert who(mesh.routes("c1")["dn2"]["xfer"]) == "dn2.xfer"


def test_latency_on_one_link_slows_only_that_link(mesh):
    routes = mesh.all_routes()
    others = [routes["c2"]["dn2"]["xfer"], routes["c1"]["dn3"]["xfer"],
              routes["dn1"]["dn2"]["xfer"], routes["c1"]["nn"]["rpc"]]
    base = max(echo_time(a) for a in others)
    fault = Latency([["c1", "dn2"]], latency=0.3, mesh=mesh)
    fault.inject()
    try:
        # 300 ms on each stream: at least 250 ms more on a round trip, generously
        for service in ("xfer", "rpc"):
            assert echo_time(routes["c1"]["dn2"][service]) >= 0.25
        for address in others:
            assert echo_time(address) < 0.25 + base
    finally:
        fault.heal()
    assert echo_time(routes["c1"]["dn2"]["xfer"]) < 0.25 + base


def test_a_one_way_partition_cuts_only_connections_opened_that_way(mesh):
    routes = mesh.all_routes()
    fault = Partition(directed([["dn1", "dn2"]]), mode="reject", mesh=mesh)
    fault.inject()
    try:
        with pytest.raises(ConnectionRefusedError):
            connect(routes["dn1"]["dn2"]["xfer"], timeout=2)
        assert who(routes["dn2"]["dn1"]["xfer"]) == "dn1.xfer"
        assert who(routes["dn1"]["dn3"]["xfer"]) == "dn3.xfer"
    finally:
        fault.heal()
    assert who(routes["dn1"]["dn2"]["xfer"]) == "dn2.xfer"


def test_reset_heals_the_whole_mesh(mesh):
    routes = mesh.all_routes()
    Latency([["c1", "dn1"]], latency=1.0, mesh=mesh).inject()
    Partition(directed([["dn2", "nn"]]), mode="reject", mesh=mesh).inject()
    Partition(directed([["dn3", "nn"]]), mesh=mesh).inject()
    mesh.reset()
    assert echo_time(routes["c1"]["dn1"]["xfer"]) < 0.5
    assert who(routes["dn2"]["nn"]["rpc"]) == "nn.rpc"
    assert who(routes["dn3"]["nn"]["rpc"]) == "nn.rpc"


def test_two_servers_in_one_process_do_not_mix_up(cluster):
    # toxiproxy-python keeps one global server address; ToxiproxyAPI must not leak it
    a, b = ToxiproxyServer().start(), ToxiproxyServer().start()
    try:
        mesh_a = LinkMesh(a.api(), cluster.listen, ["c1"]).create()
        mesh_b = LinkMesh(b.api(), cluster.listen, ["c1"]).create()
        assert set(a.api().proxies()) == set(b.api().proxies()) == {
            p.name for p in mesh_a.proxies}
        mesh_a.disable(mesh_a.select([["c1", "dn1"]]), "t")
        assert who(mesh_b.routes("c1")["dn1"]["xfer"]) == "dn1.xfer"
        with pytest.raises(ConnectionRefusedError):
            connect(mesh_a.routes("c1")["dn1"]["xfer"], timeout=2)
        mesh_a.destroy()
        assert a.api().proxies() == {} and len(b.api().proxies()) == len(mesh_b.proxies)
    finally:
        a.stop()
        b.stop()


def test_a_proxy_name_taken_on_the_server_fails_create_cleanly(server, cluster):
    first = LinkMesh(server.api(), cluster.listen, ["c1"], prefix="dup:").create()
    try:
        with pytest.raises(ToxiproxyError, match="ProxyExists|exists"):
            LinkMesh(server.api(), cluster.listen, ["c1"], prefix="dup:").create()
        # the failed mesh removed what it made, and only that: the first still works
        assert who(first.routes("c1")["dn1"]["xfer"]) == "dn1.xfer"
    finally:
        first.destroy()


def test_a_listen_address_in_use_fails_create_with_the_servers_reason(server):
    # the server refuses (HTTP 500 "address already in use"); toxiproxy-python's create()
    # turned that into KeyError 'name'
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        with pytest.raises(ToxiproxyError, match=f"create proxy busy: HTTP .*in use"):
            server.api().create_proxy("busy", f"127.0.0.1:{port}", "127.0.0.1:1")
        assert "busy" not in server.api().proxies()
    finally:
        taken.close()


def test_connections_from_an_unproxied_direction_do_not_exist(mesh):
    # the NameNode dials nobody and nobody dials a client
    assert mesh.routes("nn") == {}
    assert "c1" not in mesh.routes("dn1")
    with pytest.raises(KeyError):
        mesh.proxy("dn1", "c1", "rpc")
