"""s07: order-independent transparency: weighted blended OIT against per-pixel linked lists.

Hundreds of intersecting coloured glass panes and bubbles over a plaza of the city, drawn
three ways in the pass ``OIT.Draw`` (the frame's ``Transparent`` replaced) and, where the
variant needs one, ``OIT.Resolve``:

    sorted   the frame's own path: BLEND instances sorted back to front per instance on the
             GPU (Transparent.Sort) and alpha-blended; wrong where instances intersect or
             overlap themselves (a bubble's back and front faces)
    wboit    weighted blended OIT (McGuire and Bavoil, JCGT 2(2), 2013, weight equation 9):
             one pass of additive and multiplicative blending, then a fullscreen divide;
             bounded memory (10 bytes a pixel), approximate colour, exact coverage
    linked   per-pixel linked lists (Yang et al., EGSR 2010): every fragment a 16-byte node
             of a pool (``--oit-pool`` nodes a pixel), sorted per pixel in OIT.Resolve: exact
             up to ``LAYERS`` layers a pixel; a full pool or a deeper pixel is counted

The counter block ``oit`` (HUD, telemetry, trace, portal) counts the linked variant's
fragments, the ones a full pool dropped and the ones past ``LAYERS`` left out. With
``--oit-error`` an exact reference is built every frame beside the variant (its own lists,
``REF_POOL`` nodes a pixel, ``REF_LAYERS`` layers; ``OIT.Reference``,
``OIT.Reference.Resolve``) and ``OIT.Error`` compares: mean and largest relative error of
the pixels with a transparent fragment, and how many are off by more than 1%.

    python -m samples.s07 --gpu-profile --oit-error --variant-cycle 60 --telemetry run.jsonl
    lantern compare run.jsonl          # OIT.Draw and OIT.Resolve, variant by variant

With ``--gpu-profile`` the shutdown report gives each variant's GPU time, memory, dropped
fragments and error. ``variant next``, ``oit-pool 2`` and ``oit-error on`` in the console
switch live; ``tools/bench.py oit`` measures the variants; docs/transparency.md explains.
"""

from __future__ import annotations

import collections
import logging
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import wgpu

from engine.app import Sample, main
from engine.commands import Int, Switch
from engine.counters import CounterReadback, counter_names
from engine.frame import StandardFrame
from engine.graph import ComputePass, RenderPass, TextureDesc, TransferPass
from engine.knobs import Knob, add_knob_arguments
from engine.materials.model import AlphaMode, Material
from engine.math3d import translation
from engine.passes.bundles import BundleCache
from engine.passes.resources import (
    DEPTH,
    DEPTH_FORMAT,
    DRAW_INPUTS,
    HDR,
    TRANSPARENT_ORDER,
    BindGroupCache,
)
from engine.passes.screen import ScreenPass
from engine.scene.camera import CAMERA_FORMAT, FixedPath, OrbitPath, parse_camera
from engine.scene.meshes import plane
from engine.scene.procedural import MESH_SPHERE, city
from engine.scene.scene import Mesh, Scene
from engine.settings import FRAME_KNOBS, check_post_options, settings_from_args
from engine.shader_registry import shader_pipeline
from engine.tools.memory.table import describe, scan

log = logging.getLogger("lantern")
HERE = Path(__file__).resolve().parent
DRAW_WGSL = HERE / "s07_oit.wgsl"
COMMON_WGSL = HERE / "s07_oit_common.wgsl"
VARIANTS = ("sorted", "wboit", "linked")
LAYERS = 32  # the linked variant's per-pixel sort: its nearest fragments kept
REF_LAYERS = 128  # the reference's
REF_POOL = 16  # the reference's nodes a pixel
NODE_BYTES = 16  # s07_oit_common.wgsl Node
CITY = 1500  # instances of the city around the plaza
PANES, BUBBLES = 320, 120
CENTRE = (0.0, 7.0, 0.0)  # of the glass cluster, above the plaza (the central block)

# graph resources of the sample
COUNTERS = "oit.counters"  # the counter block (COUNTERS u32)
HEADS, NODES = "oit.heads", "oit.nodes"  # the linked variant's lists
REF_HEADS, REF_NODES = "oit.ref.heads", "oit.ref.nodes"  # the reference's
ACCUM, REVEAL = "oit.accum", "oit.reveal"  # the weighted blended variant's targets
REFERENCE = "oit.reference"  # the exact composite (error measurement)
ACCUM_FORMAT, REVEAL_FORMAT = "rgba16float", "r16float"

POOL = Knob("oit-pool", Int(1, 64, what="nodes a pixel", metavar="N"), 4,
            "the linked variant's node pool, N nodes (16 bytes each) per output pixel on "
            "average, capped by the device's storage binding size")  # fmt: skip
ERROR = Knob("oit-error", Switch(), False,
             "the error measurement: an exact reference built every frame beside the variant "
             "and compared (OIT.Reference, OIT.Error: the counter block's error_*)")  # fmt: skip

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_ATTACH = wgpu.TextureUsage.RENDER_ATTACHMENT
_ADD = {"src_factor": "one", "dst_factor": "one", "operation": "add"}
_TIMES_ONE_MINUS = {"src_factor": "zero", "dst_factor": "one-minus-src", "operation": "add"}
#: OIT.Resolve's blends into frame.hdr: the lists' (C, T) as C + T * hdr; the weighted
#: average (avg, revealage) as avg * (1 - revealage) + hdr * revealage.
OVER_PREMULTIPLIED = {
    "color": {"src_factor": "one", "dst_factor": "src-alpha", "operation": "add"},
    "alpha": {"src_factor": "zero", "dst_factor": "one", "operation": "add"},
}
OVER_REVEALAGE = {
    "color": {"src_factor": "one-minus-src-alpha", "dst_factor": "src-alpha", "operation": "add"},
    "alpha": {"src_factor": "zero", "dst_factor": "one", "operation": "add"},
}


# -- the scene --------------------------------------------------------------------------------
def glass_scene(*, panes: int = PANES, bubbles: int = BUBBLES, city_instances: int = CITY,
                seed: int = 0) -> tuple[Scene, OrbitPath]:  # fmt: skip
    """The procedural city with its central block cleared to a plaza, and over the plaza a
    cluster of ``panes`` glass panes (2.5 to 7 m, double-sided, any orientation: they
    intersect) and ``bubbles`` glass spheres (0.8 to 2.5 m radius, double-sided: a back
    and a front face each), each a BLEND material tinted per instance with its own alpha
    (0.2 to 0.55). Returns the scene and an orbit around the cluster (44 m, 12 degrees up,
    one turn a minute).

    Raises:
        ValueError: fewer than 1 city instance or a negative count.
    """
    if panes < 0 or bubbles < 0:
        raise ValueError(f"panes {panes}, bubbles {bubbles}: expected counts >= 0")
    base, _ = city(city_instances, seed=seed)
    pos = base.transforms[:, :3, 3]
    keep = (np.abs(pos[:, 0]) > 20.5) | (np.abs(pos[:, 2]) > 20.5)  # the central block goes
    keep[0] = True  # the ground stays
    rng = np.random.default_rng(seed + 7)
    rows, ids = [], []
    for _ in range(panes):
        w, h = rng.uniform(2.5, 7.0, 2)
        yaw, pitch, roll = rng.uniform(0, 2 * np.pi), *rng.uniform(-0.6, 0.6, 2)
        at = np.add(CENTRE, rng.uniform([-15, -5, -15], [15, 8, 15]))
        # the pane mesh lies in XZ facing +Y: stand it up (x 90 degrees), then turn it
        m = translation(*at) @ _rotation(yaw, pitch, roll) @ _rotation(0, np.pi / 2, 0)
        rows.append(m @ np.diag([w, 1.0, h, 1.0]))
        ids.append(len(base.meshes))
    for _ in range(bubbles):
        r = rng.uniform(0.8, 2.5)
        at = np.add(CENTRE, rng.uniform([-15, -5, -15], [15, 8, 15]))
        rows.append(translation(*at) @ np.diag([2 * r, 2 * r, 2 * r, 1.0]))
        ids.append(MESH_SPHERE)
    hue = rng.uniform(0, 1, len(rows))
    tints = np.stack([_hue(h) for h in hue]) if rows else np.zeros((0, 3))
    alpha = rng.uniform(0.2, 0.55, (len(rows), 1))
    glass = len(base.materials)
    materials = [*base.materials,
                 Material("glass pane", metallic=0.0, roughness=0.08, alpha_mode=AlphaMode.BLEND,
                          double_sided=True),
                 Material("glass bubble", metallic=0.0, roughness=0.05,
                          alpha_mode=AlphaMode.BLEND, double_sided=True)]  # fmt: skip
    mat_ids = [glass] * panes + [glass + 1] * bubbles
    scene = Scene(
        [*base.meshes, Mesh.from_lods("pane", [plane(0.5)])],
        np.concatenate([base.transforms[keep], np.array(rows, np.float32).reshape(-1, 4, 4)]),
        np.concatenate([base.mesh_ids[keep], np.array(ids, np.uint32)]),
        np.concatenate([base.colors[keep], np.concatenate([tints, alpha], 1)]).astype(np.float32),
        sun_direction=base.sun_direction,
        materials=materials,
        material_ids=np.concatenate([base.material_ids[keep], np.array(mat_ids, np.uint32)]),
        images=base.images,
    )
    path = OrbitPath(CENTRE, 44.0, elevation_deg=12.0, period_s=60.0, fov_y_deg=55.0, near=0.5)
    return scene, path


def _rotation(yaw: float, pitch: float, roll: float) -> np.ndarray:
    """``(4, 4)`` float64: about y by ``yaw``, then x by ``pitch``, z by ``roll`` (radians)."""
    cy, sy, cp, sp, cr, sr = (f(a) for a in (yaw, pitch, roll) for f in (math.cos, math.sin))
    ry = np.array([[cy, 0, sy, 0], [0, 1, 0, 0], [-sy, 0, cy, 0], [0, 0, 0, 1]])
    rx = np.array([[1, 0, 0, 0], [0, cp, -sp, 0], [0, sp, cp, 0], [0, 0, 0, 1]])
    rz = np.array([[cr, -sr, 0, 0], [sr, cr, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    return ry @ rx @ rz


def _hue(h: float) -> np.ndarray:
    """A saturated linear RGB colour of hue ``h`` in 0..1 (HSV with s 0.75, v 1)."""
    k = (np.array([5.0, 3.0, 1.0]) + h * 6.0) % 6.0
    rgb = 1.0 - 0.75 * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return rgb**2.2


# -- the passes -------------------------------------------------------------------------------
class OitBuffers:
    """The graph buffers of the lists and the counter block, sized on first use: a variant
    or measurement that never runs holds 16 bytes of each.

    Args:
        res: the frame's ``FrameResources``.
        pool: returns the linked variant's nodes per pixel (the ``oit-pool`` knob).

    Attributes:
        capacity, ref_capacity: nodes in each pool now (0: not made yet).
        capped: the pool sizes the device's ``max_storage_buffer_binding_size`` cut.
    """

    def __init__(self, res, pool):
        self.res, self.graph, self.pool = res, res.graph, pool
        self.limit = int(res.device.limits["max-storage-buffer-binding-size"])
        self.capacity = self.ref_capacity = 0
        self.capped: set[str] = set()
        self.graph.create_buffer(COUNTERS, size=4 * len(OIT_COUNTERS), usage=_STORAGE)
        for name in (HEADS, NODES, REF_HEADS, REF_NODES):
            self.graph.create_buffer(name, size=16, usage=_STORAGE)
        self._made: dict[str, tuple] = {}  # name -> the key it was made for
        self.graph.on_resize(lambda size: self._resized())

    def want(self, linked: bool, reference: bool) -> None:
        """Make (or re-size) the lists the frame will run: the linked variant's with
        ``linked``, the reference's with ``reference``."""
        w, h = self.graph.size
        if linked:
            self.capacity = self._pool(NODES, self.pool() * w * h)
            self._make(HEADS, 4 * w * h)
        if reference:
            self.ref_capacity = self._pool(REF_NODES, REF_POOL * w * h)
            self._make(REF_HEADS, 4 * w * h)

    def _pool(self, name: str, nodes: int) -> int:
        most = self.limit // NODE_BYTES
        if nodes > most and name not in self.capped:
            log.warning("s07: %s: %s nodes would pass the device's storage binding limit "
                        "(%s bytes); the pool holds %s", name, f"{nodes:,}", f"{self.limit:,}",
                        f"{most:,}")  # fmt: skip
            self.capped.add(name)
        nodes = min(nodes, most)
        self._make(name, nodes * NODE_BYTES)
        return nodes

    def _make(self, name: str, size: int) -> None:
        if self._made.get(name) != size:
            self.graph.create_buffer(name, size=size, usage=_STORAGE)
            self._made[name] = size

    def _resized(self) -> None:
        made = set(self._made)
        self._made.clear()
        self.want(HEADS in made, REF_HEADS in made)

    def bytes_of(self, *names: str) -> int:
        """Bytes of graph buffers ``names`` as made now (the memory table's count)."""
        return sum(describe("s07", n, self.graph.buffer(n)).bytes for n in names)


OIT_COUNTERS = counter_names(COMMON_WGSL, "C_")


class OitReset(TransferPass):
    """``OIT.Reset``: last frame's counter block copied for the readback, then cleared; the
    lists' heads cleared (0: an empty list) for the lists this frame builds."""

    def __init__(self, buffers: OitBuffers, readback: CounterReadback, lists):
        super().__init__("OIT.Reset")
        self.buffers, self.readback, self.lists = buffers, readback, lists
        self.last: int | None = None

    @property
    def writes(self) -> tuple[str, ...]:
        return (COUNTERS, *self.lists())

    def record(self, ctx, encoder) -> None:
        g = self.buffers.graph
        if self.last is not None:
            self.readback.record_copy(encoder, g.buffer(COUNTERS), self.last)
        encoder.clear_buffer(g.buffer(COUNTERS))
        for name in self.lists():
            encoder.clear_buffer(g.buffer(name))
        self.last = ctx.frame_index


class LinkedBuild(RenderPass):
    """Build the per-pixel lists of the BLEND instances' fragments in front of
    ``frame.depth`` (``fs_linked``): the linked variant's (``OIT.Draw``) or, with
    ``reference``, the exact reference's (``OIT.Reference``). No colour target: the depth
    attachment (read-only) sizes the pass; the shader tests depth itself."""

    def __init__(self, name: str, res, *, reference: bool = False):
        super().__init__(name)
        self.res, self.reference = res, reference
        self.heads, self.nodes = (REF_HEADS, REF_NODES) if reference else (HEADS, NODES)
        d, ro = res.device, {"type": "storage"}
        frag = wgpu.ShaderStage.FRAGMENT
        self.layout = d.create_bind_group_layout(label=f"{name} draw", entries=[
            {"binding": 0, "visibility": wgpu.ShaderStage.VERTEX,
             "buffer": {"type": "uniform", "has_dynamic_offset": True, "min_binding_size": 16}},
            {"binding": 1, "visibility": frag, "buffer": ro},
            {"binding": 2, "visibility": frag, "buffer": ro},
            {"binding": 3, "visibility": frag, "buffer": ro},
            {"binding": 4, "visibility": frag, "texture": {"sample_type": "depth"}},
        ])  # fmt: skip
        self.shader = res.mesh.technique_shader(DRAW_WGSL, lambda m: res.mesh.technique(
            m, "fs_linked", [], draw_layout=self.layout, label=name), label=name,
            defines={"REFERENCE": reference})  # fmt: skip
        self.groups = BindGroupCache()
        self.bundles = BundleCache(d, name, depth_read_only=True)

    @property
    def reads(self) -> tuple[str, ...]:
        return (*DRAW_INPUTS, TRANSPARENT_ORDER, DEPTH, self.heads, COUNTERS)

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.heads, self.nodes, COUNTERS)

    def targets(self, ctx) -> dict:
        return {"color_attachments": [], "depth_stencil_attachment": {
            "view": self.res.graph.view(DEPTH), "depth_read_only": True}}  # fmt: skip

    def record(self, ctx, rpass) -> None:
        g, t = self.res.graph, self.res.transparent
        group = self.groups.get(g.resource_key(), lambda: self.res.device.create_bind_group(
            layout=self.layout, entries=[
                t.draw_binding(),
                {"binding": 1, "resource": {"buffer": g.buffer(self.heads)}},
                {"binding": 2, "resource": {"buffer": g.buffer(self.nodes)}},
                {"binding": 3, "resource": {"buffer": g.buffer(COUNTERS)}},
                {"binding": 4, "resource": g.view(DEPTH)}]))  # fmt: skip
        pipe = self.shader.get()
        key = t.bundle_key(pipe, group)
        self.bundles.record(rpass, key, lambda enc: t.record_draws(enc, pipe, group),
                            color_formats=(), depth_format=DEPTH_FORMAT)  # fmt: skip


class WboitAccumulate(RenderPass):
    """Accumulate the BLEND instances' fragments in front of ``frame.depth`` into
    ``oit.accum`` (cleared to 0; additive) and ``oit.reveal`` (cleared to 1; times 1 - a):
    the weighted blended variant's ``OIT.Draw`` (``fs_wboit``)."""

    reads = (*DRAW_INPUTS, TRANSPARENT_ORDER, DEPTH)
    writes = (ACCUM, REVEAL)

    def __init__(self, name: str, res):
        super().__init__(name)
        self.res = res
        targets = [{"format": ACCUM_FORMAT, "blend": {"color": _ADD, "alpha": _ADD}},
                   {"format": REVEAL_FORMAT,
                    "blend": {"color": _TIMES_ONE_MINUS, "alpha": _TIMES_ONE_MINUS}}]  # fmt: skip
        self.shader = res.mesh.technique_shader(DRAW_WGSL, lambda m: res.mesh.technique(
            m, "fs_wboit", targets, label=name), label=name)  # fmt: skip
        self.bundles = BundleCache(res.device, name, depth_read_only=True)

    def targets(self, ctx) -> dict:
        g = self.res.graph
        return {
            "color_attachments": [
                {"view": g.view(ACCUM), "load_op": "clear", "clear_value": (0, 0, 0, 0),
                 "store_op": "store"},
                {"view": g.view(REVEAL), "load_op": "clear", "clear_value": (1, 1, 1, 1),
                 "store_op": "store"},
            ],
            "depth_stencil_attachment": {"view": g.view(DEPTH), "depth_read_only": True},
        }  # fmt: skip

    def record(self, ctx, rpass) -> None:
        t, pipe = self.res.transparent, self.shader.get()
        key = t.bundle_key(pipe)
        self.bundles.record(rpass, key, lambda enc: t.record_draws(enc, pipe),
                            color_formats=(ACCUM_FORMAT, REVEAL_FORMAT),
                            depth_format=DEPTH_FORMAT)  # fmt: skip


class VariantPass(RenderPass):
    """One pass name for every variant (so each table, trace and ``lantern compare`` lines
    the variants up on one row), recording the current variant's own pass: its targets,
    reads, writes and commands. ``variant`` is set by the sample; a variant without a pass
    here is off (``enabled_by``)."""

    def __init__(self, name: str, passes: dict, enabled_by):
        super().__init__(name)
        self.passes, self._enabled_by = passes, enabled_by
        self.variant = next(iter(passes))

    @property
    def current(self) -> RenderPass | None:
        return self.passes.get(self.variant)

    def enabled_by(self, settings) -> bool:
        return self.current is not None and self._enabled_by(settings)

    @property
    def reads(self) -> tuple[str, ...]:
        return self.current.reads if self.current is not None else ()

    @property
    def writes(self) -> tuple[str, ...]:
        return self.current.writes if self.current is not None else ()

    def targets(self, ctx) -> dict:
        return self.current.targets(ctx)

    def record(self, ctx, rpass) -> None:
        self.current.record(ctx, rpass)


class ErrorPass(ComputePass):
    """``OIT.Error``: ``frame.hdr`` after the variant's transparency against
    ``oit.reference`` (s07_oit_error.wgsl), into the counter block's ``covered`` and
    ``error_*``."""

    reads = (HDR, REFERENCE, COUNTERS)
    writes = (COUNTERS,)

    def __init__(self, res):
        super().__init__("OIT.Error")
        self.res = res
        self.shader = shader_pipeline(res.device, HERE / "s07_oit_error.wgsl",
                                      lambda m: res.device.create_compute_pipeline(
                                          label=self.name, layout="auto",
                                          compute={"module": m, "entry_point": "cs_error"}),
                                      label=self.name)  # fmt: skip
        self.groups = BindGroupCache()
        self.shader.on_reload(self.groups.clear)

    def record(self, ctx, cpass) -> None:
        g, pipe = self.res.graph, self.shader.get()
        group = self.groups.get(g.resource_key(), lambda: self.res.device.create_bind_group(
            layout=pipe.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": g.view(HDR)},
                {"binding": 1, "resource": g.view(REFERENCE)},
                {"binding": 2, "resource": {"buffer": g.buffer(COUNTERS)}}]))  # fmt: skip
        w, h = g.size
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(-(-w // 8), -(-h // 8))


@dataclass
class Oit:
    """What ``add_oit`` put into the frame. ``set_variant`` and ``sync`` switch it.

    Attributes:
        frame: the ``StandardFrame``. buffers: the ``OitBuffers``. readback: the counter
        block ``oit`` (``CounterReadback``). variant: the current variant. passes: name ->
        pass of every pass added (``OIT.Draw`` replaced ``Transparent``). error: whether the
        measurement runs.
    """

    frame: StandardFrame
    buffers: OitBuffers
    readback: CounterReadback
    passes: dict
    variant: str = VARIANTS[0]
    error: bool = False
    _applied: tuple = field(default=(), repr=False)

    def set_variant(self, name: str) -> None:
        """Draw the transparency the ``name`` way from the next frame on.

        Raises:
            ValueError: not one of ``VARIANTS``.
        """
        if name not in VARIANTS:
            raise ValueError(f"OIT variant {name!r}: expected one of {', '.join(VARIANTS)}")
        self.variant = name
        self.sync()

    def sync(self) -> None:
        """Apply the variant and the knobs (``oit-error``, ``oit-pool``) when they changed:
        the passes each runs, the lists it builds. Cheap when nothing did (every frame)."""
        f = self.frame
        self.error = bool(f.knob("oit-error"))
        want = (self.variant, self.error, f.knob("oit-pool"), f.settings, f.graph.size)
        if want == self._applied:
            return
        self._applied = want
        if self.variant != "sorted" and not f.settings.post:  # never a silent wrong picture
            log.warning("s07: the %s variant composites into the HDR colour, which the frame "
                        "has only with post on: no transparency is drawn ('post on' or "
                        "'variant sorted')", self.variant)  # fmt: skip
        self.buffers.want(self.variant == "linked", self.error)
        for p in self.passes.values():
            if isinstance(p, VariantPass):
                p.variant = self.variant
            p.enabled = p.enabled_by(f.settings)
        f.graph.invalidate()

    def lists(self) -> tuple[str, ...]:
        """The heads buffers this frame's lists use (OIT.Reset clears them)."""
        return ((HEADS,) if self.variant == "linked" else ()) + ((REF_HEADS,) if self.error else ())

    def memory(self) -> dict[str, int]:
        """Bytes of what each variant holds now, as the memory table counts them (a
        variant that has not run yet holds its placeholders): ``sorted`` nothing of its
        own; ``wboit`` its two targets; ``linked`` its heads and pool; ``reference`` the
        measurement's lists and composite; ``shared`` what every variant uses: the counter
        block and Transparent.Sort's buffers (keys, draws, the order)."""
        g = self.frame.graph
        made = set(g.texture_names())
        tex = lambda *ns: sum(describe("s07", n, g.texture(n)).bytes for n in ns if n in made)  # noqa: E731
        b = self.buffers
        sort = sum(r.bytes for r in scan(g) if r.owner == "frame.transparent")
        return {"sorted": 0, "wboit": tex(ACCUM, REVEAL), "linked": b.bytes_of(HEADS, NODES),
                "reference": b.bytes_of(REF_HEADS, REF_NODES) + tex(REFERENCE),
                "shared": b.bytes_of(COUNTERS) + sort}  # fmt: skip


def add_oit(frame: StandardFrame) -> Oit:
    """Put the OIT passes into ``frame`` (its knobs must include ``oit-pool`` and
    ``oit-error``: ``frame.add_knobs((POOL, ERROR))``): ``OIT.Draw`` in place of
    ``Transparent``, ``OIT.Resolve`` after it, the reset and the measurement around them.
    The weighted blended and linked variants need the HDR colour (the frame's post): without
    it only ``sorted`` draws.

    Raises:
        GraphError: the frame has no ``Transparent`` pass.
    """
    res, g = frame.res, frame.graph
    tex = lambda fmt: TextureDesc(fmt, _ATTACH)  # noqa: E731
    g.create_texture(ACCUM, tex(ACCUM_FORMAT), lazy=True)
    g.create_texture(REVEAL, tex(REVEAL_FORMAT), lazy=True)
    g.create_texture(REFERENCE, tex("rgba16float"), lazy=True)
    buffers = OitBuffers(res, lambda: frame.knob("oit-pool"))
    readback = CounterReadback(res.device, "oit", OIT_COUNTERS)
    g.add_readback(readback)
    transparent = g.pass_named("Transparent")
    oit = Oit(frame, buffers, readback, {})
    post = lambda s: s.post  # noqa: E731
    measuring = lambda s: s.post and oit.error  # noqa: E731
    drawn = lambda s: transparent.enabled_by(s) and (oit.variant == "sorted" or s.post)  # noqa: E731
    draw = VariantPass("OIT.Draw", {"sorted": transparent,
                                    "wboit": WboitAccumulate("OIT.Draw", res),
                                    "linked": LinkedBuild("OIT.Draw", res)}, drawn)  # fmt: skip
    resolve_wgsl = HERE / "s07_oit_resolve.wgsl"
    resolve = VariantPass("OIT.Resolve", {
        "wboit": ScreenPass("OIT.Resolve", res, HERE / "s07_oit_compose.wgsl",
                            inputs=(ACCUM, REVEAL), target=HDR, entry="fs_compose",
                            blend=OVER_REVEALAGE),
        "linked": ScreenPass("OIT.Resolve", res, resolve_wgsl, inputs=(HEADS, NODES), target=HDR,
                             entry="fs_resolve", blend=OVER_PREMULTIPLIED, storage=(COUNTERS,),
                             defines={"LAYERS": LAYERS})}, post)  # fmt: skip
    ref_resolve = ScreenPass("OIT.Reference.Resolve", res, resolve_wgsl,
                             inputs=(REF_HEADS, REF_NODES, HDR), target=REFERENCE,
                             entry="fs_reference", load=False, storage=(COUNTERS,),
                             defines={"LAYERS": REF_LAYERS, "REFERENCE": True})  # fmt: skip
    reset = OitReset(buffers, readback, oit.lists)
    reference = LinkedBuild("OIT.Reference", res, reference=True)
    error = ErrorPass(res)
    for p, rule in ((reference, measuring), (ref_resolve, measuring), (error, measuring)):
        p.enabled_by = rule
    reset.enabled_by = lambda s: True
    oit.passes = {p.name: p for p in (reset, reference, ref_resolve, draw, resolve, error)}
    for p in oit.passes.values():  # before the graph checks what they read
        if isinstance(p, VariantPass):
            p.variant = oit.variant
        p.enabled = p.enabled_by(frame.settings)
    frame.replace("Transparent", draw)
    frame.insert(reset, before="OIT.Draw")
    frame.insert(reference, after="OIT.Reset")
    frame.insert(ref_resolve, after="OIT.Reference")
    frame.insert(resolve, after="OIT.Draw")
    frame.insert(error, after="OIT.Resolve")
    oit.sync()
    return oit


# -- the shutdown report ----------------------------------------------------------------------
OIT_PASSES = ("Transparent.Sort", "OIT.Reset", "OIT.Reference", "OIT.Reference.Resolve",
              "OIT.Draw", "OIT.Resolve", "OIT.Error")  # fmt: skip


class VariantStats:
    """Per variant, from the telemetry records (a subscriber, with ``--gpu-profile``): the
    GPU ms of the OIT passes and the counter block of the frames it ran.

    Attributes:
        gpu: variant -> pass -> ms readings (the last ``keep``).
        counts: variant -> the counter blocks (``Counts``) of its frames, newest last.
    """

    def __init__(self, keep: int = 4096):
        self.gpu: dict = collections.defaultdict(lambda: collections.defaultdict(
            lambda: collections.deque(maxlen=keep)))  # fmt: skip
        self.counts: dict = collections.defaultdict(lambda: collections.deque(maxlen=keep))
        self._variant_of: dict[int, str] = {}  # recent frame index -> its variant
        self._seen = -1

    def __call__(self, record) -> None:
        v = record.variant
        if v is None:
            return
        self._variant_of[record.frame_index] = v
        if len(self._variant_of) > 256:
            self._variant_of.pop(next(iter(self._variant_of)))
        for s in record.gpu or ():
            if s.name in OIT_PASSES:
                self.gpu[v][s.name].append(s.duration_ms)
        self.add_counts(record.readbacks.get("oit"))

    def add_counts(self, c) -> None:
        """Count ``c`` (a ``Counts`` of the block ``oit``, or None) under the variant of its
        frame, once."""
        if c is not None and c.frame_index > self._seen and c.frame_index in self._variant_of:
            self._seen = c.frame_index
            self.counts[self._variant_of[c.frame_index]].append(c)

    def lines(self, memory: dict[str, int]) -> list[str]:
        """The report: a row per variant that ran, then the shared passes."""
        out = [f"{'variant':<8} {'frames':>6} {'OIT.Draw':>9} {'OIT.Resolve':>11} "
               f"{'total ms':>9} {'memory':>10} {'dropped':>8} {'truncated':>9} "
               f"{'error mean':>10} {'max':>6} {'>1%':>6}"]  # fmt: skip
        for v in VARIANTS:
            if v not in self.gpu and v not in self.counts:
                continue
            ms = {p: statistics.median(x) for p, x in self.gpu[v].items() if x}
            draw, res = ms.get("OIT.Draw"), ms.get("OIT.Resolve")
            total = None if draw is None else draw + (res or 0.0)
            cs = self.counts.get(v, ())
            dropped = max((c.dropped for c in cs), default=0)
            trunc = max((c.truncated for c in cs), default=0)
            err = error_summary(cs)
            out.append(f"{v:<8} {len(self.gpu[v].get('OIT.Draw', ())):>6} {_ms(draw):>9} "
                       f"{_ms(res):>11} {_ms(total):>9} {_mib(memory[v]):>10} {dropped:>8,} "
                       f"{trunc:>9,} {err}")  # fmt: skip
        shared = {p: [x for v in self.gpu for x in self.gpu[v].get(p, ())] for p in OIT_PASSES}
        parts = [f"{p} {_ms(statistics.median(x))} ms" for p, x in shared.items()
                 if x and p not in ("OIT.Draw", "OIT.Resolve")]  # fmt: skip
        if parts:
            out.append("every variant (medians): " + ", ".join(parts))
        out.append(f"memory every variant uses: {_mib(memory['shared'])} (Transparent.Sort, the "
                   f"counter block); the error reference: {_mib(memory['reference'])}")  # fmt: skip
        return out


def error_summary(counts) -> str:
    """``mean max >1%`` columns from counter blocks with the measurement (``covered`` > 0):
    the mean over frames of each frame's mean relative error, the largest, and the share
    of covered pixels off by more than 1%; ``not measured (--oit-error)`` without any."""
    measured = [c for c in counts if c.covered > 0]
    if not measured:
        return f"{'not measured (--oit-error)':>24}"
    mean = statistics.fmean(c.error_sum / c.covered for c in measured) / 10.0  # percent
    worst = max(c.error_max for c in measured) / 10.0
    over = statistics.fmean(c.error_over / c.covered for c in measured) * 100.0
    note = "" if not any(c.ref_dropped or c.ref_truncated for c in measured) else (
        "  (reference incomplete: raise REF_POOL / REF_LAYERS)")  # fmt: skip
    return f"{mean:9.2f}% {worst:5.1f}% {over:5.1f}%{note}"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


class OitSample(Sample):
    name = "s07"
    category = "techniques"
    description = __doc__.splitlines()[0].split(": ", 1)[1]
    variants = VARIANTS
    knobs = (POOL, ERROR)
    example_args = ("--variant", "linked")

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_knob_arguments(parser, FRAME_KNOBS, "standard frame")
        parser.add_argument("--camera", type=parse_camera, default=None,
                            metavar=CAMERA_FORMAT,
                            help="a fixed camera instead of the orbit around the glass "
                                 "(world units, degrees), e.g. 10,9,22:0,7,0:40")  # fmt: skip

    @classmethod
    def check_options(cls, args) -> None:
        super().check_options(args)
        check_post_options(args, "s07", "the wboit and linked variants composite into the HDR "
                           "colour", variants=("wboit", "linked"), knobs=cls.knobs)  # fmt: skip

    def build(self, graph) -> None:
        args = self.app.args
        scene, self.path = glass_scene(seed=args.seed)
        if args.camera is not None:
            self.path = FixedPath(args.camera)
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings_from_args(args))
        self.frame.add_knobs(self.knobs, args)  # 'oit-pool 2', 'oit-error on' in the console
        self.frame.register_commands(self.app.commands)
        self.oit = add_oit(self.frame)
        self._warned: set = set()
        self._last_counts = -1
        self.stats = None
        if getattr(args, "gpu_profile", None):
            self.stats = VariantStats()
            self.app.telemetry.subscribe(self.stats)
        if not self.frame.settings.post:  # (check_options refused what needs it)
            log.warning("s07: --no-post: no HDR colour; the wboit and linked variants are off")
        log.info("s07: %d BLEND instances over %s opaque ones", self.frame.res.transparent.count,
                 f"{scene.count - self.frame.res.transparent.count:,}")  # fmt: skip

    def set_variant(self, name: str) -> None:
        self.oit.set_variant(name)

    def update(self, ctx) -> None:
        self.oit.sync()
        self._warn(self.oit.readback.latest)
        self.frame.update(ctx, self.path.at(ctx.time))

    def _warn(self, c) -> None:
        """Say once per pool size (and per variant) when fragments were lost: never silent."""
        if c is None or c.frame_index == self._last_counts:
            return
        self._last_counts = c.frame_index
        pool = self.frame.knob("oit-pool")
        said = [("dropped", pool, c.dropped, f"the pool of {self.oit.buffers.capacity:,} nodes "
                 f"(--oit-pool {pool}) was full: raise --oit-pool"),
                ("truncated", None, c.truncated, f"pixels deeper than {LAYERS} layers: their "
                 "farthest fragments were left out"),
                ("ref_dropped", None, c.ref_dropped + c.ref_truncated,
                 "the error reference is incomplete (its pool or layers ran out)")]  # fmt: skip
        for what, key, n, why in said:
            if n and (what, key) not in self._warned:
                self._warned.add((what, key))
                log.warning("s07: frame %d: %s fragment(s) %s: %s", c.frame_index, f"{n:,}",
                            what.replace("ref_", "reference "), why)  # fmt: skip

    def close(self) -> None:
        """Shutdown: the counts still in flight too (they arrive frames late), so a short run
        (a capture of a few frames) still says what it dropped."""
        if not hasattr(self, "oit"):  # build did not get that far
            return
        self.oit.readback.drain()
        for c in self.oit.readback.history:
            self._warn(c)

    def report(self) -> str | None:
        if self.stats is None:
            return None
        self.oit.readback.drain()
        for c in self.oit.readback.history:  # the last frames' counts, collected at shutdown
            self.stats.add_counts(c)
        w, h = self.frame.graph.size
        head = f"OIT at {w}x{h}, per variant (GPU medians; counter block 'oit'):"
        return "\n".join([head, *self.stats.lines(self.oit.memory())])


if __name__ == "__main__":
    main(OitSample)
