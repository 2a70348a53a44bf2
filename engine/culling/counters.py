"""The GPU culler's eight counters: the counter block ``cull`` (``engine.counters``), named by
the ``C_*`` constants of ``shaders/cull.wgsl``; and each shadow cascade's block
(``cascade0`` .. ``cascade3``, the ``SC_*`` constants), after them in the same buffer."""

from __future__ import annotations

from dataclasses import dataclass

from engine.counters import Counts, counter_names
from engine.culling.cull import MAX_CASCADES
from engine.resources import shader_path

#: In buffer order: tested (instances examined by Cull.Late), frustum_culled (outside the view
#: frustum), small_culled (projected bounds cover no pixel centre), occluded (rejected by the
#: Hi-Z pyramid), visible (passed every test), drawn_early, drawn_late, shadow_casters.
COUNTER_NAMES = counter_names(shader_path("cull.wgsl"), "C_")
NUM_COUNTERS = len(COUNTER_NAMES)
#: A shadow cascade's block, in buffer order: tested (instances tested against its volume),
#: culled (outside it, or unusable bounds), casters (kept: drawn into its map).
CASCADE_COUNTER_NAMES = counter_names(shader_path("cull.wgsl"), "SC_")
#: u32 words of the counters buffer: the eight, then one block per cascade.
COUNTER_WORDS = NUM_COUNTERS + MAX_CASCADES * len(CASCADE_COUNTER_NAMES)


def cascade_block(cascade: int) -> str:
    """The counter block (readback channel) of shadow cascade ``cascade``: ``cascade0``..."""
    return f"cascade{cascade}"


def cascade_offset(cascade: int) -> int:
    """Byte offset of cascade ``cascade``'s block in the counters buffer."""
    return 4 * (NUM_COUNTERS + cascade * len(CASCADE_COUNTER_NAMES))


@dataclass(frozen=True, init=False)
class CullCounts(Counts):
    """One frame's cull counters, read back without stalling (a few frames late)."""

    def __init__(self, frame_index: int, values):
        super().__init__("cull", COUNTER_NAMES, frame_index, tuple(values))

    def line(self) -> str:
        """The shutdown line, exactly as the design fixes it."""
        v = self.as_dict()
        return (
            f"Cull frame {self.frame_index}: tested {v['tested']}, "
            f"frustum {v['frustum_culled']}, small {v['small_culled']}, "
            f"occluded {v['occluded']}, visible {v['visible']} "
            f"(early {v['drawn_early']}, late {v['drawn_late']}), "
            f"shadow casters {v['shadow_casters']}"
        )

    report = line
