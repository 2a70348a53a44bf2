"""Make the documentation's pictures from the samples: a thumbnail per sample, the README's
city with the HUD, and a few debug views. Run by hand (CI builds the site from the committed
pictures); any GPU will do, lavapipe included:

    python tools/docs_images.py                # every picture (about a minute on lavapipe)
    python tools/docs_images.py s13 hero       # only these (sample short names, extra names)
    python tools/docs_images.py s07            # a sample's thumbnail and its strips (s07:
                                               # oit_variants, the variants side by side)
    python tools/docs_reference.py             # then: the gallery tables name the new pictures

Each picture is the sample's own command line (``python -m samples.sNN ... --capture``) in a
process of its own, so what it shows is what a user's run shows. The PNGs are reduced to a
256-colour palette (Pillow) to keep the committed pictures small: ``--budget-kb`` (default
1000) is checked over all of ``docs/images/`` and the tool exits 1 above it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from samples import sample_files  # noqa: E402

IMAGES = ROOT / "docs" / "images"
THUMB = "320x180"
VIEW = "480x270"  # room for the view legend (44 cells wide at scale 1)

#: Pictures beyond (or instead of) the thumbnails' quick runs: name -> (sample, arguments).
#: The city with the HUD is the README's; the views are the views page's; particles is
#: the particles page's.
CITY = ("--instances", "20000", "--camera", "150,60,150:0,0,0:50")  # above the rooftops
STREET = ("--instances", "20000", "--cascades", "4", "--frames", "30")  # the drive, 4 cascades
#: the street camera's cascades (--shadow-camera: the drive's camera at frame 30) from above
ABOVE, STREET_CAM = "-60,120,260:-100,0,189", "-125.3,5,189:-85.3,3.5,189"
OUTSIDE = ("--instances", "20000", "--cascades", "4", "--frames", "4",
           f"--camera={ABOVE}", f"--shadow-camera={STREET_CAM}")  # fmt: skip
EXTRA: dict[str, tuple[str, tuple[str, ...]]] = {
    "s13": ("s13", (*CITY, "--size", THUMB)),  # the thumbnail from above, not the street
    "hero": (
        "s13",
        (
            *CITY,
            "--gpu-profile",
            "--profile",
            "--overlay",
            "all",
            "--size",
            "1280x720",
            "--frames",
            "40",
        ),
    ),  # fmt: skip
    "view_depth": ("s13", (*CITY, "--view", "depth", "--size", VIEW)),
    "view_lod": ("s13", (*CITY, "--view", "lod", "--size", VIEW)),
    "view_overdraw": ("s13", (*CITY, "--view", "overdraw", "--size", VIEW)),
    "view_hiz": ("s13", (*CITY, "--view", "hiz:3", "--size", VIEW)),
    "particles": (
        "s06",
        (
            "--particles",
            "65536",
            "--gpu-profile",
            "--overlay",
            "cull",
            "--size",
            "640x360",
            "--camera",
            "31,3,40:27,3.5,27:55",
        ),
    ),  # the particles page: the fountain and the counter block in the HUD
    # the lights page: the night street and lights per cluster (s05)
    "lights_night": ("s05", ("--instances", "3000", "--lights", "1500", "--size", "640x360")),
    "view_lights": (
        "s05",
        ("--instances", "3000", "--lights", "1500", "--view", "lights", "--size", VIEW),
    ),  # fmt: skip
    "view_cascades": ("s13", (*STREET, "--view", "cascades", "--size", VIEW)),
    "view_cascades_texels": ("s13", (*STREET, "--view", "cascades:texels", "--size", VIEW)),
    "view_cascades_outside": ("s13", (*OUTSIDE, "--view", "cascades", "--size", VIEW)),
}


# into s07's cluster, where every pane intersects others; a pool that holds every fragment
_OIT_VIEW = ("--overlay", "off", "--size", "400x300", "--oit-pool", "16",
             "--camera", "16,11,30:0,7,0:22")  # fmt: skip
#: Pictures of several runs of one sample side by side (its variants, left to right):
#: name -> (sample, arguments of each panel).
STRIPS: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    "oit_variants": (
        "s07",
        tuple(("--variant", v, *_OIT_VIEW) for v in ("sorted", "wboit", "linked")),
    ),
}
#: Pictures of a graph texture instead of the frame (``--dump TEXTURE``): name -> (sample,
#: arguments, texture). s04's AO: raw and denoised, each variant, and the reference.
S04_VIEW = ("--camera=-128.8,5,189:-88.8,3.5,189:60", "--size", THUMB)  # s04's first frame
DUMPS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "s04_raw": ("s04", S04_VIEW, "ssao.raw"),
    "s04_ao": ("s04", S04_VIEW, "ssao.ao"),
    "s04_ao_half": ("s04", ("--variant", "gtao-half", *S04_VIEW), "ssao.ao"),
    "s04_ao_hemisphere": ("s04", ("--variant", "hemisphere", *S04_VIEW), "ssao.ao"),
    "s04_reference": ("s04", ("--reference", "--frames", "4", *S04_VIEW), "ssao.reference"),
}


def _example_args(short: str, tmp: Path) -> tuple[str, ...]:
    """The sample's ``example_args`` (its quick demonstration run), ``{tmp}`` filled in."""
    from tools.docs_reference import sample_class

    return tuple(a.replace("{tmp}", str(tmp)) for a in sample_class(short).example_args)


def jobs(tmp: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every picture: name -> (sample, arguments before ``--capture``)."""
    out = {s: (s, (*_example_args(s, tmp), "--size", THUMB)) for s in sample_files()}
    out.update(EXTRA)
    return out


def capture(short: str, args: tuple[str, ...], out: Path, frames: int = 16, dump: str = "") -> None:
    """Run the sample headless and write its last frame, palette-reduced, to ``out``; with
    ``dump``, that graph texture's first channel instead, 0..1 as black..white (not
    range-mapped, so two such pictures compare)."""
    _save(_run(short, args, frames, dump), out)


def capture_strip(short: str, panels: tuple[tuple[str, ...], ...], out: Path,
                  frames: int = 16) -> None:  # fmt: skip
    """Run the sample once per panel and write the last frames side by side, left to right
    (one palette over all of them, so they compare), to ``out``."""
    images = [_run(short, args, frames) for args in panels]
    strip = Image.new("RGB", (sum(i.width for i in images), max(i.height for i in images)))
    x = 0
    for img in images:
        strip.paste(img, (x, 0))
        x += img.width
    _save(strip, out)


def _run(short: str, args: tuple[str, ...], frames: int, dump: str = "") -> Image.Image:
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / ("raw.npy" if dump else "raw.png")
        frame = Path(tmp) / "frame.png" if dump else raw
        argv = [sys.executable, "-m", f"samples.{short}", *args, "--capture", str(frame)]
        if dump:
            argv += ["--dump", dump, str(raw)]
        if "--frames" not in args:
            argv += ["--frames", str(frames)]
        r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(argv[2:])}: exit {r.returncode}\n{r.stderr.strip()}")
        if dump:
            values = np.clip(np.load(raw).astype(np.float64)[..., 0], 0.0, 1.0)
            return Image.fromarray(np.round(values * 255).astype(np.uint8)).convert("RGB")
        return Image.open(raw).convert("RGB")


def _save(img: Image.Image, out: Path) -> None:
    small = img.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(out, optimize=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tools/docs_images.py", description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="pictures to make (default: all)")
    ap.add_argument("--budget-kb", type=int, default=1000, help="all of docs/images/ (KB)")
    args = ap.parse_args(argv)
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        todo = {**jobs(Path(tmp)), **{n: j[:2] for n, j in DUMPS.items()}}
        unknown = [n for n in args.names if n not in todo and n not in STRIPS]
        if unknown:
            ap.error(f"unknown picture(s) {', '.join(unknown)}; "
                     f"choose from {', '.join([*todo, *STRIPS])}")  # fmt: skip
        names = list(args.names) or [*todo, *STRIPS]
        names += [
            s
            for n in args.names
            for s, (short, _) in STRIPS.items()
            if short == n and s not in names
        ]  # a sample's strips with its thumbnail
        for name in names:
            out = IMAGES / f"{name}.png"
            if name in STRIPS:
                capture_strip(*STRIPS[name], out)
            else:
                capture(*todo[name], out, dump=DUMPS[name][2] if name in DUMPS else "")
            print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size / 1024:.0f} KB)")
    total = sum(p.stat().st_size for p in IMAGES.glob("*.png")) / 1024
    print(f"docs/images/: {total:.0f} KB in all (budget {args.budget_kb} KB)")
    return 1 if total > args.budget_kb else 0


if __name__ == "__main__":
    sys.exit(main())
