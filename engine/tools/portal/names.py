"""What the portal tool needs before the server exists (options, errors, loopback): kept
apart from ``server`` so that a run without ``--portal`` never imports the HTTP stack."""

from __future__ import annotations

import ipaddress
import socket

DEFAULT_PORT = 3030


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
