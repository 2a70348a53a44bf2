"""PassDescriptors (engine/pass_descriptors.py): the graph begins its passes with C
descriptors built once; what they draw must be what wgpu-py's public call draws, frame after
frame, across clear-value changes, resizes and a window's new output view each frame."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

from engine.graph import OUTPUT, ComputePass, FrameContext, RenderGraph, RenderPass, TextureDesc
from engine.pass_descriptors import MAX_PER_PASS, PassDescriptors
from engine.surfaces import read_rgba

FMT = "rgba8unorm"
USAGE = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC


class Rig:
    """A graph of two clears (the output, a graph texture "side" at half size) and a compute
    pass; ``colour`` is the output's clear value, read by the pass every frame."""

    def __init__(self, device, size=(8, 4)):
        self.device = device
        self.graph = g = RenderGraph(device, output_format=FMT, size=size)
        g.create_texture("side", TextureDesc(FMT, USAGE, scale=0.5))
        self.colour = (1.0, 0.0, 0.0, 1.0)

        def out_targets(ctx):
            att = {"view": ctx.output, "load_op": "clear", "store_op": "store"}
            return {"color_attachments": [{**att, "clear_value": self.colour}]}

        def side_targets(ctx):
            att = {"view": ctx.graph.view("side"), "load_op": "clear", "store_op": "store"}
            return {"color_attachments": [{**att, "clear_value": (0.0, 0.0, 1.0, 1.0)}]}

        g.add(RenderPass("Out", lambda ctx, rp: None, targets=out_targets, writes=(OUTPUT,)))
        g.add(RenderPass("Side", lambda ctx, rp: None, targets=side_targets, writes=("side",)))
        g.add(ComputePass("Nothing", lambda ctx, cp: None))
        self.index = 0

    def frame(self, view) -> None:
        ctx = FrameContext(self.device, self.graph, self.index, 0.0, self.graph.size, view)
        enc = self.device.create_command_encoder()
        self.graph.execute(enc, ctx)
        self.device.queue.submit([enc.finish()])
        self.index += 1

    def entries(self, label: str) -> int:
        return len(self.graph.descriptors._cache.get(label, {}))


def _target(device, size):
    return device.create_texture(size=(*size, 1), format=FMT, usage=USAGE)


def _rgb(device, tex) -> tuple:
    px = read_rgba(device, tex)
    assert (px == px[0, 0]).all()  # a clear: every pixel the same
    return tuple(px[0, 0, :3].tolist())


def test_a_repeated_pass_reuses_one_descriptor_and_a_new_clear_value_builds_another(device):
    rig = Rig(device)
    assert rig.graph.descriptors.native  # the wgpu-native backend: the cached path is taken
    out = _target(device, rig.graph.size)
    view = out.create_view()
    for _ in range(3):
        rig.frame(view)
    assert _rgb(device, out) == (255, 0, 0)
    assert (rig.entries("Out"), rig.entries("Side"), rig.entries("Nothing")) == (1, 1, 1)
    rig.colour = (0.0, 1.0, 0.0, 1.0)  # a different descriptor: a stale one would stay red
    rig.frame(view)
    assert _rgb(device, out) == (0, 255, 0)
    assert rig.entries("Out") == 2
    assert _rgb(device, rig.graph.texture("side")) == (0, 0, 255)


def test_a_window_output_new_each_frame_is_never_kept(device):
    rig = Rig(device)
    out = _target(device, rig.graph.size)
    for i in range(4):  # a surface hands out a new view every frame
        rig.colour = (0.0, 0.0, 0.0, 1.0) if i % 2 else (1.0, 1.0, 1.0, 1.0)
        rig.frame(out.create_view())
        assert _rgb(device, out) == ((0, 0, 0) if i % 2 else (255, 255, 255))
        assert rig.entries("Out") == 0 and rig.entries("Side") == 1


def test_a_resize_drops_the_descriptors_of_the_replaced_views(device):
    rig = Rig(device)
    out = _target(device, (8, 4))
    rig.frame(out.create_view())
    rig.frame(view := out.create_view())
    rig.frame(view)
    assert rig.entries("Side") == 1
    old_side = rig.graph.texture("side")
    rig.graph.resize((16, 8))
    assert rig.entries("Side") == 0
    bigger = _target(device, (16, 8))
    rig.frame(bigger.create_view())
    assert rig.graph.texture("side") is not old_side and rig.graph.texture("side").size[:2] == (
        8,
        4,
    )
    assert _rgb(device, rig.graph.texture("side")) == (0, 0, 255)


def test_many_keys_for_one_pass_stay_bounded(device):
    rig = Rig(device)
    view = _target(device, rig.graph.size).create_view()
    rig.frame(view)
    for i in range(3 * MAX_PER_PASS):
        rig.colour = (i / 100, 0.0, 0.0, 1.0)
        rig.frame(view)
        assert 1 <= rig.entries("Out") <= MAX_PER_PASS


def test_a_bad_attachment_raises_what_wgpu_raises(device):
    tex = _target(device, (4, 4))
    bad = {
        "color_attachments": [
            {"view": tex.create_view(), "load_op": "clear", "store_op": "store", "colour": 1}
        ]
    }
    enc = device.create_command_encoder()
    with pytest.raises(ValueError) as public:
        enc.begin_render_pass(**bad)
    with pytest.raises(ValueError) as cached:
        PassDescriptors().render(device.create_command_encoder(), "Bad", bad)
    assert str(cached.value) == str(public.value) and "colour" in str(cached.value)
    with pytest.raises(TypeError, match="colors"):  # wgpu-py's own message
        PassDescriptors().render(device.create_command_encoder(), "Bad", {"colors": []})


def test_timestamp_writes_reach_the_query_set(device, gpu):
    """A compute and a render pass begun with cached descriptors that write timestamps: the
    resolved queries are four increasing nonzero ticks (begin <= end for each pass)."""
    if "timestamp-query" not in gpu.features:
        pytest.skip("the adapter has no timestamp-query")
    qs = device.create_query_set(type="timestamp", count=4)
    res = device.create_buffer(
        size=32, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    )
    tex = _target(device, (4, 4))
    targets = {
        "color_attachments": [{"view": tex.create_view(), "load_op": "clear", "store_op": "store"}]
    }
    begin = PassDescriptors()
    for _ in range(2):  # the second frame takes both descriptors from the cache
        enc = device.create_command_encoder()
        tw = {"query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
        begin.compute(enc, "C", tw).end()
        tw = {"query_set": qs, "beginning_of_pass_write_index": 2, "end_of_pass_write_index": 3}
        begin.render(enc, "R", targets, tw).end()
        enc.resolve_query_set(qs, 0, 4, res, 0)
        device.queue.submit([enc.finish()])
        ticks = np.frombuffer(device.queue.read_buffer(res), np.uint64)
        assert (ticks > 0).all() and ticks[0] <= ticks[1] and ticks[2] <= ticks[3]
    assert len(begin._cache["C"]) == len(begin._cache["R"]) == 1


def test_clear_values_as_a_list_or_an_array_are_keyed_by_value(device):
    rig = Rig(device)
    out = _target(device, rig.graph.size)
    view = out.create_view()
    for colour, rgb in (
        ([0.0, 0.0, 1.0, 1.0], (0, 0, 255)),
        (np.array([0.0, 1.0, 0.0, 1.0]), (0, 255, 0)),
    ):
        for _ in range(2):
            rig.colour = colour
            rig.frame(view)
        assert _rgb(device, out) == rgb
    assert rig.entries("Out") == 2
    rig.colour = {"r": 1.0, "g": 0.0, "b": 1.0, "a": 1.0}  # wgpu-py's dict form
    rig.frame(view)
    assert _rgb(device, out) == (255, 0, 255) and rig.entries("Out") == 3


def test_what_the_public_call_takes_or_refuses_the_cached_one_does_too(device):
    """An iterator of attachments draws (read once); ``max_draw_count`` is taken; an unknown
    argument and a misspelt timestamp key raise wgpu-py's own errors, even after a good
    descriptor with the same views is cached."""
    tex = _target(device, (4, 4))
    view = tex.create_view()
    begin = PassDescriptors()

    def att(rgb):
        return {"view": view, "load_op": "clear", "store_op": "store", "clear_value": (*rgb, 1)}

    for rgb in ((1, 0, 0), (0, 1, 0)):
        enc = device.create_command_encoder()
        begin.render(enc, "P", {"color_attachments": (a for a in [att(rgb)])}).end()
        device.queue.submit([enc.finish()])
        assert _rgb(device, tex) == tuple(255 * c for c in rgb)
    enc = device.create_command_encoder()
    begin.render(enc, "P", {"color_attachments": [att((0, 0, 1))], "max_draw_count": 99}).end()
    device.queue.submit([enc.finish()])
    assert _rgb(device, tex) == (0, 0, 255)
    bad = {"color_attachments": [att((0, 0, 1))], "colour": 1}
    with pytest.raises(TypeError) as public:
        device.create_command_encoder().begin_render_pass(**bad)
    with pytest.raises(TypeError) as cached:
        begin.render(device.create_command_encoder(), "P", bad)
    assert str(cached.value) == str(public.value)
    qs = device.create_query_set(type="timestamp", count=2)
    begin.compute(device.create_command_encoder(), "C", {"query_set": qs}).end()
    typo = {"query_set": qs, "end_of_pass_writ_index": 1}
    with pytest.raises(ValueError, match="end_of_pass_writ_index"):
        begin.compute(device.create_command_encoder(), "C", typo)


def test_a_window_output_as_a_resolve_target_is_never_kept(device):
    msaa = device.create_texture(
        size=(4, 4, 1), format=FMT, usage=wgpu.TextureUsage.RENDER_ATTACHMENT, sample_count=4
    ).create_view()
    out = _target(device, (4, 4))
    begin = PassDescriptors()
    for i in range(3):
        view = out.create_view()  # new each frame, as a surface's
        begin.begin_frame(view)
        enc = device.create_command_encoder()
        att = {"view": msaa, "resolve_target": view, "load_op": "clear", "store_op": "discard"}
        colour = (0.0, 1.0, 0.0, 1.0) if i % 2 else (1.0, 0.0, 0.0, 1.0)
        begin.render(enc, "R", {"color_attachments": [{**att, "clear_value": colour}]}).end()
        device.queue.submit([enc.finish()])
        assert _rgb(device, out) == ((0, 255, 0) if i % 2 else (255, 0, 0))
    assert not begin._cache.get("R")
