"""The portal's HTTP server: the page, the event stream and the command POST, nothing else.

aiohttp (``aiohttp.web``) on an asyncio event loop in one daemon thread, ``lantern-portal``:
aiohttp parses HTTP (its C parser: line, field and header-count limits, duplicate ``Host``
or ``Content-Length`` and ``Content-Length`` with ``Transfer-Encoding`` refused with 400),
routes and frames the answers; an open connection costs a socket, not a thread. One request
per connection (every answer closes it), as the page needs nothing more.

Before aiohttp sees a byte, ``_Gate`` (an ``asyncio.Protocol`` wrapped around aiohttp's
protocol) enforces what aiohttp has no setting for: the request line and headers over
``MAX_HEAD_BYTES`` in all 431 (memory per connection is bounded whatever the header count),
a request not read in full within ``REQUEST_TIMEOUT_S`` 408 (and closed), and
``MAX_CONNECTIONS`` open connections: at the limit a new connection evicts the oldest one
still sending its request (503; a slowloris cannot lock real clients out), and is closed at
once when none can go (beyond ``EVICT_SLACK`` evicted ones still closing, or all are event
streams). Those three answers are written by the gate: there is no request to answer yet.

Routes: ``GET /`` (and ``/index.html``, ``/portal.js``, ``/portal.css``: read into memory at
start, so no request ever opens a file: path traversal has nothing to reach), ``GET /events``
(Server-Sent Events, see ``protocol``), ``GET /session.json``, ``POST /command`` (JSON
``{"line": "..."}`` -> ``{"ok": bool, "text": str}``; run on the frame thread), ``POST
/complete`` (TAB: ``{"line": ...}`` -> ``{"line": completed, "candidates": [...]}``).
Errors: unknown path 404, a known path with another method 405 (HEAD included), a body over
``MAX_BODY`` 413, no length 411, ``Transfer-Encoding`` 400, not JSON 415/400, a malformed
request (bad request line or header, two ``Host`` headers) 400, a command the frame loop did
not run within ``COMMAND_WAIT_S`` 504 (it stays queued), ``protocol.MAX_CLIENTS`` event
streams 503.

Security (see README "Portal"), checked in this order before routing, so a refused client
learns nothing about paths or bodies: ``Host`` against the names the bind serves (403: DNS
rebinding; ``served_names``), a POST's ``Origin`` against the same names (403: another
site's page), then, on a portal with a ``token`` (every non-loopback bind), the token as
``?token=`` (the HTML answer then sets it as a cookie), the ``lantern_token`` cookie or the
``X-Lantern-Token`` header (401 without it). Repeated wrong tokens from one address (an IPv4
address, an IPv6 /64) are refused for a while: ``WRONG_TOKENS`` in a burst, then one more
every ``WRONG_TOKEN_REFILL_S`` (a token bucket); beyond that every request from there that
needs the token is 429 with ``Retry-After``, the token not even compared. No answer to a
request without the right token contains the token (the URL with it is printed on the
terminal alone). Every answer of the portal's own (not aiohttp's 400 for an unparsable
request, which has no page) forbids framing (CSP ``frame-ancestors 'none'``,
``X-Frame-Options: DENY``) and sends no referrer.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import ipaddress
import logging
import secrets
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from pathlib import Path

import orjson
import psutil
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from engine.tools.portal import protocol
from engine.tools.portal.names import DEFAULT_PORT, PortalError, is_loopback  # noqa: F401
from engine.tools.portal.protocol import Broadcaster

log = logging.getLogger("lantern")

ASSETS_DIR = Path(__file__).parent / "page"  # the page, shipped in this package
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/portal.js": ("portal.js", "text/javascript; charset=utf-8"),
    "/portal.css": ("portal.css", "text/css; charset=utf-8"),
}
GET_PATHS = frozenset([*ASSETS, "/events", "/session.json"])
POST_PATHS = frozenset(["/command", "/complete"])
MAX_BODY = 4096  # bytes of a command POST
REQUEST_TIMEOUT_S = 3.0  # to send a whole request (line, headers, body), from connecting
WRITE_TIMEOUT_S = 5.0  # an event-stream write blocked this long: the client is gone
COMMAND_WAIT_S = 2.0
KEEPALIVE_S = 10.0  # an idle event stream sends a comment this often (finds gone clients)
MAX_CONNECTIONS = 64  # open connections of any kind (event streams: protocol.MAX_CLIENTS)
EVICT_SLACK = 16  # evicted connections still closing: beyond MAX + this, refuse at once
# connections accepted per wake-up of the event loop: well under MAX_CONNECTIONS, so one batch
# of new connections cannot evict a real client accepted just before it, before its request
# is read; at most EVICT_SLACK are then still closing
ACCEPT_BATCH = 16
LISTEN_BACKLOG = 128  # the kernel's queue of connections not yet accepted (a full one drops
# new ones, which then wait ~1 s to retry)
MAX_HEAD_BYTES = 16384  # request line + headers of one request
LINGER_BYTES = 8 << 20  # read and dropped after a 431, so the client sees the answer
LINGER_S = 0.5
WRONG_TOKENS = 10  # wrong tokens one address may send in a burst ...
WRONG_TOKEN_REFILL_S = 6.0  # ... then one more every this many seconds
TRACKED_ADDRESSES = 4096  # addresses with wrong tokens remembered (least recent forgotten)
TOKEN_COOKIE = "lantern_token"
TOKEN_HEADER = "X-Lantern-Token"
SERVER_NAME = "LanternPortal/2"
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
WILDCARDS = ("0.0.0.0", "::", "")
NEEDS_TOKEN = "this portal needs its token: open the URL it printed (...?token=...)\n"


def interface_addresses() -> set[str]:
    """The IPv4 and IPv6 addresses of this machine's network interfaces (``psutil``), without
    an IPv6 zone (``fe80::1``, not ``fe80::1%eth0``)."""
    out = set()
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                out.add(a.address.split("%")[0])
    return out


def _bracketed(a: str) -> str:
    return f"[{a}]" if ":" in a else a


def served_names(host: str, bound: str | None = None) -> set[str]:
    """The host names (no port) a browser may send in ``Host`` for a server bound to
    ``host``: always the loopback names; the bound name and ``bound``, the address the socket
    got (a name's address); for a wildcard bind (``0.0.0.0``, ``::``) also this machine's
    host name, FQDN, the addresses they resolve to, and every interface's address (what a
    LAN browser types: on many Debian and Ubuntu machines the host name resolves to a
    loopback address only)."""
    names = {"127.0.0.1", "localhost", "[::1]", _bracketed(host)}
    if bound:
        names.add(_bracketed(bound))
    if host in WILDCARDS:
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name)
            try:
                infos = socket.getaddrinfo(name, None)
            except OSError:
                continue
            names.update(_bracketed(sockaddr[0]) for *_, sockaddr in infos)
        names.update(_bracketed(a) for a in interface_addresses())
    return {n.lower() for n in names if n}


def _canned(status: int, text: str = "") -> bytes:
    """A whole answer for the gate to write where aiohttp has no request to answer."""
    body = text.encode()
    phrase = HTTPStatus(status).phrase
    head = [f"HTTP/1.1 {status} {phrase}", "Connection: close", f"Server: {SERVER_NAME}"]
    head += ["Content-Type: text/plain; charset=utf-8", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in SECURITY_HEADERS]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class _Gate(asyncio.Protocol):
    """One connection, in front of aiohttp's protocol (``inner``): admission at the connection
    limit, the byte cap on the request head and the request deadline (see the module
    docstring); everything else passes through untouched."""

    def __init__(self, portal: Portal, inner: asyncio.Protocol):
        self.portal, self.inner = portal, inner
        self.transport: asyncio.Transport | None = None
        self.admitted = self.reading = self.head_done = False
        self.head = 0  # bytes of the request head so far
        self.tail = b""  # its last 3 bytes: a blank line may straddle two reads
        self.discard: int | None = None  # after a 431: bytes still to read and drop
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        if not self.portal._admit(self):
            transport.close()  # no answer, no parser: costs nothing more
            return
        self.admitted = self.reading = True
        self.timer = asyncio.get_running_loop().call_later(REQUEST_TIMEOUT_S, self._expire)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self.admitted:
            return
        if self.discard is not None:
            self.discard -= len(data)
            if self.discard <= 0:
                self.transport.close()
            return
        if self.reading and not self.head_done:
            buf = self.tail + data
            end = buf.find(b"\r\n\r\n")
            n = self.head + (len(data) if end < 0 else end + 4 - len(self.tail))
            if n > MAX_HEAD_BYTES:
                self._too_large()
                return
            self.head, self.head_done, self.tail = n, end >= 0, buf[-3:]
        self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    def connection_lost(self, exc) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.admitted:
            self.portal._gone(self)
            self.inner.connection_lost(exc)

    def read_done(self) -> None:
        """The request is in (the handler read what it needs): no deadline, not evictable."""
        if self.reading:
            self.reading = False
            self.timer.cancel()
            self.portal.reading.pop(self, None)

    def answer(self, data: bytes) -> None:
        """Write a canned answer and close (unless the connection is closing already)."""
        self.read_done()
        if not self.transport.is_closing():
            self.transport.write(data)
            self.transport.close()

    def _expire(self) -> None:
        if self.reading:
            self.portal.timeouts += 1
            self.answer(_canned(408))

    def _too_large(self) -> None:
        """431, then read and drop a bounded amount for ``LINGER_S``: closing a socket with
        unread data resets it, and the reset can destroy the answer before it is read."""
        self.read_done()
        t = self.transport
        t.write(_canned(431, f"request line and headers over {MAX_HEAD_BYTES} bytes\n"))
        if t.can_write_eof():
            t.write_eof()
        self.discard = LINGER_BYTES
        asyncio.get_running_loop().call_later(LINGER_S, t.close)


class _Throttle:
    """Wrong tokens per client address: a token bucket of ``WRONG_TOKENS`` that refills one
    every ``WRONG_TOKEN_REFILL_S``. An IPv6 client is keyed by its /64 (one machine's
    addresses); at most ``TRACKED_ADDRESSES`` are kept, the least recent forgotten."""

    def __init__(self):
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key: (left, t)

    @staticmethod
    def key(remote: str | None) -> str:
        try:
            addr = ipaddress.ip_address((remote or "").split("%")[0])
        except ValueError:
            return remote or ""
        if isinstance(addr, ipaddress.IPv6Address):
            if addr.ipv4_mapped is not None:
                return str(addr.ipv4_mapped)
            return str(ipaddress.IPv6Network((addr, 64), strict=False))
        return str(addr)

    def _left(self, key: str, now: float) -> float:
        left, t = self.buckets.get(key, (WRONG_TOKENS, now))
        return min(WRONG_TOKENS, left + (now - t) / WRONG_TOKEN_REFILL_S)

    def wait_s(self, key: str) -> float:
        """Seconds until ``key`` may try a token again (0: now)."""
        if key not in self.buckets:
            return 0.0
        left = self._left(key, time.monotonic())
        return 0.0 if left >= 1 else (1 - left) * WRONG_TOKEN_REFILL_S

    def failed(self, key: str) -> bool:
        """Count a wrong token; True when this one used up the allowance."""
        now = time.monotonic()
        left = self._left(key, now) - 1
        self.buckets[key] = (left, now)
        self.buckets.move_to_end(key)
        while len(self.buckets) > TRACKED_ADDRESSES:
            self.buckets.popitem(last=False)
        return left < 1


class _QuietLog(logging.LoggerAdapter):
    """aiohttp's server logger: an unparsable request is a client's problem (debug, on the
    ``lantern`` logger); anything else (a bug here) stays an error."""

    def log(self, level, msg, *args, exc_info=None, **kwargs):
        if isinstance(exc_info, HttpProcessingError) or level < logging.ERROR:
            level = logging.DEBUG
        self.logger.log(level, "portal: " + str(msg), *args, exc_info=exc_info, **kwargs)


class Portal:
    """The running portal: server thread, broadcaster, command registry.

    Args:
        telemetry: the ``engine.telemetry.Telemetry`` to stream.
        commands: an ``engine.tools.console.tool.CommandRegistry`` for ``POST /command`` or None.
        log_tail: an ``engine.tools.log.tool.LogTail`` to stream, or None.
        host, port: where to listen (port 0: any free port, see ``port`` after start).
        token: the secret every request must carry (see the module docstring), or None
            (loopback: any local process may connect anyway). ``"random"``: a new
            ``secrets.token_urlsafe(18)``. ``url`` then carries it as ``?token=``.

    Attributes:
        address: the bound socket's address (``getsockname()``).
        connections, reading: connections open now, and those still sending their request.
        timeouts, evicted, refused: requests answered 408, connections evicted (503) and
            closed unanswered at the connection limit.
        locked_out: requests answered 429 (an address with too many wrong tokens).

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
        self.timeouts = self.evicted = self.refused = self.locked_out = 0
        self.connections = 0
        self.reading: OrderedDict[_Gate, None] = OrderedDict()  # oldest first
        self.throttle = _Throttle()
        self._gates: dict[object, _Gate] = {}  # transport -> its gate
        try:
            self.assets = {p: (ASSETS_DIR / name).read_bytes() for p, (name, _) in ASSETS.items()}
        except OSError as e:
            raise PortalError(
                f"the portal page is missing ({e.filename}): reinstall Lantern (pip install .) "
                "or run from a checkout"
            ) from None
        try:  # bound here, in the caller's thread: a bad address is a PortalError at once
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            (*_, addr), *_ = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
            sock = socket.create_server(addr, family=family, backlog=LISTEN_BACKLOG)
        except OSError as e:
            raise PortalError(_bind_error(host, port, e)) from None
        self.broadcaster = Broadcaster(telemetry, log_tail)
        self.address = sock.getsockname()
        self.host, self.port = host, self.address[1]
        self.url = f"http://{_bracketed(host)}:{self.port}/"
        if self.token is not None:
            self.url += f"?token={self.token}"
        names = served_names(host, self.address[0])
        self.allowed_hosts = {f"{h}:{self.port}" for h in names}
        if self.port == 80:  # a browser leaves the default port out of Host
            self.allowed_hosts |= names
        # commands wait for the frame loop here, never on the event loop
        self._waiters = ThreadPoolExecutor(4, thread_name_prefix="lantern-portal-command")
        self._loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self._loop.run_forever, daemon=True, name="lantern-portal"
        )
        self.thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._start(sock), self._loop).result(30)
        except BaseException:
            sock.close()
            self._stop_loop()
            raise

    # -- lifetime (the event loop's thread) ------------------------------------------------
    async def _start(self, sock: socket.socket) -> None:
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY)
        app.on_response_prepare.append(self._headers)
        for path in ASSETS:
            app.router.add_get(path, self._asset, allow_head=False)
        app.router.add_get("/events", self._events, allow_head=False)
        app.router.add_get("/session.json", self._session, allow_head=False)
        app.router.add_post("/command", self._post)
        app.router.add_post("/complete", self._post)
        self._runner = web.AppRunner(
            app,
            access_log=None,
            logger=_QuietLog(log, {}),
            keepalive_timeout=0,  # one request per connection; the gate times requests
            lingering_time=LINGER_S,
            # the gate caps the head at MAX_HEAD_BYTES first; these never bind before it
            max_line_size=MAX_HEAD_BYTES,
            max_field_size=MAX_HEAD_BYTES,
            max_headers=MAX_HEAD_BYTES // 4,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        server = self._runner.server
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Gate(self, server()), sock=sock, backlog=ACCEPT_BATCH
        )
        sock.listen(LISTEN_BACKLOG)  # (asyncio's backlog is also its batch: the queue is longer)

    async def _stop(self) -> None:
        self._server.close()  # the port is free from here on
        for gate in list(self._gates.values()):
            gate.transport.abort()
        await self._runner.cleanup()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.thread.join(5.0)
        if not self.thread.is_alive():
            self._loop.close()
        self._waiters.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop serving: event streams end, the port is released. Idempotent."""
        if self.thread is None:
            return
        self.broadcaster.close()
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(5.0)
        except Exception:  # a stuck handler: the daemon thread goes with the process
            log.debug("portal: shutdown", exc_info=True)
        self._stop_loop()
        self.thread = None

    # -- connections (event loop) -----------------------------------------------------------
    def _admit(self, gate: _Gate) -> bool:
        """At ``MAX_CONNECTIONS``, evict the oldest connection still sending its request (a
        real client's request takes milliseconds, a slowloris's forever); refuse only when
        none can go or evicted ones have not closed yet."""
        evicted = self.connections >= MAX_CONNECTIONS and bool(self.reading)
        if evicted:
            old, _ = self.reading.popitem(last=False)
            self.evicted += 1
            old.answer(_canned(503, "too many connections\n"))
        if self.connections >= MAX_CONNECTIONS + EVICT_SLACK or (
            self.connections >= MAX_CONNECTIONS and not evicted
        ):
            self.refused += 1
            return False
        self.connections += 1
        self.reading[gate] = None
        self._gates[gate.transport] = gate
        return True

    def _gone(self, gate: _Gate) -> None:
        self.connections -= 1
        self.reading.pop(gate, None)
        self._gates.pop(gate.transport, None)

    def _read_done(self, request: web.BaseRequest) -> None:
        gate = self._gates.get(request.transport)
        if gate is not None:
            gate.read_done()

    # -- every request: refusals first, then the route ---------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler):
        refusal = self._refusal(request)
        if refusal is not None or request.method != "POST" or request.path not in POST_PATHS:
            self._read_done(request)  # (a command's body is read by its handler)
        return refusal if refusal is not None else await handler(request)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        for k, v in SECURITY_HEADERS:  # every answer of ours, errors included
            response.headers[k] = v
        response.headers["Server"] = SERVER_NAME
        response.force_close()  # one request per connection

    def _refusal(self, request: web.Request) -> web.Response | None:
        """The answer refusing this request (Host, Origin, token), or None. None of them
        contains the token."""
        hosts = request.headers.getall("Host", [])
        if len(hosts) > 1:  # (aiohttp's parser refuses it first; this says so if it ever not)
            return _text(400, "one Host header, please")
        host = hosts[0] if hosts else ""
        if host.lower() not in self.allowed_hosts:
            where = self.url if self.token is None else "the URL it printed"
            return _text(
                403,
                f"Host {host[:100]!r} is not a name this portal serves (DNS rebinding?); "
                f"open {where}",
            )
        origin = request.headers.get("Origin")
        if request.method == "POST" and origin is not None:
            o = origin.lower()
            if not o.startswith("http://") or o.removeprefix("http://") not in self.allowed_hosts:
                return _text(403, f"Origin {origin[:100]!r} may not send commands to this portal")
        if self.token is not None:
            return self._token_refusal(request)
        return None

    def _token_refusal(self, request: web.Request) -> web.Response | None:
        key = self.throttle.key(request.remote)
        wait = self.throttle.wait_s(key)
        if wait > 0:  # not even compared: a guesser learns nothing while locked out
            self.locked_out += 1
            seconds = max(1, round(wait + 0.5))
            return _text(
                429,
                f"too many wrong tokens from this address: try again in {seconds} s",
                {"Retry-After": str(seconds)},
            )
        sent = [
            request.query.get("token", ""),
            request.headers.get(TOKEN_HEADER, ""),
            request.cookies.get(TOKEN_COOKIE, ""),
        ]
        token = self.token.encode()
        if any(hmac.compare_digest(t.encode(), token) for t in sent if t):
            return None
        if any(sent) and self.throttle.failed(key):
            log.warning(
                "portal: %d wrong tokens from %s: refusing it for a while (one more try "
                "every %g s)",
                WRONG_TOKENS,
                key,
                WRONG_TOKEN_REFILL_S,
            )
        return _text(401, NEEDS_TOKEN.rstrip("\n"))

    # -- routes ------------------------------------------------------------------------------
    async def _asset(self, request: web.Request) -> web.Response:
        path = request.path
        headers = {"Content-Type": ASSETS[path][1]}
        if self.token is not None and path in ("/", "/index.html"):
            # the page's own requests (fetch, EventSource) then carry it: same origin only
            headers["Set-Cookie"] = (
                f"{TOKEN_COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            )
        return _body(200, self.assets[path], headers)

    async def _session(self, request: web.Request) -> web.Response:
        b = self.broadcaster
        session = {**b.telemetry.session.to_json(), **b.session_extra}
        # the page reads this after its event stream was refused: "too many clients"?
        session["portal"] = {"clients": len(b.clients), "max_clients": protocol.MAX_CLIENTS}
        return _json(200, session)

    async def _post(self, request: web.Request) -> web.Response:
        body = await self._read_body(request)
        if isinstance(body, web.Response):
            return body
        try:
            line = orjson.loads(body)["line"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            line = None
        if not isinstance(line, str):
            return _text(400, 'expected JSON {"line": "command ..."}')
        commands = self.commands
        if commands is None:
            return _json(503, {"ok": False, "text": "this run has no command registry"})
        if request.path == "/complete":  # reads the registry only: safe off the frame thread
            new, hits = commands.complete(line)
            return _json(200, {"line": new, "candidates": hits})
        return await self._command(commands, line)

    async def _read_body(self, request: web.Request) -> bytes | web.Response:
        """The command body, or the answer refusing it (400/411/413/415)."""
        length = request.headers.get("Content-Length")
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if "Transfer-Encoding" in request.headers:  # one framing only (RFC 9112 6.3)
            refusal = _text(400, "send a Content-Length, not a Transfer-Encoding")
        elif length is None:
            refusal = _text(411, "Content-Length required")
        elif request.content_length > MAX_BODY:  # (aiohttp checked it is digits)
            refusal = _text(413, f"body over {MAX_BODY} bytes")
        elif ctype != "application/json":  # also makes cross-site POSTs need a preflight
            refusal = _text(415, "send application/json")
        else:
            body = await request.read()  # the gate's deadline answers a slow one 408
            self._read_done(request)
            return body
        self._read_done(request)
        return refusal

    async def _command(self, commands, line: str) -> web.Response:
        log.info("portal> %s", _escaped(line[:200]))
        pending = commands.submit(line)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._waiters, pending.wait, COMMAND_WAIT_S)
        if result is None:
            started = pending.result  # ran, but its outcome (a Later) is not in yet
            text = (
                f"{started.text}; not done within {COMMAND_WAIT_S:g} s: the outcome goes to the log"
                if started is not None
                else f"queued: the frame loop did not run it within {COMMAND_WAIT_S:g} s "
                "(paused, or a slow frame?)"
            )
            return _json(504, {"ok": False, "text": text})
        return _json(200, {"ok": result.ok, "text": result.text})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def notify() -> None:  # the encoder thread: wake this coroutine
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop is closed: the portal has stopped
                pass

        client = self.broadcaster.connect(notify)
        if client is None:
            limit = protocol.MAX_CLIENTS
            text = f"too many portal clients: {limit} event streams are open"
            return _text(503, text, {"Retry-After": "2"})
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        try:
            await resp.prepare(request)
            await _write(resp, b"retry: 1000\n\n")  # EventSource reconnects after 1 s
            idle_since = time.monotonic()
            while not client.closed:
                wake.clear()  # before draining: a later put sets it again
                data = client.drain()
                if data:
                    await _write(resp, data)
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > KEEPALIVE_S:
                    await _write(resp, b": keepalive\n\n")  # finds clients that went away
                    idle_since = time.monotonic()
                else:
                    try:
                        await asyncio.wait_for(wake.wait(), 1.0)
                    except TimeoutError:
                        pass
        except (OSError, TimeoutError) as e:  # the client went away or stopped reading
            log.debug("portal: an event stream ended: %r", e)
        finally:
            self.broadcaster.disconnect(client)
            if request.transport is not None:  # unread data would hold the close: drop it
                request.transport.abort()
        return resp


async def _write(resp: web.StreamResponse, data: bytes) -> None:
    async with asyncio.timeout(WRITE_TIMEOUT_S):
        await resp.write(data)


def _body(status: int, body: bytes, headers: dict) -> web.Response:
    return web.Response(
        status=status,
        body=body,
        headers={**headers, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
    )


def _text(status: int, text: str, headers: dict | None = None) -> web.Response:
    ctype = {"Content-Type": "text/plain; charset=utf-8"}
    return _body(status, (text + "\n").encode(), {**ctype, **(headers or {})})


def _json(status: int, obj) -> web.Response:
    return _body(status, orjson.dumps(obj), {"Content-Type": "application/json"})


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
