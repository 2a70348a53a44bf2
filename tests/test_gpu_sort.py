"""engine.gpu_sort against numpy: sorted keys, values carried along, at sizes that take the
one-block path, the global merge steps and padding; the radix sort equal to numpy's stable
argsort, at sizes of one tile, several, and enough tiles for its scan to take two chunks."""

from __future__ import annotations

import numpy as np
import pytest

from engine.gpu_sort import (
    BLOCK,
    RADIX_TILE,
    GpuSort,
    RadixSort,
    bitonic_steps,
    radix_size,
    radix_steps,
    sort_size,
)


def _run(device, s, keys, values) -> tuple[np.ndarray, np.ndarray]:
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


@pytest.mark.parametrize(
    "capacity,descending,distinct,bits",
    [(1, True, 50, 32), (1000, False, 7, 32), (5000, True, 1 << 32, 32),
     (70_000, True, 300, 32), (3000, False, 1 << 16, 16)],
)  # fmt: skip
def test_radix_sort_is_numpys_stable_argsort(device, capacity, descending, distinct, bits):
    """Keys with many duplicates (7, 50, 300 distinct values) and without; 70,000 keys are
    69 tiles, 1,104 histogram entries: two scan chunks. The values are the input positions,
    so they must equal numpy's stable argsort exactly (equal keys in input order)."""
    s = RadixSort(device, capacity, descending=descending, bits=bits)
    assert s.size == radix_size(capacity) and s.size % RADIX_TILE == 0 and s.size >= capacity
    assert len(s.steps) == bits  # four dispatches a 4-bit digit
    rng = np.random.default_rng(capacity + bits)
    keys = rng.integers(0, distinct, s.size, dtype=np.uint64).astype(np.uint32)
    values = np.arange(s.size, dtype=np.uint32)
    k, v = _run(device, s, keys, values)
    order = np.argsort(~keys if descending else keys, kind="stable")  # ~: descending, stable
    assert np.array_equal(v, order)
    assert np.array_equal(k, keys[order])


def test_radix_sort_of_16_bits_ignores_the_high_ones(device):
    s = RadixSort(device, 2048, bits=16)
    keys = np.array([(i % 7) << 16 | (2047 - i) for i in range(2048)], np.uint32)
    k, v = _run(device, s, keys, np.arange(2048, dtype=np.uint32))
    assert np.array_equal(v, np.arange(2047, -1, -1))  # by the low 16 bits alone


def test_radix_dispatches_are_fixed_by_capacity():
    steps = radix_steps(radix_size(70_000))
    assert [e for e, _, _ in steps[:4]] == ["radix_count", "radix_reduce", "radix_scan",
                                            "radix_scatter"]  # fmt: skip
    assert [g for _, _, g in steps[:4]] == [69, 2, 2, 69]
    assert sorted({shift for _, shift, _ in steps}) == list(range(0, 32, 4))
    with pytest.raises(ValueError, match="bits must be"):
        RadixSort(None, 10, bits=12)
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        RadixSort(None, 0)
