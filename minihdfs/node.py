"""Starts one mini-HDFS process: `python -m minihdfs.node namenode|datanode|client ...`.

The same command lines run on the local backend and inside the cluster image. SIGTERM
stops a node gracefully (the NameNode checkpoints its namespace; a DataNode shuts down
for a restart, as `hdfs dfsadmin -shutdownDatanode DN upgrade` does: its writers get
the out-of-band RESTART ack); SIGKILL is a crash.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from hdfs_contract.config import Config, ConfigError
from hdfs_contract.events import EventLog
from .routing import Routes


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--id", required=True, help="node id: nn, dn1.., c1..")
    p.add_argument("--routes", required=True, help="routing map JSON: id -> service -> HOST:PORT")
    p.add_argument("--config", help="configuration JSON: Hadoop-style keys -> values")
    p.add_argument("--events", required=True, help="JSON-lines event log to append to")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minihdfs.node")
    sub = parser.add_subparsers(dest="role", required=True)
    nn = sub.add_parser("namenode")
    _common(nn)
    nn.add_argument("--rpc", required=True, help="HOST:PORT to listen on")
    nn.add_argument("--storage", required=True)
    nn.add_argument("--seed", type=int, default=None)
    dn = sub.add_parser("datanode")
    _common(dn)
    dn.add_argument("--rpc", required=True)
    dn.add_argument("--xfer", required=True)
    dn.add_argument("--storage", required=True)
    dn.add_argument("--rack", default="/default-rack")
    cl = sub.add_parser("client")
    _common(cl)
    cl.add_argument("--workload", required=True, help="JSON list of operations")
    cl.add_argument("--gate-dir", help="an op with gated=true waits for the file GATE_DIR/<op id>")
    cl.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        conf = Config()
        if args.config:
            with open(args.config) as f:
                conf = Config.from_json(f.read())
        routes = Routes.load(args.routes)
    except (ConfigError, OSError, ValueError) as e:
        print(f"minihdfs.node: error: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.role == "namenode":
        from .namenode import NameNode
        from .rpc import RpcServer
        from . import wire
        events = EventLog(args.events, args.id, "namenode")
        node = NameNode(args.id, conf, args.storage, events, seed=args.seed)
        node.start()
        host, port = wire.parse_addr(args.rpc)
        server = RpcServer(host, port, node, lambda m: events.emit("nn.internal_error", reason=m[-2000:]),
                           lambda op, error, reason: events.emit("nn.rpc.malformed", op=op,
                                                                 error=error, reason=reason))
        server.serve_forever()
        stop.wait()
        server.close()
        node.stop()
    elif args.role == "datanode":
        from .datanode import DataNode
        events = EventLog(args.events, args.id, "datanode")
        node = DataNode(args.id, args.rpc, args.xfer, routes, conf, args.storage, events, args.rack)
        node.start()
        stop.wait()
        node.stop(restart=True)
    else:
        from .workload import run_workload
        events = EventLog(args.events, args.id, "client")
        with open(args.workload) as f:
            ops = json.load(f)
        return run_workload(args.id, routes, conf, events, ops, args.gate_dir, args.seed, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
