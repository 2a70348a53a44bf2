"""Shader variants by defines (``// #if NAME`` ... ``// #else`` ... ``// #endif``, integer
defines as constants): what each variant compiles to, and that messages keep file lines."""

from __future__ import annotations

import numpy as np
import wgpu

from engine.shader_registry import ShaderRegistry, expand

WGSL = """struct O {
    @location(0) a: vec4f,
// #if EXTRA
    @location(LOC_EXTRA) b: vec2f,
// #endif
};
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}
@fragment fn fs() -> O {
    var o: O;
// #if EXTRA
    o.a = vec4f(1.0, 0.0, 0.0, 1.0);
    o.b = vec2f(3.0, 4.0);
// #if NESTED
    o.b = vec2f(5.0, 6.0);
// #endif
// #else
    o.a = vec4f(0.0, 1.0, 0.0, 1.0);
// #endif
    return o;
}
"""


def _draw(device, handle, formats) -> list[np.ndarray]:
    texs = [device.create_texture(size=(4, 4, 1), format=f,
                                  usage=wgpu.TextureUsage.RENDER_ATTACHMENT
                                  | wgpu.TextureUsage.COPY_SRC) for f in formats]  # fmt: skip
    enc = device.create_command_encoder()
    colors = [{"view": t.create_view(), "load_op": "clear", "store_op": "store",
               "clear_value": (0, 0, 0, 0)} for t in texs]  # fmt: skip
    rp = enc.begin_render_pass(color_attachments=colors)
    rp.set_pipeline(handle.get())
    rp.draw(3)
    rp.end()
    device.queue.submit([enc.finish()])
    out = []
    for t, f in zip(texs, formats, strict=True):
        dtype = np.uint8 if f == "rgba8unorm" else np.float16
        raw = device.queue.read_texture({"texture": t}, {"bytes_per_row": 256}, (4, 4, 1))
        out.append(np.frombuffer(raw, dtype)[: 4 if dtype is np.uint8 else 2])
    return out


def test_each_variant_compiles_its_own_code(gpu, tmp_path):
    f = tmp_path / "t.wgsl"
    f.write_text(WGSL)
    reg = ShaderRegistry(gpu.device, root=tmp_path)
    d = gpu.device

    def factory(formats):
        def make(m):
            targets = [{"format": x} for x in formats]
            return d.create_render_pipeline(
                layout="auto", vertex={"module": m, "entry_point": "vs"},
                fragment={"module": m, "entry_point": "fs", "targets": targets},
                primitive={"topology": "triangle-list"},
            )  # fmt: skip

        return make

    plain = reg.pipeline(f, factory(["rgba8unorm"]))
    extra = reg.pipeline(f, factory(["rgba8unorm", "rg16float"]),
                         defines={"EXTRA": True, "LOC_EXTRA": 1})  # fmt: skip
    nested = reg.pipeline(f, factory(["rgba8unorm", "rg16float"]),
                          defines={"EXTRA": True, "NESTED": True, "LOC_EXTRA": 1})  # fmt: skip
    (a,) = _draw(d, plain, ["rgba8unorm"])
    assert list(a) == [0, 255, 0, 255]  # the #else branch
    a, b = _draw(d, extra, ["rgba8unorm", "rg16float"])
    assert list(a) == [255, 0, 0, 255] and list(b) == [3.0, 4.0]
    _, b = _draw(d, nested, ["rgba8unorm", "rg16float"])
    assert list(b) == [5.0, 6.0]
    assert extra.variant_name == "t.wgsl[EXTRA,LOC_EXTRA=1]" and plain.variant_name == "t.wgsl"


def test_left_out_lines_keep_the_files_line_numbers(tmp_path):
    f = tmp_path / "t.wgsl"
    f.write_text(WGSL)
    src = expand(f, tmp_path, {"EXTRA": False})
    lines = src.code.split("\n")
    assert lines[19].strip() == "o.a = vec4f(0.0, 1.0, 0.0, 1.0);"  # file line 20
    assert src.locate(20) == (f, 20) and lines[3] == ""  # the #if line itself is blank
