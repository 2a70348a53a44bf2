"""The debug lines tool: owns ``DebugLines`` (``engine.tools.lines.passes``) and its
``Lines`` pass, uploads each frame's segments, and while culling is frozen (F2) adds the
frozen camera's frustum (in place of the frame's own ``FrustumLines``), the sun's shadow
volume and the bounding spheres of the instances the frozen camera culls, one
colour per reason (frustum red, sub-pixel amber, occluded purple: the GPU culler's own
classes for the frozen camera, read back once per freeze by ``engine.culling.frozen``).

    lines = ctx.tool(LinesTool).lines     # from any tool (or app.tool(LinesTool) in a sample)
    lines.box(lo, hi, (1, 0, 0), seconds=2.0)
"""

from __future__ import annotations

import logging

import numpy as np

from engine.commands import Choice
from engine.culling.reference import VISIBLE
from engine.passes.resources import DEPTH, frame_resources
from engine.tools.lines.passes import DebugLines, LinesPass

log = logging.getLogger("lantern")

#: Spheres drawn for culled instances while frozen: the nearest this many (24 x 3 segments each).
MAX_SPHERES = 400
SUN_VOLUME = (1.0, 0.95, 0.4)  # linear
FROZEN_FRUSTUM = (1.0, 0.75, 0.0)  # amber, as engine/passes/frustum_lines.py drew it
#: Linear colours of the culling reasons (the cull panel's sRGB colours, decoded).
REASON_COLORS = {
    "frustum": (0.79, 0.10, 0.08),
    "small": (0.87, 0.51, 0.05),
    "occluded": (0.30, 0.16, 0.79),
}
REASONS = ("frustum", "small", "occluded")  # class codes 0, 1, 2 (engine.culling.reference)


class LinesTool:
    """The ``Lines`` pass and ``lines [clear]``.

    Attributes:
        lines: the ``DebugLines`` every subsystem submits to.
        frozen: ``{"frustum": n, "small": n, "occluded": n}`` instances the culler removes
            for the frozen camera (while frozen, once its classes are read back); else None.
    """

    name = "lines"

    def __init__(self):
        self.lines = DebugLines()
        self.frozen: dict[str, int] | None = None
        self._frozen_key = None
        self._frozen_rows = None
        self._undo = None

    def install(self, ctx) -> None:
        self.ctx = ctx
        self.res = frame_resources(ctx.graph)
        depth = DEPTH if self.res is not None else None
        self.pass_ = ctx.graph.add(LinesPass(ctx.gpu.device, ctx.graph, depth))
        self._undo = ctx.on_update(self._update)
        if self.res is not None:  # F2's frozen frustum: these lines draw it instead
            self._frame_lines = self.res.frustum_lines
            self.res.frustum_lines = lambda fmt: None
        ctx.commands.register(
            "lines",
            self.command,
            args=[Choice("clear", optional=True)],
            help="debug lines: how many are drawn; clear drops the kept ones",
        )

    def close(self) -> None:
        if self._undo is not None:
            self._undo()
            self._undo = None
        if self.res is not None and getattr(self, "_frame_lines", None) is not None:
            self.res.frustum_lines = self._frame_lines
            self._frame_lines = None

    def command(self, what: str | None) -> str:
        if what == "clear":
            self.lines.clear()
            return "lines: cleared"
        return (
            f"lines: {self.pass_.count} segments in the last frame, {self.lines.pending()} queued"
        )

    def _update(self, frame_ctx) -> None:
        r = self.res
        if r is not None and r.view_proj is not None:
            self.pass_.view_proj = r.view_proj
            if r.cull_camera is not None:
                self._frozen_extras(frame_ctx)
            else:
                self.frozen = self._frozen_key = None
        self.pass_.upload(self.lines.take(frame_ctx.time))

    def _frozen_extras(self, frame_ctx) -> None:
        r = self.res
        cam = r.cull_camera
        w, h = frame_ctx.size
        frozen = np.asarray(cam.proj(w / h) @ cam.view(), np.float64)
        self.lines.frustum(np.linalg.inv(frozen), FROZEN_FRUSTUM, far_depth=1e-3)
        if r.cascade_fit is not None and r.settings.shadows:  # each cascade's box
            for fit in r.cascade_fit.cascades:
                inv = np.linalg.inv(np.asarray(fit.view_proj, np.float64))
                self.lines.frustum(inv, SUN_VOLUME, near_depth=1.0, far_depth=0.0)
        classes = r.frozen.classes if r.frozen is not None else None
        key = (id(r.cull_camera), id(classes))
        if key != self._frozen_key:
            self._frozen_key = key
            self._frozen_rows, self.frozen = culled_spheres(r, classes)
        if self._frozen_rows is not None and len(self._frozen_rows):
            self.lines.add(self._frozen_rows)


def culled_spheres(res, classes):
    """``(rows, counts)``: debug-line rows of the bounding spheres of the ``MAX_SPHERES``
    culled instances nearest the frozen camera (colour by reason) and the culled counts by
    reason (``{"frustum": n, "small": n, "occluded": n}``) of the whole scene, from the
    culler's ``(N,)`` uint32 ``classes``; ``(None, None)`` while they are not read back."""

    if classes is None:
        return None, None
    cam = res.cull_camera
    bounds = res.gs.scene.bounds()
    counts = {name: int((classes == k).sum()) for k, name in enumerate(REASONS)}
    culled = np.flatnonzero(classes != VISIBLE)
    d = np.linalg.norm(bounds[culled, :3] - np.asarray(cam.eye, np.float32), axis=1)
    pick = culled[np.argsort(d, kind="stable")[:MAX_SPHERES]]
    colors = np.array([REASON_COLORS[REASONS[c]] for c in classes[pick]], np.float32)
    tmp = DebugLines()
    tmp.spheres(bounds[pick, :3], bounds[pick, 3], colors.reshape(-1, 3))
    return tmp.take(0.0), counts
