"""The live web portal: a page on ``http://127.0.0.1:3030/`` fed by Server-Sent Events.

``start(app)`` is called once at start-up; it reads ``--portal [PORT]`` / ``LANTERN_PORTAL=1``
and ``--portal-host`` and returns the running ``Portal`` (``close()`` it at shutdown) or None.
"""

from __future__ import annotations

import logging
import os

from .server import DEFAULT_PORT, Portal, PortalError, is_loopback

__all__ = ["DEFAULT_PORT", "Portal", "PortalError", "portal_port", "start"]

log = logging.getLogger("lantern")


def portal_port(args) -> int | None:
    """The port asked for by ``--portal [PORT]`` or ``LANTERN_PORTAL=1``, or None (off).

    Raises:
        PortalError: ``LANTERN_PORTAL`` is neither empty, 0 nor 1.
    """
    port = getattr(args, "portal", None)
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


def start(app) -> Portal | None:
    """Start the portal if asked for; print its URL (and a warning for a non-loopback host).

    Uses ``app.args`` (``portal``, ``portal_host``), ``app.telemetry``, and
    ``app.commands`` / ``app.log_tail`` when present (``engine.debug.console.install``).

    Raises:
        PortalError: one line to print with exit status 2 (port in use, bad host, bad env,
            ``--portal-host`` without the portal on).
    """
    port = portal_port(app.args)
    asked_host = getattr(app.args, "portal_host", None)
    if port is None:
        if asked_host:
            raise PortalError(
                f"--portal-host {asked_host!r} needs the portal on: add --portal [PORT] "
                "(or LANTERN_PORTAL=1)"
            )
        return None
    host = asked_host or "127.0.0.1"
    portal = Portal(
        app.telemetry,
        getattr(app, "commands", None),
        getattr(app, "log_tail", None),
        host=host,
        port=port,
    )
    if not is_loopback(host):
        log.warning(
            "portal: listening on %s, not loopback: anyone who reaches this machine can "
            "watch this process and run console commands in it",
            host,
        )
    print(f"portal: {portal.url}", flush=True)
    return portal
