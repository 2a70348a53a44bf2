"""The live web portal: a page on ``http://127.0.0.1:3030/`` fed by Server-Sent Events.

``PortalTool`` (``engine.tool``) reads ``--portal [PORT]`` / ``LANTERN_PORTAL=1`` and
``--portal-host`` at install and runs the ``Portal`` (``server``: aiohttp in its own thread)
until close.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from engine.options import OptionError, int_type
from engine.tools.portal.names import DEFAULT_PORT, PortalError, is_loopback

if TYPE_CHECKING:
    from engine.tools.portal.server import Portal

__all__ = ["DEFAULT_PORT", "Portal", "PortalError", "PortalTool", "portal_port"]


def __getattr__(name: str):
    """``Portal`` on first use (``from engine.tools.portal import Portal``): importing the
    package does not import the HTTP server."""
    if name == "Portal":
        from engine.tools.portal.server import Portal

        return Portal
    raise AttributeError(name)


log = logging.getLogger("lantern")
port_type = int_type(0, 65535, "a TCP port (0 = any free port)")


def portal_port(args) -> int | None:
    """The port asked for by ``--portal [PORT]`` or ``LANTERN_PORTAL=1``, or None (off).

    Raises:
        PortalError: ``LANTERN_PORTAL`` is neither empty, 0 nor 1.
    """
    port = vars(args).get("portal")
    if port is not None:
        return port
    env = os.environ.get("LANTERN_PORTAL", "").strip()
    if env in ("", "0"):
        return None
    if env != "1":
        raise PortalError(
            f"LANTERN_PORTAL={env!r}: set it to 1 (port {DEFAULT_PORT}) or use --portal PORT"
        )
    return DEFAULT_PORT


class PortalTool:
    """The ``--portal [PORT]`` / ``LANTERN_PORTAL=1`` tool: serves the live page while the
    sample runs (``--portal-host`` to listen elsewhere than 127.0.0.1), streaming the
    telemetry and running posted lines through the shared command registry; the log tail
    comes from the ``LogTail`` tool when it is installed.

    Raises (from install):
        PortalError: one line to print with exit status 2 (port in use, bad host, bad env,
            ``--portal-host`` without the portal on).
    """

    name = "portal"

    def __init__(self):
        self.portal: Portal | None = None

    @classmethod
    def add_arguments(cls, parser) -> None:
        """Add ``--portal [PORT]`` and ``--portal-host HOST`` to ``parser``."""
        parser = parser.add_argument_group("portal")
        parser.add_argument(
            "--portal",
            type=port_type,
            nargs="?",
            const=DEFAULT_PORT,
            default=None,
            metavar="PORT",
            help="serve a live web page of this run on http://127.0.0.1:PORT/ "
            f"(default {DEFAULT_PORT}; 0 = a free port; also LANTERN_PORTAL=1)",
        )
        parser.add_argument(
            "--portal-host",
            metavar="HOST",
            default=None,
            help="address the portal listens on (default 127.0.0.1; anything else is "
            "reachable from other machines)",
        )

    @classmethod
    def check_options(cls, args) -> None:
        """Refuse bad portal options before any GPU work.

        Raises:
            OptionError: ``LANTERN_PORTAL`` is neither empty, 0 nor 1, or ``--portal-host``
                is given with the portal off; the message is one line.
        """
        try:
            cls._port_and_host(args)
        except PortalError as e:
            raise OptionError(str(e)) from None

    @staticmethod
    def _port_and_host(args) -> tuple[int | None, str | None]:
        port = portal_port(args)
        host = vars(args).get("portal_host")
        if host is not None and not host.strip():  # (it would serve on the default)
            raise PortalError("--portal-host: empty; give an address, e.g. 127.0.0.1")
        if port is None and host:
            raise PortalError(
                f"--portal-host {host!r} needs the portal on: add --portal [PORT] "
                "(or LANTERN_PORTAL=1)"
            )
        return port, host

    def install(self, ctx) -> None:
        port, asked_host = self._port_and_host(ctx.options)
        if port is None:
            return
        host = asked_host or "127.0.0.1"
        loopback = is_loopback(host)
        tail = ctx.log_tail
        from engine.tools.portal.server import Portal  # the HTTP stack: only when it runs

        self.portal = Portal(
            ctx.telemetry,
            ctx.commands,
            tail,
            host=host,
            port=port,
            token=None if loopback else "random",  # off loopback, the URL's token is the key
        )
        if not loopback:
            log.warning(
                "portal: listening on %s, not loopback: whoever has the URL below (its token) "
                "can watch this process and run console commands in it, e.g. capture writes "
                "files as you; the traffic is plain HTTP, readable on the network",
                host,
            )
        print(f"portal: {self.portal.url}", flush=True)

    def close(self) -> None:
        if self.portal is not None:
            self.portal.close()
            self.portal = None
