"""Every network fault kind observably happens on a real toxiproxy-server, and heal
undoes it. Echo servers stand in for the nodes. Bounds are generous on purpose: these
run on a loaded 2-core machine."""

import socket
import threading
import time
import uuid

import pytest

from faults.base import harness_log
from faults.grudge import complete_grudge
from faults.network import (Bandwidth, CutAfterBytes, Latency, LinkMesh, Partition,
                            ResetPeer, Slicer)
from faults.testing import EchoCluster, connect, echo_time, recv_exactly, who
from faults.toxiproxy_server import ToxiproxyError, ToxiproxyServer, ensure_binary
from hdfs_contract.events import read_events

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
    c = EchoCluster(datanodes=3, clients=1)
    yield c
    c.stop()


@pytest.fixture
def mesh(server, cluster):
    m = LinkMesh(server.api(), cluster.listen, cluster.clients,
                 prefix=f"{uuid.uuid4().hex[:6]}:").create()
    yield m
    m.destroy()


@pytest.fixture
def log(tmp_path):
    return harness_log(str(tmp_path / "harness.jsonl"))


def ends_within(sock, seconds):
    """Reads until the peer ends the connection; 'eof', 'reset' or 'open' (timed out)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return "eof"
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "open"


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_blackhole_partition_swallows_bytes_and_hangs_until_healed(mesh, log):
    routes = mesh.all_routes()
    cut = routes["dn1"]["dn2"]["xfer"]
    live = connect(cut)  # a pipeline connection opened before the partition
    live.sendall(b"before")
    assert recv_exactly(live, 6) == b"before"
    fault = Partition(complete_grudge([["dn1"], ["dn2", "dn3"]]), mesh=mesh, log=log,
                      fault_id="cut")
    fault.inject()
    try:
        live.sendall(b"during")
        assert ends_within(live, 1.0) == "open"  # no answer, no error: a hang
        with connect(cut, timeout=1.0) as fresh:  # the proxy still accepts...
            fresh.sendall(b"hello")
            with pytest.raises(socket.timeout):  # ...but nothing comes back
                fresh.recv(10)
        with connect(routes["dn2"]["dn1"]["rpc"], timeout=1.0) as back:  # both directions
            back.sendall(b"hello")
            with pytest.raises(socket.timeout):
                back.recv(10)
        assert who(routes["dn2"]["dn3"]["xfer"]) == "dn3.xfer"  # within a side: fine
        assert who(routes["dn1"]["nn"]["rpc"]) == "nn.rpc"      # not in the grudge
    finally:
        fault.heal()
        live.close()
    assert who(cut) == "dn2.xfer"
    assert [e["event"] for e in read_events(log.path)] == ["harness.fault.inject",
                                                           "harness.fault.heal"]


def test_reject_partition_refuses_new_and_drops_open_connections(mesh):
    address = mesh.routes("c1")["dn3"]["xfer"]
    live = connect(address)
    live.sendall(b"x")
    assert live.recv(1) == b"x"
    fault = Partition(complete_grudge([["c1"], ["dn3"]]), mode="reject", mesh=mesh)
    fault.inject()
    try:
        assert ends_within(live, 5.0) in ("eof", "reset")
        with pytest.raises(ConnectionRefusedError):
            connect(address, timeout=2)
    finally:
        fault.heal()
        live.close()
    assert who(address) == "dn3.xfer"  # back on the same port


def test_latency_is_measurable_and_heals(mesh):
    address = mesh.routes("c1")["dn1"]["xfer"]
    base = min(echo_time(address) for _ in range(3))
    fault = Latency([["c1", "dn1"]], latency=0.3, jitter=0.0, mesh=mesh)
    with fault:
        slow = echo_time(address)
    assert slow >= base + 0.25
    assert echo_time(address) < base + 0.25


def test_bandwidth_limits_throughput(mesh):
    address = mesh.routes("c1")["dn2"]["xfer"]
    payload = bytes(range(256)) * 240  # 61440 bytes
    unlimited = echo_time(address, payload)
    with Bandwidth([["c1", "dn2"]], rate=40_000, mesh=mesh):
        limited = echo_time(address, payload)  # 61440 B at 40 KB/s: about 1.5 s
    assert limited >= 1.0
    assert limited > 2 * unlimited
    assert echo_time(address, payload) < 1.0


def test_cut_after_bytes_closes_each_connection_after_that_many_bytes(mesh, cluster):
    address = mesh.routes("c1")["dn1"]["xfer"]
    target = cluster.server("dn1", "xfer")
    with CutAfterBytes([["c1", "dn1"]], 1000, mesh=mesh):
        for _ in range(2):  # every new connection gets the same budget
            index = target.accepted  # the upstream connection this one will make
            with connect(address) as sock:
                try:
                    sock.sendall(b"a" * 2500)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                assert ends_within(sock, 5.0) in ("eof", "reset")
            assert wait_for(lambda: target.accepted > index
                            and target.received[index] >= 1000)
            time.sleep(0.2)  # and no byte more arrives later
            assert target.received[index] == 1000
    assert echo_time(address, b"b" * 2500) >= 0  # whole again after heal


def test_reset_peer_resets_connections(mesh):
    address = mesh.routes("c1")["dn2"]["rpc"]
    with ResetPeer([["c1", "dn2"]], timeout=0, mesh=mesh):
        with connect(address) as sock:
            sock.sendall(b"hello")
            with pytest.raises(ConnectionResetError):
                sock.recv(10)
    assert who(address) == "dn2.rpc"


def test_reset_peer_waits_for_its_timeout(mesh):
    address = mesh.routes("c1")["dn3"]["rpc"]
    with ResetPeer([["c1", "dn3"]], timeout=0.5, mesh=mesh):
        with connect(address) as sock:
            start = time.monotonic()
            sock.sendall(b"hello")  # swallowed: the toxic holds it, then resets
            with pytest.raises(ConnectionResetError):
                while sock.recv(10):
                    pass
            assert time.monotonic() - start >= 0.4


def test_slicer_delivers_every_byte_in_many_small_pieces(mesh, cluster):
    address = mesh.routes("c1")["dn1"]["xfer"]
    target = cluster.server("dn1", "xfer")
    payload = bytes(range(256)) * 16  # 4096 bytes
    index = target.accepted
    with Slicer([["c1", "dn1"]], average_size=64, size_variation=32, delay=0.001,
                mesh=mesh):
        assert echo_time(address, payload) > 0  # raises unless every byte came back
    assert target.received[index] == len(payload)  # echoed whole, so accepted by now
    assert target.reads[index] >= 10  # one send of 4 KiB arrived as many pieces


def test_faults_apply_to_connections_that_are_already_open(mesh):
    # a pipeline set up before the fault must feel it, not only new connections
    address = mesh.routes("c1")["dn3"]["xfer"]
    with connect(address) as sock:
        sock.sendall(b"1")
        assert sock.recv(1) == b"1"
        with Latency([["c1", "dn3"]], latency=0.3, mesh=mesh):
            start = time.monotonic()
            sock.sendall(b"2")
            assert sock.recv(1) == b"2"
            assert time.monotonic() - start >= 0.25


def test_several_faults_on_one_link_heal_independently(mesh):
    address = mesh.routes("c1")["dn2"]["xfer"]
    latency = Latency([["c1", "dn2"]], latency=0.3, mesh=mesh)
    hole = Partition(complete_grudge([["c1"], ["dn2"]]), mesh=mesh)
    latency.inject()
    hole.inject()
    hole.heal()
    assert echo_time(address) >= 0.25  # the latency is still there
    latency.heal()
    assert echo_time(address) < 0.25


def test_heal_runs_in_parallel_with_traffic(mesh):
    # injecting and healing while bytes flow must not wedge the proxy
    address = mesh.routes("c1")["dn1"]["rpc"]
    stop = threading.Event()
    errors = []

    def chatter():
        while not stop.is_set():
            try:
                echo_time(address, b"z" * 1000, timeout=5)
            except OSError as exc:
                errors.append(exc)

    t = threading.Thread(target=chatter, daemon=True)
    t.start()
    for _ in range(5):
        with Slicer([["c1", "dn1"]], average_size=100, mesh=mesh):
            time.sleep(0.05)
    stop.set()
    t.join(10)
    assert not errors
    assert who(address) == "dn1.rpc"
