"""Every sample's frame, variant by variant (issue 30): ``tools/bench.py samples``.

Each sample runs as a user runs it, in a process of its own on the adapter given
(``python -m samples.sNN --capture ... --gpu-profile --telemetry ...``; a sample with
variants with ``--variant-cycle``, so its variants interleave in blocks). The telemetry goes
through ``lantern compare``'s reader and rules (``engine.telemetry.compare``: the run's
warm-up left out, and the first ``SETTLE`` frames after each variant switch). Per sample and
variant: the GPU milliseconds of the frame (the sum of its passes' timestamp spans) as the
median with its quartiles over the kept frames, and the costliest passes.

Written to ``$LANTERN_BENCH_OUT`` (default ``bench-out/``): ``samples.json`` (the figures,
the adapter and the date) and ``samples.md`` (the same as a Markdown table, for the docs'
benchmark page); both printed too.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .variants import SETTLE

SIZE, QUICK_SIZE = (1920, 1080), (320, 180)
BLOCK, ROUNDS, PLAIN = 20, 6, 150  # frames per variant block, rounds of blocks, frames without
QUICK_BLOCK, QUICK_ROUNDS, QUICK_PLAIN = 6, 3, 30
TOP = 3  # passes named per row
TIMEOUT_S = 900  # one sample's run


def run(gpu, args) -> None:
    from samples import sample_files

    quick = getattr(args, "quick", False)
    size = QUICK_SIZE if quick else SIZE
    rows = []
    print(f"samples at {size[0]}x{size[1]} on {gpu.summary}")
    for short in sample_files():
        try:
            rows += _sample_rows(short, size, quick, getattr(args, "adapter", None))
        except RuntimeError as e:  # one sample failing is a row saying so, not the end
            print(f"  {short}: {e}")
            rows.append({"sample": short, "variant": None, "error": str(e)})
    _write(rows, gpu.summary, size)


def _variants(short: str) -> tuple[str, ...]:
    import importlib

    from engine.app import Sample

    module = importlib.import_module(f"samples.{short}")
    classes = [v for v in vars(module).values()
               if isinstance(v, type) and issubclass(v, Sample) and v is not Sample]  # fmt: skip
    return classes[0].variants if classes else ()


def _sample_rows(short: str, size, quick: bool, adapter: str | None) -> list[dict]:
    """Run one sample and return a row per variant (one row without variants)."""
    from engine.telemetry.compare import CompareError, load_run, variant_runs, warmup_frames

    variants = _variants(short)
    quick_counts = (QUICK_BLOCK, QUICK_ROUNDS, QUICK_PLAIN)
    block, rounds, plain = quick_counts if quick else (BLOCK, ROUNDS, PLAIN)
    frames = block * len(variants) * rounds + 2 * block if variants else plain
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / f"{short}.jsonl"
        cmd = [sys.executable, "-m", f"samples.{short}", "--capture", str(Path(tmp) / "x.png"),
               "--size", f"{size[0]}x{size[1]}", "--frames", str(frames), "--gpu-profile",
               "--telemetry", str(jsonl)]  # fmt: skip
        if variants:
            cmd += ["--variant-cycle", str(block)]
        if adapter:
            cmd += ["--adapter", adapter]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"did not finish in {TIMEOUT_S} s") from None
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"exit {r.returncode}: {last}")
        try:
            whole = load_run(jsonl)
        except CompareError as e:
            raise RuntimeError(str(e)) from None
    if variants:
        parts = variant_runs(whole, settle=SETTLE)
        names = list(dict.fromkeys(v for v in whole.variants if v is not None))
    else:
        keep = np.arange(whole.frames) >= warmup_frames(whole.frames)
        parts, names = [whole.part(keep, whole.path)], [None]
    return [_row(short, name, part) for name, part in zip(names, parts, strict=True)]


def _row(short: str, variant: str | None, run) -> dict:
    """GPU ms of the frame (the passes' sum; frames with no reading left out) and the
    passes' medians."""
    passes = {name: s for (clock, name), s in run.series.items() if clock == "gpu"}
    table = np.array(list(passes.values())) if passes else np.zeros((0, run.frames))
    seen = ~np.all(np.isnan(table), axis=0) if len(table) else np.zeros(run.frames, bool)
    total = np.nansum(table[:, seen], axis=0) if seen.any() else np.zeros(0)
    medians = {n: float(np.nanmedian(s)) for n, s in passes.items() if np.isfinite(s).any()}
    top = sorted(medians.items(), key=lambda kv: -kv[1])[:TOP]
    q1, med, q3 = np.percentile(total, [25, 50, 75]).tolist() if total.size else [None] * 3
    return {"sample": short, "variant": variant, "frames": int(total.size),
            "gpu_ms": {"median": med, "q1": q1, "q3": q3},
            "passes": [[n, round(ms, 4)] for n, ms in top]}  # fmt: skip


def _write(rows: list[dict], adapter: str, size) -> None:
    out = Path(os.environ.get("LANTERN_BENCH_OUT", "bench-out"))
    out.mkdir(parents=True, exist_ok=True)
    date = datetime.date.today().isoformat()
    doc = {"adapter": adapter, "date": date, "size": list(size), "rows": rows}
    (out / "samples.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    md = markdown(doc)
    (out / "samples.md").write_text(md, encoding="utf-8")
    print(md, end="")
    print(f"wrote {out / 'samples.json'} and {out / 'samples.md'}")


def markdown(doc: dict) -> str:
    """The Markdown table of a ``samples.json`` document."""
    w, h = doc["size"]
    lines = [f"GPU ms per frame at {w}x{h} on {doc['adapter']}, {doc['date']} "
             "(median [quartiles] over the kept frames; the costliest passes):", "",
             "| sample | variant | frames | GPU ms | costliest passes (median ms) |",
             "| --- | --- | ---: | --- | --- |"]  # fmt: skip
    for r in doc["rows"]:
        v = r.get("variant") or ""
        if "error" in r:
            lines.append(f"| {r['sample']} | {v} | | | {r['error']} |")
            continue
        g = r["gpu_ms"]
        ms = "n/a" if g["median"] is None else f"{g['median']:.3f} [{g['q1']:.3f}, {g['q3']:.3f}]"
        top = ", ".join(f"{n} {t:.3f}" for n, t in r["passes"])
        lines.append(f"| {r['sample']} | {v} | {r['frames']} | {ms} | {top} |")
    return "\n".join(lines) + "\n"
