"""The HTML reports as a user sees them (issue 29): a failed and a passed run of the
mini-HDFS, their report.html and the suite's index.html, opened in headless Chromium
through chromedriver (the W3C WebDriver protocol, spoken over HTTP with the standard
library). What is asserted is what the browser rendered: text as laid out, the order of
sections and rows, and every <img> decoded. Full-page screenshots are left in the
results folder (printed with -s) for a person to look at."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

# One 1 MiB write, replication 2, paced so that killing the pipeline's last DataNode at
# the 5th ack lands mid-block: one pipeline recovery, so the run report's plots and the
# suite's latency plot have something to draw.
SCENARIO = textwrap.dedent("""\
    name: {name}
    description: one 1 MiB write, replication 2, the last DataNode killed mid-block; {what}
    seed: 2
    timeout: 60s
    cluster:
      datanodes: 3
      config: {{dfs.replication: 2, dfs.blocksize: 1MiB, dfs.heartbeat.interval: 300ms,
               dfs.client.socket-timeout: 3s}}
    workload:
      - {{id: w1, client: c1, op: write, path: /data/f1, size: 1MiB}}
    faults:
      - {{id: pace, kind: bandwidth, links: [[c1, dn1], [c1, dn2], [c1, dn3]], rate: 1MiB, at: 0s}}
      - {{id: crash-last, kind: kill, target: 'c1.pipeline[last]',
         at: {{event: client.ack, node: c1, nth: 5}}}}
    expect:
      files:
        /data/f1: {{closed: true, len: {length}}}
      recoveries: {{pipeline: {pipelines}}}
""")


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs in one results folder and its suite report: `zz-fails` (expects a length
    the write cannot have) and `aa-passes`; named so that the index's failures-first order
    is not the alphabetical one."""
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip("headless Chromium missing (chromium, chromedriver): "
                    "run tools/setup.sh --browser")
    base = tmp_path_factory.mktemp("browser")
    files = []
    for name, length, pipelines, what in (
            ("zz-fails", 1, 2, "expects 1 byte and 2 recoveries, so it fails"),
            ("aa-passes", "1MiB", 1, "expects what happens")):
        path = base / f"{name}.yaml"
        path.write_text(SCENARIO.format(name=name, length=length, pipelines=pipelines,
                                        what=what))
        files.append(str(path))
    out = base / "results"
    ran = _cli("run", *files, "--out", str(out), "--quiet")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    report = _cli("report", str(out))
    assert report.returncode == 0, report.stdout + report.stderr
    folders = {p.name.split("-2")[0]: p for p in out.iterdir() if (p / "events").is_dir()}
    assert sorted(folders) == ["aa-passes", "zz-fails"], folders
    return {"out": out, **folders}


class WebDriver:
    """The few WebDriver commands the test needs, against a chromedriver it started."""

    def __init__(self, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = open(log, "w")
        self.proc = subprocess.Popen([CHROMEDRIVER, f"--port={self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status")["ready"]:
                    break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError(f"chromedriver did not answer in 30 s (log: {log})")
            time.sleep(0.2)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--window-size=1280,900"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}}}}
        self.session = "/session/" + self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"WebDriver {method} {path}: {e.read().decode()[:500]}") from None

    def open(self, path: Path) -> None:
        self._call("POST", self.session + "/url", {"url": path.resolve().as_uri()})

    def js(self, script: str):
        return self._call("POST", self.session + "/execute/sync", {"script": script, "args": []})

    def screenshot(self, path: Path) -> Path:
        """The whole page: the window made as tall as the document, then captured."""
        self._call("POST", self.session + "/window/rect", {"width": 1280, "height": 900})
        height = self.js("return document.documentElement.scrollHeight"
                         " + window.outerHeight - window.innerHeight")
        self._call("POST", self.session + "/window/rect",
                   {"width": 1280, "height": min(max(height, 900), 16000)})
        path.write_bytes(base64.b64decode(self._call("GET", self.session + "/screenshot")))
        return path

    def close(self) -> None:
        if getattr(self, "session", None):
            try:
                self._call("DELETE", self.session)
            except (OSError, RuntimeError):
                pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def browser(runs):
    driver = WebDriver(runs["out"] / "chromedriver.log")
    yield driver
    driver.close()


# What the page shows: its rendered text, and each image with whether it decoded.
PAGE = """return {
  text: document.body.innerText,
  images: Array.from(document.images).map(i => ({
    src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0,
    shown: i.getBoundingClientRect().width > 0})),
  why: Array.from(document.querySelectorAll('h2#why ~ .why')).map(d => d.innerText),
  h2: Array.from(document.querySelectorAll('h2')).map(h => h.innerText),
};"""


def _look(browser: WebDriver, page: Path, shot: Path) -> dict:
    browser.open(page)
    seen = browser.js(PAGE)
    print(f"screenshot: {browser.screenshot(shot)}")
    assert seen["images"], f"{page}: no images"
    broken = [i["src"] for i in seen["images"] if not (i["ok"] and i["shown"])]
    assert not broken, f"{page}: images that did not load or show: {broken}"
    return seen


def test_failed_run_report_says_why_first(runs, browser):
    seen = _look(browser, runs["zz-fails"] / "report.html", runs["out"] / "zz-fails.png")
    text = seen["text"]
    assert "FAILED" in text and "PASSED" not in text
    # "Why it failed" is the first section: each unmet expectation with its evidence
    assert seen["h2"][0] == "Why it failed", seen["h2"]
    why = seen["why"]
    assert len(why) == 2, why
    assert any(w.startswith("expected /data/f1 len == 1 (got 1048576)") for w in why), why
    count = next(w for w in why if "pipeline" in w.splitlines()[0])
    assert "(got 1)" in count.splitlines()[0] and "dn" in count, count   # the recovery, its node
    assert text.index("Why it failed") < text.index("Run it again") < text.index("Expectations")
    assert {"Timeline", "Pipelines", "Block recovery"} <= set(seen["h2"])


def test_passed_run_report(runs, browser):
    seen = _look(browser, runs["aa-passes"] / "report.html", runs["out"] / "aa-passes.png")
    assert "PASSED" in seen["text"] and "FAILED" not in seen["text"]
    assert "Why it failed" not in seen["h2"] and not seen["why"]
    assert seen["h2"][0] == "What this run exercised", seen["h2"]


def test_suite_index_lists_failures_first(runs, browser):
    seen = _look(browser, runs["out"] / "index.html", runs["out"] / "index.png")
    text = seen["text"]
    assert text.splitlines()[0] == "hdfs-chaos: 2 runs, 1 passed, 1 failed"
    runs_table = text[text.index("\nRuns\n"):]
    rows = [line for line in runs_table.splitlines() if "passes" in line or "fails" in line]
    assert len(rows) == 2, rows
    assert "zz-fails" in rows[0] and "\tfail\t" in rows[0] and "unmet: /data/f1" in rows[0]
    assert "aa-passes" in rows[1] and "\tpass\t" in rows[1]
    # the checks table: the failed scenario first too, its passed cell 0/1
    checks_table = text[:text.index("\nRuns\n")]
    assert checks_table.index("zz-fails") < checks_table.index("aa-passes")
    assert "plots/latency_pipeline.png" in [i["src"] for i in seen["images"]]
    assert "Pipeline recovery latency" in seen["h2"], seen["h2"]   # a title, not a file name
