"""``lantern rdc CAPTURE.rdc``: a short summary of a RenderDoc capture through RenderDoc's own
replay API: the passes (the capture's outermost debug regions), the draws, dispatches,
copies and clears in each, RenderDoc's GPU duration of each (measured while replaying, on
this machine) beside Lantern's own reading of the same frame (``--telemetry RUN.jsonl``),
and the textures and buffers.

The replay runs in a child process of the Python that has RenderDoc's module (Debian's
``python3-renderdoc`` is built for ``/usr/bin/python3``; ``$LANTERN_RENDERDOC_PYTHON``
names another), running ``replay.py`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPLAY = Path(__file__).with_name("replay.py")
PYTHON_ENV = "LANTERN_RENDERDOC_PYTHON"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's python3-renderdoc is built for it
RDC_MAGIC = b"RDOC"


class RdcError(RuntimeError):
    """The capture cannot be summarised; one line saying why and what to do."""


def replay_python() -> str:
    """The interpreter that runs ``replay.py``: ``$LANTERN_RENDERDOC_PYTHON``, else the
    system's ``/usr/bin/python3`` where it exists, else this one."""
    return os.environ.get(PYTHON_ENV) or (
        SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else sys.executable
    )


def check_capture(path: str) -> None:
    """Raises ``RdcError`` unless ``path`` is a readable RenderDoc capture."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(RDC_MAGIC))
    except OSError as e:
        raise RdcError(f"cannot read {path!r} ({e.strerror})") from None
    if head != RDC_MAGIC:
        raise RdcError(f"{path!r} is not a RenderDoc capture (.rdc)")


def summarize(
    path: str, *, durations: bool = True, texture: tuple[str, str] | None = None,
    timeout_s: float = 900,
) -> dict:  # fmt: skip
    """``replay.py``'s summary of capture ``path`` (see its docstring for the keys);
    ``texture``: ``(name, out_path)`` to write that texture's final contents.

    Raises:
        RdcError: not a capture, RenderDoc's module missing, or the replay failed.
    """
    check_capture(path)
    python = replay_python()
    cmd = [python, str(REPLAY), os.path.abspath(path)] + ([] if durations else ["--no-durations"])
    if texture is not None:
        cmd += ["--texture", texture[0], os.path.abspath(texture[1])]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise RdcError(f"{python} not found; set {PYTHON_ENV} to a Python with RenderDoc's "
                       "module") from None  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RdcError(f"RenderDoc's replay of {path} took over {timeout_s:.0f} s") from None
    last = (out.stderr.strip().splitlines() or [""])[-1]
    if out.returncode == 3:
        raise RdcError(f"{last}; or set {PYTHON_ENV}")
    if out.returncode != 0:
        raise RdcError(last or f"RenderDoc's replay of {path} failed (status {out.returncode})")
    return json.loads(out.stdout)


def lantern_gpu_ms(telemetry: str, frame: int) -> dict[str, float] | None:
    """Lantern's GPU milliseconds per pass of ``frame`` in a ``--telemetry`` file, or None
    when the file has no GPU timings for it.

    Raises:
        RdcError: the file cannot be read or is not a Lantern telemetry file.
    """
    names: list[str] = []
    try:
        with open(telemetry, "rb") as f:
            for i, raw in enumerate(f):
                line = json.loads(raw)
                kind = line.get("type")
                if i == 0 and kind != "session":
                    raise RdcError(f"{telemetry!r} is not a Lantern --telemetry file")
                if kind == "names":
                    names += line["names"]
                elif kind == "frame" and line.get("frame") == frame and line.get("gpu"):
                    return {names[n]: (e - b) / 1e6 for n, b, e in line["gpu"]}
    except OSError as e:
        raise RdcError(f"cannot read {telemetry!r} ({e.strerror})") from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise RdcError(f"{telemetry!r} is not a Lantern --telemetry file") from None
    return None


def _ms(v: float | None) -> str:
    return f"{v:10.3f}" if v is not None else f"{'-':>10}"


def format_summary(s: dict, lantern: dict[str, float] | None, *, draws: bool = False,
                   asked_durations: bool = True) -> str:  # fmt: skip
    """The summary as text (see ``main``)."""
    info = s.get("lantern") or {}
    what = f" of Lantern {info['sample']} frame {info['frame']}" if "frame" in info else ""
    out = [f"{s['file']}: {s['driver']} capture{what}, replayed by RenderDoc {s['renderdoc']}"]
    swapped = sorted({n.split("@")[0] for n in info.get("labels") or {}})
    if swapped:  # a pair's two resources keep their labels while their roles alternate
        out.append(f"  history pairs swapped in this frame (NAME is labelled NAME@prev and the "
                   f"other way round): {', '.join(swapped)}")  # fmt: skip
    gpu = "replay GPU ms" if s["durations"] else "replay GPU"
    head = f"  {'pass (debug region)':<38} {'draws':>6} {'dispatch':>8} {'copies':>6} {'clears':>6}"
    head += f" {gpu:>14}" + (f" {'Lantern GPU ms':>14}" if lantern is not None else "")
    out.append(head)
    for r in s["regions"]:
        out += _rows(r, lantern, 0, draws)
    o = s["outside"]
    out.append(
        f"  outside every region: {o['draws']} draws, {o['dispatches']} dispatches, "
        f"{o['copies']} copies, {o['clears']} clears (uploads, query resolves, readbacks)"
    )
    tex, buf = s["textures"], s["buffers"]
    out.append(f"textures: {len(tex)} ({sum(t['named'] for t in tex)} named)")
    for t in tex:
        size = f"{t['width']}x{t['height']}" + (f"x{t['layers']}" if t["layers"] > 1 else "")
        size += f" m{t['mips']}" if t["mips"] > 1 else ""
        out.append(f"  {t['name'][:40]:<40} {size:<16} {t['format']}")
    total = sum(b["bytes"] for b in buf)
    out.append(f"buffers: {len(buf)} ({sum(b['named'] for b in buf)} named), {total:,} bytes")
    if asked_durations and not s["durations"]:
        out.append("(RenderDoc's replay cannot time events on this GPU)")
    return "\n".join(out)


def _rows(r: dict, lantern, depth: int, draws: bool) -> list[str]:
    c = r["counts"]
    name = ("  " * depth + r["name"])[:38]
    row = (f"  {name:<38} {c['draws']:>6} {c['dispatches']:>8} {c['copies']:>6} {c['clears']:>6}"
           f" {_ms(r['gpu_ms']):>14}")  # fmt: skip
    if lantern is not None:
        row += f" {_ms(lantern.get(r['name'])) if depth == 0 else '':>14}"
    rows = [row]
    if draws:
        for child in r["children"]:
            rows += _rows(child, lantern, depth + 1, draws)
    return rows


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("capture", metavar="CAPTURE.rdc")
    p.add_argument("--draws", action="store_true", help="list the named draws in each pass")
    p.add_argument("--telemetry", metavar="RUN.jsonl",
                   help="the run's --telemetry file: Lantern's GPU ms of the captured frame "
                   "beside RenderDoc's")  # fmt: skip
    p.add_argument("--frame", type=int, metavar="N",
                   help="the frame to read from --telemetry (default: the capture's)")  # fmt: skip
    p.add_argument("--no-durations", action="store_true", help="skip RenderDoc's GPU timing")
    p.add_argument("--json", action="store_true", help="print the replay's JSON instead")
    return p


def main(argv: list[str] | None = None, prog: str = "lantern rdc") -> int:
    """``lantern rdc``: print the summary; 0, or 2 with one line for a user's mistake."""
    args = build_parser(prog).parse_args(argv)
    try:
        s = summarize(args.capture, durations=not args.no_durations)
        lantern = None
        if args.telemetry:
            frame = args.frame if args.frame is not None else (s.get("lantern") or {}).get("frame")
            if frame is None:
                raise RdcError("the capture does not say its Lantern frame: add --frame N")
            lantern = lantern_gpu_ms(args.telemetry, frame)
            if lantern is None:
                raise RdcError(f"{args.telemetry!r} has no GPU timings of frame {frame} "
                               "(was the run made with --gpu-profile?)")  # fmt: skip
    except RdcError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(s, indent=1))
    else:
        print(format_summary(s, lantern, draws=args.draws, asked_durations=not args.no_durations))
    return 0
