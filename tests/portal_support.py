"""Synthetic telemetry and a raw-socket SSE / HTTP client for the portal's tests and benchmark."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from http.client import HTTPConnection, IncompleteRead
from pathlib import Path

import numpy as np
import orjson

from engine.culling.counters import CullCounts
from engine.frame import PASS_NAMES
from engine.telemetry import FrameTimings, Scope, Telemetry
from engine.tools.perf.panel import CPU_ONLY_SCOPES

PASSES = (*PASS_NAMES[:11], "DebugOverlay")  # 12: the size budget
CPU_ONLY = CPU_ONLY_SCOPES


def publish_frame(
    tel: Telemetry,
    index: int,
    rng: np.random.Generator,
    *,
    cpu: bool = True,
    gpu: bool = True,
    scale: float = 1.0,
):
    """Publish one synthetic frame (GPU scopes for every pass when ``gpu``, CPU scopes when
    ``cpu``, each ``scale`` times as long; cull counters that depend on ``index``); return
    the record."""
    gb = 10**15 + index * 16_000_000
    c = time.perf_counter_ns()
    gpus, cpus = [], []
    for name in PASSES:
        d = int(rng.integers(10_000, 2_000_000) * scale)
        gpus.append(Scope(name, gb, gb + d))
        gb += d
        d = int(rng.integers(5_000, 200_000) * scale)
        cpus.append(Scope(name, c, c + d))
        c += d
    for name in CPU_ONLY:
        cpus.append(Scope(name, c, c + 40_000))
        c += 40_000
    visible = 30_000 + index % 1000
    counts = (100_000, 40_000, 10_000, 60_000 - visible, visible, visible - 5, 5, 70_000)
    return tel.publish(
        index,
        t_ns=time.perf_counter_ns(),
        wall_ms=16.6 + float(rng.random()),
        timings=FrameTimings(index, gpu=gpus if gpu else None, cpu=cpus if cpu else None),
        readbacks={"cull": CullCounts(index - 2, counts)},
    )


class FramePump:
    """Publishes synthetic frames at ``fps`` on its own thread (the "frame thread") and runs
    ``commands.run_pending()`` between frames, like the frame loop, and ``after_frame(i)`` after
    each frame (where the app writes a requested capture). Stops after ``max_s``."""

    def __init__(
        self,
        tel: Telemetry,
        commands=None,
        *,
        fps: float = 60.0,
        max_s: float = 60.0,
        after_frame=None,
        timed: bool = True,
        spike_every: int = 0,
        spike: float = 10.0,
    ):
        """``timed=False``: frames without scopes (profiling off). ``spike_every=N``: every
        Nth frame's scopes are ``spike`` times as long (a hitch)."""
        self.tel, self.commands, self.fps, self.max_s = tel, commands, fps, max_s
        self.after_frame, self.timed = after_frame, timed
        self.spike_every, self.spike = spike_every, spike
        self.stop = threading.Event()
        self.records: dict[int, object] = {}  # seq -> record
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)

    def _run(self):
        rng = np.random.default_rng(1)
        end = time.monotonic() + self.max_s
        i = 0
        while not self.stop.is_set() and time.monotonic() < end:
            hitch = self.spike_every and i % self.spike_every == self.spike_every - 1
            scale = self.spike if hitch else 1.0
            rec = publish_frame(self.tel, i, rng, cpu=self.timed, gpu=self.timed, scale=scale)
            self.records[rec.seq] = rec
            if self.after_frame is not None:
                self.after_frame(i)
            if self.commands is not None:
                self.commands.run_pending()
            i += 1
            self.stop.wait(1.0 / self.fps)


def http(
    port: int, raw: bytes, *, timeout: float = 5.0, addr: str = "127.0.0.1", source: str = ""
) -> tuple[int, dict, bytes]:
    """Send ``raw`` bytes to ``addr:port`` (from ``source``, any port, when given), read to
    EOF; ``(status, headers, body)``."""
    src = (source, 0) if source else None
    with socket.create_connection((addr, port), timeout=timeout, source_address=src) as s:
        try:
            s.sendall(raw)
        except BrokenPipeError:  # answered (431) and closed before all was sent: read it
            pass
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return parse_response(data)


def parse_response(data: bytes) -> tuple[int, dict, bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:])}
    return status, headers, body


def request(
    port: int,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict | None = None,
    *,
    addr: str = "127.0.0.1",
    source: str = "",
):
    """One request (``headers`` may hold ``None``: that header left out); ``(status, headers,
    body)``."""
    h = {"Host": f"{addr}:{port}", **(headers or {})}
    if body or method == "POST":
        h.setdefault("Content-Length", str(len(body)))
    head = [f"{k}: {v}" for k, v in h.items() if v is not None]
    lines = [f"{method} {path} HTTP/1.1", *head, "", ""]
    return http(port, "\r\n".join(lines).encode("latin-1") + body, addr=addr, source=source)


def post_command(port: int, line: str, headers: dict | None = None):
    status, _, body = request(
        port,
        "POST",
        "/command",
        orjson.dumps({"line": line}),
        {"Content-Type": "application/json", **(headers or {})},
    )
    return status, orjson.loads(body) if body.startswith(b"{") else body


class SseReader:
    """An event-stream reader (``http.client``: it undoes the chunked transfer coding of an
    HTTP/1.1 stream): ``next_event() -> (name, data_dict, t_received_ns)``."""

    def __init__(self, port: int, *, timeout: float = 5.0, headers: str = "", addr="127.0.0.1"):
        self.conn = HTTPConnection(addr, port, timeout=timeout)
        extra = dict(line.split(": ", 1) for line in headers.split("\r\n") if line)
        self.conn.request("GET", "/events", headers={"Host": f"{addr}:{port}", **extra})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.buf = b""

    def _until(self, sep: bytes) -> bytes:
        while sep not in self.buf:
            try:
                chunk = self.resp.read1(65536)
            except IncompleteRead as e:  # the server went away mid-chunk
                raise EOFError("stream closed") from e
            if not chunk:
                raise EOFError("stream closed")
            self.buf += chunk
        out, _, self.buf = self.buf.partition(sep)
        return out

    def next_event(self):
        while True:
            block = self._until(b"\n\n")
            t = time.perf_counter_ns()
            fields = dict(
                line.split(": ", 1) for line in block.decode().split("\n") if ": " in line
            )
            if "event" in fields:
                return fields["event"], orjson.loads(fields["data"]), t

    def close(self):
        self.conn.close()


def non_loopback_ipv4() -> str | None:
    """This machine's first non-loopback IPv4 interface address, or None (none, or not
    Linux). Found with the ``SIOCGIFADDR`` ioctl per interface: independent of ``psutil``,
    which the server asks."""
    try:
        import fcntl
        import struct
    except ImportError:
        return None
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = struct.pack("256s", name[:15].encode())
                res = fcntl.ioctl(s.fileno(), siocgifaddr, packed)
            except OSError:  # no IPv4 address on this interface
                continue
            ip = socket.inet_ntoa(res[20:24])
            if not ip.startswith("127."):
                return ip
    return None


@contextlib.contextmanager
def sample_with_portal(sample: str, *args: str, cwd: Path):
    """``python -m samples.<sample> *args --portal 0`` running from ``cwd``; yields the
    portal's port (read from its ``portal:`` line, within 200 lines) and kills the run after.
    """
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", f"samples.{sample}", *args, "--portal", "0"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", XDG_RUNTIME_DIR="/tmp", PYTHONPATH=str(root))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    try:
        port = None
        for _ in range(200):  # bounded: the GPU description, then the portal line
            line = proc.stdout.readline()
            if line.startswith("portal: "):
                port = int(line.split()[1].rsplit(":", 1)[1].strip("/"))
                break
        assert port is not None, f"no portal URL (exit status {proc.poll()})"
        yield port
    finally:
        proc.kill()
        proc.wait(30)
