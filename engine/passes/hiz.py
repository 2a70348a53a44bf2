"""The depth pyramid (Hi-Z) built in compute from reverse-Z depth.

Conservativeness (every rule matters; see shaders/hiz.wgsl): level 0 is the power of two
strictly below the output size (1 for a size of 1) and keeps the minimum — with reverse-Z the
farthest — depth over every pixel its footprint touches, including partly covered ones at
non-power-of-two edges; each further level halves with a clamped 2x2 min. The pyramid is
rebuilt every frame from that frame's depth and recreated on resize, so it is never used at
another size or from another frame. Source: the Hi-Z occlusion culling of zeux/niagara and
"Hierarchical-Z map based occlusion culling" (Nick Darnell, 2010).
"""

from __future__ import annotations

import wgpu

from engine.culling.pyramid import pyramid_base, pyramid_levels
from engine.graph import ComputePass
from engine.passes.resources import DEPTH, PYRAMID
from engine.shader_registry import shader_pipeline

__all__ = ["DepthPyramid", "HiZPass", "dispatch_count", "pyramid_base", "pyramid_levels"]

FORMAT = "r32float"


#: Levels one single-pass dispatch writes (its first level plus five reduced in workgroup memory).
LEVELS_PER_DISPATCH = 6
#: First-level texels per workgroup side in the single-pass kernels (16x16 threads, 2x2 each).
TILE = 32


def dispatch_count(levels: int, levels_per_dispatch: int = LEVELS_PER_DISPATCH) -> int:
    """Dispatches that build a ``levels``-mip pyramid writing ``levels_per_dispatch`` each."""
    return -(-levels // levels_per_dispatch)


class DepthPyramid:
    """Owns the pyramid texture for one output size and records its build.

    The build is single-pass downsampling after AMD FidelityFX SPD ("Single Pass Downsampler",
    GPUOpen, 2020): each 16x16 workgroup writes a 32x32 tile of a level and reduces it through
    workgroup memory into the next five, so a pyramid of ``levels`` mips takes
    ``ceil(levels / 6)`` dispatches (2 at 1920x1080: levels 0-5 from the depth buffer, then
    6-10 in one workgroup) instead of one per level. A device with fewer than 6 storage
    textures per shader stage (or ``per_level=True``) gets the one-dispatch-per-level build;
    both are bit-identical to ``engine.culling.reference.build_pyramid``.

    Args:
        device: the ``wgpu.GPUDevice``.
        size: output size ``(width, height)`` in pixels.
        per_level: force one dispatch per level (comparison and fallback); None = automatic.

    Attributes:
        base: level-0 size ``(pw, ph)`` in texels; ``levels``: mip count; ``view``: all mips
        (``texture_2d<f32>``, unfilterable) for the cull; ``dispatches``: compute dispatches
        ``record`` issues per build; ``pipe0`` / ``pipe_reduce``: the pipelines that build
        from the depth buffer and from a previous level.

    Raises:
        ValueError: a size below 1 pixel.
    """

    def __init__(
        self, device: wgpu.GPUDevice, size: tuple[int, int], *, per_level: bool | None = None
    ):
        self.device = device
        if per_level is None:
            per_level = device.limits["max-storage-textures-per-shader-stage"] < LEVELS_PER_DISPATCH
        self.per_level = per_level
        self.levels_per_dispatch = 1 if per_level else LEVELS_PER_DISPATCH
        entry = "per_level" if per_level else "spd"

        def build(src: str):  # hiz_depth.wgsl / hiz_level.wgsl: one kernel, two sources
            return shader_pipeline(
                device,
                f"hiz_{src}.wgsl",
                lambda m: device.create_compute_pipeline(
                    label=f"hiz {src} {entry}",
                    layout="auto",
                    compute={"module": m, "entry_point": entry},
                ),
            )

        self.shaders = (build("depth"), build("level"))
        for shader in self.shaders:  # "auto" layouts: new pipelines, new groups
            shader.on_reload(self._unbind)
        # Unused level slots of the last dispatch still need a view each: 1x1 layers, never
        # written (the shader stores only into levels the pyramid has).
        self._spare = device.create_texture(
            label="HiZ spare levels",
            size=(1, 1, LEVELS_PER_DISPATCH - 1),
            format=FORMAT,
            usage=wgpu.TextureUsage.STORAGE_BINDING,
        )
        self._spare_views = [
            self._spare.create_view(dimension="2d", base_array_layer=i, array_layer_count=1)
            for i in range(LEVELS_PER_DISPATCH - 1)
        ]
        self.texture = None
        self.resize(size)

    def resize(self, size: tuple[int, int]) -> None:
        """Recreate the pyramid for output ``size`` ``(width, height)`` in pixels."""
        if self.texture is not None:
            self.texture.destroy()
        self.size = tuple(size)
        self.base = (pyramid_base(size[0]), pyramid_base(size[1]))
        self.levels = pyramid_levels(*self.base)
        self.dispatches = dispatch_count(self.levels, self.levels_per_dispatch)
        self.texture = self.device.create_texture(
            label="HiZ pyramid",
            size=(*self.base, 1),
            format=FORMAT,
            mip_level_count=self.levels,
            usage=wgpu.TextureUsage.STORAGE_BINDING
            | wgpu.TextureUsage.TEXTURE_BINDING
            | wgpu.TextureUsage.COPY_SRC,  # tests read it back
        )
        self.view = self.texture.create_view(label="HiZ pyramid")
        self.mips = [
            self.texture.create_view(base_mip_level=i, mip_level_count=1)
            for i in range(self.levels)
        ]
        self._groups = None

    @property
    def pipe0(self):  # the current ones: hot reload replaces them
        return self.shaders[0].get()

    @property
    def pipe_reduce(self):
        return self.shaders[1].get()

    def _unbind(self) -> None:
        if self._groups is not None:  # now, inside the reload (a failure rolls it back)
            self._bind(self._groups[0])

    def _bind(self, depth_view) -> None:
        """One bind group per dispatch: its source, then its levels (spares past the last)."""
        d, n = self.device, self.levels_per_dispatch
        groups = []
        for first in range(0, self.levels, n):
            pipe = self.pipe0 if first == 0 else self.pipe_reduce
            src = depth_view if first == 0 else self.mips[first - 1]
            dst = self.mips[first : first + n]
            dst += self._spare_views[: n - len(dst)]
            entries = [{"binding": 0, "resource": src}]
            entries += [{"binding": 1 + i, "resource": v} for i, v in enumerate(dst)]
            groups.append(
                d.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=entries)
            )
        self._groups = (depth_view, groups)

    def record(self, cpass, depth_view) -> None:
        """Record the build (``dispatches`` dispatches) into the compute pass; ``depth_view``
        is this frame's depth32float view at the output size."""
        if self._groups is None or self._groups[0] is not depth_view:
            self._bind(depth_view)
        w, h = self.base
        n = self.levels_per_dispatch
        per = 8 if self.per_level else TILE  # first-level texels per workgroup side
        for i, g in enumerate(self._groups[1]):
            if i < 2:
                cpass.set_pipeline(self.pipe0 if i == 0 else self.pipe_reduce)
            lw, lh = max(1, w >> (i * n)), max(1, h >> (i * n))
            cpass.set_bind_group(0, g)
            cpass.dispatch_workgroups((lw + per - 1) // per, (lh + per - 1) // per, 1)


class HiZPass(ComputePass):
    """``HiZ``: the depth pyramid (``res.pyramid``) of this frame's depth (after
    ``Main.Early``)."""

    reads = (DEPTH,)
    writes = (PYRAMID,)

    def __init__(self, res, name: str = "HiZ"):
        super().__init__(name)
        self.res = res

    def enabled_by(self, settings) -> bool:
        return settings.cull and settings.occlusion

    def record(self, ctx, cpass) -> None:
        self.res.pyramid.record(cpass, self.res.graph.view(DEPTH))
