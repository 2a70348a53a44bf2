"""ReadbackRing: bytes come back tagged with the frame that wrote them, never blocking."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

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
    got = []
    for f in range(12):
        if _frame(device, ring, src, f):
            got += ring.poll()
    got += ring.drain(timeout_s=5.0)
    frames = [f for f, _ in got]
    assert frames == sorted(frames) and len(set(frames)) == len(frames)
    assert len(frames) + ring.dropped == 12
    assert frames[-1] == 11  # drain gathers the last frame
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


@pytest.mark.parametrize("size,slots", [(0, 2), (6, 2), (16, 0)])
def test_ring_rejects_bad_arguments(device, size, slots):
    with pytest.raises(ValueError, match="ReadbackRing"):
        ReadbackRing(device, size, slots=slots)


def test_ring_copy_larger_than_slot_is_an_error(device):
    src, ring = _source(device), ReadbackRing(device, 8, slots=1)
    with pytest.raises(ValueError, match="readback size"):
        ring.copy(device.create_command_encoder(), src, 0, 16)
