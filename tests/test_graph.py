"""RenderGraph: declaration order, names, labels, debug groups, owned resources, and the
promise that no profiler means no query set and no timestamp."""

from __future__ import annotations

import pytest
import wgpu

from engine.graph import (
    OUTPUT,
    ComputePass,
    FrameContext,
    RenderGraph,
    RenderPass,
    TextureDesc,
    TransferPass,
)
from engine.profiling.sink import NULL_PROFILER, ProfilerSink


class RecordingEncoder:
    """Forwards to a real command encoder and remembers what the graph asked of it."""

    def __init__(self, encoder):
        self._enc = encoder
        self.calls: list[tuple] = []

    def begin_render_pass(self, **kw):
        self.calls.append(("render", kw.get("label"), kw.get("timestamp_writes")))
        return self._enc.begin_render_pass(**kw)

    def begin_compute_pass(self, **kw):
        self.calls.append(("compute", kw.get("label"), kw.get("timestamp_writes")))
        return self._enc.begin_compute_pass(**kw)

    def push_debug_group(self, label):
        self.calls.append(("push", label, None))
        self._enc.push_debug_group(label)

    def pop_debug_group(self):
        self.calls.append(("pop", None, None))
        self._enc.pop_debug_group()

    def __getattr__(self, name):
        return getattr(self._enc, name)


def _graph(device, order: list, size=(32, 16)):
    g = RenderGraph(device, output_format="rgba8unorm", size=size)
    g.create_texture(
        "color", TextureDesc("rgba8unorm", wgpu.TextureUsage.RENDER_ATTACHMENT, scale=0.5)
    )
    g.create_buffer("buf", size=64, usage=wgpu.BufferUsage.COPY_DST)

    def targets(ctx):
        view = ctx.graph.view("color")
        return {"color_attachments": [{"view": view, "load_op": "clear", "store_op": "store"}]}

    def rec(name):
        def record(ctx, enc):
            order.append((name, getattr(enc, "label", None)))

        return record

    def clear(ctx, enc):
        order.append(("Clear", None))
        enc.clear_buffer(ctx.graph.buffer("buf"))

    g.add(TransferPass("Clear", record=clear))
    g.add(ComputePass("Sim", record=rec("Sim")))
    g.add(RenderPass("Draw", record=rec("Draw"), targets=targets))
    g.add(ComputePass("Off", record=rec("Off"), enabled=False))
    g.add(ComputePass("Post", record=rec("Post")))
    return g


def _execute(device, graph, index=0):
    enc = RecordingEncoder(device.create_command_encoder())
    graph.execute(enc, FrameContext(device, graph, index, 0.0, graph.size, None))
    device.queue.submit([enc.finish()])
    return enc


def test_passes_run_in_declaration_order_with_their_names_as_labels(device):
    order = []
    graph = _graph(device, order)
    enc = _execute(device, graph)
    assert [n for n, _ in order] == ["Clear", "Sim", "Draw", "Post"]  # "Off" is disabled
    assert dict(order)["Sim"] == "Sim" and dict(order)["Draw"] == "Draw"  # pass encoder labels
    assert [(k, label) for k, label, _ in enc.calls] == [
        ("push", "Clear"),  # transfer pass wrapped in a debug group of its name
        ("pop", None),
        ("compute", "Sim"),
        ("render", "Draw"),
        ("compute", "Post"),
    ]
    assert graph.pass_names() == ["Clear", "Sim", "Draw", "Post"]


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_empty_pass_name_is_a_value_error_naming_it(device, bad):
    graph = RenderGraph(device, output_format="rgba8unorm", size=(8, 8))
    with pytest.raises(ValueError, match=f"non-empty string, got {bad!r}"):
        graph.add(ComputePass(bad, record=lambda ctx, p: None))


def test_duplicate_pass_name_is_a_value_error_naming_it(device):
    graph = RenderGraph(device, output_format="rgba8unorm", size=(8, 8))
    graph.add(ComputePass("Cull", record=lambda ctx, p: None))
    with pytest.raises(ValueError, match="already has a pass named 'Cull'"):
        graph.add(RenderPass("Cull", record=lambda ctx, p: None))
    assert graph.pass_names() == ["Cull"]


def test_names_are_stripped_and_fixed_once_added(device):
    graph = RenderGraph(device, output_format="rgba8unorm", size=(8, 8))
    p = graph.add(ComputePass("Cull", record=lambda ctx, c: None))
    with pytest.raises(AttributeError):
        p.name = "Other"  # a rename after add would slip past the duplicate check
    with pytest.raises(ValueError, match="already has a pass named 'Cull'"):
        graph.add(ComputePass("Cull  ", record=lambda ctx, c: None))
    assert ComputePass(" Sim\t").name == "Sim"
    assert graph.pass_names() == ["Cull"]


def test_reads_need_an_earlier_write_and_describe_shows_the_edges(device):
    graph = RenderGraph(device, output_format="rgba8unorm", size=(8, 8))
    graph.import_resource("scene")
    graph.add(ComputePass("Sim", reads=("scene",), writes=("particles",)))
    graph.add(RenderPass("Draw", reads=("particles", "lut"), writes=(OUTPUT,)))
    late = graph.add(ComputePass("Bake", writes=("lut",)))
    with pytest.raises(ValueError) as e:
        graph.validate()
    assert str(e.value) == (
        "render graph: pass 'Draw' reads 'lut' but only the later pass 'Bake' writes it; "
        "reorder the passes or import the resource"
    )
    late.enabled = False
    with pytest.raises(ValueError, match="reads 'lut' but no pass writes it"):
        graph.validate()
    graph.passes.remove(late)
    graph.passes.insert(0, late)
    late.enabled = True
    graph.validate()  # Bake, Sim, Draw: every read has an earlier write
    text = graph.describe()
    assert text.splitlines()[2:5] == [
        "  2. Sim            compute",
        "       reads  scene",
        "       writes particles",
    ]
    dot = graph.to_dot()
    assert '"particles" -> p2;' in dot and 'p1 -> "particles";' in dot and 'p0 -> "lut";' in dot


def test_execute_validates_a_changed_set_of_enabled_passes(device):
    graph = RenderGraph(device, output_format="rgba8unorm", size=(8, 8))
    maker = graph.add(ComputePass("Make", record=lambda ctx, c: None, writes=("x",)))
    graph.add(ComputePass("Use", record=lambda ctx, c: None, reads=("x",)))
    _execute(device, graph)
    maker.enabled = False
    with pytest.raises(ValueError, match="'Use' reads 'x' but no pass writes it"):
        _execute(device, graph)


def test_null_profiler_implements_the_sink_protocol():
    from engine.profiling import FrameProfiler

    assert isinstance(NULL_PROFILER, ProfilerSink)
    methods = [n for n, v in vars(ProfilerSink).items() if callable(v) and n[0] != "_"]
    for cls in (FrameProfiler, type(NULL_PROFILER)):
        assert all(callable(getattr(cls, m, None)) for m in methods), cls
    # the null sink does nothing, so a graph without a profiler pays one call per pass
    assert NULL_PROFILER.active is False and NULL_PROFILER.collect() is None
    assert NULL_PROFILER.begin_pass("P", "render", None) is None
    marker = object()
    assert NULL_PROFILER.pass_encoder("P", "render", marker, None) is marker


def test_graph_owned_textures_follow_resize(device):
    graph = _graph(device, [], size=(32, 16))
    seen = []
    graph.on_resize(seen.append)
    assert graph.texture("color").size == (16, 8, 1)  # scale 0.5 of 32x16
    buf = graph.buffer("buf")
    graph.resize((50, 30))
    assert graph.texture("color").size == (25, 15, 1)
    assert graph.generation == 1 and seen == [(50, 30)]
    assert graph.buffer("buf") is buf  # buffers are not size-relative
    graph.resize((50, 30))  # same size: nothing recreated
    assert graph.generation == 1


def test_a_replaced_buffer_changes_the_resource_key(device):
    """A pool resized by ``create_buffer`` under the same name is a new object: bind
    groups keyed on ``resource_key`` must be made again (a new name changes nothing)."""
    graph = _graph(device, [], size=(32, 16))
    key, old = graph.resource_key(), graph.buffer("buf")
    graph.create_buffer("other", size=16, usage=wgpu.BufferUsage.COPY_DST)
    assert graph.resource_key() == key
    graph.create_buffer("buf", size=128, usage=wgpu.BufferUsage.COPY_DST)
    assert graph.resource_key() != key and graph.buffer("buf") is not old
    assert graph.buffer("buf").size == 128


def test_no_profiler_means_no_query_set_and_no_timestamp(device, monkeypatch):
    """Counts query-set creation, pass-descriptor timestamp_writes and encoder timestamps."""
    from engine.profiling import gpu as gpu_profiling

    counts = {"query_sets": 0, "write_timestamp": 0}
    real_qs, real_wt = type(device).create_query_set, gpu_profiling.write_timestamp

    def counting_qs(self, **kw):
        counts["query_sets"] += 1
        return real_qs(self, **kw)

    def counting_wt(encoder, *a):
        counts["write_timestamp"] += 1
        return real_wt(getattr(encoder, "_enc", encoder), *a)  # unwrap RecordingEncoder

    monkeypatch.setattr(type(device), "create_query_set", counting_qs)
    monkeypatch.setattr(gpu_profiling, "write_timestamp", counting_wt)
    graph = _graph(device, [])
    assert graph.profiler is NULL_PROFILER and not graph.profiler.active
    calls = [c for i in range(3) for c in _execute(device, graph, i).calls]
    assert counts == {"query_sets": 0, "write_timestamp": 0}
    assert all(tw is None for kind, _, tw in calls if kind in ("render", "compute"))

    # The same counters see a profiler's queries: the test above can fail.
    from engine.gpu import Gpu
    from engine.profiling import FrameProfiler

    gpu = Gpu(adapter=device.adapter, device=device, features=frozenset(device.features))
    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False, timestamps="pass")
    calls = _execute(device, graph, 3).calls
    graph.profiler.drain()
    # a pool per frame in flight (3 slots x batch 8) and per frame waiting for its resolve (2)
    assert counts["query_sets"] == 3 * 8 + 2
    assert counts["write_timestamp"] == 2  # the transfer pass, begin and end
    assert all(tw is not None for kind, _, tw in calls if kind in ("render", "compute"))

    graph.profiler = FrameProfiler(gpu, gpu=True, cpu=False, timestamps="encoder")
    calls = _execute(device, graph, 4).calls
    graph.profiler.drain()
    # every enabled pass, between passes: one timestamp per boundary (4 passes, 5 boundaries)
    assert counts["write_timestamp"] == 2 + 4 + 1
    assert all(tw is None for kind, _, tw in calls if kind in ("render", "compute"))


def test_dot_escapes_quotes_and_backslashes_in_names(device):
    graph = RenderGraph(device, output_format="rgba8unorm", size=(8, 8))
    graph.add(ComputePass('My "fast" \\ pass', writes=('buf "a"',)))
    dot = graph.to_dot()
    assert 'label="1. My \\"fast\\" \\\\ pass\\ncompute"' in dot
    assert 'p0 -> "buf \\"a\\"";' in dot
