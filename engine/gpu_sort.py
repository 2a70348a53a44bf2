"""A GPU sort of (key, value) pairs of u32: the engine's utility for anything sorted per
frame on the GPU (the Transparent pass's back-to-front order, particles).

Bitonic sorting network (Batcher 1968, "Sorting networks and their applications") over
``size``, the capacity rounded up to a power of two (at least one 512-element block): a
first dispatch sorts every 512-element block in workgroup memory; each larger merge ``k`` is
one dispatch per partner distance of 512 or more, then one dispatch for all the smaller
distances in workgroup memory. A capacity of 2^n (n >= 9) takes
``1 + sum_{m=10..n} (m - 8)`` dispatches (4,096: 10; 65,536: 36), fixed for a given
capacity, so the CPU's cost does not depend on what is sorted. Not stable: equal keys end in
any order.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.shader_registry import shader_pipeline

BLOCK = 512  # elements per workgroup (shaders/sort.wgsl)
_STEP_STRIDE = 256  # dynamic uniform offset alignment


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
            lambda m: {
                e: device.create_compute_pipeline(
                    label=f"sort {e}", layout=layout, compute={"module": m, "entry_point": e}
                )
                for e in entries
            },
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
