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

from engine.shaders import shader_module

FORMAT = "r32float"


def pyramid_base(size: int) -> int:
    """Largest power of two strictly below ``size`` pixels (1 when ``size`` <= 2)."""
    if size < 1:
        raise ValueError(f"pyramid size must be >= 1 pixel, got {size}")
    p = 1
    while p * 2 < size:
        p *= 2
    return p


def pyramid_levels(width: int, height: int) -> int:
    """Mip count of a ``width`` x ``height`` level 0: down to 1x1."""
    return max(width, height).bit_length()


class DepthPyramid:
    """Owns the pyramid texture for one output size and records its build.

    Args:
        device: the ``wgpu.GPUDevice``.
        size: output size ``(width, height)`` in pixels.

    Attributes:
        base: level-0 size ``(pw, ph)`` in texels; ``levels``: mip count; ``view``: all mips
        (``texture_2d<f32>``, unfilterable) for the cull.
    """

    def __init__(self, device: wgpu.GPUDevice, size: tuple[int, int]):
        self.device = device
        m = shader_module(device, "hiz.wgsl")
        self.pipe0 = device.create_compute_pipeline(
            label="hiz level0", layout="auto", compute={"module": m, "entry_point": "level0"}
        )
        self.pipe_reduce = device.create_compute_pipeline(
            label="hiz reduce", layout="auto", compute={"module": m, "entry_point": "reduce"}
        )
        self.texture = None
        self.resize(size)

    def resize(self, size: tuple[int, int]) -> None:
        if self.texture is not None:
            self.texture.destroy()
        self.size = tuple(size)
        self.base = (pyramid_base(size[0]), pyramid_base(size[1]))
        self.levels = pyramid_levels(*self.base)
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

    def _bind(self, depth_view) -> None:
        d = self.device
        g = [
            d.create_bind_group(
                layout=self.pipe0.get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": depth_view},
                    {"binding": 1, "resource": self.mips[0]},
                ],
            )
        ]
        for i in range(1, self.levels):
            g.append(
                d.create_bind_group(
                    layout=self.pipe_reduce.get_bind_group_layout(0),
                    entries=[
                        {"binding": 0, "resource": self.mips[i - 1]},
                        {"binding": 1, "resource": self.mips[i]},
                    ],
                )
            )
        self._groups = (depth_view, g)

    def record(self, cpass, depth_view) -> None:
        """Record one dispatch per level into the compute pass; ``depth_view`` is this
        frame's depth32float view at the output size."""
        if self._groups is None or self._groups[0] is not depth_view:
            self._bind(depth_view)
        groups = self._groups[1]
        w, h = self.base
        cpass.set_pipeline(self.pipe0)
        for i, g in enumerate(groups):
            if i == 1:
                cpass.set_pipeline(self.pipe_reduce)
            lw, lh = max(1, w >> i), max(1, h >> i)
            cpass.set_bind_group(0, g)
            cpass.dispatch_workgroups((lw + 7) // 8, (lh + 7) // 8, 1)
