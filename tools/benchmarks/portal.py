"""Portal: what the frame thread pays to publish a record with 0, 1 and 10 connected clients,
the latency from publication to a client holding the event, and the bytes per frame.

    python tools/bench.py portal [--quick]

Records are synthetic (12 GPU passes + their CPU scopes + Update/Submit/Present: the issue's
"12 passes"), made before timing; the time measured is ``Broadcaster.publish`` alone, as the
frame loop calls it (``Telemetry.publish`` -> subscriber). Clients are loopback SSE readers
in threads of this process (they compete for the GIL with the frame thread, as a browser
would not); with Chromium and selenium installed, the page's own arrival times are measured
too (the page stamps ``performance.timeOrigin + performance.now()`` per frame event).
"""

from __future__ import annotations

import shutil
import threading
import time

import numpy as np

from engine.portal import Portal
from engine.telemetry import Telemetry
from tests.portal_support import SseReader, publish_frame


def _records(n: int):
    tel = Telemetry({"adapter": "synthetic"})
    rng = np.random.default_rng(0)
    return [publish_frame(tel, i, rng) for i in range(n)]


def _reader(port: int, arrivals: dict, ready: threading.Event, count: list) -> None:
    r = SseReader(port)
    ready.set()
    try:
        while True:
            event, data, t = r.next_event()
            if event == "frame":
                arrivals[data["seq"]] = t
                count[0] += 1
    except (EOFError, OSError):
        pass
    finally:
        r.close()


def _stats(ns: list[int]) -> str:
    a = np.asarray(ns, np.float64) / 1e3
    return (
        f"median {np.median(a):8.2f} us  p99 {np.percentile(a, 99):8.2f} us  max {a.max():8.1f} us"
    )


def measure(clients: int, records, fps: float) -> dict:
    """Publish ``records`` at ``fps`` through a portal with ``clients`` SSE readers."""
    tel = Telemetry({"adapter": "synthetic"})
    portal = Portal(tel, port=0)
    b = portal.broadcaster
    arrivals = [{} for _ in range(clients)]
    counts = [[0] for _ in range(clients)]
    threads = []
    for i in range(clients):
        ready = threading.Event()
        t = threading.Thread(target=_reader, args=(portal.port, arrivals[i], ready, counts[i]))
        t.daemon = True
        t.start()
        ready.wait(5)
        threads.append(t)
    deadline = time.monotonic() + 5
    while len(b.clients) < clients and time.monotonic() < deadline:
        time.sleep(0.01)
    cost, sent, sizes = [], {}, []
    period = 1.0 / fps
    next_t = time.perf_counter()
    for rec in records:
        t0 = time.perf_counter_ns()
        b.publish(rec)
        t1 = time.perf_counter_ns()
        cost.append(t1 - t0)
        sent[rec.seq] = t0
        if clients:
            sizes.append(b.last_bytes)
        next_t += period
        time.sleep(max(0.0, next_t - time.perf_counter()))
    b.flush()
    time.sleep(0.2)
    lost = sum(c.lost for c in b.clients) + b.records_lost
    encode_us = b.encode_ns / max(b.encoded, 1) / 1e3
    portal.close()
    for t in threads:
        t.join(5)
    lat = [t - sent[s] for arr in arrivals for s, t in arr.items()]
    received = sum(c[0] for c in counts)
    return {
        "cost": cost,
        "latency": lat,
        "bytes": sizes,
        "received": received,
        "lost": lost,
        "encode_us": encode_us,
    }


def browser_latency(records, fps: float) -> list[float] | None:
    """Publication -> the page's frame handler, in ms (wall clocks of both processes)."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        print("  browser: skipped (no chromium / chromedriver)")
        return None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("  browser: skipped (no selenium)")
        return None
    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    driver = webdriver.Chrome(options=opts, service=Service(driver_path))
    tel = Telemetry({"adapter": "synthetic"})
    portal = Portal(tel, port=0)
    try:
        driver.get(portal.url)
        deadline = time.monotonic() + 10
        while not portal.broadcaster.clients and time.monotonic() < deadline:
            time.sleep(0.02)
        sent = {}
        next_t = time.perf_counter()
        for rec in records:
            sent[rec.seq] = time.time_ns()
            portal.broadcaster.publish(rec)
            next_t += 1.0 / fps
            time.sleep(max(0.0, next_t - time.perf_counter()))
        time.sleep(0.3)
        arrivals = driver.execute_script("return window.lanternArrivals || []")
        render = np.asarray(driver.execute_script("return window.lanternRenderMs || []"))
        if len(render):
            print(
                f"  browser: page render median {np.median(render):.2f} ms, "
                f"p99 {np.percentile(render, 99):.2f} ms over {len(render)} renders"
            )
    finally:
        portal.close()
        driver.quit()
    return [t_ms - sent[seq] / 1e6 for seq, t_ms in arrivals if seq in sent]


def _tight_loop(record, n: int = 200_000) -> float:
    tel = Telemetry()
    b = Portal(tel, port=0)
    publish = b.broadcaster.publish
    t0 = time.perf_counter_ns()
    for _ in range(n):
        publish(record)
    dt = time.perf_counter_ns() - t0
    b.close()
    return dt / n


def run(gpu, args) -> None:
    n = 300 if args.quick else 1200
    fps = 240.0
    records = _records(n)
    print(f"{n} synthetic records (12 passes, GPU + CPU scopes), published at {fps:g} Hz")
    print(f"  0 clients, tight loop: {_tight_loop(records[0]):.0f} ns per publish (the one check)")
    for clients in (0, 1, 10):
        r = measure(clients, records, fps)
        print(f"  {clients:2d} client(s): publish cost {_stats(r['cost'])}  (frame thread)")
        if clients:
            print(
                f"              encoder thread {r['encode_us']:.1f} us per record "
                "(encode once + queue for every client, off the frame thread)"
            )
            print(f"              latency      {_stats(r['latency'])}")
            b = np.asarray(r["bytes"])
            print(
                f"              frame event  mean {b.mean():.0f} B, max {b.max()} B; "
                f"received {r['received']}/{clients * n}, lost {r['lost']}"
            )
    lat = browser_latency(records[: min(n, 600)], 60.0)
    if lat:
        a = np.asarray(lat)
        print(
            f"  browser (Chromium page handler, 60 Hz): latency median {np.median(a):.2f} ms, "
            f"p99 {np.percentile(a, 99):.2f} ms, max {a.max():.2f} ms over {len(a)} frames"
        )
