"""One telemetry record per finished frame: what every view reads (HUD, shutdown report,
trace, ``--telemetry`` JSON Lines, the portal, the flame inspector).

- ``record``: the types (``Scope``, ``FrameTimings`` from producers, ``FrameRecord``,
  ``PassStats``, the typed ``Session``);
- ``stats``: the rolling statistics window;
- ``stream``: ``Telemetry``, the record stream views subscribe to;
- ``wire``: the compact JSON encoding shared by ``--telemetry`` and the portal.
"""

from engine.telemetry.record import (
    CPU,
    DRAW,
    FRAME_SCOPE,
    GPU,
    STAT_FIELDS,
    WALL,
    FrameRecord,
    FrameTimings,
    PassStats,
    ProfilingInfo,
    Scope,
    Session,
)
from engine.telemetry.stats import WINDOW, StatsSnapshot, StatsWindow
from engine.telemetry.stream import Telemetry
from engine.telemetry.wire import NameTable, encode_record

__all__ = [
    "CPU",
    "DRAW",
    "FRAME_SCOPE",
    "GPU",
    "STAT_FIELDS",
    "WALL",
    "WINDOW",
    "FrameRecord",
    "FrameTimings",
    "NameTable",
    "PassStats",
    "ProfilingInfo",
    "Scope",
    "Session",
    "StatsSnapshot",
    "StatsWindow",
    "Telemetry",
    "encode_record",
]
