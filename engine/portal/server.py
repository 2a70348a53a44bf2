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
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import orjson

from ..resources import asset_path
from .protocol import Broadcaster

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
DEFAULT_PORT = 3030


class PortalError(RuntimeError):
    """The portal cannot start; the message is the one line to print (exit status 2)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
        """Refuse (close at once) beyond ``MAX_CONNECTIONS``: a flood costs no threads."""
        with self.portal.count_lock:
            if self.portal.connections >= MAX_CONNECTIONS:
                self.portal.refused += 1
                return False
            self.portal.connections += 1
            return True

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.portal.count_lock:
                self.portal.connections -= 1


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
        self._guard = threading.Lock()
        self._reading = True
        self._timer = threading.Timer(REQUEST_TIMEOUT_S, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def finish(self) -> None:
        self._timer.cancel()
        super().finish()

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
        return ok

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        log.debug("portal: %s " + format, self.address_string(), *args)

    # -- routing ---------------------------------------------------------------------------
    def _route(self, allowed: frozenset) -> str | None:
        """The request's path if this method may use it; else answer the error, return None."""
        if not self._read_done():
            self.close_connection = True
            return None
        path = urlsplit(self.path).path
        if not self._host_ok():
            self.send_error(HTTPStatus.FORBIDDEN, "Host not allowed")
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

    def _host_ok(self) -> bool:
        allowed = self.server.portal.allowed_hosts
        return allowed is None or self.headers.get("Host", "") in allowed

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
        if length is None:
            error = (HTTPStatus.LENGTH_REQUIRED, "Content-Length required")
        elif not length.isdigit():
            error = (HTTPStatus.BAD_REQUEST, "bad Content-Length")
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
        result = commands.submit(line).wait(COMMAND_WAIT_S)
        if result is None:
            text = f"queued: the frame loop did not run it within {COMMAND_WAIT_S:g} s (paused?)"
            self._json(504, False, text)
            return
        self._json(200, result.ok, result.text)

    def _json(self, status: int, ok: bool, text: str) -> None:
        self._send(status, orjson.dumps({"ok": ok, "text": text}), "application/json")

    # -- GET /events -----------------------------------------------------------------------
    def _events(self, broadcaster: Broadcaster) -> None:
        client = broadcaster.connect()
        if client is None:
            self.send_error(HTTPStatus.SERVICE_UNAVAILABLE, "too many portal clients")
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

    Raises:
        PortalError: the address cannot be used (port in use, unknown host, no permission).
    """

    def __init__(self, telemetry, commands=None, log_tail=None, *, host="127.0.0.1", port=3030):
        self.commands = commands
        self.timeouts = 0  # requests answered 408
        self.connections = self.refused = 0  # open now; refused over MAX_CONNECTIONS
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
        names = {"127.0.0.1", "localhost", "[::1]", shown}
        self.allowed_hosts = {f"{h}:{self.port}" for h in names} if is_loopback(host) else None
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
