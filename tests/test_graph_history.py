"""RenderGraph history (NAME@prev) and snapshot (NAME@PASS) resources, read back on lavapipe."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

from engine.graph import FrameContext, RenderGraph, RenderPass, TextureDesc, TransferPass
from tests.test_graph import RecordingEncoder

RA = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC


def read_r32f(device, tex) -> np.ndarray:
    w, h = tex.width, tex.height
    bpr = (w * 4 + 255) // 256 * 256
    data = device.queue.read_texture(
        {"texture": tex}, {"bytes_per_row": bpr, "rows_per_image": h}, (w, h, 1)
    )
    return np.frombuffer(data, np.float32).reshape(h, bpr // 4)[:, :w].copy()


def clear_pass(name, resource, value, *, reads=()):
    """A render pass that clears ``resource`` (r32float) to ``value(ctx)``."""

    def targets(ctx):
        view = ctx.graph.view(resource)
        v = float(value(ctx))
        att = {"view": view, "clear_value": (v, 0, 0, 0), "load_op": "clear", "store_op": "store"}
        return {"color_attachments": [att]}

    return RenderPass(name, lambda ctx, rp: None, targets=targets, reads=reads, writes=(resource,))


def execute(device, graph, index):
    enc = RecordingEncoder(device.create_command_encoder())
    graph.execute(enc, FrameContext(device, graph, index, 0.0, graph.size, None))
    device.queue.submit([enc.finish()])
    return enc


def test_history_alternates_each_frame_and_is_cleared_on_frame_0_and_after_resize(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(8, 4))
    g.create_texture("acc", TextureDesc("r32float", RA), history=True)
    g.add(clear_pass("Write", "acc", lambda ctx: ctx.frame_index + 1))
    g.add(TransferPass("Use", lambda ctx, enc: None, reads=("acc@prev",)))
    seen = []
    for k in range(5):
        if k == 3:
            g.resize((6, 3))  # recreates both textures: the next frame's @prev is zeros
        fresh_before = g.history_fresh("acc")
        execute(device, g, k)
        cur, prev = read_r32f(device, g.texture("acc")), read_r32f(device, g.texture("acc@prev"))
        assert np.all(cur == k + 1), k  # what this frame wrote
        seen.append((fresh_before, float(prev[0, 0]), prev.shape))
        assert np.all(prev == prev[0, 0])
    assert seen == [
        (True, 0.0, (4, 8)),  # first frame: cleared
        (False, 1.0, (4, 8)),  # last frame's value, in the other texture of the pair
        (False, 2.0, (4, 8)),
        (True, 0.0, (3, 6)),  # after the resize: cleared at the new size
        (False, 4.0, (3, 6)),
    ]
    a, b = g.texture("acc"), g.texture("acc@prev")
    execute(device, g, 5)
    assert (g.texture("acc"), g.texture("acc@prev")) == (b, a)  # the pair swapped
    g.reset_history("acc")
    execute(device, g, 6)
    assert np.all(read_r32f(device, g.texture("acc@prev")) == 0.0)
    with pytest.raises(ValueError, match="'nope' has no history; create it with history=True"):
        g.reset_history("nope")


def test_buffer_history_alternates(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(4, 4))
    usage = wgpu.BufferUsage.COPY_SRC
    g.create_buffer("n", size=16, usage=usage, history=True)

    def write(ctx, enc):
        ctx.graph.device.queue.write_buffer(
            ctx.graph.buffer("n"), 0, np.full(4, ctx.frame_index + 7, np.uint32)
        )

    g.add(TransferPass("Write", write, writes=("n",)))
    g.add(TransferPass("Use", lambda ctx, enc: None, reads=("n@prev",)))
    prevs = []
    for k in range(3):
        execute(device, g, k)
        prevs.append(np.frombuffer(device.queue.read_buffer(g.buffer("n@prev")), np.uint32)[0])
    assert prevs == [0, 7, 8]


def test_history_and_snapshot_without_a_writer_are_value_errors_naming_both(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(4, 4))
    g.create_texture("acc", TextureDesc("r32float", RA), history=True)
    g.create_texture("plain", TextureDesc("r32float", RA))
    g.add(TransferPass("TAA", lambda ctx, enc: None, reads=("acc@prev",)))
    with pytest.raises(ValueError, match=r"pass 'TAA' reads the history 'acc@prev' but no enabled"):
        g.validate()
    g.add(clear_pass("Write", "acc", lambda ctx: 1.0))
    g.validate()  # a writer anywhere in the frame (it wrote last frame's value)
    g.pass_named("Write").enabled = False
    with pytest.raises(ValueError, match="no enabled pass writes 'acc'"):
        g.validate()
    g.pass_named("Write").enabled = True
    g.add(TransferPass("Bad", lambda ctx, enc: None, reads=("plain@prev",)))
    with pytest.raises(ValueError, match="'Bad' reads the history 'plain@prev' but 'plain' was"):
        g.validate()
    g.pass_named("Bad").enabled = False
    g.add(TransferPass("Refract", lambda ctx, enc: None, reads=("acc@Main.Late",)))
    with pytest.raises(ValueError, match="'Refract' reads the snapshot 'acc@Main.Late' but pass"):
        g.validate()


def test_snapshot_is_a_copy_after_its_pass_recorded_only_while_read(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(8, 4))
    g.create_texture("color", TextureDesc("r32float", wgpu.TextureUsage.RENDER_ATTACHMENT))
    g.add(clear_pass("First", "color", lambda ctx: 3.0))
    g.add(clear_pass("Second", "color", lambda ctx: 5.0, reads=("color",)))
    reader = g.add(TransferPass("Refract", lambda ctx, enc: None, reads=("color@First",)))
    enc = execute(device, g, 0)
    assert np.all(read_r32f(device, g.texture("color@First")) == 3.0)
    assert np.all(read_r32f(device, g.texture("color")) == 5.0)
    groups = [label for kind, label, _ in enc.calls if kind == "push"]
    assert groups == ["Snapshot", "Refract"]  # the copy right after First, before Second
    passes = [label for kind, label, _ in enc.calls if kind in ("render", "push")]
    assert passes == ["First", "Snapshot", "Second", "Refract"]
    assert "color@First (copy after First)" in g.describe()
    dot = g.to_dot()
    assert '"color@First" [shape=note];' in dot and 'p0 -> "color@First" [style=bold' in dot
    reader.enabled = False
    enc = execute(device, g, 1)
    assert [label for kind, label, _ in enc.calls if kind == "push"] == []  # no reader: no copy


def test_describe_and_dot_show_history_edges_distinctly(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(4, 4))
    g.create_texture("acc", TextureDesc("r32float", RA), history=True)
    g.add(clear_pass("Write", "acc", lambda ctx: 1.0))
    g.add(TransferPass("TAA", lambda ctx, enc: None, reads=("acc@prev", "acc")))
    assert "reads  acc@prev (last frame), acc" in g.describe()
    dot = g.to_dot()
    assert '"acc" -> p1 [style=dashed, color=blue, label="prev"];' in dot
    assert '"acc" -> p1;' in dot  # the same-frame read stays a plain edge
    assert '"acc@prev"' not in dot  # one node per resource: history is an edge style


class ScopeSink:
    """A profiler sink that records the scopes the graph opens, in order."""

    active = True

    def __init__(self):
        self.scopes = []

    def begin_frame(self, index, encoder):
        pass

    def begin_pass(self, name, kind, encoder):
        self.scopes.append((name, kind))

    def pass_encoder(self, name, kind, pass_encoder, targets):
        return pass_encoder

    def end_pass(self, name, kind, encoder):
        pass

    def end_frame(self, encoder):
        pass


def test_snapshots_are_timed_scopes_numbered_in_frame_order(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(8, 4))
    for name in ("a", "b"):
        g.create_texture(name, TextureDesc("r32float", wgpu.TextureUsage.RENDER_ATTACHMENT))
    g.add(clear_pass("A", "a", lambda ctx: 1.0))
    g.add(clear_pass("B", "b", lambda ctx: 2.0))
    g.add(TransferPass("Use", lambda ctx, enc: None, reads=("b@B", "a@A")))
    g.profiler = sink = ScopeSink()
    execute(device, g, 0)
    assert sink.scopes == [
        ("A", "render"),
        ("Snapshot.1", "transfer"),
        ("B", "render"),
        ("Snapshot.2", "transfer"),
        ("Use", "transfer"),
    ]


def test_snapshot_of_a_history_texture_copies_from_either_of_the_pair(device):
    g = RenderGraph(device, output_format="rgba8unorm", size=(8, 4))
    g.create_texture(
        "acc", TextureDesc("r32float", wgpu.TextureUsage.RENDER_ATTACHMENT), history=True
    )
    g.add(clear_pass("Write", "acc", lambda ctx: ctx.frame_index + 2))
    g.add(TransferPass("Use", lambda ctx, enc: None, reads=("acc@prev", "acc@Write")))
    for k in range(3):  # both textures of the pair are copied from (they swap each frame)
        execute(device, g, k)
        assert np.all(read_r32f(device, g.texture("acc@Write")) == k + 2)
