"""`hdfs dfs` for the mini-HDFS: python -m minihdfs.shell --cluster DIR/cluster.json CMD ...

Commands: put LOCAL PATH [--hflush-every SIZE] (LOCAL may be - for stdin), get PATH
LOCAL, cat PATH, ls [PATH], append LOCAL PATH, rm [-r] PATH, mv SRC DST, fsck PATH
(JSON), recover-lease PATH [--retries N], truncate PATH LEN, report.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .client import DFSClient, StreamError
from hdfs_contract.config import Config, ConfigError, parse_size
from hdfs_contract.events import EventLog
from .routing import Routes
from .rpc import HdfsError
from . import state


def _client(cluster_json: str, events: str | None) -> tuple[DFSClient, dict]:
    try:
        with open(cluster_json) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{cluster_json} does not exist: start a cluster with "
                          "`python -m minihdfs.cluster up --dir DIR`") from None
    client = DFSClient("shell", Routes(doc["routes"]), Config(doc["config"]),
                       EventLog(events, "shell", "client"))
    storages = {n: s["storage"] for n, s in doc["nodes"].items() if s["role"] == "datanode"}
    return client, storages


def _copy_in(stream, source, hflush_every: int | None) -> int:
    total = since_flush = 0
    while True:
        chunk = source.read(1 << 20 if not hflush_every else min(1 << 20, hflush_every - since_flush))
        if not chunk:
            break
        stream.write(chunk)
        total += len(chunk)
        since_flush += len(chunk)
        if hflush_every and since_flush >= hflush_every:
            stream.hflush()
            since_flush = 0
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minihdfs.shell")
    parser.add_argument("--cluster", required=True, help="DIR/cluster.json of a running cluster")
    parser.add_argument("--events", help="log this shell's client events to a file")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("put")
    p.add_argument("local")
    p.add_argument("path")
    p.add_argument("--hflush-every", type=parse_size)
    p.add_argument("--overwrite", "-f", action="store_true")
    p = sub.add_parser("append")
    p.add_argument("local")
    p.add_argument("path")
    p.add_argument("--hflush-every", type=parse_size)
    p = sub.add_parser("get")
    p.add_argument("path")
    p.add_argument("local")
    sub.add_parser("cat").add_argument("path")
    sub.add_parser("ls").add_argument("path", nargs="?", default="/")
    p = sub.add_parser("rm")
    p.add_argument("-r", action="store_true", dest="recursive")
    p.add_argument("path")
    p = sub.add_parser("mv")
    p.add_argument("src")
    p.add_argument("dst")
    sub.add_parser("fsck").add_argument("path")
    p = sub.add_parser("recover-lease")
    p.add_argument("path")
    p.add_argument("--retries", type=int, default=1)
    p = sub.add_parser("truncate")
    p.add_argument("path")
    p.add_argument("length", type=parse_size)
    sub.add_parser("report")
    try:
        args = parser.parse_args(argv)
    except ConfigError as e:
        parser.error(str(e))
    client = None
    try:
        client, storages = _client(args.cluster, args.events)
        if args.cmd in ("put", "append"):
            source = sys.stdin.buffer if args.local == "-" else open(args.local, "rb")
            with source:
                stream = (client.create(args.path, overwrite=args.overwrite) if args.cmd == "put"
                          else client.append(args.path))
                n = _copy_in(stream, source, args.hflush_every)
                stream.close()
            print(f"{args.cmd}: {n} bytes to {args.path}", file=sys.stderr)
        elif args.cmd == "get":
            data = client.read(args.path)
            with open(args.local, "wb") as f:
                f.write(data)
        elif args.cmd == "cat":
            sys.stdout.buffer.write(client.read(args.path))
            sys.stdout.flush()
        elif args.cmd == "ls":
            for entry in client.listing(args.path):
                if entry["type"] == "dir":
                    print(f"d {'-':>12}  {entry['path']}")
                else:
                    flag = "" if entry["closed"] else f"  (open, lease {entry['holder']})"
                    print(f"- {entry['len']:>12}  {entry['path']}{flag}")
        elif args.cmd == "rm":
            if not client.delete(args.path, args.recursive):
                raise FileNotFoundError(f"{args.path} does not exist")
        elif args.cmd == "mv":
            client.rename(args.src, args.dst)
        elif args.cmd == "fsck":
            print(json.dumps(state.fsck(client, args.path, storages), indent=1))
        elif args.cmd == "recover-lease":
            for attempt in range(max(1, args.retries)):
                if client.recover_lease(args.path):
                    print(f"recoverLease SUCCEEDED on {args.path}")
                    return 0
                if attempt + 1 < args.retries:
                    time.sleep(1.0)
            print(f"recoverLease returned false on {args.path}: block recovery is in progress")
            return 1
        elif args.cmd == "truncate":
            done = client.truncate(args.path, args.length)
            print("truncated" if done else "truncate in progress (block recovery)")
        elif args.cmd == "report":
            print(json.dumps(client.nn_call("getDatanodeReport"), indent=1))
        return 0
    except (HdfsError, StreamError, ConfigError, OSError) as e:
        print(f"minihdfs.shell: {args.cmd}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()


if __name__ == "__main__":
    sys.exit(main())
