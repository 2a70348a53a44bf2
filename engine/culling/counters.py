"""The eight GPU cull counters (``array<atomic<u32>, 8>``), by index."""

from __future__ import annotations

from dataclasses import dataclass

COUNTER_NAMES = (
    "tested",  # 0: instances examined by Cull.Late
    "frustum_culled",  # 1: outside the view frustum
    "small_culled",  # 2: projected bounds cover no pixel centre
    "occluded",  # 3: rejected by the Hi-Z pyramid
    "visible",  # 4: passed every test this frame
    "drawn_early",  # 5: drawn by Main.Early
    "drawn_late",  # 6: drawn by Main.Late
    "shadow_casters",  # 7: drawn into the shadow map
)
NUM_COUNTERS = len(COUNTER_NAMES)


@dataclass(frozen=True)
class CullCounts:
    """One frame's counters, read back without stalling (a few frames late)."""

    frame_index: int
    values: tuple[int, ...]  # NUM_COUNTERS unsigned 32-bit counts, in COUNTER_NAMES order

    def __getattr__(self, name: str) -> int:
        try:
            return self.values[COUNTER_NAMES.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def report(self) -> str:
        """The shutdown line, exactly as the design fixes it."""
        v = dict(zip(COUNTER_NAMES, self.values, strict=True))
        return (
            f"Cull frame {self.frame_index}: tested {v['tested']}, "
            f"frustum {v['frustum_culled']}, small {v['small_culled']}, "
            f"occluded {v['occluded']}, visible {v['visible']} "
            f"(early {v['drawn_early']}, late {v['drawn_late']}), "
            f"shadow casters {v['shadow_casters']}"
        )
