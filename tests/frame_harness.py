"""Test harness: a StandardFrame on an offscreen target, with blocking readbacks (tests only)."""

from __future__ import annotations

import math

import numpy as np
import wgpu

from engine.culling.reference import CullView
from engine.frame import StandardFrame
from engine.graph import RenderGraph
from engine.loop import FrameLoop
from engine.math3d import translation
from engine.passes.shadow import frustum_planes
from engine.passes.taa import jitter_matrix
from engine.scene.camera import Camera
from engine.scene.meshes import box, plane
from engine.scene.scene import Mesh, Scene
from engine.settings import FrameSettings
from engine.surfaces import OffscreenTarget


def random_scene(n: int, seed: int, *, spread: float = 20.0, walls: int = 3) -> Scene:
    """Ground plane, ``walls`` big occluding walls and ``n`` random boxes (two LODs)."""
    rng = np.random.default_rng(seed)
    meshes = [
        Mesh.from_lods("ground", [plane(1.0)]),
        Mesh.from_lods("box", [box(), box(0.45, 0.45, 0.45)]),
    ]
    rows, ids = [np.diag([spread * 2, 1, spread * 2, 1]).astype(np.float32)], [0]
    for _ in range(walls):
        m = translation(*rng.uniform([-spread / 2, 3, -spread / 2], [spread / 2, 3, spread / 2]))
        rows.append(m @ np.diag([rng.uniform(8, 16), 6, 0.5, 1]).astype(np.float32))
        ids.append(1)
    for _ in range(n):
        s = rng.uniform(0.2, 1.5)
        m = translation(*rng.uniform([-spread, s / 2, -spread], [spread, 3, spread]))
        rows.append(m @ np.diag([s, s, s, 1]).astype(np.float32))
        ids.append(1)
    colors = np.concatenate([rng.uniform(0.2, 0.9, (len(rows), 3)), np.ones((len(rows), 1))], 1)
    return Scene(meshes, np.array(rows), np.array(ids, np.uint32), colors.astype(np.float32))


def points_in_view(camera: Camera, d0: float, d1: float, n: int, seed: int = 0,
                   aspect: float = 16 / 9) -> np.ndarray:  # fmt: skip
    """``(n, 3)`` random world points the camera sees at view depth ``d0..d1``, built from
    its own axes and field of view (independent of any fit under test)."""
    rng = np.random.default_rng(seed)
    fwd = camera.target - camera.eye
    fwd = fwd / np.linalg.norm(fwd)
    right = np.cross(fwd, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    d = rng.uniform(d0, d1, n)
    th = math.tan(math.radians(camera.fov_y_deg) / 2)
    x, y = rng.uniform(-1, 1, n) * th * aspect * d, rng.uniform(-1, 1, n) * th * d
    return camera.eye + d[:, None] * fwd + x[:, None] * right + y[:, None] * up


class Harness:
    def __init__(self, gpu, scene, size=(96, 64), settings: FrameSettings | None = None):
        self.gpu, self.device, self.scene = gpu, gpu.device, scene
        self.target = OffscreenTarget(gpu.device, size)
        self.graph = RenderGraph(gpu.device, output_format=self.target.format, size=size)
        self.frame = StandardFrame(gpu, self.graph, scene, settings)
        self.loop = FrameLoop(gpu, self.graph)
        self.time = 0.0

    def resize(self, size):
        self.target = OffscreenTarget(self.device, size)
        self.graph.resize(size)

    def render(self, camera: Camera, frames: int = 1, dt: float = 0.0, hooks=()) -> None:
        """Record and submit ``frames`` frames from ``camera`` through the one frame loop,
        ``dt`` seconds apart; ``hooks``: ``fn(ctx)`` run after the frame's update each frame
        (a tool context's ``updates``, as the app runs them)."""

        def update(ctx):
            self.frame.update(ctx, camera)
            for fn in hooks:
                fn(ctx)

        for _ in range(frames):
            self.time += dt
            self.loop.frame(self.target.view, self.time, update)

    # -- blocking readbacks --------------------------------------------------------------------
    def read(self, buf, dtype=np.uint32) -> np.ndarray:
        return np.frombuffer(self.device.queue.read_buffer(buf), dtype).copy()

    def counters(self) -> dict[str, int]:
        from engine.culling.counters import COUNTER_NAMES

        v = self.read(self.frame.counters)[: len(COUNTER_NAMES)]
        return dict(zip(COUNTER_NAMES, v.tolist(), strict=True))

    def cascade_counters(self, cascade: int) -> dict[str, int]:
        """Shadow cascade ``cascade``'s counter block of the last frame (blocking read)."""
        from engine.culling.counters import CASCADE_COUNTER_NAMES, cascade_offset

        at = cascade_offset(cascade) // 4
        v = self.read(self.frame.counters)[at : at + len(CASCADE_COUNTER_NAMES)]
        return dict(zip(CASCADE_COUNTER_NAMES, v.tolist(), strict=True))

    def drawn(self, region: str) -> np.ndarray:
        """Scene rows drawn by a region in the last frame (sorted): ``"early"``, ``"late"``,
        ``"shadow.c0"`` .. (a shadow cascade's casters)."""
        gs = self.frame.gs
        r = gs.regions.index(region)
        args = self.read(gs.args).reshape(len(gs.regions), gs.batch_count, 5)
        remap = self.read(gs.remap)
        out = []
        for b in range(gs.batch_count):
            start = int(gs.batch_bases[r, b])
            out.append(remap[start : start + args[r, b, 1]])
        return np.sort(np.concatenate(out))

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        s = self.read(self.frame.gs.state)
        return s & 3, s >> 2

    def pyramid(self, copy=None) -> list[np.ndarray]:
        """The frame's depth pyramid levels (or ``copy``'s: a ``FrozenCulling``)."""
        p = copy if copy is not None else self.frame.pyramid
        out = []
        for lvl in range(p.levels):
            w, h = max(1, p.base[0] >> lvl), max(1, p.base[1] >> lvl)
            bpr = (w * 4 + 255) // 256 * 256
            data = self.device.queue.read_texture(
                {"texture": p.texture, "mip_level": lvl},
                {"bytes_per_row": bpr, "rows_per_image": h},
                (w, h, 1),
            )
            out.append(np.frombuffer(data, np.float32).reshape(h, bpr // 4)[:, :w].copy())
        return out

    def texture(self, name: str, mip: int = 0) -> np.ndarray:
        """A graph texture's mip as ``(h, w, 4)`` float32 (rgba16float or rgba32float)."""
        tex = self.graph.texture(name)
        w, h = max(1, tex.width >> mip), max(1, tex.height >> mip)
        bpp = 8 if tex.format == "rgba16float" else 16
        bpr = (w * bpp + 255) // 256 * 256
        data = self.device.queue.read_texture(
            {"texture": tex, "mip_level": mip},
            {"bytes_per_row": bpr, "rows_per_image": h},
            (w, h, 1),
        )
        comp = np.dtype(np.float16 if bpp == 8 else np.float32)
        rows = np.frombuffer(data, comp).reshape(h, bpr // comp.itemsize)
        return rows[:, : w * 4].reshape(h, w, 4).astype(np.float32)

    def depth(self) -> np.ndarray:
        tex = self.graph.texture("frame.depth")
        w, h = self.graph.size
        bpr = (w * 4 + 255) // 256 * 256
        data = self.device.queue.read_texture(
            {"texture": tex, "aspect": "depth-only"},
            {"bytes_per_row": bpr, "rows_per_image": h},
            (w, h, 1),
        )
        return np.frombuffer(data, np.float32).reshape(h, bpr // 4)[:, :w].copy()

    def ids(self, regions=(0, 1)) -> np.ndarray:
        """Scene rows + 1 per pixel drawing ``regions`` of the last cull; 0 = nothing."""
        w, h = self.graph.size
        usage = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC
        idt = self.device.create_texture(size=(w, h, 1), format="r32uint", usage=usage)
        dt = self.device.create_texture(size=(w, h, 1), format="depth32float", usage=usage)
        enc = self.device.create_command_encoder()
        self.frame.record_ids(enc, idt.create_view(), dt.create_view(), regions)
        self.device.queue.submit([enc.finish()])
        bpr = (w * 4 + 255) // 256 * 256
        data = self.device.queue.read_texture(
            {"texture": idt}, {"bytes_per_row": bpr, "rows_per_image": h}, (w, h, 1)
        )
        return np.frombuffer(data, np.uint32).reshape(h, bpr // 4)[:, :w].copy()

    def visible_ids_unculled(self, camera: Camera) -> set[int]:
        """Rows covering at least one pixel when every instance is drawn (culling off)."""
        settings, seq = self.frame.settings, self.frame.jitter_sequence
        self.frame.jitter_sequence = (self.frame.res.jitter,)  # the culled frame's jitter
        self.frame.set_settings(cull=False, occlusion=False)
        self.render(camera)
        ids = self.ids()
        self.frame.configure(settings)
        self.frame.jitter_sequence = seq
        return {int(i) - 1 for i in np.unique(ids) if i}

    def cull_view(self, camera: Camera) -> CullView:
        w, h = self.graph.size
        jitter = self.frame.res.jitter
        view, proj = camera.view(), jitter_matrix(jitter, (w, h)) @ camera.proj(w / h)
        return CullView(
            view=view,
            planes=frustum_planes(proj @ view),
            eye=camera.eye,
            p00=float(proj[0, 0]),
            p11=float(proj[1, 1]),
            near=camera.near,
            screen=(w, h),
            lod_base_px=self.frame.settings.lod_base_px * h / 720.0,
            jitter=jitter,
        )


def reference_cull_view(res, camera, size):
    """The reference ``CullView`` of ``camera`` at output ``size`` with ``res``'s knobs."""

    aspect = size[0] / size[1]
    view, proj = camera.view(), camera.proj(aspect)
    return CullView(
        view=view,
        planes=frustum_planes(proj @ view),
        eye=np.asarray(camera.eye, np.float64),
        p00=float(proj[0, 0]),
        p11=float(proj[1, 1]),
        near=float(camera.near),
        screen=tuple(size),
        lod_base_px=res.settings.lod_base_px * size[1] / 720.0,
    )
