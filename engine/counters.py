"""Counter blocks: a GPU pass counts its work in ``array<atomic<u32>, N>`` (summed per
workgroup first, one global ``atomicAdd`` per counter per workgroup), read back a few frames
late without stalling, and shown by every view (HUD, telemetry, trace, shutdown report,
portal) under the names its WGSL gives them.

A block's names are the WGSL constants indexing it: ``const C_TESTED: u32 = 0u;`` names
counter 0 ``tested`` (the prefix dropped, lower case); ``counter_names`` reads them, so the
shader is the one place they are spelled. The culler's eight are the block ``cull``; a
technique adds its own with a ``CounterReadback`` registered on the graph
(``graph.add_readback``), copying its buffer each frame with ``record_copy``.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import wgpu

from engine.readback import ReadbackRing
from engine.textfile import read_utf8


@dataclass(frozen=True)
class Counts:
    """One frame's counters of one block.

    Attributes:
        block: the block's name (its readback channel: ``"cull"``, ``"lights"``).
        names: the counters' names, in buffer order.
        frame_index: the frame they were counted in.
        values: unsigned 32-bit counts, in ``names`` order.
    """

    block: str
    names: tuple[str, ...]
    frame_index: int
    values: tuple[int, ...]

    def __getattr__(self, name: str) -> int:
        try:
            return self.values[self.names.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.names, self.values, strict=True))

    def line(self) -> str:
        """``Lights frame 12: tested 4096, visible 310, ...``: the shutdown report's line."""
        parts = ", ".join(f"{n.replace('_', ' ')} {v}" for n, v in zip(self.names, self.values,
                                                                       strict=True))  # fmt: skip
        return f"{self.block.capitalize()} frame {self.frame_index}: {parts}"


_CONST = re.compile(r"^\s*const\s+(\w+)\s*:\s*u32\s*=\s*(\d+)u?\s*;", re.M)


def counter_names(wgsl: str | Path, prefix: str) -> tuple[str, ...]:
    """The block's names from WGSL source (or a file): every ``const PREFIXNAME: u32 = K;``
    names counter ``K`` ``name`` (lower case).

    Raises:
        ValueError: no such constants, or their indices are not 0..N-1 each once.
    """
    text = read_utf8(wgsl) if isinstance(wgsl, Path) else wgsl
    found = {int(k): name[len(prefix) :].lower() for name, k in _CONST.findall(text)
             if name.startswith(prefix)}  # fmt: skip
    if not found or sorted(found) != list(range(len(found))):
        raise ValueError(f"counter constants {prefix}*: indices {sorted(found)}, want 0..N-1")
    return tuple(found[i] for i in range(len(found)))


class CounterReadback:
    """Collects a block's ``Counts`` a few frames late, never waiting for the GPU (an
    ``engine.loop.ReadbackClient``: each record carries the newest under ``channel``).

    Args:
        device: the ``wgpu.GPUDevice``.
        block: the block's name (the record's channel).
        names: its counters' names, in buffer order (``counter_names``).
        history: how many collected frames ``history`` keeps.
        slots, batch: readback slots in flight and frames per slot (``engine.readback``):
            counts arrive up to ``slots * batch`` frames late.

    Attributes:
        latest: the newest ``Counts`` or None; ``history``: recent ones, oldest first.
    """

    def __init__(self, device: wgpu.GPUDevice, block: str, names: tuple[str, ...], *,
                 history: int = 120, slots: int = 3, batch: int = 8):  # fmt: skip
        self.device, self.channel, self.names = device, block, tuple(names)
        self.ring = ReadbackRing(device, 4 * len(names), slots=slots, batch=batch,
                                 label=f"{block} counters")  # fmt: skip
        self.latest: Counts | None = None
        self.history: collections.deque[Counts] = collections.deque(maxlen=history)
        self._pending: int | None = None  # frame whose copy was recorded but not yet submitted

    def record_copy(self, encoder: wgpu.GPUCommandEncoder, counters, frame_index: int) -> None:
        """Record the copy of ``frame_index``'s counters (call before they are cleared)."""
        self.after_submit()
        if self.ring.copy(encoder, counters):
            self._pending = frame_index

    def after_submit(self) -> None:
        """The encoder holding the last recorded copy was submitted: start its map."""
        if self._pending is not None:
            self.ring.submitted(self._pending)
            self._pending = None

    def collect(self) -> Counts | None:
        """Take every finished readback (never blocks); return the newest or None."""
        self.after_submit()
        self._take(self.ring.poll())
        return self.latest

    def drain(self, timeout_s: float = 1.0) -> Counts | None:
        """Shutdown only: wait for readbacks in flight and return the newest."""
        self.after_submit()
        self._take(self.ring.drain(timeout_s))
        return self.latest

    def _take(self, results) -> None:
        n = len(self.names)
        for frame_index, data in results:
            values = tuple(int(v) for v in np.frombuffer(data, np.uint32, n))
            counts = Counts(self.channel, self.names, frame_index, values)
            self.history.append(counts)
            self.latest = counts
