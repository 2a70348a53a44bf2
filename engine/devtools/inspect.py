"""``lantern inspect [FILE] ...``: the frame inspector, ``python -m samples.s14`` (a flame chart
of a Chrome trace, Lantern ``--trace`` or ``--telemetry`` file)."""

from __future__ import annotations


def main(argv: list[str] | None = None, prog: str = "lantern inspect") -> int:
    """Run s14 with ``argv``; return its exit status (2: bad input). Its usage and messages
    name it ``prog``."""
    from engine.interrupt import install

    install()  # Ctrl-C / SIGTERM as a flag before the heavy imports, as python -m samples does
    from engine.app import run
    from samples.s14_flame import FlameViewer

    try:
        return run(FlameViewer, argv, prog)
    except KeyboardInterrupt:  # a second Ctrl-C
        return 130
