"""The cost change of a reload (engine/tools/reload/cost.py CostTracker) and --baseline."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_reload import S02Run, UncaughtErrors

from engine.devtools.compare import warmup_frames
from engine.hud.grid import DebugOverlay
from engine.profiling import FrameProfiler
from engine.shaders import SHADER_DIR
from engine.telemetry import FrameTimings, Scope, Telemetry
from engine.tools.export.jsonl import JsonLinesWriter
from engine.tools.perf.panel import NOTE_W, PerfOverlay
from engine.tools.reload.cost import SETTLE_FRAMES, BaselineCompare, CostTracker

LOOP = "for (var i = 0u; i < params.iterations; i++) {"
LOOP_X4 = "for (var i = 0u; i < 4u * params.iterations; i++) {"


def test_reload_cost_before_after_matches_the_records(gpu, tmp_path, monkeypatch):
    """4x the iterations of s02's Work loop: the tracker compares the passes that draw with
    the reloaded pipelines (Work and Show, one module), its medians are those of the GPU
    scopes in the records either side of the swap, and Work's rise is significant."""
    shutil.copy(SHADER_DIR / "s02_work.wgsl", tmp_path / "s02_work.wgsl")
    # 128 x 128 cells, 128 iterations: about 0.5 to 2 ms of Work on lavapipe, so its fixed
    # dispatch cost (0.2 to 0.9 ms, by machine) does not hide the 4x loop (CI once read +18%
    # at 64 x 64 x 64). Not calibrated with iterations_for: lavapipe sometimes ends a compute
    # timestamp early, and one such reading made Work 546 ms a frame.
    run = S02Run(gpu, tmp_path, grid=128, work=128)
    uncaught = UncaughtErrors(monkeypatch)
    try:
        run.graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False, batch=1)
        cost = run.ctx.install(CostTracker(run.tool, window=20))
        notes = []
        cost.subscribe(notes.append)
        for _ in range(25):
            run.frame()
        run.file.write_text(run.file.read_text().replace(LOOP, LOOP_X4))
        run.until(lambda: run.tool.events)
        swap = run.loop.index  # the first frame recorded with the new pipelines
        run.until(lambda: {"Work", "Show"} <= set(cost.results), timeout_s=60)
        history = list(run.loop.telemetry.history)

        def times(name):  # (frame, GPU ms) of every record with a scope of that name
            out = {}
            for rec in history:
                for s in rec.gpu or ():
                    if s.name == name:
                        out[rec.frame_index] = (s.end_ns - s.begin_ns) / 1e6
            return sorted(out.items())

        for name in ("Work", "Show"):
            c = cost.results[name]
            assert c.swap_frame == swap and c.clock == "gpu"
            # the 20 readings before the swap and the 20 after it settled: a frame that found
            # every query pool in flight has none, and the next reading takes its place
            got = times(name)
            before = [v for f, v in got if f < swap][-20:]
            after = [v for f, v in got if f >= swap + SETTLE_FRAMES][:20]
            assert len(before) == len(after) == 20
            assert c.diff.median_a == pytest.approx(np.median(before), abs=1e-9)
            assert c.diff.median_b == pytest.approx(np.median(after), abs=1e-9)
        work, show = cost.results["Work"].diff, cost.results["Show"].diff
        assert work.significant and work.pct > 50  # 4x the loop (+ the pass's fixed cost)
        # Show's code did not change; on lavapipe some of Work's CPU time lands inside
        # Show's timestamps (its timestamps do not wait for the dispatch), so only bound it
        assert work.diff_ms > 4 * show.diff_ms
        assert "DebugOverlay" not in cost.results
        assert notes and notes[-1]["Work"][0].startswith("was ")
        assert uncaught.records == []
    finally:
        run.close()


def _baseline_file(path, work_ms: float, frames: int = 60):
    session = {"adapter": "test"}
    writer = JsonLinesWriter(str(path), session)
    tel = Telemetry(session)
    tel.subscribe(writer)
    rng = np.random.default_rng(0)
    durations = [int(work_ms * 1e6 * rng.uniform(0.98, 1.02)) for _ in range(frames)]
    for i, d in enumerate(durations):
        tel.publish(i, t_ns=i, wall_ms=16.0, timings=FrameTimings(i, gpu=[Scope("Work", 0, d)]))
    writer.close()
    return path, np.array(durations) / 1e6


def test_baseline_notes_and_perf_table(tmp_path):
    path, durations = _baseline_file(tmp_path / "a.jsonl", 2.0)
    base = BaselineCompare(str(path))
    expected = np.median(durations[warmup_frames(len(durations)) :])  # the stated warm-up
    live = Telemetry({})
    for i in range(80):
        scopes = [Scope("Work", 0, int(1e6 * (1 + 0.01 * (i % 3)))), Scope("Show", 0, 500_000)]
        live.publish(i, t_ns=i, wall_ms=16.0, timings=FrameTimings(i, gpu=scopes))
    notes = base.update(live.history)
    assert set(notes) == {"Work"}  # Show is not in the baseline
    text, significant, slower = notes["Work"]
    live_median = np.median([1 + 0.01 * (i % 3) for i in range(20, 80)])
    pct = (live_median / expected - 1) * 100
    assert text == f"base {expected:.3f} {pct:+.0f}%" and significant and not slower
    perf = PerfOverlay()
    perf.refresh(live, ["Work", "Show"])
    plain = perf.size()[0]
    perf.set_notes("baseline", notes)
    w, _ = perf.size()
    assert w == plain + NOTE_W
    ov = DebugOverlay(cols=w + 2, rows=12)
    perf.draw(ov, 0, 0)
    row = "".join(ov.glyph_at(c, 1) for c in range(w)).rstrip()
    assert row.startswith("Work") and row.endswith(text)


def test_bad_baseline_is_one_line_exit_2(tmp_path, capsys):
    from engine import app as app_module
    from samples.s02_custom_pass import CustomPass

    bad = tmp_path / "x.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(SystemExit) as e:
        app_module.run(CustomPass, ["--capture", str(tmp_path / "x.png"), "--baseline", str(bad)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--baseline" in err and "not a Lantern --telemetry file" in err
    assert err.count("\n") == 1
