"""The wire format of a ``FrameRecord``: scope names sent once, then compact frames.
Shared by ``--telemetry`` (JSON Lines) and the portal's Server-Sent Events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.telemetry.record import FrameRecord


@dataclass
class NameTable:
    """Scope names sent once: ``ids`` maps a name to its index in the order first sent."""

    ids: dict[str, int] = field(default_factory=dict)

    def encode(self, names: Iterable[str]) -> list[str]:
        """Register ``names``; return those not sent before (send them first)."""
        new = []
        for n in names:
            if n not in self.ids:
                self.ids[n] = len(self.ids)
                new.append(n)
        return new


def _scopes(table: NameTable, scopes) -> list | None:
    if scopes is None:
        return None
    return [[table.ids[s.name], s.begin_ns, s.end_ns] for s in scopes]


def encode_record(record: FrameRecord, table: NameTable) -> tuple[list[str], dict]:
    """``(new_names, message)``: the record as a compact JSON-ready dict whose scopes and
    stats refer to names by index in ``table`` (send ``new_names`` before it). Scope times
    are exact integer nanoseconds; stats are ms rounded to 1 ns.

    Message keys: ``seq``, ``frame``, ``t_ns``, ``wall_ms``, ``gpu``/``cpu`` (lists of
    ``[name_id, begin_ns, end_ns]`` or null), ``dropped``, ``invalid``, ``cull`` (``{"frame",
    "values"}`` or null) and ``stats``: lists of ``[clock, name_id, *STAT_FIELDS]`` (a
    draw's ``name_id``: the list ``[pass_id, draw_id]`` of its path; null = none;
    ``outlier`` is 0/1), and ``draws`` (null without ``--gpu-profile draws``): per pass
    ``[pass_name_id, kind, baseline_ns, [draw, ...], overhead_ns, unreliable]`` with each draw
    ``[label_id, begin_ns, end_ns, split_ns, repeats, below_resolution (0/1), vertex, clipper,
    fragment, compute, implausible]`` (null = n/a; ``split_ns`` and ``overhead_ns``, the
    pass's fixed cost outside its draws, rounded to 0.001 ns; ``implausible``: why the raw
    ``split_ns`` cannot be a cost, ``unreliable``: why the adapter's per-draw figures cannot
    be trusted, else null), and ``transitions`` (null unless encoder timestamps measure them):
    ``[[pass_name_id, ns], ...]``, the transition billed before each pass (part of its GPU
    scope), rounded to 0.001 ns; ``variant`` (present only for a sample with variants): the
    variant the frame was recorded with; ``counters``: every counter block's newest counts
    (``block``, ``frame``, ``names`` as name ids, ``values``), the culler's too.
    """
    names = [s.name for s in record.gpu or ()] + [s.name for s in record.cpu or ()]
    names += [
        n for _, name in record.stats_keys for n in ((name,) if isinstance(name, str) else name)
    ]
    names += list(record.transitions or ())
    for c in record.counters:
        names += list(c.names)
    for s in record.gpu or ():
        names += [c.name for c in s.children]
    new = table.encode(names)
    cull = record.cull
    msg = {
        "seq": record.seq,
        "frame": record.frame_index,
        "t_ns": record.t_ns,
        "wall_ms": _r(record.wall_ms),
        "gpu": _scopes(table, record.gpu),
        "cpu": _scopes(table, record.cpu),
        "dropped": record.dropped,
        "invalid": record.invalid,
        "cull": None if cull is None else {"frame": cull.frame_index, "values": list(cull.values)},
        "counters": [
            {
                "block": c.block,
                "frame": c.frame_index,
                "names": [table.ids[n] for n in c.names],
                "values": list(c.values),
            }
            for c in record.counters
        ],
        "stats": [
            [clock, _name_id(table, name), *(None if v != v else round(v, 6) for v in row)]
            for (clock, name), row in zip(record.stats_keys, _rows(record), strict=True)
        ],
        "draws": _draws(table, record.draw_passes() or None),
        "transitions": _transitions(table, record.transitions),
    }
    if record.variant is not None:
        msg["variant"] = record.variant
    return new, msg


def _name_id(table: NameTable, name):
    """A name's id, or a nested scope's path as the list of its names' ids."""
    return table.ids[name] if isinstance(name, str) else [table.ids[n] for n in name]


def _transitions(table: NameTable, transitions: dict | None) -> list | None:
    if transitions is None:
        return None
    return [[table.ids[name], _r3(ns)] for name, ns in transitions.items()]


def _draws(table: NameTable, passes) -> list | None:
    if passes is None:
        return None
    ids = table.ids
    return [
        [
            ids[p.name],
            p.kind,
            p.baseline_ns,
            [
                [
                    ids[d.label],
                    d.begin_ns,
                    d.end_ns,
                    _r3(d.split_ns),
                    d.repeats,
                    int(d.below_resolution),
                    d.vertex,
                    d.clipper,
                    d.fragment,
                    d.compute,
                    d.implausible,
                ]
                for d in p.draws
            ],
            _r3(p.overhead_ns),
            p.unreliable,
        ]  # fmt: skip
        for p in passes
    ]


def _r3(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _rows(record: FrameRecord) -> list:
    return [] if record.stats_values is None else record.stats_values.tolist()


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 6)
