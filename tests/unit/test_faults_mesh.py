"""The link mesh plan, routing maps and mesh bookkeeping, against an in-memory API."""

import json

import pytest

from faults.network import LinkMesh, ProxySpec, plan_proxies, routing_maps
from faults.testing import InMemoryToxiproxy as FakeAPI
from faults.toxiproxy_server import ToxiproxyError

LISTEN = {
    "nn": {"rpc": "127.0.0.1:9000"},
    "dn1": {"rpc": "127.0.0.1:9101", "xfer": "127.0.0.1:9102"},
    "dn2": {"rpc": "127.0.0.1:9201", "xfer": "127.0.0.1:9202"},
    "dn3": {"rpc": "127.0.0.1:9301", "xfer": "127.0.0.1:9302"},
}
CLIENTS = ["c1", "c2"]


def test_plan_follows_the_talkers():
    names = {s.name() for s in plan_proxies(LISTEN, CLIENTS)}
    # client -> nn rpc, client -> every dn xfer and rpc
    assert {"c1->nn.rpc", "c1->dn1.xfer", "c1->dn1.rpc", "c2->dn3.xfer"} <= names
    # dn -> nn rpc, dn -> every other dn xfer and rpc
    assert {"dn1->nn.rpc", "dn1->dn2.xfer", "dn1->dn2.rpc", "dn3->dn1.xfer"} <= names
    # the NameNode dials nobody, nobody dials a client, nobody dials itself
    assert not any(n.startswith("nn->") for n in names)
    assert not any("->c" in n for n in names)
    assert "dn1->dn1.xfer" not in names
    # 2 clients x (1 + 3 x 2) + 3 dns x (1 + 2 x 2) = 14 + 15
    assert len(names) == 29


def test_plan_upstream_is_the_real_address_of_the_dialled_service():
    specs = {s.name(): s for s in plan_proxies(LISTEN, CLIENTS)}
    assert specs["c1->dn2.xfer"] == ProxySpec("c1", "dn2", "xfer", "127.0.0.1:9202")
    assert specs["dn3->nn.rpc"].upstream == "127.0.0.1:9000"
    assert specs["c1->dn2.xfer"].link == ("c1", "dn2")
    assert specs["c1->dn2.xfer"].name("run7:") == "run7:c1->dn2.xfer"


@pytest.mark.parametrize("listen, clients, message", [
    ({"dn1": {"rpc": "127.0.0.1:1"}}, [], "no NameNode"),
    ({"nn": {"rpc": "localhost"}}, [], "host:port"),
    ({"nn": {"rpc": "127.0.0.1:0"}}, [], "host:port"),
    ({"nn": {"rpc": "127.0.0.1:9"}, "c1": {"rpc": "127.0.0.1:8"}}, ["c1"], "clients only dial"),
    ({"nn": {"rpc": "127.0.0.1:9"}, "d->n": {}}, [], "plain name"),
    ({"nn": {"rpc": "127.0.0.1:9"}}, ["c.1"], "plain name"),
])
def test_plan_rejects_bad_listen_maps(listen, clients, message):
    with pytest.raises(ValueError, match=message):
        plan_proxies(listen, clients)


def test_routing_maps_point_each_process_at_its_own_proxies():
    specs = plan_proxies(LISTEN, CLIENTS)
    addresses = {s: f"proxy:{i + 1}" for i, s in enumerate(specs)}
    maps = routing_maps(specs, addresses, ["nn", "dn1", "dn2", "dn3", "c1", "c2"])
    assert maps["nn"] == {}
    assert set(maps["c1"]) == {"nn", "dn1", "dn2", "dn3"}
    assert set(maps["dn1"]) == {"nn", "dn2", "dn3"}
    assert set(maps["c1"]["dn2"]) == {"rpc", "xfer"} and set(maps["c1"]["nn"]) == {"rpc"}
    by_name = {s.name(): addresses[s] for s in specs}
    assert maps["c1"]["dn2"]["xfer"] == by_name["c1->dn2.xfer"]
    assert maps["dn2"]["dn1"]["xfer"] == by_name["dn2->dn1.xfer"]
    # no two links share a proxy
    every = [a for r in maps.values() for svc in r.values() for a in svc.values()]
    assert len(every) == len(set(every)) == len(specs)
    json.dumps(maps)


def test_mesh_routes_use_the_advertised_host_and_server_ports():
    api = FakeAPI()
    mesh = LinkMesh(api, LISTEN, CLIENTS, proxy_host="0.0.0.0",
                    advertise_host="toxiproxy").create()
    routes = mesh.routes("c1")
    proxy = mesh.proxy("c1", "dn2", "xfer")
    assert proxy.listen.startswith("0.0.0.0:")
    assert routes["dn2"]["xfer"] == "toxiproxy:" + proxy.listen.rpartition(":")[2]
    assert api.proxies_["c1->dn2.xfer"]["upstream"] == "127.0.0.1:9202"
    assert mesh.routes("nn") == {}
    assert len(mesh.to_json()) == 29 and len(api.proxies_) == 29
    assert ("nn", "dn1") not in mesh.links() and ("dn1", "nn") in mesh.links()


def test_mesh_lookups_and_errors():
    mesh = LinkMesh(FakeAPI(), LISTEN, CLIENTS)
    with pytest.raises(ToxiproxyError, match="create"):
        mesh.routes("c1")
    mesh.create()
    assert [p.spec.service for p in mesh.proxies_of("c1", "dn1")] == ["rpc", "xfer"]
    assert mesh.proxies_of("nn", "dn1") == []
    with pytest.raises(KeyError, match="does not dial"):
        mesh.proxy("c1", "nn", "xfer")
    with pytest.raises(ValueError, match="unknown node"):
        mesh.select([["c1", "dn9"]])
    assert {p.name for p in mesh.select([["dn1", "dn2"], ["nn", "dn2"]])} == {
        "dn1->dn2.rpc", "dn1->dn2.xfer"}


def test_mesh_create_is_all_or_nothing():
    api = FakeAPI(fail_on_create="dn1->dn2.rpc")
    mesh = LinkMesh(api, LISTEN, CLIENTS)
    with pytest.raises(ToxiproxyError):
        mesh.create()
    assert api.proxies_ == {}


def test_mesh_create_refuses_a_name_taken_on_the_server():
    # populate would replace it: the other mesh's proxy must stay as it was
    api = FakeAPI()
    api.create_proxy("dn1->dn2.rpc", "127.0.0.1:0", "127.0.0.1:1")
    with pytest.raises(ToxiproxyError, match="dn1->dn2.rpc"):
        LinkMesh(api, LISTEN, CLIENTS).create()
    assert list(api.proxies_) == ["dn1->dn2.rpc"]
    assert api.proxies_["dn1->dn2.rpc"]["upstream"] == "127.0.0.1:1"


def test_add_toxic_is_all_or_nothing():
    api = FakeAPI(fail_on_toxic=("c1->dn2.xfer", "f.downstream"))
    mesh = LinkMesh(api, LISTEN, CLIENTS).create()
    with pytest.raises(ToxiproxyError):
        mesh.add_toxic(mesh.select([["c1", "dn2"]]), "f", "latency", {"latency": 1})
    assert all(not p["toxics"] for p in api.proxies_.values())


def test_disable_is_held_until_every_holder_released():
    api = FakeAPI()
    mesh = LinkMesh(api, LISTEN, CLIENTS).create()
    link = mesh.select([["dn1", "dn2"]])
    mesh.disable(link, "p1")
    mesh.disable(link, "p2")
    assert not api.proxies_["dn1->dn2.xfer"]["enabled"]
    mesh.enable(link, "p1")
    assert not api.proxies_["dn1->dn2.xfer"]["enabled"]
    mesh.enable(link, "p2")
    assert api.proxies_["dn1->dn2.xfer"]["enabled"]


def test_reset_removes_every_toxic_and_enables_every_proxy_of_the_mesh():
    api = FakeAPI()
    mesh = LinkMesh(api, LISTEN, CLIENTS).create()
    mesh.add_toxic(mesh.select([["c1", "dn1"]]), "lat", "latency", {"latency": 5})
    mesh.disable(mesh.select([["dn2", "dn3"]]), "cut")
    mesh.reset()
    assert all(p["enabled"] and not p["toxics"] for p in api.proxies_.values())
    mesh.remove_toxic(mesh.select([["c1", "dn1"]]), "lat")  # already gone: fine
    mesh.enable(mesh.select([["dn2", "dn3"]]), "cut")


def test_two_meshes_share_a_server_through_prefixes():
    api = FakeAPI()
    a = LinkMesh(api, LISTEN, CLIENTS, prefix="a:").create()
    b = LinkMesh(api, LISTEN, CLIENTS, prefix="b:").create()
    assert len(api.proxies_) == 58
    a.destroy()
    assert len(api.proxies_) == 29 and all(n.startswith("b:") for n in api.proxies_)
    b.destroy()


def test_mesh_prefix_must_be_url_safe():
    with pytest.raises(ValueError, match="prefix"):
        LinkMesh(FakeAPI(), LISTEN, CLIENTS, prefix="run/1")
