"""``Post.Bloom``: an energy-conserving downsample/upsample chain (shaders/post_bloom.wgsl)
in one compute pass of ``2 * levels - 1`` dispatches.

Textures (graph-owned, half the output size, ``levels`` mips each): ``post.bloom.down``
(mip i: the HDR colour filtered down i + 1 times) and ``post.bloom`` (mip i: the upsampled
chain; mip 0 is what ``Post`` mixes in with ``BLOOM_STRENGTH``). Every filter is a weighted
average, so the mean of ``post.bloom`` mip 0 equals the HDR image's (up to the edges).
"""

from __future__ import annotations

import wgpu

from engine.graph import ComputePass, TextureDesc
from engine.passes.resources import BLOOM, HDR, HDR_FORMAT
from engine.shader_registry import shader_pipeline

BLOOM_DOWN = BLOOM + ".down"
MAX_LEVELS = 6  # 1/2 .. 1/64 of the output: ~30 px wide at 1080p
BLOOM_STRENGTH = 0.05  # Post: mix(colour, bloom, strength)


def bloom_levels(width: int, height: int) -> int:
    """Mips of the half-size chain for a ``width`` x ``height`` output: up to
    ``MAX_LEVELS``, none smaller than 2 texels on its short side."""
    short = max(1, min(width, height) // 2)
    return max(1, min(MAX_LEVELS, short.bit_length() - 1))


class BloomPass(ComputePass):
    """``Post.Bloom``: HDR -> ``post.bloom`` (mip 0, half size)."""

    reads = (HDR,)
    writes = (BLOOM_DOWN, BLOOM)  # the chain's both halves: each is dumpable and inspectable

    def __init__(self, res, name: str = "Post.Bloom"):
        super().__init__(name)
        self.res = res
        d, g = res.device, res.graph
        tex = wgpu.TextureUsage
        usage = tex.STORAGE_BINDING | tex.TEXTURE_BINDING | tex.COPY_SRC
        for n in (BLOOM_DOWN, BLOOM):
            g.create_texture(
                n,
                TextureDesc(
                    HDR_FORMAT,
                    usage,
                    scale=0.5,
                    mip_level_count=lambda w, h: bloom_levels(2 * w, 2 * h),
                ),
            )
        self.shader = shader_pipeline(
            d,
            "post_bloom.wgsl",
            lambda m: tuple(
                d.create_compute_pipeline(
                    label=f"{name} {e}", layout="auto", compute={"module": m, "entry_point": e}
                )
                for e in ("downsample", "upsample")
            ),
        )
        self.shader.on_reload(self._unbind)  # "auto" layouts: new pipelines, new groups
        self.sampler = d.create_sampler(
            label="bloom", mag_filter="linear", min_filter="linear"
        )  # clamp-to-edge by default
        self._steps: tuple | None = None

    @property
    def down(self):  # the current pipelines: hot reload replaces them
        return self.shader.get()[0]

    @property
    def up(self):
        return self.shader.get()[1]

    def _unbind(self) -> None:
        self._steps = None

    def enabled_by(self, settings) -> bool:
        return settings.post and settings.bloom

    def _build(self) -> list:
        """``(pipeline, bind group, (w, h))`` per dispatch: downsamples, then upsamples."""
        g, d = self.res.graph, self.res.device
        down, up = g.texture(BLOOM_DOWN), g.texture(BLOOM)
        n = down.mip_level_count

        def mip(t, i):
            return t.create_view(base_mip_level=i, mip_level_count=1)

        def group(pipe, entries):
            return d.create_bind_group(
                layout=pipe.get_bind_group_layout(0),
                entries=[{"binding": b, "resource": r} for b, r in entries],
            )

        def size(i):
            return max(1, down.width >> i), max(1, down.height >> i)

        steps = []
        for i in range(n):
            src = g.view(HDR) if i == 0 else mip(down, i - 1)
            dst = mip(up, i) if i == n - 1 else mip(down, i)  # the last level is the up chain's
            steps.append(
                (self.down, group(self.down, [(0, src), (1, self.sampler), (2, dst)]), size(i))
            )
        for i in range(n - 2, -1, -1):
            entries = [(0, mip(up, i + 1)), (1, self.sampler), (2, mip(up, i)), (3, mip(down, i))]
            steps.append((self.up, group(self.up, entries), size(i)))
        return steps

    def record(self, ctx, cpass) -> None:
        gen = self.res.graph.generation
        if self._steps is None or self._steps[0] != gen:
            self._steps = (gen, self._build())
        last = None
        for pipe, group, (w, h) in self._steps[1]:
            if pipe is not last:
                cpass.set_pipeline(pipe)
                last = pipe
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups((w + 7) // 8, (h + 7) // 8, 1)
