"""The trace opens in speedscope (npm ``speedscope``, offline, in headless Chromium) without a
single "Tried to end" warning; a trace with a child ending after its parent does warn, so the
check can fail."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_sample
from tests.test_portal_browser import MISSING, browser  # noqa: F401 - the fixture

SPEEDSCOPE = Path(os.environ.get("LANTERN_SPEEDSCOPE", ROOT / ".ci/npm/node_modules/speedscope"))
INDEX = SPEEDSCOPE / "dist" / "release" / "index.html"


@pytest.fixture
def speedscope(browser, tmp_path):  # noqa: F811
    if not INDEX.exists():
        why = f"needs npm's speedscope at {SPEEDSCOPE} (npm install --prefix .ci/npm speedscope)"
        (pytest.fail if os.environ.get("LANTERN_REQUIRE_BROWSER") else pytest.skip)(why)

    def open_trace(path: Path) -> list[str]:
        """Load ``path`` the way the ``speedscope FILE`` command does; return the console
        warnings its importer printed."""
        js = tmp_path / f"{path.stem}.js"
        b64 = base64.b64encode(path.read_bytes()).decode()
        js.write_text(f"speedscope.loadFileFromBase64({json.dumps(path.name)}, {json.dumps(b64)})")
        browser.get("about:blank")  # a new page load, not just a new hash
        browser.get_log("browser")  # forget earlier pages' messages
        browser.get(f"file://{INDEX}#localProfilePath={js}")
        deadline = time.monotonic() + 20
        while path.name not in browser.title and time.monotonic() < deadline:
            time.sleep(0.1)  # the title names the profile once it is imported
        assert path.name in browser.title, browser.title
        return [e["message"] for e in browser.get_log("browser") if e["level"] == "WARNING"]

    return open_trace


def test_s02_trace_opens_in_speedscope_without_warnings(speedscope, tmp_path):
    trace = tmp_path / "s02.json"
    r = run_sample(
        "s02", "--gpu-profile", "--profile", "--trace", str(trace), "--capture",
        str(tmp_path / "x.png"), "--frames", "40", "--size", "64x36", "--grid", "32",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    warnings = speedscope(trace)
    assert not [w for w in warnings if "Tried to end" in w], warnings


def test_a_child_ending_after_its_parent_warns(speedscope, tmp_path):
    bad = tmp_path / "bad.json"
    events = [
        {"name": "Frame", "ph": "X", "pid": 1, "tid": 1, "ts": 0.0, "dur": 10.0},
        {"name": "Pass", "ph": "X", "pid": 1, "tid": 1, "ts": 5.0, "dur": 5.001},
    ]
    bad.write_text(json.dumps({"traceEvents": events}))
    assert [w for w in speedscope(bad) if "Tried to end" in w]
