"""Materials on the GPU: texture arrays by (format, size class), mipmaps made on the GPU, a
fixed set of samplers, the material table and the bind group the mesh pipelines read.

Texture arrays: wgpu-py 0.32 cannot create binding arrays (and lavapipe offers none), so
every texture lives in a layer of a ``texture_2d_array``: one array per (format, size
class), ``SLOTS`` arrays per format bound at once (12 sampled textures with the shadow map's
13 fit WebGPU's default of 16 per stage). A texture's size class is the power of two nearest
to its larger side (ties up), capped at the device's ``max-texture-dimension-2d`` (larger
images are downscaled, with one warning); a non-square or non-power-of-two image is resampled
to that square with Pillow's Lanczos filter. A class holding more textures than
``max-texture-array-layers`` spills into another array of the same size; when a format needs
more than ``SLOTS`` arrays, its smallest classes are merged into the next larger one (those
textures are upsampled, one warning). Base colour and emissive textures use
``rgba8unorm-srgb`` arrays (the hardware decodes before filtering); the others ``rgba8unorm``.

Mipmaps: every level is rendered from the one above by a fullscreen triangle sampling it
with a linear filter (``MipGenerator``): sRGB formats cannot be storage textures, and through
an ``-srgb`` view the mean is taken on linear values.

Samplers: one sampler per (mag filter, min filter, mip filter) of glTF's modes, eight in all,
all with ``repeat`` addressing; the wrap modes are applied in the shader per texture
(shaders/material.wgsl: ``CLAMP_TO_EDGE`` clamps to the sampled level's outermost texel
centres, ``MIRRORED_REPEAT`` reflects and clamps likewise), and a minification filter
without mipmaps samples the base level with zero gradients through the sampler of the filter
it asks for. Textures are sampled with explicit gradients (``textureSampleGrad``), scaled by
``2^mip_bias`` (TAA's negative bias), because the sampler and array are chosen per fragment.

Material table: one 256-byte ``Material`` record per material (``MATERIAL_DTYPE``) in a
storage buffer, indexed per instance by ``material_ids``: the CPU records the same commands
for one material or thousands.
"""

from __future__ import annotations

import logging
import math
import struct
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import wgpu

from engine.materials.ambient import sky_sh
from engine.materials.model import (
    CLAMP_TO_EDGE,
    MIRRORED_REPEAT,
    SRGB_SLOTS,
    Image,
    Material,
    TextureRef,
    TextureSlot,
)
from engine.shader_registry import shader_pipeline

log = logging.getLogger("lantern")

SLOTS = 6  # texture arrays bound per format (shaders/material.wgsl srgb0..5, lin0..5)
FORMATS = ("rgba8unorm-srgb", "rgba8unorm")
SAMPLERS = 8  # (mag linear, min linear, mip linear) bits: index = mag | min << 1 | mip << 2
MATERIAL_SIZE = 256  # bytes of the WGSL Material struct
SHADING_SIZE = 160  # bytes of the WGSL Shading uniform: 9 SH vec4f + params
WRAP_CODES = {CLAMP_TO_EDGE: 1, MIRRORED_REPEAT: 2}  # REPEAT: 0

_TEX = wgpu.TextureUsage
_F = wgpu.ShaderStage.FRAGMENT
_V = wgpu.ShaderStage.VERTEX


def size_class(width: int, height: int, max_size: int) -> int:
    """The square power-of-two side a ``width`` x ``height`` image is stored at: nearest to
    the larger side in log2 (ties up), at most ``max_size`` (a power of two)."""
    side = max(width, height, 1)
    return min(1 << max(0, round(math.log2(side) + 1e-9)), max_size)


@dataclass(frozen=True)
class ArraySlot:
    """One texture array: ``format`` index (0 sRGB, 1 linear), ``slot`` 0..SLOTS-1 within
    the format, square ``size`` and the ``layers`` ((image, sRGB) keys) it holds."""

    format: int
    slot: int
    size: int
    layers: tuple[tuple[int, bool], ...]


def plan_arrays(
    sizes: dict[tuple[int, bool], tuple[int, int]], max_layers: int, max_size: int
) -> list[ArraySlot]:
    """Assign every ``(image, srgb)`` (with its ``(width, height)``) a layer of an array.

    Raises:
        ValueError: more textures of one format than ``SLOTS * max_layers``.
    """
    out = []
    for fmt, srgb in enumerate((True, False)):
        keys = sorted(k for k in sizes if k[1] == srgb)
        by_size: dict[int, list] = defaultdict(list)
        for k in keys:
            by_size[size_class(*sizes[k], max_size)].append(k)
        classes = sorted(by_size)

        def arrays_needed(cls=classes, groups=by_size) -> int:
            return sum(-(-len(groups[c]) // max_layers) for c in cls)

        merged = False
        while arrays_needed() > SLOTS and len(classes) > 1:
            small = classes.pop(0)  # the smallest class joins the next one up
            by_size[classes[0]] = by_size.pop(small) + by_size[classes[0]]
            merged = True
        if arrays_needed() > SLOTS:
            raise ValueError(
                f"{len(keys)} {FORMATS[fmt]} textures need more than {SLOTS} arrays of "
                f"{max_layers} layers; reduce the texture count"
            )
        if merged:
            log.warning(
                "%s textures come in more sizes than %d arrays hold: the smallest are stored "
                "at %d texels",
                FORMATS[fmt],
                SLOTS,
                classes[0],
            )
        for c in classes:
            group = by_size[c]
            for start in range(0, len(group), max_layers):
                chunk = tuple(group[start : start + max_layers])
                out.append(ArraySlot(fmt, sum(a.format == fmt for a in out), c, chunk))
    return out


def resample(image: Image, size: int) -> np.ndarray:
    """``(size, size, 4)`` uint8: the image as is when it is that size, else Lanczos."""
    if image.size == (size, size):
        return image.rgba
    from PIL import Image as PILImage

    pil = PILImage.fromarray(image.rgba, "RGBA")
    return np.asarray(pil.resize((size, size), PILImage.Resampling.LANCZOS), np.uint8)


class MipGenerator:
    """Renders every mip level of a texture (array) from the level above (shaders/mipmap.wgsl).

    Args:
        device: the ``wgpu.GPUDevice``.
    """

    def __init__(self, device: wgpu.GPUDevice):
        self.device = device
        self._pipelines: dict[str, wgpu.GPURenderPipeline] = {}
        self.sampler = device.create_sampler(
            label="mip blit", mag_filter="linear", min_filter="linear"
        )
        self.shader = shader_pipeline(device, "mipmap.wgsl", lambda m: m)

    def pipeline(self, fmt: str) -> wgpu.GPURenderPipeline:
        if fmt not in self._pipelines:
            m = self.shader.get()
            self._pipelines[fmt] = self.device.create_render_pipeline(
                label=f"mip blit {fmt}",
                layout="auto",
                vertex={"module": m, "entry_point": "vs_blit"},
                primitive={"topology": "triangle-list"},
                fragment={"module": m, "entry_point": "fs_blit", "targets": [{"format": fmt}]},
            )
        return self._pipelines[fmt]

    def generate(self, encoder, texture: wgpu.GPUTexture, layers: range | None = None) -> None:
        """Record levels 1.. of ``layers`` (default all) of a 2D (array) ``texture`` whose
        usage includes ``RENDER_ATTACHMENT`` and ``TEXTURE_BINDING``."""
        pipe = self.pipeline(texture.format)
        layout = pipe.get_bind_group_layout(0)
        layers = range(texture.depth_or_array_layers) if layers is None else layers
        for layer in layers:
            for level in range(1, texture.mip_level_count):

                def view(mip, t=texture, layer=layer):
                    return t.create_view(
                        dimension="2d",
                        base_mip_level=mip,
                        mip_level_count=1,
                        base_array_layer=layer,
                        array_layer_count=1,
                    )

                group = self.device.create_bind_group(
                    layout=layout,
                    entries=[
                        {"binding": 0, "resource": view(level - 1)},
                        {"binding": 1, "resource": self.sampler},
                    ],
                )
                rpass = encoder.begin_render_pass(
                    label="mip blit",
                    color_attachments=[
                        {
                            "view": view(level),
                            "load_op": "clear",
                            "store_op": "store",
                            "clear_value": (0, 0, 0, 0),
                        }
                    ],
                )
                rpass.set_pipeline(pipe)
                rpass.set_bind_group(0, group)
                rpass.draw(3)
                rpass.end()


def mip_levels(size: int) -> int:
    """Full mip chain length of a ``size`` x ``size`` texture."""
    return int(size).bit_length()


class TextureArrays:
    """The scene's textures in arrays (see the module docstring), uploaded and mipmapped.

    Args:
        device: the ``wgpu.GPUDevice``.
        images: the scene's decoded images.
        materials: the scene's materials (which images are sampled as sRGB, which linear).

    Attributes:
        slots: the ``ArraySlot`` plan; ``textures[fmt][slot]``: the ``GPUTexture`` of each
            (a 1x1 placeholder where a slot is unused); ``views``: their array views.
        location: ``(image, srgb) -> (slot, layer)``.
        bytes: texel bytes of every array, mips included.
    """

    def __init__(self, device: wgpu.GPUDevice, images: list[Image], materials: list[Material]):
        self.device = device
        uses = {
            (ref.image, slot in SRGB_SLOTS) for m in materials for slot, ref in m.textures.items()
        }
        max_layers = device.limits["max-texture-array-layers"]
        max_size = 1 << (device.limits["max-texture-dimension-2d"].bit_length() - 1)
        big = sorted({images[i].name for i, _ in uses if max(images[i].size) > max_size})
        if big:
            log.warning(
                "%d image(s) larger than this device's %d texels (%s): downscaled to %d",
                len(big),
                max_size,
                big[0],
                max_size,
            )
        sizes = {k: images[k[0]].size for k in uses}
        self.slots = plan_arrays(sizes, max_layers, max_size)
        self.location: dict[tuple[int, bool], tuple[int, int]] = {}
        self.textures: list[list[wgpu.GPUTexture]] = [[], []]
        self.bytes = 0
        mips = MipGenerator(device)
        encoder = device.create_command_encoder(label="material mipmaps")
        for fmt in range(2):
            for slot in range(SLOTS):
                a = next((s for s in self.slots if s.format == fmt and s.slot == slot), None)
                self.textures[fmt].append(self._upload(a, fmt, slot, images, mips, encoder))
        device.queue.submit([encoder.finish()])
        self.views = [[t.create_view(dimension="2d-array") for t in row] for row in self.textures]

    def _upload(self, a: ArraySlot | None, fmt, slot, images, mips, encoder) -> wgpu.GPUTexture:
        size, layers = (a.size, len(a.layers)) if a else (1, 1)
        levels = mip_levels(size)
        tex = self.device.create_texture(
            label=f"material {FORMATS[fmt]} {size}x{size}x{layers}"
            if a
            else f"material {FORMATS[fmt]} slot {slot} (unused)",
            size=(size, size, layers),
            format=FORMATS[fmt],
            mip_level_count=levels,
            usage=_TEX.TEXTURE_BINDING | _TEX.COPY_DST | _TEX.RENDER_ATTACHMENT | _TEX.COPY_SRC,
        )
        if a is None:
            white = np.full((1, 1, 4), 255, np.uint8)
            self._write(tex, 0, white)
            return tex
        for layer, key in enumerate(a.layers):
            self.location[key] = (a.slot, layer)
            self._write(tex, layer, resample(images[key[0]], size))
        self.bytes += 4 * layers * sum(max(1, size >> i) ** 2 for i in range(levels))
        if levels > 1:
            mips.generate(encoder, tex)
        return tex

    def _write(self, tex, layer: int, rgba: np.ndarray) -> None:
        h, w = rgba.shape[:2]
        self.device.queue.write_texture(
            {"texture": tex, "mip_level": 0, "origin": (0, 0, layer)},
            np.ascontiguousarray(rgba),
            {"offset": 0, "bytes_per_row": 4 * w, "rows_per_image": h},
            (w, h, 1),
        )

    def destroy(self) -> None:
        for row in self.textures:
            for t in row:
                t.destroy()


def sampler_index(ref: TextureRef) -> int:
    """The fixed sampler of ``ref``'s filters: ``mag | min << 1 | mip_linear << 2``; a
    minification filter without mipmaps takes both filters from the one it asks for (the
    shader passes zero gradients and picks min or mag by the footprint: see its ``fetch``)."""
    s = ref.sampler
    return int(s.mag_linear) | int(s.min_linear) << 1 | int(s.mipmaps == 2) << 2


def pack_reference(ref: TextureRef, slot: int, layer: int) -> int:
    """A texture reference's 32-bit word (shaders/material.wgsl ``TexRef`` bits): layer 0-15,
    array slot 16-18, sampler 19-21, no-mipmaps 22, wrap S 23-24, wrap T 25-26, texcoord 27,
    present 31."""
    s = ref.sampler
    return (
        layer
        | slot << 16
        | sampler_index(ref) << 19
        | int(s.mipmaps == 0) << 22
        | WRAP_CODES.get(s.wrap_s, 0) << 23
        | WRAP_CODES.get(s.wrap_t, 0) << 25
        | ref.texcoord << 27
        | 1 << 31
    )


_MATERIAL = struct.Struct("<16f8I40f")
assert _MATERIAL.size == MATERIAL_SIZE


def pack_material(m: Material, location) -> bytes:
    """One ``Material`` record (256 bytes): factors, texture words, texture transforms.

    ``location``: ``(image, srgb) -> (slot, layer)`` of the texture arrays."""
    words, xform = [0] * 8, []
    for slot in TextureSlot:
        ref = m.textures.get(slot)
        if ref is None:
            xform += [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
            continue
        arr, layer = location[(ref.image, slot in SRGB_SLOTS)]
        words[int(slot)] = pack_reference(ref, arr, layer)
        (a, b, tx), (c, d, ty) = ref.transform.matrix().tolist()
        xform += [a, b, tx, 0.0, c, d, ty, 0.0]
    words[5] = int(m.alpha_mode) | int(m.double_sided) << 2
    s = m.emissive_strength
    return _MATERIAL.pack(
        *m.base_color,
        *(c * s for c in m.emissive),
        m.world_uv,
        m.metallic,
        m.roughness,
        m.normal_scale,
        m.occlusion_strength,
        m.alpha_cutoff,
        0.0,
        0.0,
        0.0,
        *words,
        *xform,
    )


class GpuMaterials:
    """The material bind group (group 2 of the mesh pipelines, shaders/material.wgsl):
    per-instance material ids, the material table, the shading uniform (sky SH, mip bias,
    textures on/off), the texture arrays and the eight samplers.

    Args:
        device: the ``wgpu.GPUDevice``.
        scene: an ``engine.scene.scene.Scene`` (materials, material ids, images).
        sky: ``(zenith, horizon, ground)`` linear RGB of the sky model (the ambient light).
        anisotropy: the trilinear sampler's maximum anisotropy (1: off).

    Attributes:
        layout: the bind group layout; ``group``: the bind group; ``arrays``: the
            ``TextureArrays``; ``table``, ``ids``, ``shading``: the buffers.
    """

    def __init__(self, device: wgpu.GPUDevice, scene, sky, *, anisotropy: int = 8):
        self.device, self.scene = device, scene
        self.anisotropy = anisotropy
        self.arrays = TextureArrays(device, scene.images, scene.materials)
        loc = self.arrays.location
        table = b"".join(pack_material(m, loc) for m in scene.materials)
        self.table = device.create_buffer_with_data(label="materials", data=table, usage="STORAGE")
        self.ids = device.create_buffer_with_data(
            label="material ids",
            data=np.ascontiguousarray(scene.material_ids, np.uint32).tobytes(),
            usage="STORAGE",
        )
        self.sh = sky_sh(*sky).astype(np.float32)
        self.shading = device.create_buffer(
            label="shading", size=SHADING_SIZE, usage="UNIFORM | COPY_DST"
        )
        self._params: tuple | None = None  # (mip bias, textured, material view)
        self.set_params(mip_bias=0.0, textured=True, view=0)
        self.samplers = [self._sampler(i) for i in range(SAMPLERS)]
        self.layout = material_layout(device)
        self.group = self._group()

    def _sampler(self, index: int) -> wgpu.GPUSampler:
        mag, mini, mip = (("nearest", "linear")[(index >> b) & 1] for b in range(3))
        aniso = self.anisotropy if index == SAMPLERS - 1 else 1  # WebGPU: only all-linear
        return self.device.create_sampler(
            label=f"material {mag}/{mini}/{mip}",
            address_mode_u="repeat",
            address_mode_v="repeat",
            mag_filter=mag,
            min_filter=mini,
            mipmap_filter=mip,
            max_anisotropy=aniso,
        )

    def shader_defines(self, textured: bool) -> dict[str, bool]:
        """The material.wgsl variant for this scene (``// #if`` defines): ``TEX0``..``TEX4``
        the texture slots some material uses, ``SRGB0``..``SRGB5`` / ``LIN0``..``LIN5``
        the arrays they live in, ``SAMP0``..``SAMP6`` the samplers besides the trilinear one.
        Every texture sample in the shader is then one the scene can take: a GPU may run
        every arm of a per-fragment switch (lavapipe does, masked), so sampling code for
        arrays and samplers no material uses cost 14x the Main passes' time before. Empty
        with ``textured`` False or no textures: the lit shader samples nothing."""
        if not textured:
            return {}
        out: dict[str, bool] = {}
        for m in self.scene.materials:
            for slot, ref in m.textures.items():
                srgb = slot in SRGB_SLOTS
                arr, _ = self.arrays.location[(ref.image, srgb)]
                out[f"TEX{int(slot)}"] = True
                out[f"{'SRGB' if srgb else 'LIN'}{arr}"] = True
                index = sampler_index(ref)
                if ref.sampler.mipmaps == 0:  # min or mag by the footprint (sample_array)
                    mag, mini = index & 1, (index >> 1) & 1
                    samplers = {mag | mag << 1, mini | mini << 1}
                else:
                    samplers = {index}
                out.update({f"SAMP{i}": True for i in samplers if i != SAMPLERS - 1})
        return dict(sorted(out.items()))

    def set_params(self, *, mip_bias: float, textured: bool, view: int | None = None) -> None:
        """Write the shading uniform when its values change (TAA's mip bias, the
        ``textures`` knob, the material view's quantity; None: unchanged); nothing is
        written on a frame where they did not."""
        old_view = self._params[2] if self._params else 0.0
        params = (float(mip_bias), 1.0 if textured else 0.0, old_view if view is None else view)
        if params == self._params:
            return
        self._params = params
        data = np.zeros((10, 4), np.float32)
        data[:9, :3] = self.sh
        data[9, :3] = params
        self.device.queue.write_buffer(self.shading, 0, data.tobytes())

    def _group(self) -> wgpu.GPUBindGroup:
        entries = [
            {"binding": 0, "resource": {"buffer": self.ids}},
            {"binding": 1, "resource": {"buffer": self.table}},
            {"binding": 2, "resource": {"buffer": self.shading}},
        ]
        views = self.arrays.views[0] + self.arrays.views[1]
        entries += [{"binding": 3 + i, "resource": v} for i, v in enumerate(views)]
        entries += [
            {"binding": 3 + 2 * SLOTS + i, "resource": s} for i, s in enumerate(self.samplers)
        ]
        return self.device.create_bind_group(label="materials", layout=self.layout, entries=entries)

    def set_view(self, quantity: int) -> None:
        """Which material input ``fs_material_view`` writes (shaders/mesh.wgsl)."""
        mip, textured, _ = self._params
        self.set_params(mip_bias=mip, textured=textured > 0.5, view=quantity)

    @property
    def texture_bytes(self) -> int:
        return self.arrays.bytes

    def array_rows(self) -> list[tuple[str, str, int, int, int]]:
        """Per texture array in use: ``(label, format, size, layers, bytes)`` (mips in)."""
        out = []
        for a in self.arrays.slots:
            tex = self.arrays.textures[a.format][a.slot]
            out.append(
                (
                    tex.label,
                    FORMATS[a.format],
                    a.size,
                    len(a.layers),
                    len(a.layers) * layer_bytes(a.size),
                )
            )
        return out

    def material_rows(self) -> list[tuple[str, str, str, str, int]]:
        """Per material texture: ``(material, slot, image, "array label[layer]", bytes of
        its layer with mips)``; a layer two materials share is listed under each."""
        arrays = self.arrays
        out = []
        for m in self.scene.materials:
            for slot, ref in sorted(m.textures.items()):
                srgb = slot in SRGB_SLOTS
                arr, layer = arrays.location[(ref.image, srgb)]
                tex = arrays.textures[0 if srgb else 1][arr]
                out.append(
                    (
                        m.name,
                        slot.name.lower(),
                        self.scene.images[ref.image].name,
                        f"{tex.label}[{layer}]",
                        layer_bytes(tex.width),
                    )
                )
        return out


def layer_bytes(size: int) -> int:
    """Bytes of one RGBA8 ``size`` x ``size`` layer with its full mip chain."""
    return 4 * sum(max(1, size >> i) ** 2 for i in range(mip_levels(size)))


def material_layout(device: wgpu.GPUDevice) -> wgpu.GPUBindGroupLayout:
    """Group 2 of the mesh pipelines (shaders/material.wgsl)."""
    ro = {"type": "read-only-storage"}
    entries = [
        {"binding": 0, "visibility": _V | _F, "buffer": ro},
        {"binding": 1, "visibility": _V | _F, "buffer": ro},
        {"binding": 2, "visibility": _F, "buffer": {"type": "uniform"}},
    ]
    tex = {"sample_type": "float", "view_dimension": "2d-array"}
    entries += [{"binding": 3 + i, "visibility": _F, "texture": tex} for i in range(2 * SLOTS)]
    entries += [
        {"binding": 3 + 2 * SLOTS + i, "visibility": _F, "sampler": {"type": "filtering"}}
        for i in range(SAMPLERS)
    ]
    return device.create_bind_group_layout(label="materials", entries=entries)
