"""Culling frozen at a camera, occlusion included (F2, ``cull freeze``, ``--cull-camera``).

While culling is frozen the render camera moves and the frame's own depth pyramid follows
it, so the Hi-Z test needs the pyramid *of the frozen camera*: ``FrozenCulling`` keeps a copy
of the pyramid made from the frozen camera's depth and the culler tests against it, so what
the frozen camera saw as occluded stays culled (and shows as such in the ``culled`` view).

How the copy is made:

- frozen at the camera of the last frame (F2, ``cull freeze``): the pyramid the last frame
  built is the frozen camera's; it is copied before the next frame.
- frozen at another camera (``--cull-camera``, before the first frame): ``WARMUP_FRAMES``
  frames are rendered and culled from the frozen camera first (the first frame of a
  two-phase culler draws nothing early, so its pyramid is empty; the second's is the
  early pass's depth of what the first found visible), then the pyramid is copied.

The culler's own per-instance classes (``GpuScene.state & 3``: 0 frustum, 1 sub-pixel,
2 occluded, 3 visible, the codes of ``engine.culling.reference``) are read back once per
freeze, asynchronously (``map_async``, polled each frame: never a stall), for the views and
lines tools.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.readback import map_finished, map_read

WARMUP_FRAMES = 2


class FrozenCulling:
    """The frozen camera's depth pyramid copy and the culler's classes for it.

    Args:
        device: the ``wgpu.GPUDevice``; ``pyramid``: the frame's ``DepthPyramid``;
        state: the cull's per-instance state buffer (``(N,)`` u32, ``COPY_SRC``).

    Attributes:
        camera: the frozen camera, or None when culling is not frozen.
        view: the copy's texture view (all mips) once made, else None; ``base``, ``levels``:
            its level-0 size in texels and mip count.
        classes: ``(N,)`` uint32 class per instance the culler gave with the copy bound, once
            read back, else None.
    """

    def __init__(self, device: wgpu.GPUDevice, pyramid, state: wgpu.GPUBuffer):
        self.device, self.pyramid, self.state = device, pyramid, state
        self.camera = None
        self.view = self.texture = None
        self.base, self.levels = (1, 1), 1
        self.classes: np.ndarray | None = None
        self._warmup = 0
        self._copy = False
        self._since = 0  # frames recorded with the copy bound
        self._read = None  # (staging buffer, promise)

    def start(self, camera, *, last_frame: bool, occlusion: bool) -> None:
        """Freeze at ``camera``; ``last_frame``: the last frame was rendered from it (its
        pyramid is the frozen camera's); ``occlusion``: the frame builds a pyramid at all."""
        self.stop()
        self.camera = camera
        self._copy = occlusion
        self._warmup = 0 if last_frame or not occlusion else WARMUP_FRAMES
        self._since = 0 if occlusion else -1  # steps before the first frame culled frozen

    def stop(self) -> None:
        """Release: the copy and the classes go."""
        if self.texture is not None:
            self.texture.destroy()
        self.camera = self.view = self.texture = self.classes = self._read = None
        self._copy, self._warmup, self._since = False, 0, 0

    @property
    def warming(self) -> bool:
        """Frames are still rendered and culled from the frozen camera, not frozen yet."""
        return self.camera is not None and self._warmup > 0

    @property
    def active(self) -> bool:
        """The culler tests occlusion against the copy this frame."""
        return self.camera is not None and self.view is not None

    def step(self) -> None:
        """Once per frame, before recording: count the warm-up down, copy the pyramid when
        it is the frozen camera's, start and collect the classes' readback."""
        if self.camera is None:
            return
        if self._warmup > 0:
            self._warmup -= 1
            return
        if self._copy:
            self._copy = False
            self._make_copy()
            return
        self._since += 1
        if self._since == 1:  # the last frame was culled frozen: the state holds its classes
            self._start_read()
        self._collect()

    def _make_copy(self) -> None:
        p, d = self.pyramid, self.device
        self.base, self.levels = p.base, p.levels
        self.texture = d.create_texture(
            label="HiZ pyramid (frozen camera)",
            size=(*p.base, 1),
            format=p.texture.format,
            mip_level_count=p.levels,
            usage=wgpu.TextureUsage.TEXTURE_BINDING
            | wgpu.TextureUsage.COPY_DST
            | wgpu.TextureUsage.COPY_SRC,  # tests and the viewer read it
        )
        enc = d.create_command_encoder(label="freeze pyramid")
        for m in range(p.levels):
            w, h = max(1, p.base[0] >> m), max(1, p.base[1] >> m)
            enc.copy_texture_to_texture(
                {"texture": p.texture, "mip_level": m},
                {"texture": self.texture, "mip_level": m},
                (w, h, 1),
            )
        d.queue.submit([enc.finish()])  # queued before this frame's commands: no wait
        self.view = self.texture.create_view(label="HiZ pyramid (frozen camera)")

    def _start_read(self) -> None:
        d, n = self.device, self.state.size
        staging = d.create_buffer(
            label="frozen classes", size=n,
            usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST,
        )  # fmt: skip
        enc = d.create_command_encoder(label="frozen classes")
        enc.copy_buffer_to_buffer(self.state, 0, staging, 0, n)
        d.queue.submit([enc.finish()])
        self._read = (staging, map_read(staging, n))

    def _collect(self) -> None:
        if self._read is None:
            return
        staging, promise = self._read
        done = map_finished(promise)
        if done is False or (done is None and self._since < 4):  # None: this wgpu hides it
            return
        promise.sync_wait()  # finished (or, hidden, 3 frames on): resolves, no wait
        data = np.frombuffer(staging.read_mapped(copy=True), np.uint32)
        staging.unmap()
        staging.destroy()
        self.classes, self._read = data & 3, None
