"""Count and time the Spark Connect client's requests of one verification, by where in
the verifier they come from (the check, or the innermost function of harness/reconcile).

    HDFS_CHAOS_SPARK_REMOTE=sc://127.0.0.1:PORT SERVER_JSON=<state>/server.json \
        python benchmarks/connect_requests.py RUN_DIR...

SERVER_JSON (the state file of `hdfs-chaos spark up`) adds the server's CPU seconds.
"""
import collections, sys, threading, time
from pyspark.sql.connect.client import core

stats = collections.defaultdict(lambda: [0, 0.0])
lock = threading.Lock()

def where():
    f = sys._getframe(2)
    names = []
    while f is not None:
        loc = f.f_locals
        chk = loc.get("check")
        if chk is not None and hasattr(chk, "id") and hasattr(chk, "fn"):
            return f"check {chk.id}" + (f" ({names[0]})" if names else "")
        if "reconcile" in f.f_code.co_filename and not names:
            names.append(f.f_code.co_name)
        if "reconcile" in f.f_code.co_filename:
            last = f.f_code.co_name + ":" + f.f_code.co_filename.rsplit("/", 1)[-1]
        f = f.f_back
    return names[0] if names else "?"

def wrap(name, fn, kind_of=None):
    def w(self, *a, **k):
        t = time.perf_counter()
        try:
            return fn(self, *a, **k)
        finally:
            kind = name + (":" + kind_of(a, k) if kind_of else "")
            with lock:
                s = stats[(where(), kind)]
                s[0] += 1; s[1] += time.perf_counter() - t
    return w

C = core.SparkConnectClient
C._analyze = wrap("analyze", C._analyze, lambda a, k: a[0] if a else k.get("method", ""))
C._execute_and_fetch = wrap("fetch", C._execute_and_fetch)
C._execute = wrap("exec", C._execute)
C.config = wrap("config", C.config)

import json, os
def server_cpu():
    if not os.environ.get("SERVER_JSON"):
        return 0.0
    pid = json.load(open(os.environ["SERVER_JSON"]))["pid"]
    # the JVM is a child of spark-submit's shell: sum over the process group
    tot = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(st[2]) == pid:   # pgrp
                tot += int(st[11]) + int(st[12])
    return tot / os.sysconf("SC_CLK_TCK")
c0 = server_cpu()
t0 = time.perf_counter()
from harness.reconcile.api import verify_runs
t1 = time.perf_counter()
vs = verify_runs(sys.argv[1:])
t2 = time.perf_counter()
print(f"import {t1-t0:.2f}s verify {t2-t1:.2f}s server CPU {server_cpu()-c0:.2f}s client CPU {sum(os.times()[:2]):.2f}s")
tot = collections.Counter(); tt = collections.Counter()
for (w, k), (n, s) in sorted(stats.items(), key=lambda x: -x[1][1]):
    print(f"{n:4d} {s:7.2f}s  {k:22s} {w}")
    tot[k.split(':')[0]] += n; tt[k.split(':')[0]] += s
print("totals:", {k: (tot[k], round(tt[k], 2)) for k in tot})
