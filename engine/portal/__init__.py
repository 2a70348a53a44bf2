"""The live web portal: a page on ``http://127.0.0.1:3030/`` fed by Server-Sent Events.

``PortalTool`` (``engine.tool``) reads ``--portal [PORT]`` / ``LANTERN_PORTAL=1`` and
``--portal-host`` at install and runs the ``Portal`` until close.
"""

from __future__ import annotations

import logging
import os

from engine.portal.server import DEFAULT_PORT, Portal, PortalError, is_loopback

__all__ = ["DEFAULT_PORT", "Portal", "PortalError", "PortalTool", "portal_port"]

log = logging.getLogger("lantern")


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

    def install(self, ctx) -> None:
        from engine.debug.logtail import LogTailTool

        port = portal_port(ctx.options)
        asked_host = ctx.option("portal_host")
        if port is None:
            if asked_host:
                raise PortalError(
                    f"--portal-host {asked_host!r} needs the portal on: add --portal [PORT] "
                    "(or LANTERN_PORTAL=1)"
                )
            return
        host = asked_host or "127.0.0.1"
        loopback = is_loopback(host)
        tail = ctx.find(LogTailTool)
        self.portal = Portal(
            ctx.telemetry,
            ctx.commands,
            None if tail is None else tail.tail,
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
