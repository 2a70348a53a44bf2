"""Single-pass depth pyramid (SPD-style) vs the numpy reference, on random depth images.

Random per-pixel depth (unlike a rendered scene's large flat areas) makes any texel that
reads the wrong footprint, level or tile show up as a bit difference.
"""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

from engine.culling.reference import build_pyramid
from engine.passes.hiz import DepthPyramid, dispatch_count

DEPTH_WGSL = """
struct Params { width: vec4u }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.5, 1.0);
}
@fragment fn fs(@builtin(position) p: vec4f) -> @builtin(frag_depth) f32 {
    return values[u32(p.y) * params.width.x + u32(p.x)];
}
"""


def _depth_texture(device, depth: np.ndarray) -> wgpu.GPUTexture:
    """A depth32float texture holding ``depth`` ``(H, W)`` float32, drawn via frag_depth."""
    h, w = depth.shape
    usage = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.TEXTURE_BINDING
    tex = device.create_texture(
        size=(w, h, 1), format="depth32float", usage=usage | wgpu.TextureUsage.COPY_SRC
    )
    m = device.create_shader_module(code=DEPTH_WGSL)
    pipe = device.create_render_pipeline(
        layout="auto",
        vertex={"module": m, "entry_point": "vs"},
        fragment={"module": m, "entry_point": "fs", "targets": []},
        depth_stencil={
            "format": "depth32float",
            "depth_write_enabled": True,
            "depth_compare": "always",
        },  # fmt: skip
    )
    uni = device.create_buffer_with_data(data=np.array([w, 0, 0, 0], np.uint32), usage="UNIFORM")
    vals = device.create_buffer_with_data(data=depth.astype(np.float32), usage="STORAGE")
    bg = device.create_bind_group(
        layout=pipe.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": uni}},
            {"binding": 1, "resource": {"buffer": vals}},
        ],
    )
    enc = device.create_command_encoder()
    rp = enc.begin_render_pass(
        color_attachments=[],
        depth_stencil_attachment={"view": tex.create_view(), "depth_clear_value": 0.0,
                                  "depth_load_op": "clear", "depth_store_op": "store"},
    )  # fmt: skip
    rp.set_pipeline(pipe)
    rp.set_bind_group(0, bg)
    rp.draw(3)
    rp.end()
    device.queue.submit([enc.finish()])
    return tex


def _read_depth(device, tex, w: int, h: int) -> np.ndarray:
    bpr = (w * 4 + 255) // 256 * 256
    data = device.queue.read_texture(
        {"texture": tex, "aspect": "depth-only"},
        {"bytes_per_row": bpr, "rows_per_image": h},
        (w, h, 1),
    )
    return np.frombuffer(data, np.float32).reshape(h, bpr // 4)[:, :w].copy()


def _read_pyramid(device, p: DepthPyramid) -> list[np.ndarray]:
    out = []
    for lvl in range(p.levels):
        w, h = max(1, p.base[0] >> lvl), max(1, p.base[1] >> lvl)
        bpr = (w * 4 + 255) // 256 * 256
        data = device.queue.read_texture(
            {"texture": p.texture, "mip_level": lvl},
            {"bytes_per_row": bpr, "rows_per_image": h},
            (w, h, 1),
        )
        out.append(np.frombuffer(data, np.float32).reshape(h, bpr // 4)[:, :w].copy())
    return out


def _build(device, pyr: DepthPyramid, depth_view) -> list[np.ndarray]:
    enc = device.create_command_encoder()
    cp = enc.begin_compute_pass()
    pyr.record(cp, depth_view)
    cp.end()
    device.queue.submit([enc.finish()])
    return _read_pyramid(device, pyr)


def _random_depth(size: tuple[int, int], seed: int) -> np.ndarray:
    w, h = size
    d = np.random.default_rng(seed).random((h, w), dtype=np.float32)
    d.flat[:: max(1, d.size // 7)] = 0.0  # exact far-plane (cleared) values too
    d.flat[3 :: max(1, d.size // 5)] = 1.0
    return d


# (size, levels, single-pass dispatches): one dispatch; two with an axis that collapses to 1
# inside the second dispatch; three (4096-wide base, 13 levels).
CASES = [
    ((1, 1), 1, 1),
    ((3, 7), 3, 1),
    ((37, 19), 6, 1),
    ((130, 70), 8, 2),
    ((1000, 9), 10, 2),
    ((9, 600), 10, 2),
    ((4100, 3), 13, 3),
]


@pytest.mark.parametrize("size,levels,dispatches", CASES)
def test_single_pass_pyramid_bit_exact(device, size, levels, dispatches):
    want_depth = _random_depth(size, seed=sum(size))
    tex = _depth_texture(device, want_depth)
    depth = _read_depth(device, tex, *size)
    np.testing.assert_array_equal(depth, want_depth)  # frag_depth stored the values exactly
    pyr = DepthPyramid(device, size, per_level=False)
    assert (pyr.levels, pyr.dispatches) == (levels, dispatches)
    got = _build(device, pyr, tex.create_view())
    want = build_pyramid(depth)
    assert len(got) == len(want) == levels
    for lvl, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"level {lvl}")
    # Independent of the reference: the top level is the minimum of the whole image.
    assert got[-1].shape == (1, 1) and got[-1][0, 0] == depth.min()


def test_per_level_fallback_equals_single_pass(device):
    size = (300, 170)
    tex = _depth_texture(device, _random_depth(size, seed=5))
    view = tex.create_view()
    fast = DepthPyramid(device, size, per_level=False)
    slow = DepthPyramid(device, size, per_level=True)
    assert (fast.levels, fast.dispatches, slow.dispatches) == (9, 2, 9)
    want = build_pyramid(_read_depth(device, tex, *size))
    for a, b, c in zip(_build(device, fast, view), _build(device, slow, view), want, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)


def test_dispatch_counts_and_automatic_choice(device):
    # The device offers >= 6 storage textures per stage (lavapipe: 36), so the default is SPD.
    assert device.limits["max-storage-textures-per-shader-stage"] >= 6
    hd = DepthPyramid(device, (1920, 1080))
    assert not hd.per_level and hd.base == (1024, 1024) and (hd.levels, hd.dispatches) == (11, 2)
    hd.resize((3840, 2160))
    assert hd.base == (2048, 2048) and (hd.levels, hd.dispatches) == (12, 2)
    assert [dispatch_count(n) for n in (1, 6, 7, 12, 13)] == [1, 1, 2, 2, 3]
    assert dispatch_count(11, 1) == 11
    with pytest.raises(ValueError, match="pyramid size"):
        hd.resize((0, 10))
