"""Shadow shimmer, measured: the fraction of a static picture's pixels that change when only
the camera the shadow cascades are fitted to moves, by steps smaller than a shadow texel.

Shimmer is static shadow edges crawling as the camera moves: each frame refits the light's
box, so the map's texel grid slides over the scene and every shadow edge is resampled. A
texel-snapped fit moves the box by whole texels only (``engine.passes.shadow.fit_sun``), so
the same caster lands on the same texels and the picture does not change. To see that and
nothing else, the picture's own camera stays fixed (no parallax, no culling change), TAA is
off (no jitter, no history), the exposure is fixed and the scene is static; only
``StandardFrame.fit_shadows_to`` moves. Every step's frame is compared with the one before,
byte for byte on the 8-bit output: with snapping the goal is 0, without it the figure is
the shimmer a user would see (o3de#5607, bevy#4253 ask for it measured rather than filmed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.scene.camera import Camera


@dataclass(frozen=True)
class ShimmerResult:
    """Attributes:
    changed: per step, the fraction of the output's pixels (0..1) whose colour differs from
        the previous step's frame in any channel.
    still: the same fraction between two frames with the fitted camera not moved (the
        measure's own floor: must be 0 for the figures to mean anything).
    step: the fitted camera's move per step, world units; ``texel``: cascade 0's shadow
        texel size, world units (``step / texel`` is the step in texels).
    """

    changed: tuple[float, ...]
    still: float
    step: float
    texel: float

    @property
    def mean(self) -> float:
        """Mean fraction of pixels changed per step."""
        return float(np.mean(self.changed)) if self.changed else 0.0

    @property
    def worst(self) -> float:
        """The largest fraction of one step."""
        return max(self.changed, default=0.0)


def moved(camera: Camera, offset) -> Camera:
    """``camera`` translated by ``offset`` (3 world units), looking the same way."""
    d = np.asarray(offset, np.float32)
    return Camera(camera.eye + d, camera.target + d, camera.fov_y_deg, camera.near)


def lateral(camera: Camera) -> np.ndarray:
    """The default direction of the steps: the camera's right (unit, horizontal; a strafe).
    The cascades' boxes slide (along both of the light's axes unless the sun is overhead a
    street) while each point's view depth, and so its cascade and blend weight, stays: what
    changes is only where the texel grid lies, the shimmer. A step along the view also moves
    the blend bands over the ground, a transition snapping is not meant to hide."""
    fwd = np.asarray(camera.target, np.float64) - np.asarray(camera.eye, np.float64)
    fwd[1] = 0.0
    fwd /= max(np.linalg.norm(fwd), 1e-12)
    return np.array([-fwd[2], 0.0, fwd[0]])


def measure_shimmer(
    gpu,
    scene,
    camera: Camera,
    settings,
    *,
    size: tuple[int, int] = (160, 90),
    steps: int = 8,
    step_texels: float = 0.37,
    direction=None,
) -> ShimmerResult:
    """Render ``scene`` from the fixed ``camera`` at ``size`` and move the camera the
    cascades are fitted to by ``steps`` steps of ``step_texels`` of cascade 0's texel (the
    finest) along ``direction`` (default :func:`lateral`); return the fraction of pixels each
    step changes.

    Args:
        gpu: an ``engine.gpu.Gpu``; ``scene``: a static ``Scene``.
        settings: the ``FrameSettings`` to measure (cascades, ``shadow_snap``, size...);
            TAA is turned off and a fixed exposure used whatever they say.
    Raises:
        ValueError: ``steps`` < 1 or ``step_texels`` not in (0, 1) (not sub-texel).
    """
    from engine.frame import StandardFrame
    from engine.graph import RenderGraph
    from engine.loop import FrameLoop
    from engine.surfaces import OffscreenTarget

    if steps < 1 or not 0.0 < step_texels < 1.0:
        raise ValueError(f"shimmer: steps >= 1 and 0 < step_texels < 1, got {steps}, {step_texels}")
    exposure = settings.exposure if settings.exposure != "auto" else 1.0
    settings = replace(settings, taa=False, exposure=exposure)
    target = OffscreenTarget(gpu.device, size)
    graph = RenderGraph(gpu.device, output_format=target.format, size=size)
    frame = StandardFrame(gpu, graph, scene, settings)
    loop = FrameLoop(gpu, graph)

    def render(fitted: Camera, frames: int = 1) -> np.ndarray:
        frame.fit_shadows_to(fitted)
        for _ in range(frames):
            loop.frame(target.view, 0.0, lambda ctx: frame.update(ctx, camera))
        return target.read_rgba()[:, :, :3]

    first = render(camera, 3)  # culling converged, every lazy pipeline made
    still = _changed(first, render(camera))
    texel = frame.res.cascade_fit.cascades[0].texel_world
    step = step_texels * texel
    d = lateral(camera) if direction is None else np.asarray(direction, np.float64)
    d = d / np.linalg.norm(d)
    last, changed = first, []
    for k in range(1, steps + 1):
        now = render(moved(camera, d * (k * step)))
        changed.append(_changed(last, now))
        last = now
    return ShimmerResult(tuple(changed), still, step, texel)


def _changed(a: np.ndarray, b: np.ndarray) -> float:
    """Fraction of pixels whose colour differs in any channel."""
    return float((a != b).any(axis=2).mean())
