"""The portal server and its protocol, without a browser: loopback only, every loop bounded,
every server closed by the test that started it."""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import SimpleNamespace

import numpy as np
import orjson
import pytest

from engine.cli import build_parser
from engine.commands import CommandRegistry
from engine.telemetry import NameTable, ProfilingInfo, Telemetry, encode_record
from engine.tools.log.tool import LogTail
from engine.tools.portal import (
    DEFAULT_PORT,
    Portal,
    PortalError,
    PortalTool,
    portal_port,
    protocol,
    server,
)
from engine.tools.portal.protocol import Client
from tests.portal_support import (
    PASSES,
    FramePump,
    SseReader,
    http,
    non_loopback_ipv4,
    post_command,
    publish_frame,
    request,
)
from tests.tool_fakes import make_ctx, register_overlay_stub

SESSION = {"adapter": "synthetic", "sample": "test", "size": [320, 180]}


@pytest.fixture
def portal():
    tel = Telemetry(SESSION)
    reg = CommandRegistry()
    tail = LogTail()
    logging.getLogger("lantern").addHandler(tail)
    p = Portal(tel, reg, tail, port=0)
    try:
        yield SimpleNamespace(p=p, tel=tel, reg=reg, tail=tail, port=p.port)
    finally:
        p.close()
        logging.getLogger("lantern").removeHandler(tail)


def frames(reader: SseReader, n: int, names: list[str]) -> list[dict]:
    """The next ``n`` frame events (names events extend ``names``)."""
    out = []
    while len(out) < n:
        event, data, _ = reader.next_event()
        if event == "names":
            names.extend(data["names"])
        elif event == "frame":
            out.append(data)
    return out


# -- stream ---------------------------------------------------------------------------------
def test_stream_sends_session_names_then_each_record_as_encoded(portal):
    with FramePump(portal.tel, portal.reg, fps=120, max_s=20) as pump:
        r = SseReader(portal.port)
        try:
            assert r.status == 200
            event, session, _ = r.next_event()
            assert event == "session"
            assert {k: session[k] for k in SESSION} == SESSION and "pid" in session
            event, names, _ = r.next_event()
            assert event == "names"  # the table so far (maybe empty)
            names = names["names"]
            got = frames(r, 20, names)
        finally:
            r.close()
    table = NameTable()  # re-encode independently: same numbers, same names by id
    for i, msg in enumerate(got):
        rec = pump.records[msg["seq"]]
        _, expected = encode_record(rec, table)
        if i > 0:
            assert msg["seq"] == got[i - 1]["seq"] + 1  # this reader kept up: no gap
        assert [names[s[0]] for s in msg["gpu"]] == list(PASSES)
        assert [[s[1], s[2]] for s in msg["gpu"]] == [[s.begin_ns, s.end_ns] for s in rec.gpu]
        assert msg["cull"] == {"frame": rec.cull.frame_index, "values": list(rec.cull.values)}
        assert msg["wall_ms"] == expected["wall_ms"]
        assert [[names[row[1]], *row[2:]] for row in msg["stats"]] == [
            [table_name(table, row[1]), *row[2:]] for row in expected["stats"]
        ]


def table_name(table: NameTable, i: int) -> str:
    return list(table.ids)[i]


def test_frame_event_is_at_most_4_kb_at_12_passes():
    """GPU scopes for 12 passes plus CPU scopes for them and Update/Submit/Present, and the
    stats rows of all of those: the heaviest record a 12-pass frame makes."""
    tel = Telemetry()
    b = protocol.Broadcaster(tel)
    c = b.connect()
    rng = np.random.default_rng(3)
    for i in range(80):  # a full stats window
        publish_frame(tel, i, rng)
    assert b.flush()
    assert len(tel.latest.gpu) == 12 and len(tel.latest.cpu) == 15
    assert 1500 < b.last_bytes <= 4096
    assert c.lost == 0
    b.close()


def test_late_client_gets_the_whole_name_table(portal):
    rng = np.random.default_rng(0)
    first = SseReader(portal.port)
    while not portal.p.broadcaster.clients:  # connected once the headers are out
        time.sleep(0.01)
    for i in range(5):
        publish_frame(portal.tel, i, rng)
    assert portal.p.broadcaster.flush()  # encoded and queued before the late client comes
    late = SseReader(portal.port)
    try:
        for _ in range(200):
            if len(portal.p.broadcaster.clients) == 2:
                break
            time.sleep(0.01)
        assert late.next_event()[0] == "session"
        event, data, _ = late.next_event()
        from engine.culling.counters import COUNTER_NAMES

        assert event == "names" and data["names"] == list(PASSES) + [
            "Update",
            "Submit",
            "Present",
            "Frame",
            *COUNTER_NAMES,  # the cull block's counters, named once
        ]  # the whole table, in id order
        assert data["full"] is True
        late_names = data["names"]
        assert late.next_event()[0] == "log"  # the tail so far
        publish_frame(portal.tel, 5, rng)
        a = frames(first, 6, [])[-1]
        b = frames(late, 1, late_names)[-1]
        assert a == b and a["seq"] == 5  # one encoding for every client
        assert [late_names[s[0]] for s in b["gpu"]] == list(PASSES)
    finally:
        first.close()
        late.close()


def test_log_lines_are_streamed(portal):
    rng = np.random.default_rng(0)
    r = SseReader(portal.port)
    try:
        for _ in range(3):
            event, data, _ = r.next_event()
        assert event == "log" and data["reset"] is True
        for _ in range(3):
            logging.getLogger("lantern").warning("portal test warning")
        publish_frame(portal.tel, 0, rng)
        while True:
            event, data, _ = r.next_event()
            if event == "log":
                break
        assert data["lines"][-1] == {
            "id": data["lines"][-1]["id"],
            "level": "warning",
            "text": "portal test warning",
            "count": 3,
        }
    finally:
        r.close()


def test_log_lines_go_out_while_no_frame_comes(portal):
    r = SseReader(portal.port)
    try:
        assert [r.next_event()[0] for _ in range(3)] == ["session", "names", "log"]
        logging.getLogger("lantern").error("paused, but still logging")
        t0 = time.monotonic()
        event, data, _ = r.next_event()  # no frame is ever published here
        assert event == "log" and data["lines"][-1]["text"] == "paused, but still logging"
        assert data["lines"][-1]["level"] == "error"
        assert time.monotonic() - t0 < 5 * protocol.LOG_POLL_S + 1
    finally:
        r.close()


def test_a_changed_session_is_sent_again(portal):
    rng = np.random.default_rng(0)
    r = SseReader(portal.port)
    try:
        assert [r.next_event()[0] for _ in range(3)] == ["session", "names", "log"]
        publish_frame(portal.tel, 0, rng)
        assert [r.next_event()[0] for _ in range(2)] == ["names", "frame"]  # no session
        portal.tel.update_session(profiling=ProfilingInfo(gpu=True))  # `profile gpu on`
        publish_frame(portal.tel, 1, rng)
        event, data, _ = r.next_event()
        assert event == "session" and data["profiling"]["gpu"] is True
        assert data["adapter"] == "synthetic"
        assert r.next_event()[0] == "frame"
    finally:
        r.close()


def test_stream_ends_when_the_portal_closes():
    tel = Telemetry()
    p = Portal(tel, port=0)
    port = p.port
    r = SseReader(port)
    r.next_event()
    p.close()
    with pytest.raises((EOFError, ConnectionError)):
        for _ in range(10):
            r.next_event()
    r.close()
    again = Portal(tel, port=port)  # a restarted sample gets its port back at once
    again.close()


# -- publish path ---------------------------------------------------------------------------
def test_no_client_means_no_encoding(monkeypatch):
    """With no client the frame thread's publish is one check: nothing is handed over or
    encoded. With one, the record is encoded once, off the frame thread."""
    calls = []
    real = protocol.encode_record

    def counting(rec, table):
        calls.append((rec.seq, threading.current_thread().name))
        return real(rec, table)

    monkeypatch.setattr(protocol, "encode_record", counting)
    tel = Telemetry()
    b = protocol.Broadcaster(tel)
    rng = np.random.default_rng(0)
    for i in range(10):
        publish_frame(tel, i, rng)
    assert b.flush() and calls == [] and not b._pending
    client = b.connect()
    publish_frame(tel, 10, rng)
    assert b.flush()
    assert calls == [(10, "lantern-portal-encoder")]
    assert len(client.queue) == 3  # session, names, frame
    b.disconnect(client)
    publish_frame(tel, 11, rng)
    assert b.flush() and len(calls) == 1
    b.close()


def test_handover_is_bounded():
    tel = Telemetry()
    b = protocol.Broadcaster(tel)
    b._running = False  # the encoder thread stops taking records: a stuck encoder
    b._release()
    b._thread.join(2)
    b._wake.acquire(blocking=False)
    b.connect()
    rng = np.random.default_rng(0)
    for i in range(protocol.PENDING + 7):
        publish_frame(tel, i, rng)
    assert len(b._pending) == protocol.PENDING and b.records_lost == 7
    b.close()


def test_client_queue_is_bounded_and_counts_lost_messages():
    c = Client([], limit=4)
    for i in range(10):
        assert c.put(protocol.sse("frame", {"seq": i}), now=0.0)
    assert c.lost == 6 and len(c.queue) == 4
    got = [orjson.loads(b.split(b"data: ")[1]) for b in c.take(0).split(b"\n\n") if b]
    assert [m["seq"] for m in got] == [6, 7, 8, 9]  # the reader sees the gap 0..5
    for _ in range(4):
        c.put(b"x", now=10.0)
    assert c.put(b"x", now=10.0)  # full since t=10
    assert not c.put(b"x", now=10.0 + protocol.STALL_S + 0.1)  # stalled too long: drop


def test_stalled_client_is_dropped_and_memory_stays_bounded(portal, monkeypatch):
    monkeypatch.setattr(protocol, "STALL_S", 0.2)
    # only the broadcaster's stall check may end it here, not the server's write timeout
    # (which a loaded machine could reach first)
    monkeypatch.setattr(server, "WRITE_TIMEOUT_S", 60.0)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", portal.port))
    sock.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{portal.port}\r\n\r\n".encode())
    b = portal.p.broadcaster
    for _ in range(300):
        if b.clients:
            break
        time.sleep(0.01)
    (client,) = b.clients
    rng = np.random.default_rng(0)
    deadline = time.monotonic() + 60  # the kernel and aiohttp buffers fill first: slow when loaded
    peak = 0
    while b.clients and time.monotonic() < deadline:  # never read: the socket fills up
        publish_frame(portal.tel, 0, rng)
        peak = max(peak, len(client.queue))
        time.sleep(0.0005)
    sock.close()
    assert b.clients == () and b.dropped_clients == 1
    assert client.closed and client.lost > 0
    assert peak <= protocol.QUEUE_FRAMES


# -- commands -------------------------------------------------------------------------------
def test_command_runs_on_the_frame_thread_and_answers(portal):
    where = []
    portal.reg.register("where", lambda: where.append(threading.current_thread()) or "frame")
    with FramePump(portal.tel, portal.reg, fps=100, max_s=20) as pump:
        assert post_command(portal.port, "where") == (200, {"ok": True, "text": "frame"})
        assert where == [pump.thread]
        status, body = post_command(portal.port, "overlay")
        assert status == 200 and body == {
            "ok": False,
            "text": "error: unknown command 'overlay'; type help",
        }


def test_a_command_line_cannot_forge_log_lines(portal, caplog):
    # the echo of a posted line is one log line: a newline or a control character in it is
    # shown escaped, so a page cannot print "portal> shadows off" as if it had been run
    with FramePump(portal.tel, portal.reg, fps=100, max_s=20):
        with caplog.at_level(logging.INFO, logger="lantern"):
            post_command(portal.port, "help\nportal> shadows off\x1b[2J\x00")
    echoes = [m for m in caplog.messages if m.startswith("portal>")]
    assert echoes == ["portal> help\\nportal> shadows off\\x1b[2J\\x00"]


def test_completion_answers_without_the_frame_loop(portal):
    register_overlay_stub(portal.reg)
    status, _, body = request(
        portal.port,
        "POST",
        "/complete",
        orjson.dumps({"line": "overlay t"}),
        {"Content-Type": "application/json"},
    )
    assert status == 200
    assert orjson.loads(body) == {"line": "overlay timeline ", "candidates": ["timeline"]}
    assert request(portal.port, "GET", "/complete")[0] == 405


def test_command_not_run_in_time_is_504_and_stays_queued(portal, monkeypatch):
    monkeypatch.setattr(server, "COMMAND_WAIT_S", 0.2)
    ran = []
    portal.reg.register("mark", lambda: ran.append(1))
    status, body = post_command(portal.port, "mark")  # no frame loop: nothing drains
    assert status == 504 and body["ok"] is False and body["text"].startswith("queued:")
    assert portal.reg.run_pending() == 1 and ran == [1]


# -- bad requests ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "method, path, status",
    [
        ("GET", "/../engine/app.py", 404),
        ("GET", "/%2e%2e/%2e%2e/etc/passwd", 404),
        ("GET", "/assets/portal/../../README.md", 404),
        ("GET", "//etc/passwd", 404),
        ("GET", "/portal.js/../../pyproject.toml", 404),
        ("GET", "/nothing", 404),
        ("POST", "/events", 405),
        ("GET", "/command", 405),
        ("DELETE", "/", 405),
        ("PUT", "/portal.js", 405),
        ("HEAD", "/", 405),
    ],
)
def test_bad_paths_and_methods(portal, method, path, status):
    got, headers, body = request(portal.port, method, path)
    assert got == status
    assert b"lantern" not in body.lower() or status == 405  # no file content leaks
    if status == 405:
        assert headers["allow"] in ("GET", "POST")


def test_known_paths_serve_the_page(portal):
    status, headers, body = request(portal.port, "GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert body == (server.ASSETS_DIR / "index.html").read_bytes()
    status, headers, body = request(portal.port, "GET", "/portal.js?v=1")
    assert status == 200 and body == (server.ASSETS_DIR / "portal.js").read_bytes()
    status, _, body = request(portal.port, "GET", "/session.json")
    assert status == 200 and orjson.loads(body)["adapter"] == "synthetic"


@pytest.mark.parametrize(
    "headers, body, status",
    [
        ({"Content-Type": "application/json", "Content-Length": "5000"}, b"", 413),
        ({"Content-Type": "application/json", "Content-Length": "abc"}, b"", 400),
        ({"Content-Type": "text/plain"}, b'{"line": "help"}', 415),
        ({"Content-Type": "application/json"}, b"not json", 400),
        ({"Content-Type": "application/json"}, b'{"line": 3}', 400),
    ],
)
def test_bad_command_requests(portal, headers, body, status):
    got, _, _ = request(portal.port, "POST", "/command", body, headers)
    assert got == status


@pytest.mark.parametrize(
    "framing",
    ["Content-Length: 16\r\nContent-Length: 5\r\n",
     "Content-Length: 16\r\nTransfer-Encoding: chunked\r\n"],
)  # fmt: skip
def test_an_ambiguous_body_length_is_400(portal, framing):
    raw = f"POST /command HTTP/1.1\r\nHost: 127.0.0.1:{portal.port}\r\n"
    raw += "Content-Type: application/json\r\n" + framing + '\r\n{"line": "help"}'
    assert http(portal.port, raw.encode())[0] == 400


def test_missing_length_is_411(portal):
    raw = f"POST /command HTTP/1.1\r\nHost: 127.0.0.1:{portal.port}\r\n"
    raw += "Content-Type: application/json\r\n\r\n"
    assert http(portal.port, raw.encode())[0] == 411


def test_foreign_host_header_is_403(portal, monkeypatch):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host."""
    monkeypatch.setattr(server, "COMMAND_WAIT_S", 0.1)
    status, _, _ = request(portal.port, "GET", "/", headers={"Host": "evil.example:3030"})
    assert status == 403
    status, _ = post_command(portal.port, "help")  # the right Host is fine
    assert status == 504  # (no frame loop here) -> it was accepted and queued


@pytest.mark.parametrize(
    "host, status",
    [
        ("127.0.0.1:{port}", 200),
        ("LOCALHOST:{port}", 200),  # host names are case-insensitive
        ("[::1]:{port}", 200),
        ("127.0.0.1", 403),  # no port: not how a browser names this server
        ("127.0.0.1:1", 403),
        ("127.0.0.1.evil.example:{port}", 403),
        ("localhost.evil.example:{port}", 403),
        ("", 403),
    ],
)
def test_host_variants(portal, host, status):
    got, _, body = request(portal.port, "GET", "/", headers={"Host": host.format(port=portal.port)})
    assert got == status
    if status == 403:
        assert b"is not a name this portal serves (DNS rebinding?)" in body


def test_no_host_header_is_403(portal):
    raw = b"GET / HTTP/1.0\r\n\r\n"
    assert http(portal.port, raw)[0] == 403


def test_slow_client_gets_408_and_is_closed(portal, monkeypatch):
    monkeypatch.setattr(server, "REQUEST_TIMEOUT_S", 0.4)
    for partial in (b"GET / HT", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1"):
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", portal.port), timeout=5) as s:
            s.sendall(partial)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        assert data.startswith(b"HTTP/1.1 408 ")
        assert 0.35 < time.monotonic() - t0 < 3.0
    assert portal.p.timeouts == 2
    # a slow POST body, too
    with socket.create_connection(("127.0.0.1", portal.port), timeout=5) as s:
        s.sendall(
            f"POST /command HTTP/1.1\r\nHost: 127.0.0.1:{portal.port}\r\nContent-Type: "
            "application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        data = s.recv(4096)
    assert data.startswith(b"HTTP/1.1 408 ")


def _wait(cond, timeout=30.0) -> bool:  # returns as soon as it holds: a loaded box is slow
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)
    return cond()


def test_a_slowloris_cannot_lock_out_a_real_client(portal, monkeypatch):
    """At the connection limit, the oldest connection still sending its request makes room:
    idle sockets (a slowloris) are evicted with a 503, the real request is answered."""
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 4)
    monkeypatch.setattr(server, "REQUEST_TIMEOUT_S", 60.0)  # only eviction closes them here
    idle = []
    try:
        for round_ in range(3):  # the attacker reopens what was closed; the page still loads
            while len(idle) < 4 + round_:
                idle.append(socket.create_connection(("127.0.0.1", portal.port), timeout=5))
                idle[-1].sendall(b"GET / HTTP/1.1\r\nX-Slow: 1")  # never finishes
            if round_ == 0:  # the server holds all four: the limit is reached
                assert _wait(lambda: portal.p.connections >= 4)
            # (later rounds: how many are open depends on when evicted sockets finish closing)
            assert request(portal.port, "GET", "/")[0] == 200
        assert portal.p.evicted >= 1 and portal.p.refused == 0
        assert idle[0].recv(100).startswith(b"HTTP/1.1 503 ")  # the oldest went first
    finally:
        for s in idle:
            s.close()
    assert _wait(lambda: portal.p.connections == 0)


def test_connections_beyond_the_limit_are_closed_at_once_when_none_can_go(portal, monkeypatch):
    """Event streams are not evicted: with every slot a stream, a new connection is closed."""
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(server, "KEEPALIVE_S", 0.1)  # closed streams are found soon
    readers = [SseReader(portal.port) for _ in range(2)]
    try:
        assert _wait(lambda: portal.p.connections == 2 and not portal.p.reading)
        with socket.create_connection(("127.0.0.1", portal.port), timeout=5) as s:
            s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{portal.port}\r\n\r\n".encode())
            try:  # closed without an answer: a FIN, or a reset if the request came first
                got = s.recv(100)
            except ConnectionResetError:
                got = b""
            assert got == b""
        assert portal.p.refused == 1 and portal.p.evicted == 0
    finally:
        for r in readers:
            r.close()
    assert _wait(lambda: portal.p.connections == 0)
    assert request(portal.port, "GET", "/")[0] == 200


# -- start-up -------------------------------------------------------------------------------
def parse(*argv):
    return build_parser("prog", "d").parse_args(list(argv))


def test_cli_options(capsys):
    assert parse().portal is None
    assert parse("--portal").portal == DEFAULT_PORT == 3030
    assert parse("--portal", "0").portal == 0
    assert parse("--portal", "8080", "--portal-host", "::1").portal_host == "::1"
    with pytest.raises(SystemExit) as e:
        parse("--portal", "70000")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "prog: error: argument --portal: expected a TCP port (0 = any free port) from 0 to "
        "65,535, got '70000'\n"
    )


def test_environment_switch(monkeypatch):
    args = SimpleNamespace(portal=None)
    monkeypatch.delenv("LANTERN_PORTAL", raising=False)
    assert portal_port(args) is None
    monkeypatch.setenv("LANTERN_PORTAL", "1")
    assert portal_port(args) == DEFAULT_PORT
    assert portal_port(SimpleNamespace(portal=0)) == 0  # the option wins
    monkeypatch.setenv("LANTERN_PORTAL", "0")
    assert portal_port(args) is None
    monkeypatch.setenv("LANTERN_PORTAL", "yes")
    with pytest.raises(PortalError, match="LANTERN_PORTAL='yes': set it to 1"):
        portal_port(args)


def _start(**options):
    """Install the portal tool into a context built from fakes; its ``portal`` or None."""
    tool = PortalTool()
    make_ctx(**{"portal": None, "portal_host": None, **options}).install(tool)
    return tool.portal


def test_start_prints_url_and_port_in_use_is_one_line(capsys, monkeypatch):
    monkeypatch.delenv("LANTERN_PORTAL", raising=False)
    p = _start(portal=0)
    try:
        assert capsys.readouterr().out == f"portal: http://127.0.0.1:{p.port}/\n"
        assert p.address[0] == "127.0.0.1"
        with pytest.raises(PortalError) as e:
            _start(portal=p.port)
        assert str(e.value) == (
            f"portal port {p.port} is in use: pick another with --portal PORT (0 = a free port)"
        )
    finally:
        p.close()
    assert _start() is None


def test_host_without_a_portal_is_one_line(monkeypatch):
    # --portal-host alone used to be ignored: no server, no word, the page never came up
    monkeypatch.delenv("LANTERN_PORTAL", raising=False)
    with pytest.raises(PortalError) as e:
        _start(portal_host="0.0.0.0")
    assert str(e.value) == (
        "--portal-host '0.0.0.0' needs the portal on: add --portal [PORT] (or LANTERN_PORTAL=1)"
    )
    for empty in ("", "  "):  # it served on the default address, silently
        with pytest.raises(PortalError, match="^--portal-host: empty; give an address"):
            _start(portal=0, portal_host=empty)


def test_non_loopback_host_is_a_warning(monkeypatch, caplog, capsys):
    import engine.tools.portal as portal_pkg

    monkeypatch.delenv("LANTERN_PORTAL", raising=False)
    monkeypatch.setattr(portal_pkg, "is_loopback", lambda host: False)  # stays on loopback
    with caplog.at_level(logging.WARNING, logger="lantern"):
        p = _start(portal=0, portal_host="127.0.0.1")
    try:
        assert request(p.port, "GET", "/session.json")[0] == 401  # no token, no session
    finally:
        p.close()
    assert caplog.messages == [
        "portal: listening on 127.0.0.1, not loopback: whoever has the URL below (its token) "
        "can watch this process and run console commands in it, e.g. capture writes files as "
        "you; the traffic is plain HTTP, readable on the network"
    ]
    url = capsys.readouterr().out.strip().removeprefix("portal: ")
    assert url == f"http://127.0.0.1:{p.port}/?token={p.token}" and len(p.token) >= 24


def test_bad_host_is_one_line():
    with pytest.raises(PortalError, match="--portal-host 'no.such.host.invalid' is not an"):
        Portal(Telemetry(), host="no.such.host.invalid", port=0)


def test_missing_page_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(server, "ASSETS_DIR", tmp_path)
    with pytest.raises(PortalError, match=r"the portal page is missing \(.*index.html\)"):
        Portal(Telemetry(), port=0)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.1", "127.0.1", "127.255.255.254", "0x7f.1", "::1", "[::1]",
     "::ffff:127.0.0.1", "localhost", "LocalHost.", "a.localhost", "127.0.0.2"],
)  # fmt: skip
def test_loopback_check(host):
    assert server.is_loopback(host)


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "192.168.1.2", "128.0.0.1", "126.255.255.255", "127.0.0.1.evil.example",
     "localhost.evil.example", "::2", "::ffff:10.0.0.1", "", "0x80.1"],
)  # fmt: skip
def test_not_loopback(host):
    assert not server.is_loopback(host)


def test_a_wildcard_bind_serves_the_machine_s_names_only():
    names = server.served_names("0.0.0.0")
    assert socket.gethostname().lower() in names and "0.0.0.0" in names
    assert {"127.0.0.1", "localhost", "[::1]"} <= names and "evil.example" not in names
    assert server.served_names("10.1.2.3") == {"127.0.0.1", "localhost", "[::1]", "10.1.2.3"}
    assert "[fe80::1]" in server.served_names("fe80::1")


# -- security -------------------------------------------------------------------------------
@pytest.fixture
def token_portal(monkeypatch):
    """A portal that needs a token, as every non-loopback bind does (bound to loopback here)."""
    monkeypatch.setattr(server, "COMMAND_WAIT_S", 0.1)
    p = Portal(Telemetry(SESSION), CommandRegistry(), port=0, token="t0ken-Abc_123")
    try:
        yield p
    finally:
        p.close()


@pytest.mark.parametrize(
    "path, headers, status",
    [
        ("/", {}, 401),
        ("/session.json", {}, 401),
        ("/portal.js", {}, 401),
        ("/?token=wrong", {}, 401),
        ("/?token=t0ken-Abc_12", {}, 401),  # a prefix is not the token
        ("/", {"Cookie": "lantern_token=wrong"}, 401),
        ("/", {"X-Lantern-Token": ""}, 401),
        ("/?token=t0ken-Abc_123", {}, 200),
        ("/session.json", {"Cookie": "a=b; lantern_token=t0ken-Abc_123"}, 200),
        ("/portal.js", {"X-Lantern-Token": "t0ken-Abc_123"}, 200),
        ("/nothing?token=t0ken-Abc_123", {}, 404),
        ("/nothing", {}, 401),  # nothing about the server without the token
    ],
)
def test_a_token_portal_refuses_requests_without_it(token_portal, path, headers, status):
    got, h, body = request(token_portal.port, "GET", path, headers=headers)
    assert got == status
    if status == 401:
        assert body == b"this portal needs its token: open the URL it printed (...?token=...)\n"
        assert "set-cookie" not in h


def test_the_token_url_sets_a_same_site_cookie_that_the_stream_and_commands_accept(
    token_portal,
):
    p = token_portal
    assert p.url == f"http://127.0.0.1:{p.port}/?token=t0ken-Abc_123"
    status, headers, _ = request(p.port, "GET", "/?token=t0ken-Abc_123")
    assert status == 200
    assert headers["set-cookie"] == "lantern_token=t0ken-Abc_123; HttpOnly; SameSite=Strict; Path=/"
    r = SseReader(p.port)
    assert r.status == 401
    r.close()
    r = SseReader(p.port, headers="Cookie: lantern_token=t0ken-Abc_123\r\n")
    try:
        assert r.status == 200 and r.next_event()[0] == "session"
    finally:
        r.close()
    assert post_command(p.port, "help")[0] == 401
    status, body = post_command(p.port, "help", {"Cookie": "lantern_token=t0ken-Abc_123"})
    assert status == 504 and body["text"].startswith("queued:")  # accepted (no frame loop)


def test_random_tokens_differ():
    a, b = (Portal(Telemetry(), port=0, token="random") for _ in range(2))
    a.close(), b.close()
    assert a.token != b.token and len(a.token) >= 24 and a.token in a.url


@pytest.mark.parametrize(
    "origin, status",
    [
        ("http://evil.example", 403),
        ("http://127.0.0.1.evil.example:{port}", 403),
        ("null", 403),  # a sandboxed frame or a file: page
        ("https://127.0.0.1:{port}", 403),  # not how this server is reached
        ("http://127.0.0.1:1", 403),  # another local server's page
        ("http://127.0.0.1:{port}", 504),  # the page itself: accepted (no frame loop)
        ("http://localhost:{port}", 504),
        (None, 504),  # no browser: curl, the tests
    ],
)
def test_a_post_from_another_origin_is_403(portal, monkeypatch, origin, status):
    monkeypatch.setattr(server, "COMMAND_WAIT_S", 0.1)
    headers = {} if origin is None else {"Origin": origin.format(port=portal.port)}
    got, body = post_command(portal.port, "help", headers)
    assert got == status
    if status == 403:
        assert body.startswith(b"Origin ") and b"may not send commands" in body
        assert portal.reg.run_pending() == 0  # never queued


@pytest.mark.parametrize("path, method", [("/", "GET"), ("/nothing", "GET"), ("/", "DELETE")])
def test_every_answer_forbids_framing(portal, path, method):
    for host in (f"127.0.0.1:{portal.port}", "evil.example"):
        _, headers, _ = request(portal.port, method, path, headers={"Host": host})
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"


# -- floods ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "count, size, status",
    [
        (1, 100, 200),
        (15, 1000, 200),  # 15 KB in all: under the cap
        (98, 65_000, 431),  # the flood of the issue
        (17, 1000, 431),  # many small ones add up
        (1, 20_000, 431),  # one long line
    ],
)
def test_header_bytes_per_request_are_capped(portal, count, size, status):
    headers = {f"X-Flood-{i}": "a" * size for i in range(count)}
    got, _, body = request(portal.port, "GET", "/", headers=headers)
    assert got == status
    if status == 431:
        assert f"over {server.MAX_HEAD_BYTES} bytes".encode() in body


def test_a_long_request_line_is_431(portal):
    got, _, _ = request(portal.port, "GET", "/" + "a" * 20_000)
    assert got == 431


@pytest.mark.parametrize("length", ["\u00b2", "\u00b9", "\u00bd", "+5", "-1", "5_0", " 0x10",
                                    "1e3", "9" * 12, "\u00d9\u00a3"])  # fmt: skip
def test_content_length_is_ascii_digits_only(portal, length):
    # "\u00b2" is the latin-1 byte 0xB2 on the wire: str.isdigit() says yes, int() says no.
    # aiohttp's parser refuses anything but ASCII digits (400, naming the header); a valid
    # number over MAX_BODY is 413.
    headers = {"Content-Type": "application/json", "Content-Length": length}
    got, _, body = request(portal.port, "POST", "/command", b'{"line": "help"}', headers)
    assert got in (400, 413) and (got == 413 or b"Invalid character in Content-Length" in body)
    assert (got == 413) == (length.isascii() and length.isdigit())
    assert portal.reg.run_pending() == 0  # never queued


# -- the token never goes to who has not shown it; wrong tokens; Host names -----------------
TOKEN = "t0ken-Abc_123"
ENDPOINTS = sorted(server.GET_PATHS | server.POST_PATHS) + ["/nothing"]


def refused_requests(port: int, path: str, addr: str) -> dict[str, tuple[bytes, int]]:
    """Every kind of refused request to ``path`` as raw bytes, with the status it must get
    from a token portal (none carries the right token)."""
    method = "POST" if path in server.POST_PATHS else "GET"
    other = "GET" if method == "POST" else "POST"
    host = f"{addr}:{port}"
    body = b'{"line": "help"}'

    def raw(method: str, target: str, headers: dict, payload: bytes = b"") -> bytes:
        h = {"Host": host, **headers}
        if method == "POST":
            h = {"Content-Type": "application/json", "Content-Length": len(payload), **h}
        head = "".join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None)
        return f"{method} {target} HTTP/1.1\r\n{head}\r\n".encode() + payload

    payload = body if method == "POST" else b""
    flood = {f"X-Flood-{i}": "a" * 1000 for i in range(17)}
    kinds = {
        "bad Host": (raw(method, path, {"Host": "evil.example:3030"}, payload), 403),
        "no Host": (raw(method, path, {"Host": None}, payload), 400),  # HTTP/1.1: RFC 9112 3.2
        "no Host, HTTP/1.0": (f"{method} {path} HTTP/1.0\r\n\r\n".encode(), 403),
        "two Host headers": (
            f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nHost: {host}\r\n\r\n".encode(),
            400,
        ),
        "bad Origin": (
            raw(method, path, {"Origin": "http://evil.example"}, payload),
            403 if method == "POST" else 401,  # GETs are not checked for Origin
        ),
        "no token": (raw(method, path, {}, payload), 401),
        "wrong token in the query": (raw(method, path + "?token=wrong", {}, payload), 401),
        "a prefix of the token": (raw(method, path + "?token=" + TOKEN[:-1], {}, payload), 401),
        "wrong token header": (raw(method, path, {"X-Lantern-Token": "wrong"}, payload), 401),
        "wrong token cookie": (raw(method, path, {"Cookie": "lantern_token=x"}, payload), 401),
        "wrong method": (raw(other, path, {}, body if other == "POST" else b""), 401),
        "DELETE": (raw("DELETE", path, {}), 401),
        "malformed request line": (f"{method} {path} HTTP/1.1 x\r\n\r\n".encode(), 400),
        "not HTTP at all": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
        "oversized header": (raw(method, path, flood, payload), 431),
        "bad Content-Length": (raw(method, path, {"Content-Length": "1e3"}, payload), 400),
    }
    return kinds


def scan_refusals(port: int, addr: str) -> dict[str, int]:
    """Send every refused request to every endpoint; assert each answer's status and that
    no byte of it (status line, headers, body) holds the token. ``{kind: count}``."""
    seen: dict[str, int] = {}
    for path in ENDPOINTS:
        for kind, (raw, status) in refused_requests(port, path, addr).items():
            got, headers, body = http(port, raw, addr=addr)
            whole = repr((got, headers, body)).encode()
            assert got == status, (kind, path, got, body)
            assert TOKEN.encode() not in whole and TOKEN[:-1].encode() not in body, (kind, path)
            assert "set-cookie" not in headers, (kind, path)
            seen[kind] = seen.get(kind, 0) + 1
    return seen


def test_no_refused_request_gets_the_token_from_a_loopback_token_portal(monkeypatch):
    monkeypatch.setattr(server, "WRONG_TOKENS", 10_000)  # every kind answered on its merits
    p = Portal(Telemetry(SESSION), CommandRegistry(), port=0, token=TOKEN)
    try:
        seen = scan_refusals(p.port, "127.0.0.1")
        # and the slow one: 408 carries nothing either
        monkeypatch.setattr(server, "REQUEST_TIMEOUT_S", 0.3)
        with socket.create_connection(("127.0.0.1", p.port), timeout=5) as s:
            s.sendall(b"GET /?token=" + TOKEN.encode()[:4])
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        assert data.startswith(b"HTTP/1.1 408 ") and TOKEN.encode() not in data
    finally:
        p.close()
    assert len(seen) == 16 and set(seen.values()) == {len(ENDPOINTS)}


@pytest.fixture
def lan_ip():
    ip = non_loopback_ipv4()
    if ip is None:
        pytest.skip("this machine has no non-loopback IPv4 address to bind an off-loopback portal")
    return ip


def test_an_off_loopback_portal_never_echoes_its_url(lan_ip, monkeypatch, capsys):
    """The real off-loopback mode (PortalTool on the machine's own interface address): a
    refused Host used to answer with the URL and its token; no refusal holds the token."""
    monkeypatch.delenv("LANTERN_PORTAL", raising=False)
    monkeypatch.setattr(server, "WRONG_TOKENS", 10_000)
    tool = PortalTool()
    make_ctx(portal=0, portal_host=lan_ip).install(tool)
    p = tool.portal
    try:
        p.token = TOKEN  # (a known token: the scan also looks for its prefix)
        assert capsys.readouterr().out.startswith(f"portal: http://{lan_ip}:{p.port}/?token=")
        scan_refusals(p.port, lan_ip)
        status, headers, _ = request(p.port, "GET", f"/?token={TOKEN}", addr=lan_ip)
        assert status == 200 and headers["set-cookie"].startswith(f"lantern_token={TOKEN};")
    finally:
        tool.close()


def test_off_loopback_host_names_include_the_bound_interface_address(lan_ip):
    """A LAN browser sends the IP literal it typed; the machine's host name may resolve to a
    loopback address only (Debian's 127.0.1.1), so the interface's address must be served."""
    assert lan_ip in server.served_names("0.0.0.0")  # every interface of a wildcard bind
    assert lan_ip in server.interface_addresses()
    p = Portal(Telemetry(SESSION), port=0, host=lan_ip, token=TOKEN)
    try:
        assert p.address[0] == lan_ip
        for host, status in [
            (f"{lan_ip}:{p.port}", 200),
            (f"{lan_ip}:{p.port + 1}", 403),
            (f"evil.example:{p.port}", 403),
            (lan_ip, 403),  # no port: not how a browser names this server
        ]:
            got, _, _ = request(
                p.port, "GET", "/", headers={"Host": host, "X-Lantern-Token": TOKEN}, addr=lan_ip
            )
            assert got == status, host
    finally:
        p.close()


def test_a_name_bind_serves_the_address_it_got():
    assert server.served_names("myhost.example", "10.9.8.7") == {
        "127.0.0.1", "localhost", "[::1]", "myhost.example", "10.9.8.7"
    }  # fmt: skip
    assert "[fe80::2]" in server.served_names("lanhost", "fe80::2")


def test_two_host_headers_are_400(portal):
    raw = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{portal.port}\r\nHost: evil.example\r\n\r\n"
    status, _, body = http(portal.port, raw.encode())
    assert status == 400 and b"<html" not in body.lower()


def wrong(port: int, source: str = "127.0.0.1", token: str = "wrong"):
    return request(port, "GET", "/session.json", headers={"X-Lantern-Token": token}, source=source)


def test_repeated_wrong_tokens_are_refused_for_a_while(token_portal, caplog):
    """Policy: WRONG_TOKENS in a burst per address, then one more every WRONG_TOKEN_REFILL_S;
    beyond that every request from there that needs the token is 429 (its token not even
    compared), while another address's right token works at once."""
    p = token_portal
    for _ in range(server.WRONG_TOKENS):
        assert wrong(p.port)[0] == 401
    with caplog.at_level(logging.WARNING, logger="lantern"):
        status, headers, body = wrong(p.port)
    assert status == 429 and 1 <= int(headers["retry-after"]) <= server.WRONG_TOKEN_REFILL_S
    assert body.startswith(b"too many wrong tokens from this address: try again in ")
    locked = wrong(p.port, token=TOKEN)
    assert locked[0] == 429  # the right one too: no oracle while locked
    assert TOKEN.encode() not in repr(locked).encode() + repr((headers, body)).encode()
    assert wrong(p.port, source="127.0.0.2", token=TOKEN)[0] == 200  # another client: at once
    assert wrong(p.port, source="127.0.0.2")[0] == 401  # (its own allowance)
    assert p.locked_out == 2
    assert caplog.messages == [
        f"portal: {server.WRONG_TOKENS} wrong tokens from 127.0.0.1: refusing it for a while "
        f"(one more try every {server.WRONG_TOKEN_REFILL_S:g} s)"
    ]


def test_a_locked_out_address_may_try_again_once_its_allowance_refills(token_portal, monkeypatch):
    monkeypatch.setattr(server, "WRONG_TOKENS", 2)
    monkeypatch.setattr(server, "WRONG_TOKEN_REFILL_S", 0.3)
    p = token_portal
    assert [wrong(p.port)[0] for _ in range(3)] == [401, 401, 429]
    deadline = time.monotonic() + 10
    while (status := wrong(p.port, token=TOKEN)[0]) == 429 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status == 200


def test_requests_without_a_token_do_not_count_as_wrong_ones(token_portal, monkeypatch):
    monkeypatch.setattr(server, "WRONG_TOKENS", 2)
    p = token_portal
    statuses = [request(p.port, "GET", "/")[0] for _ in range(6)]
    assert statuses == [401] * 6 and p.locked_out == 0


@pytest.mark.parametrize(
    "remote, key",
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::ffff:10.0.0.7", "10.0.0.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),  # one machine's privacy addresses
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        (None, ""),
    ],
)
def test_wrong_tokens_are_counted_per_address_and_ipv6_per_64(remote, key):
    assert server._Throttle.key(remote) == key


def test_the_throttle_forgets_the_least_recent_addresses(monkeypatch):
    monkeypatch.setattr(server, "TRACKED_ADDRESSES", 3)
    t = server._Throttle()
    for a in ("a", "b", "c", "d"):
        t.failed(a)
    assert list(t.buckets) == ["b", "c", "d"]


# -- the tool's options ----------------------------------------------------------------------
def test_add_arguments_adds_the_command_line_s_portal_options(capsys):
    import argparse

    def actions(parser):
        return {
            a.dest: (a.option_strings, a.nargs, a.const, a.default, a.metavar, a.help)
            for a in parser._actions
            if a.dest in ("portal", "portal_host")
        }

    mine = argparse.ArgumentParser("prog")
    PortalTool.add_arguments(mine)
    assert actions(mine) == actions(build_parser("prog", "d")) and len(actions(mine)) == 2
    assert mine.parse_args(["--portal"]).portal == DEFAULT_PORT
    assert mine.parse_args(["--portal", "0", "--portal-host", "::1"]).portal_host == "::1"
    with pytest.raises(SystemExit):
        mine.parse_args(["--portal", "70000"])
    assert capsys.readouterr().err.endswith(
        "prog: error: argument --portal: expected a TCP port (0 = any free port) from 0 to "
        "65,535, got '70000'\n"
    )


def test_check_options_refuses_bad_values_in_one_line(monkeypatch):
    from engine.tool import OptionError

    monkeypatch.setenv("LANTERN_PORTAL", "yes")
    with pytest.raises(OptionError, match=r"^LANTERN_PORTAL='yes': set it to 1 \(port 3030\)"):
        PortalTool.check_options(SimpleNamespace(portal=None, portal_host=None))
    monkeypatch.delenv("LANTERN_PORTAL")
    with pytest.raises(OptionError) as e:
        PortalTool.check_options(SimpleNamespace(portal=None, portal_host="0.0.0.0"))
    assert str(e.value) == (
        "--portal-host '0.0.0.0' needs the portal on: add --portal [PORT] (or LANTERN_PORTAL=1)"
    )
    PortalTool.check_options(SimpleNamespace(portal=0, portal_host="0.0.0.0"))  # fine
    PortalTool.check_options(SimpleNamespace(portal=None, portal_host=None))  # off: fine


def test_the_session_names_the_counters_and_colours_the_page_draws_with(portal):
    from engine.culling.counters import COUNTER_NAMES
    from engine.hud.palette import CULL_CLASSES, CULL_COLORS, PALETTE

    r = SseReader(portal.port)
    try:
        event, session, _ = r.next_event()
    finally:
        r.close()
    assert event == "session"
    page = session["page"]
    assert page["counters"] == list(COUNTER_NAMES) and len(page["counters"]) == 8
    assert page["palette"] == [f"#{r:02x}{g:02x}{b:02x}" for r, g, b in PALETTE]
    assert page["palette"][:2] == ["#56b4e9", "#e69f00"]  # (86, 180, 233), (230, 159, 0)
    assert page["cull_classes"] == [
        [n, "#{:02x}{:02x}{:02x}".format(*c)]
        for n, c in zip(CULL_CLASSES, CULL_COLORS, strict=True)
    ]
    assert page["cull_classes"][0] == ["frustum_culled", "#e65a50"]  # (230, 90, 80)
    _, _, body = request(portal.port, "GET", "/session.json")
    assert orjson.loads(body)["page"] == page
