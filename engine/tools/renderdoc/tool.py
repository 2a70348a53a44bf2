"""The RenderDoc tool: hand exactly the frames asked for to RenderDoc, headless or windowed.

    python -m samples.s13 --capture f.png --renderdoc 30      # frame 30 -> s13_frame30.rdc
    python -m samples.s13 --renderdoc 120:3                   # frames 120, 121, 122 (window)
    renderdoc [COUNT]                                         # console, portal: next frame(s)
    F12                                                       # window: the next frame

Each frame is its own capture (one ``.rdc``), bracketed by the frame loop rather than by a
present, so a headless run is captured like a window: RenderDoc's capture starts before the
frame is recorded (``ctx.on_update``, after the sample's update: its uploads are submitted
with the frame) and ends after the frame's submit (``loop.between_frames``). While a frame
is captured the graph labels its draws (``RenderGraph.label_draws``): every per-draw name
Lantern's profiler uses (a batch's ``"box LOD0"``) is a debug group around its draw.

RenderDoc is used when it is in the process already (``renderdoccmd capture``,
``qrenderdoc``), or loaded by Lantern before the GPU exists when ``--renderdoc`` is given.
Without either, nothing is loaded or called, and ``renderdoc``/F12 say to restart with the
flag. Frame indices are Lantern's (0-based, as in the telemetry and the trace).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from engine.commands import CommandError, Int, Later
from engine.gpu import BACKENDS, add_instance_flags, set_instance_backend
from engine.safe_write import output_problem
from engine.tool import Key, OptionError
from engine.tools.renderdoc.api import LAYER_ENV, RenderDocApi, RenderDocUnavailable

log = logging.getLogger("lantern")

KEY_F12 = 301  # glfw.KEY_F12 (glfw is not imported headless)
MAX_FRAMES = 100  # frames per request: each .rdc holds a whole frame's resources
_FRAME = Int(0, what="a frame index (0 = the first frame)")
_COUNT = Int(1, MAX_FRAMES, what="a frame count")


@dataclass(frozen=True)
class FrameSpan:
    """Frames ``start .. start + count - 1`` (Lantern's 0-based frame indices)."""

    start: int
    count: int = 1

    @property
    def last(self) -> int:
        return self.start + self.count - 1

    def __str__(self) -> str:
        return f"frame {self.start}" if self.count == 1 else f"frames {self.start}..{self.last}"


def parse_span(text: str) -> FrameSpan:
    """``"START[:COUNT]"`` as a ``FrameSpan``.

    Raises:
        OptionError: not that form, a negative or non-integer start or count, or a count
            over ``MAX_FRAMES``; one line naming the value.
    """
    start, sep, count = text.partition(":")
    try:
        return FrameSpan(_FRAME.parse(start.strip()), _COUNT.parse(count.strip()) if sep else 1)
    except CommandError as e:
        raise OptionError(f"argument --renderdoc: {e} (START[:COUNT], e.g. 120 or 120:3)") from None


def folder_problem(folder: Path) -> str | None:
    """Why captures cannot be written into ``folder`` (one line), or None. Writability is
    probed with a real file (permission bits say nothing for root)."""
    if not folder.exists():
        return f"folder {str(folder)!r} does not exist; create it first"
    if not folder.is_dir():
        return f"{str(folder)!r} is not a folder"
    try:
        fd, probe = tempfile.mkstemp(prefix=".lantern-probe-", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        return f"cannot write in folder {str(folder)!r} ({e.strerror}); choose another"
    return None


def default_folder(args) -> Path:
    """``--renderdoc-dir``, else the folder of the run's first file output (``--capture``,
    ``--dump``, ``--trace``, ``--telemetry``), else the current folder."""
    given = getattr(args, "renderdoc_dir", None)
    if given:
        return Path(os.path.abspath(given))
    dump = getattr(args, "dump", None)
    for path in (getattr(args, "capture", None), dump[0][1] if dump else None,
                 getattr(args, "trace", None), getattr(args, "telemetry", None)):  # fmt: skip
        if path:
            return Path(os.path.dirname(os.path.abspath(path)))
    return Path.cwd()


class _Loaded:
    """This process's RenderDoc (per process, like the instance flags): the API, or why
    there is none."""

    api: RenderDocApi | None = None
    why: str | None = None


class RenderDocTool:
    """Captures frames in RenderDoc on request (command line, console, portal, F12).

    Attributes:
        api: the ``RenderDocApi`` of this process, or None (not loaded: nothing is called).
        folder: where captures go. captures: the session fact's list, one dict per frame
            asked for: ``frame``, ``path``, ``status`` (``planned``, ``written``, ``failed``)
            and ``error`` for a failed one.
    """

    name = "renderdoc"
    keys = (Key("F12", KEY_F12, "renderdoc", "capture the next frame in RenderDoc"),)

    # -- the command line (called by the app before the GPU exists) -------------------------
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("RenderDoc (https://renderdoc.org)")
        g.add_argument(
            "--renderdoc",
            metavar="START[:COUNT]",
            help="capture frame START (0-based; COUNT frames from it, default 1) in RenderDoc, "
            "one .rdc per frame; loads RenderDoc before the GPU, so the console's 'renderdoc' "
            "and F12 work too",
        )
        g.add_argument(
            "--renderdoc-dir",
            metavar="DIR",
            help="folder of the .rdc files (default: the folder of --capture or another "
            "output, else the current folder)",
        )

    @classmethod
    def check_options(cls, args: argparse.Namespace) -> None:
        """Parse ``--renderdoc`` into a ``FrameSpan`` (in place) and check it against
        ``--frames`` and the folder.

        Raises:
            OptionError: one line naming the option and the value.
        """
        spec = getattr(args, "renderdoc", None)
        if isinstance(spec, str):
            spec = args.renderdoc = parse_span(spec)
        frames = getattr(args, "frames", None)
        if spec is not None and frames is not None:
            _check_span(spec, frames - 1, f"--frames {frames}")
        if spec is not None or getattr(args, "renderdoc_dir", None):
            problem = folder_problem(default_folder(args))
            if problem is not None:
                option = (
                    "--renderdoc-dir" if getattr(args, "renderdoc_dir", None) else "--renderdoc"
                )
                raise OptionError(f"argument {option}: {problem}")

    @classmethod
    def before_gpu(cls, args: argparse.Namespace) -> None:
        """Before the GPU instance exists: find RenderDoc in the process, or load it when
        ``--renderdoc`` asks for a capture (with the Vulkan layer's switch set). Not
        installed: one warning naming the packages; the run goes on without captures.
        With RenderDoc, wgpu creates only one backend's adapters (``WGPU_BACKEND_TYPE``,
        else Vulkan): RenderDoc's capture of "any device" is otherwise undefined between
        the Vulkan device and the OpenGL ES context wgpu makes while listing adapters."""
        _Loaded.api, _Loaded.why = RenderDocApi.already_loaded(), None
        if _Loaded.api is None and getattr(args, "renderdoc", None) is not None:
            os.environ[LAYER_ENV] = "1"  # Debian's layer manifest is enabled by it
            try:
                _Loaded.api = RenderDocApi.load()
            except RenderDocUnavailable as e:
                os.environ.pop(LAYER_ENV, None)
                _Loaded.why = str(e)
                log.warning("renderdoc: %s; no capture is made, the run goes on", e)
        if _Loaded.api is not None:
            add_instance_flags("Debug")  # on by default (engine.gpu); kept if a run dropped it
            backend = os.environ.get("WGPU_BACKEND_TYPE", "").strip() or "Vulkan"
            if backend in BACKENDS:  # an unknown one is the GPU setup's one-line error
                set_instance_backend(backend)

    # -- the tool ---------------------------------------------------------------------------
    def __init__(self):
        self.api: RenderDocApi | None = None
        self.captures: list[dict] = []
        self._queue: deque[int] = deque()  # frames still to capture, in order
        self._active: tuple[int, Path, int] | None = None  # (frame, target, captures before)
        self._later: Later | None = None  # a console or portal request's outcome
        self._later_frames: list[int] = []
        self._unhooks: list = []

    def install(self, ctx) -> None:
        self.ctx, self.api = ctx, _Loaded.api
        self.folder = default_folder(ctx.options)
        self.stem = ctx.telemetry.session.sample or "lantern"
        ctx.commands.register(
            "renderdoc",
            self.command,
            args=[Int(1, MAX_FRAMES, what="a frame count", optional=True)],
            help="capture the next COUNT frames (default 1) in RenderDoc, one .rdc each",
        )
        spec = ctx.option("renderdoc")
        if isinstance(spec, str):
            spec = parse_span(spec)
        if spec is not None and ctx.final_frame is not None:
            _check_span(spec, ctx.final_frame, f"this run's {ctx.final_frame + 1} frames")
        if self.api is None:  # nothing per frame: RenderDoc is not in this process
            if spec is not None and _Loaded.why is not None:  # asked for, not installed
                ctx.telemetry.set_fact("renderdoc", {"error": _Loaded.why, "captures": []})
            return
        self._unhooks.append(ctx.on_update(self._before_record))
        ctx.loop.between_frames.append(self._after_submit)
        if spec is not None:
            self._plan(range(spec.start, spec.last + 1))
        self._publish()

    def close(self) -> None:
        if self.ctx.graph is not None:
            self.ctx.graph.label_draws = False
        if self._active is not None and self.api is not None:
            self.api.discard()
            self._fail(self._active[0], self._active[1], "the run ended during the capture")
            self._active = None
        if self._queue:
            left = list(self._queue)
            self._queue.clear()
            for f in left:
                self._set(f, "failed", "the run ended before that frame")
            log.warning("renderdoc: %s not captured: the run ended at frame %d",
                        _frames_text(left), self.ctx.loop.index - 1)  # fmt: skip
        self._finish_later()
        for undo in self._unhooks:
            undo()
        self._unhooks.clear()
        if self._after_submit in self.ctx.loop.between_frames:
            self.ctx.loop.between_frames.remove(self._after_submit)

    # -- requests ---------------------------------------------------------------------------
    def command(self, count: int | None) -> Later:
        """``renderdoc [COUNT]``: capture the next ``count`` frames (default 1).

        Raises:
            CommandError: RenderDoc is not in this process (restart with ``--renderdoc``),
                or a capture is under way.
        """
        if self.api is None:
            raise CommandError(
                _Loaded.why
                or "RenderDoc is not loaded in this run: restart with --renderdoc "
                "START[:COUNT] (or under renderdoccmd / qrenderdoc); it must be there before "
                "the GPU is"
            )
        if self._queue or self._active is not None:
            pending = ([self._active[0]] if self._active else []) + list(self._queue)
            raise CommandError(
                f"a capture of {_frames_text(pending)} is under way; one request at a time"
            )
        start = self.ctx.loop.index
        frames = range(start, start + (count or 1))
        self._plan(frames)
        self._publish()
        self._later = Later(f"renderdoc: capturing {_frames_text(frames)} into {self.folder}")
        self._later_frames = list(frames)
        self.ctx.loop.request_frame()  # an idle window draws it
        return self._later

    def _plan(self, frames) -> None:
        self._queue.extend(frames)
        for f in frames:
            self.captures.append({"frame": f, "path": str(self._target(f)), "status": "planned"})

    def _target(self, frame: int) -> Path:
        return self.folder / f"{self.stem}_frame{frame}.rdc"

    # -- per frame (only while RenderDoc is in the process) ---------------------------------
    def _before_record(self, frame_ctx) -> None:
        q = self._queue
        if not q or q[0] > frame_ctx.frame_index:
            return
        while q and q[0] < frame_ctx.frame_index:  # not drawn (a frame loop that skipped one)
            f = q.popleft()
            self._fail(f, self._target(f), "that frame was not drawn")
        frame = q.popleft()
        target = self._target(frame)
        problem = folder_problem(self.folder) or output_problem(str(target), ".rdc")
        if problem is not None:
            self._fail(frame, target, problem)
            if not q:
                self._finish_later()
            return
        api = self.api
        before = len(api.captures())
        api.set_path_template(str(self.folder / f".{target.stem}.lantern-tmp"))
        api.start()
        if not api.capturing():  # one line; the frames after it fail for the same reason
            self._fail(frame, target, self._not_hooked())
            for f in q:
                self._set(f, "failed", "RenderDoc hooks no device of this backend")
            q.clear()
            self._finish_later()
            return
        api.set_title(f"Lantern {self.stem} frame {frame}")
        self._active = (frame, target, before)
        frame_ctx.graph.label_draws = True

    def _after_submit(self) -> None:
        if self._active is None:
            return
        frame, target, before = self._active
        self._active = None
        self.ctx.graph.label_draws = False
        ok = self.api.end()
        written = self.api.captures()[before:]
        if not ok or not written:
            self._fail(frame, target, "RenderDoc reported a failed capture")
        else:
            self._keep(frame, target, written[-1])
        if self._queue:
            self.ctx.loop.request_frame()
        else:
            self._finish_later()

    def _keep(self, frame: int, target: Path, written: str) -> None:
        """Move RenderDoc's file to ``target`` (checked again: it may have appeared since)."""
        self.api.set_comments(written, self._comments(frame))
        problem = output_problem(str(target), ".rdc")
        try:
            if problem is not None:
                raise OSError(problem)
            os.replace(written, target)
        except OSError as e:
            _remove(written)
            self._fail(frame, target, problem or f"cannot write it ({e.strerror or e})")
            return
        self._set(frame, "written")
        log.info("renderdoc: wrote %s (%s; open it with qrenderdoc, or: lantern rdc %s)",
                 target, f"frame {frame}", target)  # fmt: skip

    def _comments(self, frame: int) -> str:
        """What qrenderdoc's Capture Comments show: the frame and, for each graph resource
        whose label is not its name in this frame, the label it has (the two halves of a
        history pair swap roles every frame; their labels stay). The JSON line is what
        ``lantern rdc`` reads."""
        g = self.ctx.graph
        tables = [(n, g.texture(n)) for n in g.texture_names()]
        tables += [(n, g.buffer(n)) for n in g.buffer_names()]
        swapped = {n: obj.label for n, obj in tables if obj.label != n}
        facts = {"sample": self.stem, "frame": frame, "size": list(g.size),
                 "adapter": self.ctx.telemetry.session.adapter, "labels": swapped}  # fmt: skip
        lines = [f"Lantern {self.stem}, frame {frame} ({facts['adapter']})"]
        lines += [
            f"this frame's {n} is the resource labelled {lab!r}" for n, lab in swapped.items()
        ]
        return "\n".join([*lines, "lantern: " + json.dumps(facts)])

    def _not_hooked(self) -> str:
        summary = getattr(self.ctx.gpu, "summary", "this GPU")
        return (
            f"RenderDoc is not capturing {summary}: it hooks no device of this backend here "
            "(RenderDoc captures wgpu's Vulkan and D3D12 backends; try WGPU_BACKEND_TYPE=Vulkan)"
        )

    # -- outcome ------------------------------------------------------------------------------
    def _fail(self, frame: int, target: Path, why: str) -> None:
        self._set(frame, "failed", why)
        log.error("renderdoc: %s not written (frame %d): %s", target, frame, why)

    def _set(self, frame: int, status: str, error: str | None = None) -> None:
        for c in reversed(self.captures):
            if c["frame"] == frame:
                c["status"] = status
                if error is not None:
                    c["error"] = error
                break
        self._publish()

    def _publish(self) -> None:
        api = self.api
        self.ctx.telemetry.set_fact(
            "renderdoc",
            {
                "api": ".".join(map(str, api.version)) if api else None,
                "launched_by_renderdoc": api.launched if api else None,
                "folder": str(self.folder),
                "captures": [dict(c) for c in self.captures],
            },
        )

    def _finish_later(self) -> None:
        later, self._later = self._later, None
        if later is None:
            return
        last = {c["frame"]: c for c in self.captures}  # the newest entry of each frame
        mine = [last[f] for f in self._later_frames if f in last]
        done = [c["path"] for c in mine if c["status"] == "written"]
        failed = [c for c in mine if c["status"] != "written"]
        if failed:
            c = failed[-1]
            why = c.get("error", c["status"])
            later.finish(False, f"renderdoc: {c['path']} not written: {why}")
        else:
            later.finish(True, "renderdoc: wrote " + ", ".join(done))


def _check_span(spec: FrameSpan, last: int, what: str) -> None:
    if spec.start > last:
        raise OptionError(
            f"argument --renderdoc: frame {spec.start} is after the last frame of {what} "
            f"(frames 0..{last})"
        )
    if spec.last > last:
        raise OptionError(f"argument --renderdoc: {spec} go past the last frame of {what} "
                          f"(frames 0..{last})")  # fmt: skip


def _frames_text(frames) -> str:
    frames = list(frames)
    if len(frames) == 1:
        return f"frame {frames[0]}"
    return f"frames {frames[0]}..{frames[-1]}"


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
