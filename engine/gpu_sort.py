"""GPU sorts of (key, value) pairs of u32: the engine's utilities for anything sorted per
frame on the GPU (the Transparent pass's back-to-front order, particles). Two algorithms with
one interface (``size``, ``keys``, ``values``, ``steps``, ``record(cpass)``), so a technique
can offer both as variants:

``GpuSort``: a bitonic sorting network (Batcher 1968, "Sorting networks and their
applications") over ``size``, the capacity rounded up to a power of two (at least one
512-element block): a first dispatch sorts every 512-element block in workgroup memory;
each larger merge ``k`` is one dispatch per partner distance of 512 or more, then one
dispatch for all the smaller distances in workgroup memory. A capacity of 2^n (n >= 9)
takes ``1 + sum_{m=10..n} (m - 8)`` dispatches (4,096: 10; 65,536: 36), fixed for a given
capacity, so the CPU's cost does not depend on what is sorted. Not stable: equal keys end in
any order.

``RadixSort``: a least-significant-digit radix sort, 4 bits a pass (8 passes for 32-bit
keys), each pass four dispatches over tiles of 1,024 keys: a digit histogram per tile, a
reduce-then-scan of the histograms (Merrill & Grimshaw 2011, "High Performance and Scalable
Radix Sorting", Parallel Processing Letters 21(2)), and a scatter in which each tile ranks its
keys with a counting sort in workgroup memory (Satish, Harris & Garland 2009, "Designing
Efficient Sorting Algorithms for Manycore GPUs", IPDPS). Stable; ``O(n)`` work where the
bitonic network does ``O(n log^2 n)``; ``bits`` dispatches (32 for 32-bit keys) for any
capacity, over ``radix_size(capacity)`` elements (a multiple of 1,024, not a power of
two). Its ping-pong buffers double the memory of the keys and values.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.shader_registry import compute_pipelines, shader_pipeline

BLOCK = 512  # elements per workgroup (shaders/sort.wgsl)
_STEP_STRIDE = 256  # dynamic uniform offset alignment
RADIX_TILE = 1024  # keys per workgroup (shaders/radix_sort.wgsl TILE)
RADIX_BITS = 4  # bits of a digit (RADIX = 16)
_RADIX_CHUNK = 1024  # histogram entries per scan workgroup (radix_sort.wgsl CHUNK)
_RADIX_ENTRIES = ("radix_count", "radix_reduce", "radix_scan", "radix_scatter")


def sort_size(capacity: int) -> int:
    """Elements the sort runs over for ``capacity``: a power of two, at least ``BLOCK``."""
    return max(BLOCK, 1 << max(0, int(capacity) - 1).bit_length())


def bitonic_steps(size: int) -> list[tuple[str, int, int]]:
    """The dispatches for ``size`` (a power of two >= BLOCK): ``(entry, k, j)``."""
    steps = [("sort_local", BLOCK, 0)]
    k = 2 * BLOCK
    while k <= size:
        j = k // 2
        while j >= BLOCK:
            steps.append(("sort_global", k, j))
            j //= 2
        steps.append(("merge_local", k, BLOCK // 2))
        k *= 2
    return steps


class GpuSort:
    """Sorts ``keys`` and carries ``values`` along, in place, on the GPU.

    Args:
        device: the ``wgpu.GPUDevice``.
        capacity: pairs to sort (>= 1). The buffers hold ``size = sort_size(capacity)``;
            whoever fills them fills all ``size`` entries (padding with the key that should
            sort last: 0 when descending, 0xFFFFFFFF ascending).
        descending: largest key first.
        keys, values: existing storage buffers of ``size`` u32 each to sort, or None to make
            them (``STORAGE | COPY_DST | COPY_SRC``).

    Attributes:
        size, keys, values, steps (the dispatches ``record`` issues).
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        capacity: int,
        *,
        descending: bool = False,
        keys: wgpu.GPUBuffer | None = None,
        values: wgpu.GPUBuffer | None = None,
    ):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.device = device
        self.size = sort_size(capacity)
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        self.keys = keys or device.create_buffer(label="sort keys", size=4 * self.size, usage=usage)
        self.values = values or device.create_buffer(
            label="sort values", size=4 * self.size, usage=usage
        )
        self.steps = bitonic_steps(self.size)
        params = np.zeros((len(self.steps), _STEP_STRIDE // 4), np.uint32)
        for i, (_, k, j) in enumerate(self.steps):
            params[i, :3] = (k, j, int(descending))
        self.uniform = device.create_buffer_with_data(
            label="sort steps", data=params.tobytes(), usage="UNIFORM"
        )
        c = wgpu.ShaderStage.COMPUTE
        self.layout = device.create_bind_group_layout(
            label="sort",
            entries=[
                {"binding": 0, "visibility": c,
                 "buffer": {"type": "uniform", "has_dynamic_offset": True, "min_binding_size": 16}},
                {"binding": 1, "visibility": c, "buffer": {"type": "storage"}},
                {"binding": 2, "visibility": c, "buffer": {"type": "storage"}},
            ],
        )  # fmt: skip
        layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        entries = ("sort_local", "sort_global", "merge_local")
        self.shader = shader_pipeline(
            device,
            "sort.wgsl",
            lambda m: compute_pipelines(device, m, entries, label="sort", layout=layout),
        )
        self.group = device.create_bind_group(
            label="sort",
            layout=self.layout,
            entries=[
                {"binding": 0, "resource": {"buffer": self.uniform, "size": 16}},
                {"binding": 1, "resource": {"buffer": self.keys}},
                {"binding": 2, "resource": {"buffer": self.values}},
            ],
        )

    def record(self, cpass: wgpu.GPUComputePassEncoder) -> None:
        """Record the sort's dispatches into a compute pass (after whatever filled the
        buffers, before whatever reads them, in the same or a later pass)."""
        pipes = self.shader.get()
        blocks = self.size // BLOCK
        for i, (entry, _, _) in enumerate(self.steps):
            cpass.set_pipeline(pipes[entry])
            cpass.set_bind_group(0, self.group, [i * _STEP_STRIDE])
            groups = blocks if entry != "sort_global" else self.size // 2 // 256
            cpass.dispatch_workgroups(groups, 1, 1)


def radix_size(capacity: int) -> int:
    """Elements ``RadixSort`` runs over for ``capacity``: a multiple of ``RADIX_TILE``."""
    return max(1, -(-int(capacity) // RADIX_TILE)) * RADIX_TILE


def radix_steps(size: int, bits: int = 32) -> list[tuple[str, int, int]]:
    """The dispatches for ``size`` (a multiple of ``RADIX_TILE``) and ``bits``-bit keys:
    ``(entry, shift, workgroups)``, four per 4-bit digit, lowest digit first."""
    tiles = size // RADIX_TILE
    chunks = -(-tiles * (1 << RADIX_BITS) // _RADIX_CHUNK)
    groups = dict(zip(_RADIX_ENTRIES, (tiles, chunks, chunks, tiles), strict=True))
    return [(e, shift, groups[e]) for shift in range(0, bits, RADIX_BITS) for e in _RADIX_ENTRIES]


class RadixSort:
    """Sorts ``keys`` and carries ``values`` along, stably, on the GPU; the result is back in
    ``keys`` and ``values`` (the passes alternate with two scratch buffers of the same size).

    Args:
        device: the ``wgpu.GPUDevice``.
        capacity: pairs to sort (>= 1). The buffers hold ``size = radix_size(capacity)``;
            whoever fills them fills all ``size`` entries (padding with the key that should
            sort last: 0 when descending, 0xFFFFFFFF ascending).
        descending: largest key first (equal keys still keep their order).
        keys, values: existing storage buffers of at least ``size`` u32 each to sort, or None
            to make them (``STORAGE | COPY_DST | COPY_SRC``).
        bits: the low bits of the keys that are sorted on: 8, 16, 24 or 32 (an even number of
            4-bit passes, so the result ends in ``keys``).

    Attributes:
        size, keys, values, steps (the dispatches ``record`` issues: ``radix_steps``).

    Raises:
        ValueError: ``capacity`` < 1 or ``bits`` not one of 8, 16, 24, 32.
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        capacity: int,
        *,
        descending: bool = False,
        keys: wgpu.GPUBuffer | None = None,
        values: wgpu.GPUBuffer | None = None,
        bits: int = 32,
    ):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if bits not in (8, 16, 24, 32):
            raise ValueError(f"bits must be 8, 16, 24 or 32, got {bits}")
        self.device = device
        self.size = size = radix_size(capacity)
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        make = lambda label: device.create_buffer(label=label, size=4 * size, usage=usage)  # noqa: E731
        self.keys = keys or make("radix keys")
        self.values = values or make("radix values")
        scratch = (make("radix keys scratch"), make("radix values scratch"))
        self.steps = radix_steps(size, bits)
        tiles = size // RADIX_TILE
        entries = tiles << RADIX_BITS
        shifts = range(0, bits, RADIX_BITS)
        params = np.zeros((len(shifts), _STEP_STRIDE // 4), np.uint32)
        for i, shift in enumerate(shifts):
            params[i, :4] = (shift, tiles, int(descending), entries)
        self.uniform = device.create_buffer_with_data(
            label="radix steps", data=params.tobytes(), usage="UNIFORM"
        )
        storage = wgpu.BufferUsage.STORAGE
        hist = device.create_buffer(label="radix histograms", size=4 * entries, usage=storage)
        chunks = -(-entries // _RADIX_CHUNK)
        partials = device.create_buffer(label="radix partials", size=4 * chunks, usage=storage)
        c = wgpu.ShaderStage.COMPUTE
        ro, rw = {"type": "read-only-storage"}, {"type": "storage"}
        self.layout = device.create_bind_group_layout(
            label="radix",
            entries=[
                {"binding": 0, "visibility": c,
                 "buffer": {"type": "uniform", "has_dynamic_offset": True, "min_binding_size": 16}},
                *({"binding": b, "visibility": c, "buffer": ro} for b in (1, 2)),
                *({"binding": b, "visibility": c, "buffer": rw} for b in (3, 4, 5, 6)),
            ],
        )  # fmt: skip
        layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        self.shader = shader_pipeline(
            device,
            "radix_sort.wgsl",
            lambda m: compute_pipelines(device, m, _RADIX_ENTRIES, label="radix", layout=layout),
        )
        n = 4 * size

        def group(src, dst) -> wgpu.GPUBindGroup:
            buffers = (*src, *dst, hist, partials)
            return device.create_bind_group(
                label="radix",
                layout=self.layout,
                entries=[
                    {"binding": 0, "resource": {"buffer": self.uniform, "size": 16}},
                    *({"binding": b, "resource": {"buffer": buf, "offset": 0, "size": n}}
                      for b, buf in enumerate(buffers[:4], 1)),
                    {"binding": 5, "resource": {"buffer": hist}},
                    {"binding": 6, "resource": {"buffer": partials}},
                ],
            )  # fmt: skip

        pair = (self.keys, self.values)
        self.groups = (group(pair, scratch), group(scratch, pair))  # even, odd passes

    def record(self, cpass: wgpu.GPUComputePassEncoder) -> None:
        """Record the sort's dispatches into a compute pass (after whatever filled the
        buffers, before whatever reads them, in the same or a later pass)."""
        pipes = self.shader.get()
        for i, (entry, _, groups) in enumerate(self.steps):
            p = i // len(_RADIX_ENTRIES)  # the pass: its digit's uniform, its buffer pair
            cpass.set_pipeline(pipes[entry])
            cpass.set_bind_group(0, self.groups[p % 2], [p * _STEP_STRIDE])
            cpass.dispatch_workgroups(groups, 1, 1)
