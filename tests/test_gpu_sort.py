"""engine.gpu_sort against numpy: sorted keys, values carried along, at sizes that take the
one-block path, the global merge steps and padding."""

from __future__ import annotations

import numpy as np
import pytest

from engine.gpu_sort import BLOCK, GpuSort, bitonic_steps, sort_size


def _run(device, s: GpuSort, keys, values) -> tuple[np.ndarray, np.ndarray]:
    device.queue.write_buffer(s.keys, 0, keys)
    device.queue.write_buffer(s.values, 0, values)
    enc = device.create_command_encoder()
    cpass = enc.begin_compute_pass()
    s.record(cpass)
    cpass.end()
    device.queue.submit([enc.finish()])
    k = np.frombuffer(device.queue.read_buffer(s.keys), np.uint32)
    v = np.frombuffer(device.queue.read_buffer(s.values), np.uint32)
    return k, v


@pytest.mark.parametrize(
    "capacity,descending,distinct",
    [(1, True, 50), (300, False, 50), (513, True, 7), (4096, False, 1 << 32)],
)
def test_sort_matches_numpy(device, capacity, descending, distinct):
    s = GpuSort(device, capacity, descending=descending)
    assert s.size == sort_size(capacity) and s.size >= capacity
    rng = np.random.default_rng(capacity)
    keys = rng.integers(0, distinct, s.size, dtype=np.uint64).astype(np.uint32)
    values = np.arange(s.size, dtype=np.uint32)
    k, v = _run(device, s, keys, values)
    ref = np.sort(keys)
    assert np.array_equal(k, ref[::-1] if descending else ref)
    # values travelled with their keys: a permutation that maps the input onto the output
    assert np.array_equal(np.sort(v), values) and np.array_equal(keys[v], k)


def test_step_count_is_fixed_by_capacity():
    assert len(bitonic_steps(BLOCK)) == 1
    assert len(bitonic_steps(4096)) == 1 + (2 + 3 + 4)
    assert len(bitonic_steps(65536)) == 1 + sum(m - 8 for m in range(10, 17))
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        GpuSort(None, 0)
