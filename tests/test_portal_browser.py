"""The portal page in a real headless Chromium (Debian ``chromium`` + ``chromium-driver``,
driven by selenium): it shows what the telemetry records say, runs a command, shows the log,
missed frames, and reconnects by itself when the process behind it goes away and comes back.

Frames come from a synthetic ``Telemetry`` in this process (``FramePump``); a screenshot is
written to ``tests/_out/portal.png``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from engine.culling.counters import COUNTER_NAMES
from engine.telemetry import Telemetry
from engine.tools.log.tool import LogTail
from engine.tools.perf import PerfTool
from engine.tools.portal import Portal
from tests.helpers import ROOT
from tests.portal_support import CPU_ONLY, PASSES, FramePump
from tests.tool_fakes import make_ctx

OUT = Path(__file__).resolve().parent / "_out"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

try:
    from selenium import webdriver
except ImportError:
    webdriver = None
MISSING = (
    "needs selenium (pip install -e .[test])"
    if webdriver is None
    else "needs Debian's chromium and chromium-driver (apt install chromium chromium-driver)"
    if CHROMIUM is None or DRIVER is None
    else None
)

READ_PAGE = """
const q = (s) => [...document.querySelectorAll(s)];
return {
  seq: +document.body.dataset.seq,
  state: document.body.dataset.state,
  passes: q('#bars .bar-row').map((r) => r.dataset.pass),
  gpuMs: q('#bars .bar-row').map((r) => r.dataset.gpuMs === '' ? null : +r.dataset.gpuMs),
  barSeqs: (document.getElementById('bars').dataset.seqs || '').split(',').filter((x) => x)
    .map(Number),
  counters: Object.fromEntries(q('#cull tr').map((r) => [r.dataset.counter, r.dataset.value])),
  statRows: q('#stats tbody tr').map((r) => [r.dataset.clock, r.dataset.pass]),
  missed: +document.getElementById('missed').textContent,
  warnings: q('#log .warning').map((e) => e.textContent),
  sample: document.getElementById('sample').textContent,
};
"""


@pytest.fixture(scope="module")
def browser():
    if MISSING:  # CI sets LANTERN_REQUIRE_BROWSER=1: there the test never skips quietly
        (pytest.fail if os.environ.get("LANTERN_REQUIRE_BROWSER") else pytest.skip)(MISSING)
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    opts.add_argument("--window-size=1280,1600")
    driver = webdriver.Chrome(options=opts, service=Service(DRIVER))
    driver.set_script_timeout(10)
    yield driver
    driver.quit()


def wait_for(driver, condition, timeout=10.0):
    from selenium.webdriver.support.ui import WebDriverWait

    def check(d):
        page = d.execute_script(READ_PAGE)
        return page if condition(page) else None

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(check)


def test_page_shows_the_records_runs_commands_and_reconnects(browser):
    tel = Telemetry({"adapter": "synthetic adapter", "sample": "browser-test"})
    ctx = make_ctx(telemetry=tel)
    ctx.install(PerfTool())  # profile, stats: the real tool's commands
    reg = ctx.commands
    tail = LogTail()
    logger = logging.getLogger("lantern")
    logger.addHandler(tail)
    portal = Portal(tel, reg, tail, port=0)
    try:
        with FramePump(tel, reg, fps=60, max_s=30) as pump:
            browser.get(portal.url)
            page = wait_for(browser, lambda p: p["state"] == "live" and len(p["barSeqs"]) >= 5)
            # one read of the DOM = one rendered record: compare it with that record
            rec = pump.records[page["seq"]]
            gpu_names = [s.name for s in rec.gpu]
            cpu_only = [s.name for s in rec.cpu if s.name not in gpu_names]
            assert page["passes"] == gpu_names + cpu_only  # GPU order, then CPU-only scopes
            assert cpu_only == list(CPU_ONLY) and gpu_names == list(PASSES)
            # the bars: each pass's mean over the frames the page names, newest last
            assert page["barSeqs"][-1] == page["seq"] and len(page["barSeqs"]) >= 5
            window = [pump.records[q] for q in page["barSeqs"]]
            means = np.mean([[(x.end_ns - x.begin_ns) / 1e6 for x in r.gpu] for r in window], 0)
            assert page["gpuMs"][:12] == pytest.approx(means, rel=1e-12)
            assert int(page["counters"]["visible"]) == rec.cull.visible
            assert int(page["counters"]["tested"]) == rec.cull.tested == 100_000
            assert page["statRows"] == [[c, n] for c, n in rec.stats_keys]

            for _ in range(3):
                logger.warning("browser test warning")
            cmd = browser.find_element("id", "cmd")
            cmd.send_keys("stats r\t")  # TAB completes through POST /complete
            wait_for(browser, lambda p: cmd.get_attribute("value") == "stats reset ")
            cmd.send_keys("\n")
            wait_for(browser, lambda p: "stats: window reset" in _text(browser, "cmd-out"))
            wait_for(browser, lambda p: p["warnings"] == ["browser test warning \u00d73"])

            browser.find_element("id", "pause").click()  # the view freezes ...
            frozen = wait_for(browser, lambda p: True)["seq"]
            n, deadline = len(pump.records), time.monotonic() + 10
            while len(pump.records) < n + 10 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert len(pump.records) >= n + 10  # frames kept coming
            assert wait_for(browser, lambda p: True)["seq"] == frozen
            browser.find_element("id", "pause").click()  # ... and follows again
            page = wait_for(browser, lambda p: p["seq"] > frozen + 10)

            seq = page["seq"]
            tel._seq += 5  # five records this page never gets: a gap in seq
            page = wait_for(browser, lambda p: p["missed"] == 5 and p["seq"] > seq + 5)
            OUT.mkdir(exist_ok=True)
            browser.save_screenshot(str(OUT / "portal.png"))
        port = portal.port
        portal.close()  # the sample stops ...
        wait_for(browser, lambda p: p["state"] == "disconnected")
        tel2 = Telemetry({"adapter": "synthetic adapter", "sample": "restarted"})
        portal = Portal(tel2, reg, tail, port=port)  # ... and starts again on its port
        with FramePump(tel2, reg, fps=60, max_s=30) as pump:
            page = wait_for(browser, lambda p: p["sample"] == "restarted" and p["seq"] >= 2)
            assert page["state"] == "live"
            assert page["missed"] == 0 and page["seq"] < 200  # a new session starts over
    finally:
        portal.close()
        logger.removeHandler(tail)


def test_page_agrees_with_a_real_s13_run(browser, tmp_path):
    """A real headless s13 capture streams to the page; the rendered record's pass names,
    GPU times and cull counters equal that record in the run's own --telemetry JSONL."""
    jsonl = tmp_path / "t.jsonl"
    cmd = [sys.executable, "-m", "samples.s13", "--capture", str(tmp_path / "x.png")]
    cmd += ["--frames", "90"]
    cmd += ["--size", "160x90", "--instances", "1000", "--gpu-profile", "--portal", "0"]
    cmd += ["--telemetry", str(jsonl)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", XDG_RUNTIME_DIR="/tmp")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = _portal_url(proc)
        browser.get(url)
        page = wait_for(  # the first frames have no counters read back yet
            browser, lambda p: p["state"] == "live" and p["seq"] >= 3 and p["counters"]["tested"]
        )
        browser.find_element("id", "cmd").send_keys("shadows off\n")
        wait_for(browser, lambda p: "shadows: off" in _text(browser, "cmd-out"), 30)
        OUT.mkdir(exist_ok=True)
        browser.save_screenshot(str(OUT / "portal_s13.png"))
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, out
        wait_for(browser, lambda p: p["state"] == "disconnected")
    finally:
        proc.kill()
        proc.wait()
    names, frames = [], {}
    for line in jsonl.read_bytes().splitlines():
        obj = orjson.loads(line)
        if obj["type"] == "names":
            names += obj["names"]
        elif obj["type"] == "frame":
            frames[obj["seq"]] = obj
    rec = frames[page["seq"]]
    gpu = [names[i] for i, _, _ in rec["gpu"]]
    assert gpu[:3] == ["Cull.Reset", "Shadow.Cull", "Shadow.C0"] and "DebugOverlay" in gpu
    assert page["passes"] == gpu  # GPU profiling only: no CPU-only scopes
    window = [frames[q]["gpu"] for q in page["barSeqs"]]
    assert page["barSeqs"][-1] == page["seq"]
    means = np.mean([[(e - b) / 1e6 for _, b, e in g] for g in window], 0)
    assert page["gpuMs"] == pytest.approx(means, rel=1e-12)
    counters = {k: int(v) for k, v in page["counters"].items()}
    assert [counters[n] for n in COUNTER_NAMES] == rec["cull"]["values"]
    assert counters["tested"] == 1000


def _portal_url(proc) -> str:
    for _ in range(200):  # bounded: the GPU description, then the portal line
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("portal: "):
            return line.split()[1]
    raise AssertionError(f"no portal URL printed (exit status {proc.poll()})")


def _text(driver, element_id: str) -> str:
    return driver.find_element("id", element_id).text
