"""fmt_ms keeps its column width for every value (issue 9: 9999.9996 rounded to 10000.000)."""

from __future__ import annotations

import pytest

from engine.tools.perf.panel import NUM_W, fmt_ms

VALUES = [0.0, 0.0004, 1.5, 9.9995, 999.9996, 9999.9994, 9999.9996, 10000.0, 99999.5,
          12345678.4, 99999999.4, 99999999.6, 1e12, -2.5, -9999.9996, -1e12, 1e300]  # fmt: skip


@pytest.mark.parametrize("v", VALUES)
@pytest.mark.parametrize("width", [NUM_W, 10])
def test_every_value_fits_its_column_and_reads_back(v, width):
    text = fmt_ms(v, width)
    assert len(text) == width, repr(text)
    # what is shown is the value, rounded: 3 decimals while they fit, else fewer digits
    assert float(text) == pytest.approx(v, rel=0.05, abs=5e-4)


def test_three_decimals_while_they_fit():
    assert fmt_ms(9999.9994) == "9999.999"
    assert fmt_ms(0.0004) == "   0.000"
    assert fmt_ms(9999.9996) == "   10000"  # rounds up past the 3-decimal column: integer
    assert fmt_ms(None) == "     n/a" and fmt_ms(float("nan")) == "     n/a"
