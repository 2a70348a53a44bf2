"""A RenderDoc capture summarised through RenderDoc's own replay API, as JSON.

    python3 replay.py CAPTURE.rdc [--no-durations]     # JSON on stdout

This file is run as a script by the Python that has RenderDoc's module (Debian's
``python3-renderdoc`` is built for the system's ``/usr/bin/python3``, which need not be the
one running Lantern), so it imports only the standard library and ``renderdoc``.

The summary:

* ``regions``: the capture's outermost debug-marker regions in event order (Lantern's
  passes: each render and compute pass is labelled with its name, each transfer pass is a
  debug group), each with ``name``, ``event`` (its first event id), ``counts`` of the work
  inside it (``draws``, ``dispatches``, ``copies``, ``clears``: every nested level),
  ``gpu_ms`` and ``children`` (the regions inside it, e.g. Lantern's per-draw groups,
  summarised the same way). ``outside``: the counts of work in no region (wgpu's own
  uploads, Lantern's bookkeeping such as query resolves).
* ``gpu_ms``: RenderDoc's ``EventGPUDuration`` counter, measured on this machine's GPU
  while replaying (not the captured run's timings), summed over the region's events; null
  when the replay cannot measure it or ``--no-durations``.
* ``textures`` (``name``, ``format`` as RenderDoc names it, ``components``, ``component_bytes``,
  ``component_type``, ``width``, ``height``, ``depth``, ``layers``, ``mips``, ``samples``,
  ``named``: False for names RenderDoc made up) and ``buffers`` (``name``, ``bytes``,
  ``named``).
* ``comments``: the capture's comments (Lantern writes the sample, the frame and the labels
  of swapped history resources), ``lantern``: their machine-readable line, or null.

``--texture NAME OUT`` also writes the named texture's contents at the end of the capture
(mip 0, layer 0, as RenderDoc returns them: tightly packed rows) to the file ``OUT`` and adds
``texture``: its name, ``format``, ``width``, ``height`` and ``bytes``.

Exit status 0; 2 when the file cannot be opened or replayed (one line on stderr); 3 when
the ``renderdoc`` module is missing.
"""

from __future__ import annotations

import argparse
import json
import sys

try:
    import renderdoc as rd
except ImportError:  # not the Python Debian's python3-renderdoc is built for
    rd = None

WORK = ("draws", "dispatches", "copies", "clears")


class ReplayError(RuntimeError):
    """The capture cannot be opened or replayed; one line."""


def _enum_names(enum) -> dict[int, str]:
    return {int(getattr(enum, n)): n for n in dir(enum) if n[:1].isupper()}


def _kind(flags: int) -> str | None:
    f = rd.ActionFlags
    if flags & f.Drawcall:
        return "draws"
    if flags & f.Dispatch:
        return "dispatches"
    if flags & (f.Copy | f.Resolve | f.GenMips):
        return "copies"
    if flags & f.Clear:
        return "clears"
    return None


class _Summary:
    def __init__(self, ctl, durations: dict[int, float] | None):
        self.sf = ctl.GetStructuredFile()
        self.durations = durations

    def region(self, action) -> dict:
        out = {"name": action.GetName(self.sf), "event": action.eventId,
               "counts": dict.fromkeys(WORK, 0), "gpu_ms": None, "children": []}  # fmt: skip
        seconds = self._walk(action.children, out["counts"], out["children"])
        if self.durations is not None:
            out["gpu_ms"] = round(seconds * 1e3, 6)
        return out

    def _walk(self, actions, counts: dict, regions: list) -> float:
        """Count the work under ``actions`` into ``counts``; regions among them become
        ``regions`` entries (their work counted in ``counts`` too); GPU seconds summed."""
        seconds = 0.0
        for a in actions:
            if a.flags & rd.ActionFlags.PushMarker:
                r = self.region(a)
                regions.append(r)
                for k in WORK:
                    counts[k] += r["counts"][k]
                seconds += (r["gpu_ms"] or 0.0) / 1e3
                continue
            kind = _kind(a.flags)
            if kind is not None:
                counts[kind] += 1
            if self.durations is not None and not a.flags & rd.ActionFlags.PopMarker:
                seconds += self.durations.get(a.eventId, 0.0)
            seconds += self._walk(a.children, counts, regions)
        return seconds


def _durations(ctl) -> dict[int, float] | None:
    counter = rd.GPUCounter.EventGPUDuration
    if counter not in ctl.EnumerateCounters():
        return None
    return {r.eventId: r.value.d for r in ctl.FetchCounters([counter])}


def _comments(cap) -> str | None:
    idx = cap.FindSectionByType(rd.SectionType.Notes)
    if idx < 0:
        return None
    raw = bytes(cap.GetSectionContents(idx))
    try:
        return json.loads(raw.decode("utf-8")).get("comments")
    except (UnicodeDecodeError, ValueError, AttributeError):
        return raw.decode("utf-8", "replace")


def _lantern(comments: str | None) -> dict | None:
    for line in (comments or "").splitlines():
        if line.startswith("lantern: "):
            try:
                return json.loads(line[len("lantern: ") :])
            except ValueError:
                return None
    return None


def summarize(path: str, *, durations: bool = True, texture: tuple[str, str] | None = None) -> dict:
    """The summary of capture ``path`` (see the module docstring); ``texture``: ``(name,
    out_path)`` of a texture to write out as it is at the end of the capture.

    Raises:
        ReplayError: the file cannot be opened or replayed here.
    """
    rd.InitialiseReplay(rd.GlobalEnvironment(), [])
    cap = rd.OpenCaptureFile()
    try:
        result = cap.OpenFile(path, "", None)
        if result != rd.ResultCode.Succeeded:
            raise ReplayError(f"cannot open {path}: {result}")
        if cap.LocalReplaySupport() != rd.ReplaySupport.Supported:
            raise ReplayError(f"{path}: this machine cannot replay a {cap.DriverName()} capture")
        comments = _comments(cap)
        result, ctl = cap.OpenCapture(rd.ReplayOptions(), None)
        if result != rd.ResultCode.Succeeded:
            raise ReplayError(f"cannot replay {path}: {result}")
        try:
            out = _summary(ctl, cap, path, comments, durations)
            if texture is not None:
                out["texture"] = _save_texture(ctl, *texture)
            return out
        finally:
            ctl.Shutdown()
    finally:
        cap.Shutdown()
        rd.ShutdownReplay()


def _summary(ctl, cap, path: str, comments: str | None, durations: bool) -> dict:
    timed = _durations(ctl) if durations else None
    s = _Summary(ctl, timed)
    regions, outside = [], dict.fromkeys(WORK, 0)
    s._walk(ctl.GetRootActions(), outside, regions)
    for r in regions:  # what is in a region is not outside
        for k in WORK:
            outside[k] -= r["counts"][k]
    names = {r.resourceId: r for r in ctl.GetResources()}
    comp = _enum_names(rd.CompType)

    def name(rid) -> tuple[str, bool]:
        r = names.get(rid)
        return (r.name, not r.autogeneratedName) if r is not None else (str(rid), False)

    textures = []
    for t in ctl.GetTextures():
        n, named = name(t.resourceId)
        f = t.format
        textures.append({"name": n, "named": named, "format": f.Name(),
                         "components": f.compCount, "component_bytes": f.compByteWidth,
                         "component_type": comp.get(int(f.compType), str(f.compType)),
                         "width": t.width, "height": t.height, "depth": t.depth,
                         "layers": t.arraysize, "mips": t.mips, "samples": t.msSamp})  # fmt: skip
    buffers = []
    for b in ctl.GetBuffers():
        n, named = name(b.resourceId)
        buffers.append({"name": n, "named": named, "bytes": b.length})
    return {
        "file": path,
        "driver": cap.DriverName(),
        "renderdoc": rd.GetVersionString(),
        "comments": comments,
        "lantern": _lantern(comments),
        "durations": timed is not None,
        "regions": regions,
        "outside": outside,
        "textures": textures,
        "buffers": buffers,
    }


def _save_texture(ctl, name: str, out: str) -> dict:
    """Write texture ``name`` (mip 0, layer 0) after the capture's last event to ``out``."""
    named = {r.resourceId for r in ctl.GetResources() if r.name == name}
    found = [t for t in ctl.GetTextures() if t.resourceId in named]
    if not found:
        raise ReplayError(f"the capture has no texture named {name!r}")
    last = 0
    stack = list(ctl.GetRootActions())
    while stack:
        a = stack.pop()
        last = max(last, a.eventId)
        stack += list(a.children)
    ctl.SetFrameEvent(last, True)
    t = found[0]
    data = bytes(ctl.GetTextureData(t.resourceId, rd.Subresource(0, 0, 0)))
    with open(out, "wb") as f:
        f.write(data)
    return {"name": name, "format": t.format.Name(), "width": t.width, "height": t.height,
            "bytes": len(data)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A RenderDoc capture as JSON (RenderDoc's replay).")
    p.add_argument("capture")
    p.add_argument("--no-durations", action="store_true", help="skip the GPU duration counter")
    p.add_argument("--texture", nargs=2, metavar=("NAME", "OUT"),
                   help="write texture NAME as the capture leaves it to the file OUT")  # fmt: skip
    args = p.parse_args(argv)
    if rd is None:
        print(f"the renderdoc module is not importable by {sys.executable} (Debian: apt install "
              "python3-renderdoc, then use /usr/bin/python3)", file=sys.stderr)  # fmt: skip
        return 3
    try:
        out = summarize(args.capture, durations=not args.no_durations, texture=args.texture)
    except ReplayError as e:
        print(str(e), file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
