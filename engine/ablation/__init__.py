"""WGSL statement cost by ablation: ``ablate(path, entry, device=...)`` (see ``measure.py``),
the CLI ``tools/ablate.py`` and a flame graph writer (``flame.py``)."""

from engine.ablation.instrument import CUT_NONE, Instrumented, InstrumentError, Row, instrument
from engine.ablation.measure import AblationError, AblationResult, ablate
from engine.ablation.table import format_table

__all__ = [
    "CUT_NONE",
    "AblationError",
    "AblationResult",
    "InstrumentError",
    "Instrumented",
    "Row",
    "ablate",
    "format_table",
    "instrument",
]
