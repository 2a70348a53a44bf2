"""The portal page as a user sees it, in headless Chromium (see test_portal_browser.py for the
setup): layout at 760, 1100 and 1920 px, the smoothed bars, the robust timeline scale, hover,
a clicked frame's spans, export, the delta and hitch columns, the hints with profiling off,
console scroll-back, "too many clients" with retries, and a token portal. Screenshots go to
``tests/_out/portal_*.png``. Loopback only; every wait is bounded."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import orjson
import pytest

from engine.telemetry import Telemetry
from engine.tools.perf import PerfTool
from engine.tools.portal import Portal, protocol
from tests.portal_support import PASSES, FramePump, SseReader
from tests.test_portal_browser import OUT, browser, wait_for  # noqa: F401 - the fixture
from tests.tool_fakes import make_ctx

CAMERA = "0,2,10:0,1,0:60"
SESSION = {"adapter": "synthetic adapter", "sample": "page-test", "settings": {"camera": CAMERA}}
MIB = 2**20
# the memory tool's session fact (engine/tools/memory/tool.py MemoryTool.fact), as a run sends it
GPU_MEMORY = {
    "budget": 64 * MIB,
    "totals": {"targets": 40 * MIB, "storage": 2 * MIB, "uniform": 4096, "total": 42 * MIB + 4096},
    "rows": [
        {
            "owner": "frame.shadow",
            "name": "shadow map",
            "size": "2048x2048",
            "format": "depth32float",
            "usage": "RENDER_ATTACHMENT|TEXTURE_BINDING",
            "bytes": 16 * MIB,
            "category": "targets",
        },
        {
            "owner": "graph",
            "name": "frame.hdr",
            "size": "1920x1080",
            "format": "rgba16float",
            "usage": "RENDER_ATTACHMENT",
            "bytes": 24 * MIB,
            "category": "targets",
        },
    ],  # fmt: skip
    "objects": {"Texture": 14, "Buffer": 40},
    "history": [[0.0, 40 * MIB, 50], [1.0, 42 * MIB, 54], [2.0, 42 * MIB + 4096, 54]],
}

# every element of a panel that sticks out of it (scroll boxes may hold wider content)
OVERFLOW = """
const out = [];
const scrollers = '#log, #cmd-out, .table-box';
for (const panel of document.querySelectorAll('.panel')) {
  if (panel.hidden) continue;
  const p = panel.getBoundingClientRect();
  for (const el of panel.querySelectorAll('*')) {
    if (!el.offsetParent || el.closest(scrollers) && el.closest(scrollers) !== el) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.left < p.left - 1 || r.right > p.right + 1)
      out.push(panel.id + ' ' + el.tagName + '#' + el.id + '.' + el.className);
  }
  if (p.right > innerWidth + 0.5 || p.left < -0.5) out.push('panel ' + panel.id);
}
for (const box of document.querySelectorAll('.table-box')) {
  if (box.scrollWidth > box.clientWidth + 1)
    out.push('table-box spills ' + box.scrollWidth + ' > ' + box.clientWidth);
}
return {
  scrollWidth: document.scrollingElement.scrollWidth, innerWidth: innerWidth, out: out,
};
"""


def set_width(driver, width: int, height: int = 1800) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )


@pytest.fixture
def page(browser):  # noqa: F811 - the fixture
    tel = Telemetry(SESSION)
    ctx = make_ctx(telemetry=tel)
    ctx.install(PerfTool())  # profile, stats: the real tool's commands
    reg = ctx.commands
    portal = Portal(tel, reg, port=0)
    set_width(browser, 1280)
    try:
        yield SimpleNamespace(portal=portal, tel=tel, reg=reg, driver=browser)
    finally:
        portal.close()
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def run_help(driver) -> None:
    """Type ``help`` and wait for its answer (one more "list commands" line than before)."""

    def count() -> int:
        text = driver.execute_script("return document.getElementById('cmd-out').textContent")
        return text.count("list commands")

    n = count()
    driver.find_element("id", "cmd").send_keys("help\n")
    wait_for(driver, lambda p: count() > n)


@pytest.mark.parametrize("width", [760, 1100, 1920])
def test_no_sideways_scroll_and_nothing_out_of_its_box(page, width):
    d = page.driver
    page.tel.set_fact("gpu_memory", GPU_MEMORY)  # the memory panel shows too
    with FramePump(page.tel, page.reg, fps=60, max_s=30):
        set_width(d, width)
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 40)
        run_help(d)
        js(d, "document.getElementById('pause').click()")  # a still picture to look at
        got = js(d, OVERFLOW)
        OUT.mkdir(exist_ok=True)
        d.save_screenshot(str(OUT / f"portal_{width}.png"))
    assert got["innerWidth"] == width
    assert got["scrollWidth"] <= width and got["out"] == []
    pie = js(
        d,
        "const c = document.getElementById('cull-pie').getBoundingClientRect();"
        "const p = document.getElementById('cull-panel').getBoundingClientRect();"
        "return [c.left >= p.left, c.right <= p.right, c.width, c.height];",
    )
    assert pie == [True, True, 160, 160]  # whole, not squeezed or cut


def test_bars_average_a_window_and_the_timeline_scales_to_p95_and_clips_spikes(page):
    d = page.driver
    count = "return +document.getElementById('timeline-count').textContent"
    with FramePump(page.tel, page.reg, fps=60, max_s=30, spike_every=25, spike=20) as pump:
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and js(d, count) >= 60)  # 2+ spikes shown
        js(d, "document.getElementById('pause').click()")
        tl = js(d, "return {...document.getElementById('timeline').dataset}")
        bars = wait_for(d, lambda p: True)
    seqs = range(int(tl["first"]), int(tl["last"]) + 1)
    shown = [pump.records[s] for s in seqs if s in pump.records]
    for clock in ("gpu", "cpu"):
        totals = np.array(
            [sum(x.end_ns - x.begin_ns for x in getattr(r, clock)) / 1e6 for r in shown]
        )
        p95 = np.percentile(totals, 95, method="lower")
        assert float(tl[f"{clock}Scale"]) == pytest.approx(nice_ceil(p95 * 1.25))
        spikes = int((totals > float(tl[f"{clock}Scale"])).sum())
        assert int(tl[f"{clock}Clipped"]) == spikes >= len(shown) // 25 - 1 > 0
        assert float(tl[f"{clock}Scale"]) < totals.max() / 4  # a spike does not set the scale
    window = [pump.records[s] for s in bars["barSeqs"]]
    assert len(window) == 30 and bars["barSeqs"][-1] == bars["seq"]
    mean = np.mean([[(x.end_ns - x.begin_ns) / 1e6 for x in r.gpu] for r in window], 0)
    assert bars["gpuMs"][: len(PASSES)] == pytest.approx(mean, rel=1e-12)


def nice_ceil(v: float) -> float:
    p = 10 ** math.floor(math.log10(v))
    return next(k * p for k in (1, 2, 2.5, 5, 10) if v <= k * p)


def test_hover_shows_a_frame_and_a_click_its_spans(page):
    d = page.driver
    with FramePump(page.tel, page.reg, fps=60, max_s=30) as pump:
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 20)
        js(d, "document.getElementById('pause').click()")
        # the newest column is at the canvas's right edge
        point = js(
            d,
            "const c = document.getElementById('timeline'), r = c.getBoundingClientRect();"
            "const o = {clientX: r.right - 1, clientY: r.top + 40, bubbles: true};"
            "c.dispatchEvent(new MouseEvent('mousemove', o));"
            "const t = document.getElementById('tooltip');"
            "const got = [t.hidden, t.dataset.seq, t.textContent];"
            "c.dispatchEvent(new MouseEvent('click', o)); return got;",
        )
        newest = int(js(d, "return document.getElementById('timeline').dataset.last"))
        spans = js(
            d,
            "return [...document.querySelectorAll('#spans .span-row:not(.head)')]"
            ".map((r) => [r.dataset.clock, r.dataset.name, +r.dataset.ms, +r.dataset.start]);",
        )
        d.save_screenshot(str(OUT / "portal_frame.png"))
    hidden, seq, text = point
    assert not hidden and int(seq) == newest
    rec = pump.records[newest]
    gpu_total = sum(x.end_ns - x.begin_ns for x in rec.gpu) / 1e6
    assert (
        text.startswith(f"frame #{rec.frame_index} (seq {newest})")
        and f"GPU {gpu_total:.3f} ms" in text
    )
    want = [
        [clock, x.name, (x.end_ns - x.begin_ns) / 1e6, (x.begin_ns - scopes[0].begin_ns) / 1e6]
        for clock, scopes in (("gpu", rec.gpu), ("cpu", rec.cpu))
        for x in scopes
    ]
    assert len(spans) == len(want) == 2 * len(PASSES) + 3
    for got, exp in zip(spans, want, strict=True):
        assert got[:2] == exp[:2] and got[2:] == pytest.approx(exp[2:], abs=1e-9)


def test_export_is_what_the_paused_page_shows(page):
    d = page.driver
    with FramePump(page.tel, page.reg, fps=60, max_s=30) as pump:
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 20)
        js(d, "document.getElementById('pause').click()")
        shown = int(js(d, "return document.body.dataset.seq"))
        n = len(pump.records)
        wait_for(d, lambda p: len(pump.records) > n + 10)  # frames keep coming meanwhile
        js(d, "document.getElementById('export').click()")
        data = orjson.loads(js(d, "return window.lanternLastExport"))
        name = js(d, "return document.body.dataset.exported")
    assert name == f"lantern-page-test-{shown}.json" and data["paused"] is True
    frames = [f for f in data["frames"] if "seq" in f]
    assert frames[-1]["seq"] == shown and len(frames) >= 10
    for f in frames:
        rec = pump.records[f["seq"]]
        assert [g["name"] for g in f["gpu"]] == [x.name for x in rec.gpu]
        want = [(x.end_ns - x.begin_ns) / 1e6 for x in rec.gpu]
        assert [g["ms"] for g in f["gpu"]] == pytest.approx(want, abs=1e-12)
        assert f["wall_ms"] == pytest.approx(rec.wall_ms, abs=1e-6)
    assert [(s["clock"], s["name"]) for s in data["stats"]] == list(pump.records[shown].stats_keys)
    assert data["cull"]["values"] == list(pump.records[shown].cull.values)
    assert data["session"]["settings"] == {"camera": CAMERA}


def test_delta_is_neutral_within_noise_and_hitch_is_explained(page):
    d = page.driver
    with FramePump(page.tel, page.reg, fps=60, max_s=30, spike_every=40, spike=4):
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 45)
        js(d, "document.getElementById('pause').click()")
        rows = js(
            d,
            "return [...document.querySelectorAll('#stats tbody tr')].map((r) =>"
            " [r.classList.contains('outlier'), r.cells[6].className, r.cells[6].textContent]);",
        )
        head = js(d, "return [...document.querySelectorAll('#stats th')].map((t) => t.title)")
        camera = js(
            d,
            "return document.querySelector('#session tr[data-key=settings]').cells[1].textContent",
        )
    quiet = [r for r in rows if not r[0]]
    assert quiet and all(cls == "noise" for _, cls, _ in quiet)  # e.g. +0.000: no colour
    assert any(float(t) != 0 for _, _, t in quiet)  # (and not only because the deltas are 0)
    assert all(cls in ("pos", "neg") for o, cls, t in rows if o and t != "n/a")
    assert head[7].startswith("hitch: the largest reading of the last 2 s")
    assert "beyond 3 MADs" in head[6]
    assert camera == "camera 0,2,10:0,1,0:60"


def test_with_profiling_off_the_panels_say_how_to_turn_it_on(page):
    d = page.driver
    with FramePump(page.tel, page.reg, fps=60, max_s=30, timed=False):
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 5)
        got = js(
            d,
            "return [document.body.dataset.profiling, document.getElementById('bars-hint').hidden,"
            " document.getElementById('bars-hint').textContent,"
            " document.getElementById('stats-hint').hidden];",
        )
        d.save_screenshot(str(OUT / "portal_profiling_off.png"))
    assert got[:2] == ["off", False] and "profile gpu on" in got[2] and got[3] is False


def test_console_keeps_every_line_of_help_to_scroll_back_to(page):
    d = page.driver
    with FramePump(page.tel, page.reg, fps=30, max_s=30):
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live")
        for _ in range(3):
            run_help(d)
        lines = js(
            d, "return [...document.querySelectorAll('#cmd-out div')].map((e) => e.textContent)"
        )
        first = js(
            d,
            "const b = document.getElementById('cmd-out'); b.scrollTop = 0;"
            "const r = b.firstChild.getBoundingClientRect(), o = b.getBoundingClientRect();"
            "return [b.scrollHeight > b.clientHeight, r.top >= o.top && r.bottom <= o.bottom];",
        )
    help_lines = page.reg.execute("help").text.splitlines()
    assert lines == 3 * (["> help", *help_lines])  # every line, three times over
    assert first == [True, True]  # it scrolls, and the oldest line can be scrolled to


def test_too_many_clients_says_so_and_retries_until_a_slot_frees(page, monkeypatch):
    monkeypatch.setattr(protocol, "MAX_CLIENTS", 1)
    d = page.driver
    with FramePump(page.tel, page.reg, fps=60, max_s=30):
        other = SseReader(page.portal.port)  # the one slot
        try:
            d.get(page.portal.url)
            busy = wait_for(d, lambda p: p["state"] == "busy")
            text = d.find_element("id", "status").text
        finally:
            other.close()
        live = wait_for(d, lambda p: p["state"] == "live" and p["seq"] > 0, timeout=15)
    assert busy["state"] == "busy" and live["state"] == "live"
    assert text.startswith("too many clients (1 of 1 open); retrying in ")


def test_a_token_portal_works_from_its_url_and_hides_the_token(browser):  # noqa: F811
    tel = Telemetry(SESSION)
    ctx = make_ctx(telemetry=tel)
    ctx.install(PerfTool())  # profile, stats: the real tool's commands
    reg = ctx.commands
    portal = Portal(tel, reg, port=0, token="random")
    try:
        with FramePump(tel, reg, fps=60, max_s=30):
            browser.get(f"http://127.0.0.1:{portal.port}/")
            assert "needs its token" in browser.find_element("tag name", "body").text
            browser.get(portal.url)
            wait_for(browser, lambda p: p["state"] == "live" and p["seq"] >= 3)
            assert browser.current_url == f"http://127.0.0.1:{portal.port}/"
            browser.find_element("id", "cmd").send_keys("stats reset\n")
            out = browser.find_element("id", "cmd-out")
            wait_for(browser, lambda p: "stats: window reset" in out.text)
        port = portal.port
        portal.close()  # the sample starts again on its port, with a new token
        portal = Portal(tel, reg, port=port, token="random")
        with FramePump(tel, reg, fps=60, max_s=30):
            wait_for(
                browser, lambda p: p["state"] == "disconnected" and "token" in _status(browser)
            )
        assert _status(browser).startswith(
            "refused: this run has another token; open the URL it printed; retrying in"
        )
    finally:
        portal.close()
        browser.delete_all_cookies()


def _status(driver) -> str:
    return driver.find_element("id", "status").text


def test_the_memory_panel_shows_the_session_fact_and_follows_it(page):
    """GPU memory from the memory tool's session fact: the total against the budget, the
    categories and the largest objects; a new fact (a resize) replaces what is shown."""
    d = page.driver
    page.tel.set_fact("gpu_memory", GPU_MEMORY)
    read = (
        "const p = document.getElementById('memory-panel');"
        "return [p.hidden, document.getElementById('memory-total').textContent,"
        " [...document.querySelectorAll('#memory tr')].map(r => r.textContent)];"
    )
    with FramePump(page.tel, page.reg, fps=60, max_s=30):
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 5)
        hidden, total, rows = js(d, read)
        assert not hidden and total == "42.0 MiB of 64.0 MiB in 2 objects"
        assert rows[:3] == ["targets40.0 MiB", "storage2.0 MiB", "uniform4.0 KiB"]
        assert rows[3] == "frame.shadow: shadow map 2048x2048 depth32float16.0 MiB"
        small = dict(GPU_MEMORY, totals={"targets": 100 * MIB, "total": 100 * MIB}, rows=[])
        page.tel.set_fact("gpu_memory", small)
        wait_for(d, lambda p: js(d, read)[1].startswith("100.0 MiB of 64.0 MiB OVER"))
        assert js(d, read)[2] == ["targets100.0 MiB"]


def test_the_page_draws_with_the_session_s_names_and_colours(page):
    """portal.js keeps no copies: the cull rows, the pie's colours and each pass's colour come
    from the session's ``page`` (changed here, so the page cannot be using its own)."""
    from engine.culling.counters import COUNTER_NAMES

    d = page.driver
    style = page.portal.broadcaster.session_extra["page"]
    assert style["counters"] == list(COUNTER_NAMES)
    style["palette"] = ["#123456", "#abcdef"]
    style["cull_classes"] = [[n, "#010203"] for n, _ in style["cull_classes"]]
    with FramePump(page.tel, page.reg, fps=60, max_s=30):
        d.get(page.portal.url)
        wait_for(d, lambda p: p["state"] == "live" and p["seq"] >= 5 and p["counters"]["tested"])
        js(d, "document.getElementById('pause').click()")
        rows = js(
            d,
            "return [...document.querySelectorAll('#cull tr')].map((r) => [r.dataset.counter,"
            " (r.querySelector('.swatch') || {style: {}}).style.background || null]);",
        )
        legend = js(
            d,
            "return [...document.querySelectorAll('#legend span')].map((s) =>"
            " [s.textContent, s.firstChild.style.background]);",
        )
        pie = js(
            d,
            "const c = document.getElementById('cull-pie'), g = c.getContext('2d');"
            "return [...g.getImageData(c.width / 2 + 20, c.height / 2, 1, 1).data];",
        )
        keys = js(
            d, "return [...document.querySelectorAll('#session tr')].map((r) => r.dataset.key)"
        )
    classes = {n for n, _ in style["cull_classes"]}
    assert [n for n, _ in rows] == list(COUNTER_NAMES)
    assert {n: c for n, c in rows if c} == {n: "rgb(1, 2, 3)" for n in classes}
    assert pie == [1, 2, 3, 255]  # every slice in the session's colour
    ids = list(page.portal.broadcaster.table.ids)
    colours = ["rgb(18, 52, 86)", "rgb(171, 205, 239)"]  # #123456, #abcdef
    assert len(legend) >= len(PASSES)
    assert all(c == colours[ids.index(n) % 2] for n, c in legend)
    assert "page" not in keys and "adapter" in keys  # not a setting to show
