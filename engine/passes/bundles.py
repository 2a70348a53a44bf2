"""Render bundles for passes whose commands do not change between frames.

A render pass of the standard frame records the same few commands every frame (a pipeline,
its bind groups, a fullscreen triangle or the scene's indirect draws): recorded once into a
``wgpu.GPURenderBundle`` they cost one ``execute_bundles`` call per frame instead of one
wgpu-py call per command, and wgpu validates them once, not in every frame's ``finish``.

A bundle is keyed on every object its commands bind (the pipeline, which hot reload
replaces; the bind groups, which a resize, a knob or a history pair's alternation replace;
the target formats): a different key records a new bundle, so a cached bundle never binds a
stale object. While per-draw timing is on (``--gpu-profile draws``: the pass encoder is a
proxy with ``timing_draws``), commands are recorded straight into the pass, because the
proxy writes timestamps between draws and cannot see inside a bundle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import wgpu

#: Bundles kept per pass: the two parities of a history pair, with room for a knob toggled
#: back and forth, before the cache starts afresh.
KEEP = 4


class BundleCache:
    """The render bundles of one pass, keyed on what they bind.

    Args:
        device: the ``wgpu.GPUDevice``.
        label: the bundles' label (the pass name: captures show it).
        depth_read_only: the pass's depth attachment is read-only (``Sky``).

    Attributes:
        builds: bundles recorded so far (tests: a steady frame records none).
    """

    def __init__(self, device: wgpu.GPUDevice, label: str, *, depth_read_only: bool = False):
        self.device, self.label, self.depth_read_only = device, label, depth_read_only
        self._bundles: dict[Hashable, wgpu.GPURenderBundle] = {}
        self.builds = 0

    def clear(self) -> None:
        """Forget every bundle (the next frame records anew)."""
        self._bundles.clear()

    def record(
        self,
        rpass,
        key: tuple,
        commands: Callable[[object], None],
        *,
        color_formats: tuple[str, ...],
        depth_format: str | None = None,
    ) -> None:
        """Record ``commands(encoder)`` into ``rpass``: through the bundle of ``key`` (made
        on first use with these formats, which must be the pass's attachments' formats), or
        directly while ``rpass`` times draws.

        Args:
            rpass: the render pass encoder (or the per-draw timing proxy).
            key: every object ``commands`` binds, hashable (wgpu objects hash by identity).
            commands: records the pass's commands on a render pass or bundle encoder.
            color_formats, depth_format: the pass's attachment formats.
        """
        if getattr(rpass, "timing_draws", False):
            commands(rpass)
            return
        key = (key, color_formats, depth_format)
        bundle = self._bundles.get(key)
        if bundle is None:
            if len(self._bundles) >= KEEP:
                self._bundles.clear()
            enc = self.device.create_render_bundle_encoder(
                label=self.label,
                color_formats=list(color_formats),
                depth_stencil_format=depth_format,
                depth_read_only=self.depth_read_only,
                stencil_read_only=self.depth_read_only,
            )
            commands(enc)
            bundle = self._bundles[key] = enc.finish(label=self.label)
            self.builds += 1
        rpass.execute_bundles([bundle])
