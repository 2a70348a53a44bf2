"""ReadbackRing: bytes come back tagged with the frame that wrote them, never blocking."""

from __future__ import annotations

import time

import numpy as np
import pytest
import wgpu

import engine.readback
from engine.readback import ReadbackRing


def _source(device):
    return device.create_buffer(
        size=16, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
    )


def _frame(device, ring, src, f):
    device.queue.write_buffer(src, 0, np.array([f, 2 * f, 3 * f, 7], np.uint32).tobytes())
    enc = device.create_command_encoder()
    ok = ring.copy(enc, src)
    device.queue.submit([enc.finish()])
    ring.submitted(f)
    return ok


def test_ring_returns_each_frames_bytes_tagged_in_order(device):
    src, ring = _source(device), ReadbackRing(device, 16, slots=3)
    got, copied = [], []
    for f in range(12):
        if _frame(device, ring, src, f):
            copied.append(f)
        got += ring.poll()
    got += ring.drain(timeout_s=30.0)
    frames = [f for f, _ in got]
    assert frames == copied  # every copied frame comes back once, in order; drain gets the rest
    assert len(frames) + ring.dropped == 12 and frames[0] == 0
    for f, data in got:
        assert np.frombuffer(data, np.uint32).tolist() == [f, 2 * f, 3 * f, 7]
    assert ring.in_flight == 0


def test_ring_drops_and_counts_when_every_slot_is_in_flight(device):
    src, ring = _source(device), ReadbackRing(device, 16, slots=2)
    results = [_frame(device, ring, src, f) for f in range(5)]  # never polled
    assert results == [True, True, False, False, False]
    assert ring.dropped == 3 and not ring.has_free_slot()
    got = ring.drain(timeout_s=5.0)
    assert [f for f, _ in got] == [0, 1]
    assert ring.has_free_slot()


def test_ring_partial_size_copy(device):
    src, ring = _source(device), ReadbackRing(device, 16, slots=1)
    device.queue.write_buffer(src, 0, np.arange(4, dtype=np.uint32).tobytes())
    enc = device.create_command_encoder()
    assert ring.copy(enc, src, 4, 8)
    device.queue.submit([enc.finish()])
    ring.submitted(42)
    [(f, data)] = ring.drain(timeout_s=5.0)
    assert f == 42 and np.frombuffer(data, np.uint32).tolist() == [1, 2]


@pytest.mark.parametrize("size,slots,batch", [(0, 2, 1), (6, 2, 1), (16, 0, 1), (16, 2, 0)])
def test_ring_rejects_bad_arguments(device, size, slots, batch):
    with pytest.raises(ValueError, match="ReadbackRing"):
        ReadbackRing(device, size, slots=slots, batch=batch)


def test_ring_copy_larger_than_slot_is_an_error(device):
    src, ring = _source(device), ReadbackRing(device, 8, slots=1)
    with pytest.raises(ValueError, match="readback size"):
        ring.copy(device.create_command_encoder(), src, 0, 16)


def _wait_idle(device):
    device.queue.read_buffer(device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC))


@pytest.fixture
def map_calls(monkeypatch):
    """Counts the ring's ``map_async`` calls (one per map, whatever the batch)."""
    calls = []
    real = engine.readback.map_read
    monkeypatch.setattr(
        engine.readback, "map_read", lambda buf, size: calls.append(size) or real(buf, size)
    )
    return calls


def test_batched_ring_maps_once_per_batch_and_tags_every_frame(device, map_calls):
    src = _source(device)
    ring = ReadbackRing(device, 12, slots=2, batch=3, flush_after_s=None)
    got = []
    for f in range(9):
        assert _frame(device, ring, src, f) is True
        _wait_idle(device)
        time.sleep(0.01)  # the copy is done: only the missing map can hold a result back
        new = ring.poll()
        deadline = time.perf_counter() + 10.0
        while f % 3 == 2 and not new and time.perf_counter() < deadline:
            new = ring.poll()  # the batch is complete: its one map finishes on its own
        # nothing comes back before a batch of 3 is complete; then all 3 at once, in order
        assert [g for g, _ in new] == ([f - 2, f - 1, f] if f % 3 == 2 else []), (f, new)
        got += new
    assert map_calls == [2 * 16 + 12] * 3  # 3 maps for 9 frames: 2 strides of 16 + 12 bytes
    for f, data in got:  # a 12-byte item per frame, from its own region of the slot
        assert np.frombuffer(data, np.uint32).tolist() == [f, 2 * f, 3 * f]
    assert ring.dropped == 0 and ring.in_flight == 0


def test_batched_ring_drain_maps_a_partial_batch(device, map_calls):
    src, ring = _source(device), ReadbackRing(device, 16, slots=2, batch=4)
    for f in range(6):
        _frame(device, ring, src, f)
    got = ring.drain(timeout_s=30.0)
    assert [f for f, _ in got] == list(range(6))  # 4 from the full batch, 2 from the partial
    assert len(map_calls) == 2 and ring.in_flight == 0
    assert [np.frombuffer(d, np.uint32)[1] for _, d in got] == [2 * f for f in range(6)]


def test_batched_ring_drops_when_every_slot_is_full_or_in_flight(device):
    src, ring = _source(device), ReadbackRing(device, 16, slots=2, batch=2)
    regions = []
    for f in range(6):  # never polled: 2 slots x 2 frames fit, the rest are dropped
        regions.append(ring.next_region())
        _frame(device, ring, src, f)
    assert regions == [0, 1, 2, 3, None, None]
    assert ring.dropped == 2 and not ring.has_free_slot()
    assert [f for f, _ in ring.drain(timeout_s=30.0)] == [0, 1, 2, 3]
    assert ring.next_region() == 0


def test_unsubmitted_copy_is_discarded_and_its_region_reused(device):
    src, ring = _source(device), ReadbackRing(device, 16, slots=1, batch=2)
    enc = device.create_command_encoder()
    assert ring.copy(enc, src) and ring.next_region() == 0  # same region until submitted
    ring.discard_recorded()  # that encoder is never submitted
    assert ring.in_flight == 0
    _frame(device, ring, src, 5)
    assert ring.next_region() == 1
    [(f, data)] = ring.drain(timeout_s=30.0)
    assert f == 5 and np.frombuffer(data, np.uint32).tolist() == [5, 10, 15, 7]


def test_batched_ring_maps_a_partial_batch_after_flush_after_s(device, map_calls):
    src, ring = _source(device), ReadbackRing(device, 16, slots=2, batch=4, flush_after_s=0.2)
    t0 = time.perf_counter()
    _frame(device, ring, src, 9)  # a frame loop that stops after one frame
    _wait_idle(device)
    assert ring.poll() == [] and map_calls == []  # batch not full, not yet 0.2 s old
    deadline = t0 + 10.0
    while not (got := ring.poll()) and time.perf_counter() < deadline:
        time.sleep(0.005)  # polling alone (never blocking) brings it back
    assert [f for f, _ in got] == [9] and len(map_calls) == 1
    assert time.perf_counter() - t0 >= 0.2
