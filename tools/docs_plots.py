"""Make the documentation's plots from committed benchmark results (``docs/data/*.json``,
written by ``tools/bench.py`` sections on a real GPU and copied there by hand). CI builds the
site from the committed PNGs; run this after refreshing a JSON file:

    LANTERN_BENCH_OUT=out python tools/bench.py samples   # on the GPU the figures are for
    cp out/samples.json docs/data/ && python tools/docs_plots.py

Each plot is a function of one JSON document in ``PLOTS`` (name -> (JSON file, function));
a technique sample adds its own (cost against error, a crossover) the same way. Output:
``docs/images/plot_<name>.png``, reduced to a 256-colour palette like the screenshots.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
IMAGES = ROOT / "docs" / "images"


def plot_samples(doc: dict, path: Path) -> None:
    """GPU ms per frame of every sample and variant: median bars, quartile whiskers, log
    scale (a HUD gallery and a million-instance city on one axis)."""
    rows = [r for r in doc["rows"] if "error" not in r and r["gpu_ms"]["median"] is not None]
    labels = [r["sample"] + (f" {r['variant']}" if r.get("variant") else "") for r in rows]
    med = [r["gpu_ms"]["median"] for r in rows]
    lo = [m - r["gpu_ms"]["q1"] for m, r in zip(med, rows, strict=True)]
    hi = [r["gpu_ms"]["q3"] - m for m, r in zip(med, rows, strict=True)]
    fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(rows) + 1.1), dpi=100)
    y = range(len(rows))[::-1]
    ax.barh(list(y), med, xerr=[lo, hi], color="#4c8bd6", ecolor="#333333", capsize=2)
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("GPU ms per frame (median, quartiles)", fontsize=8)
    w, h = doc["size"]
    ax.set_title(f"samples at {w}x{h}, {doc['adapter'].split(' (')[0]}, {doc['date']}", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_ssao(doc: dict, path: Path) -> None:
    """s04's variants, cost against error: the SSAO passes' GPU ms (median, quartile bars)
    against the mean absolute error to the brute-force reference where it occludes (< 0.9)
    and over all geometry."""
    rows = [r for r in doc["rows"] if r.get("gpu_ms")]
    fig, ax = plt.subplots(figsize=(5.2, 3.4), dpi=100)
    for r in rows:
        t = r["gpu_ms"]
        xerr = [[t["median"] - t["q1"]], [t["q3"] - t["median"]]]
        ax.errorbar(t["median"], r["mae_occluded"], xerr=xerr, fmt="o", color="#d6604c",
                    capsize=3)  # fmt: skip
        ax.plot(t["median"], r["mae"], "s", color="#4c8bd6")
        ax.annotate(r["variant"], (t["median"], r["mae_occluded"]), fontsize=8,
                    xytext=(5, 4), textcoords="offset points")  # fmt: skip
    ax.plot([], [], "o", color="#d6604c", label="where the reference occludes (< 0.9)")
    ax.plot([], [], "s", color="#4c8bd6", label="all geometry")
    ax.set_xlabel("SSAO GPU ms per frame (median, quartiles)", fontsize=8)
    ax.set_ylabel("mean absolute error to the reference", fontsize=8)
    ax.set_xlim(0, 1.3 * max(r["gpu_ms"]["q3"] for r in rows))  # room for the labels
    ax.set_ylim(0, 1.15 * max(r["mae_occluded"] for r in rows))
    ax.legend(fontsize=7)
    w, h = doc["size"]
    ax.set_title(f"s04 at {w}x{h}, {doc['adapter'].split(' (')[0]}, {doc['date']}", fontsize=9)
    ax.tick_params(labelsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


#: name -> (JSON file under docs/data, plot function(doc, png path))
PLOTS = {"samples": ("samples.json", plot_samples), "ssao": ("ssao.json", plot_ssao)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"plots to make (default all): {', '.join(PLOTS)}")
    ap.add_argument("--out", type=Path, default=IMAGES, help="folder for the PNGs")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in PLOTS]
    if unknown:
        ap.error(f"unknown plot {unknown[0]!r}; plots: {', '.join(PLOTS)}")
    for name in args.names or PLOTS:
        file, plot = PLOTS[name]
        src = DATA / file
        if not src.is_file():
            print(f"{name}: no {src.relative_to(ROOT)} (run its benchmark first); skipped")
            continue
        png = args.out / f"plot_{name}.png"
        plot(json.loads(src.read_text(encoding="utf-8")), png)
        Image.open(png).convert("RGB").quantize(256).save(png, optimize=True)
        print(f"wrote {png} ({png.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
