"""The portal's HTTP server: the page, the event stream and the command POST, nothing else.

``http.server.ThreadingHTTPServer`` in a daemon thread, one thread per connection, HTTP/1.0
(one request per connection; an event stream lasts until either side closes).

Routes: ``GET /`` (and ``/index.html``, ``/portal.js``, ``/portal.css``: read into memory at
start, so no request ever opens a file: path traversal has nothing to reach), ``GET /events``
(Server-Sent Events, see ``protocol``), ``GET /session.json``, ``POST /command`` (JSON
``{"line": "..."}`` -> ``{"ok": bool, "text": str}``; run on the frame thread), ``POST
/complete`` (TAB: ``{"line": ...}`` -> ``{"line": completed, "candidates": [...]}``). Errors:
unknown path 404, a known path with another method 405, a body over ``MAX_BODY`` 413, no
length 411, not JSON 415/400, a request not read in full within ``REQUEST_TIMEOUT_S`` 408 (and
the connection is closed), a ``Host`` other than the server's own 403 (DNS rebinding), a
command the frame loop did not run within ``COMMAND_WAIT_S`` 504 (it stays queued).

Security (see README "Portal"): every bind checks ``Host`` against the names it serves (403:
DNS rebinding) and a POST's ``Origin`` against the same names (403: another site's page); a
portal with a ``token`` (every non-loopback bind) answers 401 to a request that carries it
neither as ``?token=`` (which also sets it as a cookie for the page), as the ``lantern_token``
cookie nor as an ``X-Lantern-Token`` header; every answer forbids framing (CSP
``frame-ancestors 'none'``, ``X-Frame-Options: DENY``) and sends no referrer.

Limits: a request line and headers over ``MAX_HEAD_BYTES`` in all 431 (memory per connection
is bounded, whatever the header count); ``Content-Length`` must be ASCII digits, given
once and without a ``Transfer-Encoding`` (400); ``MAX_CONNECTIONS`` open connections, and
at that limit a new connection evicts the oldest one still sending its request (a slowloris
cannot lock real clients out), ``protocol.MAX_CLIENTS`` event streams (503 beyond).
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import logging
import secrets
import socket
import threading
import time
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import orjson

from engine.portal import protocol
from engine.portal.protocol import Broadcaster
from engine.resources import asset_path

log = logging.getLogger("lantern")

ASSETS_DIR = asset_path("portal")
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/portal.js": ("portal.js", "text/javascript; charset=utf-8"),
    "/portal.css": ("portal.css", "text/css; charset=utf-8"),
}
GET_PATHS = frozenset([*ASSETS, "/events", "/session.json"])
POST_PATHS = frozenset(["/command", "/complete"])
MAX_BODY = 4096  # bytes of a command POST
REQUEST_TIMEOUT_S = 3.0  # to read a whole request (line, headers, body)
WRITE_TIMEOUT_S = 5.0  # a socket write blocked this long: the client is gone
COMMAND_WAIT_S = 2.0
KEEPALIVE_S = 10.0
MAX_CONNECTIONS = 64  # open connections of any kind (event streams: protocol.MAX_CLIENTS)
EVICT_SLACK = 16  # evicted connections still closing: beyond MAX + this, refuse at once
MAX_HEAD_BYTES = 16384  # request line + headers of one request
LINGER_BYTES = 8 << 20  # read and dropped after a 431, so the client sees the answer
DEFAULT_PORT = 3030
TOKEN_COOKIE = "lantern_token"
TOKEN_HEADER = "X-Lantern-Token"
SECURITY_HEADERS = (
    # no other origin may frame the page (a framed copy could be typed into: clickjacking)
    (
        "Content-Security-Policy",
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'none'",
    ),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),  # the token in the URL goes nowhere else
)


class PortalError(RuntimeError):
    """The portal cannot start; the message is the one line to print (exit status 2)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback: ``localhost``, all of 127.0.0.0/8 in any
    form ``inet_aton`` accepts (``127.1``, ``0x7f.1``), ``::1`` and ``::ffff:127.x.y.z``."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        try:  # the shorthand forms the resolver (and so bind) accepts
            addr = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def served_names(host: str) -> set[str]:
    """The host names (no port) a browser may send in ``Host`` for a server bound to
    ``host``: always the loopback names; the bound name; for a wildcard bind (``0.0.0.0``,
    ``::``) also this machine's host name, FQDN and their addresses."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    names.add(f"[{host}]" if ":" in host else host)
    if host in ("0.0.0.0", "::", ""):
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name)
            try:
                infos = socket.getaddrinfo(name, None)
            except OSError:
                continue
            for *_, sockaddr in infos:
                a = sockaddr[0]
                names.add(f"[{a}]" if ":" in a else a)
    return {n.lower() for n in names if n}


class _HeadLimit:
    """``rfile`` for the request line and headers: ``readline`` stops at ``limit`` bytes in
    all (then reads as the blank line that ends the headers, and ``over`` is set), so a
    header flood costs at most ``limit`` bytes per connection; ``read`` (the body) passes."""

    def __init__(self, raw, limit: int):
        self.raw, self.left, self.over = raw, limit, False

    def readline(self, size: int = -1) -> bytes:
        if self.over or self.left <= 0:
            self.over = True
            return b"\r\n"
        n = self.left if size is None or size < 0 else min(size, self.left)
        line = self.raw.readline(n)
        self.left -= len(line)
        if self.left <= 0 and not line.endswith(b"\n"):
            self.over = True
            return b"\r\n"
        return line

    def read(self, n: int = -1) -> bytes:
        return self.raw.read(n)

    def __getattr__(self, name):
        return getattr(self.raw, name)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 16

    def __init__(self, address, handler, portal: Portal):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.portal = portal
        super().__init__(address, handler)

    def handle_error(self, request, client_address) -> None:  # a vanished client: no traceback
        log.debug("portal: connection from %s ended", client_address, exc_info=True)

    def verify_request(self, request, client_address) -> bool:
        """At ``MAX_CONNECTIONS``, evict the oldest connection still sending its request (a
        real client's request takes milliseconds, a slowloris's forever); refuse (close at
        once, no thread) only when evicted ones have not closed yet."""
        p = self.portal
        with p.count_lock:
            evicted = p.connections >= MAX_CONNECTIONS and bool(p.reading)
            if evicted:
                old, _ = p.reading.popitem(last=False)
                p.evicted += 1
                _close_with(old, b"503 Service Unavailable")
            if p.connections >= MAX_CONNECTIONS + EVICT_SLACK or (
                p.connections >= MAX_CONNECTIONS and not evicted
            ):
                p.refused += 1
                return False
            p.connections += 1
            p.reading[request] = True
            return True

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.portal.count_lock:
                self.portal.connections -= 1
                self.portal.reading.pop(request, None)


def _close_with(sock, status: bytes) -> None:
    """Answer ``status`` if the socket takes it at once, then shut it (the handler's thread
    reading it sees EOF and ends)."""
    try:
        sock.send(
            b"HTTP/1.0 " + status + b"\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            socket.MSG_DONTWAIT,
        )
    except OSError:
        pass
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class PortalHandler(BaseHTTPRequestHandler):
    server_version = "LanternPortal/1"
    protocol_version = "HTTP/1.0"
    timeout = WRITE_TIMEOUT_S  # every socket operation; the whole request has its own deadline
    # TCP_NODELAY: each event is one small write; with Nagle it would wait for the reader's
    # delayed ACK (40 ms on Linux) whenever an earlier event is still unacknowledged.
    disable_nagle_algorithm = True

    # -- request deadline: one timer per connection, cancelled once the request is read -----
    def setup(self) -> None:
        super().setup()
        self.rfile = _HeadLimit(self.rfile, MAX_HEAD_BYTES)
        self._linger = False
        self._guard = threading.Lock()
        self._reading = True
        self._timer = threading.Timer(REQUEST_TIMEOUT_S, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def finish(self) -> None:
        self._timer.cancel()
        super().finish()
        if self._linger:
            self._drain()

    def _drain(self) -> None:
        """After an early answer (431) the client may still be sending: read and discard a
        bounded amount (into one small buffer), so closing does not reset the connection
        and destroy the answer before the client reads it."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.2)
            buf, left = bytearray(65536), LINGER_BYTES
            deadline = time.monotonic() + 0.5
            while left > 0 and time.monotonic() < deadline:
                n = self.connection.recv_into(buf)
                if n == 0:
                    break
                left -= n
        except OSError:
            pass

    def _expire(self) -> None:
        with self._guard:
            if not self._reading:
                return
            self._reading = False
        self.server.portal.timeouts += 1
        try:
            self.connection.sendall(
                b"HTTP/1.0 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)  # the reading thread sees EOF
        except OSError:
            pass

    def _read_done(self) -> bool:
        """The request is in; False if its deadline already answered 408."""
        with self._guard:
            ok, self._reading = self._reading, False
        self._timer.cancel()
        portal = self.server.portal
        with portal.count_lock:  # no longer a candidate for eviction
            portal.reading.pop(self.request, None)
        return ok

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if self.rfile.over and (ok or not self.requestline):
            self.close_connection = self._linger = True
            self.request_version = "HTTP/1.0"  # a cut request line reads as HTTP/0.9
            if self._read_done():
                self.send_error(
                    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                    f"request line and headers over {MAX_HEAD_BYTES} bytes",
                )
            return False
        return ok

    def end_headers(self) -> None:
        for k, v in SECURITY_HEADERS:  # every answer, errors included
            self.send_header(k, v)
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        log.debug("portal: %s " + format, self.address_string(), *args)

    # -- routing ---------------------------------------------------------------------------
    def _route(self, allowed: frozenset) -> str | None:
        """The request's path if this method may use it; else answer the error, return None."""
        if not self._read_done():
            self.close_connection = True
            return None
        url = urlsplit(self.path)
        path = url.path
        refusal = self._refusal(url.query)
        if refusal is not None:
            self._refuse(*refusal)
            return None
        if path in allowed:
            return path
        if path in GET_PATHS or path in POST_PATHS:
            allow = "GET" if path in GET_PATHS else "POST"
            self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
            self._plain(f"method {self.command} not allowed on {path}; use {allow}\n", allow)
        else:
            self.send_error(HTTPStatus.NOT_FOUND)
        return None

    def _refusal(self, query: str) -> tuple[int, str] | None:
        """Why this request is refused (status, one line), or None: Host, Origin, token."""
        portal = self.server.portal
        host = self.headers.get("Host", "")
        if host.lower() not in portal.allowed_hosts:
            return 403, (
                f"Host {host[:100]!r} is not a name this portal serves (DNS rebinding?); "
                f"open {portal.url}"
            )
        origin = self.headers.get("Origin")
        if self.command == "POST" and origin is not None:
            o = urlsplit(origin)
            if o.scheme != "http" or o.netloc.lower() not in portal.allowed_hosts:
                return 403, f"Origin {origin[:100]!r} may not send commands to this portal"
        if portal.token is not None and not self._token_ok(query):
            return 401, "this portal needs its token: open the URL it printed (...?token=...)"
        return None

    def _token_ok(self, query: str) -> bool:
        token = self.server.portal.token
        sent = [*parse_qs(query).get("token", [])[:1], self.headers.get(TOKEN_HEADER, "")]
        for part in self.headers.get("Cookie", "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == TOKEN_COOKIE:
                sent.append(v)
        return any(hmac.compare_digest(t.encode(), token.encode()) for t in sent if t)

    def _refuse(self, status: int, text: str) -> None:
        self.send_response(status)
        self.close_connection = True
        self._plain(text + "\n")

    def _plain(self, text: str, allow: str | None = None) -> None:
        body = text.encode()
        if allow:
            self.send_header("Allow", allow)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        token = self.server.portal.token
        if token is not None and content_type.startswith("text/html"):
            # the page's own requests (fetch, EventSource) then carry it: same origin only
            self.send_header(
                "Set-Cookie", f"{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
            )
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib API
        path = self._route(GET_PATHS)
        if path is None:
            return
        portal = self.server.portal
        if path == "/events":
            self._events(portal.broadcaster)
        elif path == "/session.json":
            b = portal.broadcaster
            session = {**b.telemetry.session.to_json(), **b.session_extra}
            # the page reads this after its event stream was refused: "too many clients"?
            session["portal"] = {"clients": len(b.clients), "max_clients": protocol.MAX_CLIENTS}
            self._send(200, orjson.dumps(session), "application/json")
        else:
            self._send(200, portal.assets[path], ASSETS[path][1])

    def do_POST(self) -> None:  # noqa: N802 - stdlib API
        if urlsplit(self.path).path in POST_PATHS:
            body = self._read_body()
            if body is None:
                return
        path = self._route(POST_PATHS)
        if path is None:
            return
        line = self._line(body)
        if line is None:
            return
        commands = self.server.portal.commands
        if commands is None:
            self._json(503, False, "this run has no command registry")
        elif path == "/complete":  # reads the registry only: safe off the frame thread
            new, hits = commands.complete(line)
            self._send(200, orjson.dumps({"line": new, "candidates": hits}), "application/json")
        else:
            self._command(commands, line)

    def _not_allowed(self) -> None:
        self._route(frozenset())

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    # -- POST /command ---------------------------------------------------------------------
    def _read_body(self) -> bytes | None:
        """The command body, or None after answering 411/413/415/400."""
        length = self.headers.get("Content-Length")
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        error = None
        if len(self.headers.get_all("Content-Length") or ()) > 1 or (
            "Transfer-Encoding" in self.headers
        ):  # which length frames the body would be ambiguous (request smuggling, RFC 9112 6.3)
            error = (HTTPStatus.BAD_REQUEST, "one Content-Length and no Transfer-Encoding")
        elif length is None:
            error = (HTTPStatus.LENGTH_REQUIRED, "Content-Length required")
        elif not (length.isascii() and length.isdigit()) or len(length) > 9:
            # ASCII only: str.isdigit() takes "²" (latin-1 0xB2), which int() refuses
            error = (HTTPStatus.BAD_REQUEST, "bad Content-Length: expected ASCII digits")
        elif int(length) > MAX_BODY:
            error = (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY} bytes")
        elif ctype != "application/json":  # also makes cross-site POSTs need a preflight
            error = (HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
        if error is not None:
            if self._read_done():
                self.send_error(*error)
            self.close_connection = True
            return None
        try:
            return self.rfile.read(int(length))
        except (OSError, TimeoutError):
            self.close_connection = True
            return None

    def _line(self, body: bytes) -> str | None:
        """The ``line`` of a JSON body, or None after answering 400."""
        try:
            line = orjson.loads(body)["line"]
            if isinstance(line, str):
                return line
        except (orjson.JSONDecodeError, KeyError, TypeError):
            pass
        self.send_error(HTTPStatus.BAD_REQUEST, 'expected JSON {"line": "command ..."}')
        return None

    def _command(self, commands, line: str) -> None:
        log.info("portal> %s", _escaped(line[:200]))
        pending = commands.submit(line)
        result = pending.wait(COMMAND_WAIT_S)
        if result is None:
            started = pending.result  # ran, but its outcome (a Later) is not in yet
            text = (
                f"{started.text}; not done within {COMMAND_WAIT_S:g} s: the outcome goes to the log"
                if started is not None
                else f"queued: the frame loop did not run it within {COMMAND_WAIT_S:g} s "
                "(paused, or a slow frame?)"
            )
            self._json(504, False, text)
            return
        self._json(200, result.ok, result.text)

    def _json(self, status: int, ok: bool, text: str) -> None:
        self._send(status, orjson.dumps({"ok": ok, "text": text}), "application/json")

    # -- GET /events -----------------------------------------------------------------------
    def _events(self, broadcaster: Broadcaster) -> None:
        client = broadcaster.connect()
        if client is None:
            self.send_response(HTTPStatus.SERVICE_UNAVAILABLE)
            self.send_header("Retry-After", "2")
            self.close_connection = True
            limit = protocol.MAX_CLIENTS
            self._plain(f"too many portal clients: {limit} event streams are open\n")
            return
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(b"retry: 1000\n\n")  # EventSource reconnects after 1 s
            idle_since = time.monotonic()
            while not client.closed:
                data = client.take(1.0)
                if data:
                    self.wfile.write(data)
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > KEEPALIVE_S:
                    self.wfile.write(b": keepalive\n\n")  # finds clients that went away
                    idle_since = time.monotonic()
        except (OSError, TimeoutError):  # the client went away or stopped reading
            pass
        finally:
            broadcaster.disconnect(client)
            self.close_connection = True


class Portal:
    """The running portal: server thread, broadcaster, command registry.

    Args:
        telemetry: the ``engine.telemetry.Telemetry`` to stream.
        commands: an ``engine.debug.console.CommandRegistry`` for ``POST /command`` or None.
        log_tail: an ``engine.debug.logtail.LogTail`` to stream, or None.
        host, port: where to listen (port 0: any free port, see ``port`` after start).
        token: the secret every request must carry (see the module docstring), or None
            (loopback: any local process may connect anyway). ``"random"``: a new
            ``secrets.token_urlsafe(18)``. ``url`` then carries it as ``?token=``.

    Raises:
        PortalError: the address cannot be used (port in use, unknown host, no permission).
    """

    def __init__(
        self,
        telemetry,
        commands=None,
        log_tail=None,
        *,
        host="127.0.0.1",
        port=3030,
        token: str | None = None,
    ):
        self.commands = commands
        self.token = secrets.token_urlsafe(18) if token == "random" else token
        self.timeouts = 0  # requests answered 408
        self.connections = self.refused = 0  # open now; refused over MAX_CONNECTIONS
        self.evicted = 0  # connections closed to make room (still sending their request)
        self.reading: OrderedDict = OrderedDict()  # sockets not yet through their request
        self.count_lock = threading.Lock()
        try:
            self.assets = {p: (ASSETS_DIR / name).read_bytes() for p, (name, _) in ASSETS.items()}
        except OSError as e:
            raise PortalError(
                f"the portal page is missing ({e.filename}): reinstall Lantern (pip install .) "
                "or run from a checkout"
            ) from None
        self.broadcaster = Broadcaster(telemetry, log_tail)
        try:
            self.server = _Server((host, port), PortalHandler, self)
        except OSError as e:
            self.broadcaster.close()
            raise PortalError(_bind_error(host, port, e)) from None
        self.host, self.port = host, self.server.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        if self.token is not None:
            self.url += f"?token={self.token}"
        names = served_names(host)
        self.allowed_hosts = {f"{h}:{self.port}" for h in names}
        if self.port == 80:  # a browser leaves the default port out of Host
            self.allowed_hosts |= names
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="lantern-portal",
        )
        self.thread.start()

    def close(self) -> None:
        """Stop serving: event streams end, the port is released. Idempotent."""
        if self.thread is None:
            return
        self.broadcaster.close()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(2.0)
        self.thread = None


def _bind_error(host: str, port: int, e: OSError) -> str:
    if e.errno == errno.EADDRINUSE:
        return f"portal port {port} is in use: pick another with --portal PORT (0 = a free port)"
    if e.errno == errno.EACCES:
        return f"portal port {port}: permission denied; use a port from 1024 or --portal 0"
    if isinstance(e, socket.gaierror) or e.errno == errno.EADDRNOTAVAIL:
        return f"--portal-host {host!r} is not an address of this machine; leave it out"
    return f"cannot start the portal on {host}:{port}: {e.strerror or e}"


def _escaped(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\x1b``), so a posted
    line is one log line and cannot forge others or drive the terminal."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
