"""Cameras: a look-at camera, ``--camera`` parsing, and deterministic camera paths.

Time is in seconds; captures use ``frame_index / 60``, so a path gives the same picture for
the same frame on every machine.
"""

from __future__ import annotations

import argparse
import bisect
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from engine.math3d import look_at, perspective_reverse_z

CAMERA_FORMAT = "EX,EY,EZ:TX,TY,TZ[:FOV_DEG]"


@dataclass
class Camera:
    """A perspective camera at ``eye`` looking at ``target`` (world units), +Y up.

    Attributes:
        eye, target: ``(3,)`` float32 world positions; must differ.
        fov_y_deg: vertical field of view in degrees, 0 < fov < 180.
        near: near-plane distance (> 0); the far plane is at infinity (reverse-Z).
    """

    eye: np.ndarray
    target: np.ndarray
    fov_y_deg: float = 60.0
    near: float = 0.1

    def __post_init__(self):
        self.eye = np.asarray(self.eye, np.float32).reshape(3)
        self.target = np.asarray(self.target, np.float32).reshape(3)

    def as_arg(self) -> str:
        """The camera as ``--camera`` takes it (``CAMERA_FORMAT``; ``parse_camera`` reads it
        back): what the telemetry session, the portal and reports show."""
        xyz = lambda v: ",".join(f"{float(c):g}" for c in v)  # noqa: E731
        return f"{xyz(self.eye)}:{xyz(self.target)}:{self.fov_y_deg:g}"

    def view(self) -> np.ndarray:
        """World→view ``(4, 4)`` float32 (right-handed, looking down -Z)."""
        return look_at(self.eye, self.target)

    def proj(self, aspect: float) -> np.ndarray:
        """Reverse-Z infinite perspective ``(4, 4)`` float32; ``aspect`` = width / height."""
        return perspective_reverse_z(self.fov_y_deg, aspect, self.near)


def parse_camera(text: str) -> Camera:
    """Parse ``"EX,EY,EZ:TX,TY,TZ[:FOV_DEG]"`` (world units, degrees) into a :class:`Camera`.

    Usable as an argparse ``type=``. Raises ``argparse.ArgumentTypeError`` with one line that
    names the expected format and what is wrong.
    """

    def bad(why: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(
            f"invalid camera {text!r}: {why}; expected {CAMERA_FORMAT}, e.g. 0,2,10:0,1,0:60"
        )

    parts = text.strip().split(":")
    if len(parts) not in (2, 3):
        raise bad(f"found {len(parts)} ':'-separated part(s), need 2 or 3")
    points = []
    for label, part in zip(("eye", "target"), parts[:2], strict=True):
        fields = part.split(",")
        if len(fields) != 3:
            raise bad(f"{label} has {len(fields)} number(s), need 3")
        try:
            xyz = np.array([float(f) for f in fields], np.float64)
        except ValueError:
            raise bad(f"{label} {part!r} is not three numbers") from None
        if not (np.isfinite(xyz).all() and (np.abs(xyz) < 1e30).all()):
            raise bad(f"{label} {part!r} is not finite (or beyond float32 range)")
        points.append(xyz.astype(np.float32))
    fov = 60.0
    if len(parts) == 3:
        try:
            fov = float(parts[2])
        except ValueError:
            raise bad(f"field of view {parts[2]!r} is not a number") from None
        if not 0.0 < fov < 180.0:
            raise bad(f"field of view {parts[2]!r} must be between 0 and 180 degrees")
    if np.linalg.norm(points[1] - points[0]) < 1e-6 * max(1.0, float(np.abs(points[0]).max())):
        raise bad("eye and target are the same point (within float32 precision)")
    return Camera(points[0], points[1], fov_y_deg=fov)


class CameraPath(ABC):
    """A deterministic camera as a function of time in seconds."""

    @abstractmethod
    def at(self, t_seconds: float) -> Camera:
        """The camera at time ``t_seconds`` (any real number; paths loop)."""


class FixedPath(CameraPath):
    """A camera that never moves (e.g. from ``--camera``)."""

    def __init__(self, camera: Camera):
        self.camera = camera

    def at(self, t_seconds: float) -> Camera:
        return Camera(self.camera.eye, self.camera.target, self.camera.fov_y_deg, self.camera.near)


class OrbitPath(CameraPath):
    """Circles ``center`` at ``distance`` (world units) and ``elevation_deg`` above the
    horizon, one turn per ``period_s`` seconds, counter-clockwise seen from above."""

    def __init__(
        self,
        center,
        distance: float,
        *,
        elevation_deg: float = 25.0,
        period_s: float = 24.0,
        fov_y_deg: float = 50.0,
        near: float = 0.1,
    ):
        self.center = np.asarray(center, np.float64).reshape(3)
        self.distance = float(distance)
        self.elevation = math.radians(elevation_deg)
        self.period_s = float(period_s)
        self.fov_y_deg = fov_y_deg
        self.near = near

    def at(self, t_seconds: float) -> Camera:
        a = 2.0 * math.pi * t_seconds / self.period_s + math.pi / 4
        r = self.distance * math.cos(self.elevation)
        offset = (r * math.sin(a), self.distance * math.sin(self.elevation), r * math.cos(a))
        return Camera(self.center + offset, self.center, self.fov_y_deg, self.near)


class WaypointPath(CameraPath):
    """Flies a closed polyline of waypoints at constant ``speed`` (world units / s), looking
    ``look_ahead`` units further along the path; corners are rounded by averaging the look
    direction over a window, so turns pan smoothly.

    Args:
        points: ``(K, 3)`` waypoints, K >= 2, visited in order and back to the first.
        speed: world units per second (> 0).
        look_ahead: distance along the path to the look-at point (> 0).
        target_drop: how far below the look-ahead point the camera looks (world units).
        start: distance along the path at t = 0.
    """

    def __init__(
        self,
        points,
        *,
        speed: float,
        look_ahead: float,
        target_drop: float = 0.0,
        start: float = 0.0,
        fov_y_deg: float = 60.0,
        near: float = 0.1,
    ):
        p = np.asarray(points, np.float64)
        if p.ndim != 2 or p.shape[1] != 3 or len(p) < 2 or not np.isfinite(p).all():
            raise ValueError(f"points: expected (K >= 2, 3) finite waypoints, got {p.shape}")
        if speed <= 0 or look_ahead <= 0:
            raise ValueError("speed and look_ahead must be > 0")
        self.points = p
        seg = np.linalg.norm(np.roll(p, -1, axis=0) - p, axis=1)
        self.cum = np.concatenate(([0.0], np.cumsum(seg)))
        self.length = float(self.cum[-1])
        self.speed, self.look_ahead, self.drop = speed, look_ahead, target_drop
        self.start, self.fov_y_deg, self.near = start, fov_y_deg, near
        self._window = (None, None)  # (look_ahead, the eye's averaging offsets)
        self._cum, self._pts = self.cum.tolist(), p.tolist()  # plain floats for ``at``

    def point(self, s: float) -> np.ndarray:
        """Position ``(3,)`` float64 at arc length ``s`` (wraps around the loop)."""
        s = s % self.length
        i = int(np.searchsorted(self.cum, s, side="right")) - 1
        i = min(i, len(self.points) - 1)
        a, b = self.points[i], self.points[(i + 1) % len(self.points)]
        f = (s - self.cum[i]) / max(self.cum[i + 1] - self.cum[i], 1e-12)
        return a + (b - a) * f

    def _mean_point(self, arcs: list[float]) -> list[float]:
        """Mean of ``point(s)`` over the arc lengths ``arcs``, on plain floats (``point``'s
        and ``np.mean``'s arithmetic; the camera is placed every frame)."""
        cum, pts, n = self._cum, self._pts, len(self._pts)
        sx = sy = sz = 0.0
        for s in arcs:
            s %= self.length
            i = min(bisect.bisect_right(cum, s) - 1, n - 1)
            (ax, ay, az), (bx, by, bz) = pts[i], pts[(i + 1) % n]
            f = (s - cum[i]) / max(cum[i + 1] - cum[i], 1e-12)
            sx, sy, sz = (
                sx + (ax + (bx - ax) * f),
                sy + (ay + (by - ay) * f),
                sz + (az + (bz - az) * f),
            )
        k = len(arcs)
        return [sx / k, sy / k, sz / k]

    def at(self, t_seconds: float) -> Camera:
        s = self.start + self.speed * t_seconds
        # Eye: average of a short window so corners become arcs, not kinks.
        if self._window[0] != self.look_ahead:
            w = 0.35 * self.look_ahead
            self._window = (self.look_ahead, np.linspace(-w, w, 9).tolist())
        window = self._window[1]
        eye = self._mean_point([s + d for d in window])
        ahead = self._mean_point([(s + self.look_ahead) + d for d in window])
        ahead[1] -= self.drop
        return Camera(eye, ahead, self.fov_y_deg, self.near)


# glfw key codes (glfw itself is never imported by headless code)
KEY_W, KEY_A, KEY_S, KEY_D, KEY_Q, KEY_E = 87, 65, 83, 68, 81, 69
KEY_RIGHT, KEY_LEFT, KEY_DOWN, KEY_UP, KEY_LEFT_SHIFT = 262, 263, 264, 265, 340


WALK_SPEED, DRIVE_SPEED = 1.5, 15.0  # metres per second (glTF and the city are in metres)


def fly_speed(extent) -> float:
    """Speed for :class:`FlyCamera` in world units per second: a tenth of the diagonal of
    ``extent`` (``(min xyz, max xyz)``) per second, kept between walking pace (1.5 m/s, a
    house) and city driving pace (15 m/s), so two seconds of W never leave the scene behind
    and a far-away outlier does not make it a rocket. Shift is 4x that."""
    lo, hi = (np.asarray(v, np.float64) for v in extent)
    diag = float(np.linalg.norm(hi - lo))
    return float(np.clip(diag / 10.0, WALK_SPEED, DRIVE_SPEED)) if np.isfinite(diag) else WALK_SPEED


class FlyCamera:
    """A free camera driven by held keys: W/S forward/back, A/D left/right, Q/E down/up,
    arrow keys turn (yaw, pitch), Shift moves four times faster.

    Args:
        start: the camera to start from (position, direction, field of view, near plane).
        speed: world units per second; turning is 60 degrees per second.
    """

    TURN_RAD_PER_S = math.radians(60.0)

    def __init__(self, start: Camera, speed: float):
        self.eye = np.asarray(start.eye, np.float64).copy()
        d = np.asarray(start.target, np.float64) - self.eye
        d /= np.linalg.norm(d)
        self.yaw = math.atan2(d[0], -d[2])  # 0 looks down -Z
        self.pitch = math.asin(float(np.clip(d[1], -1.0, 1.0)))
        self.speed, self.fov_y_deg, self.near = speed, start.fov_y_deg, start.near

    def forward(self) -> np.ndarray:
        cp = math.cos(self.pitch)
        return np.array([math.sin(self.yaw) * cp, math.sin(self.pitch), -math.cos(self.yaw) * cp])

    def step(self, dt: float, held) -> Camera:
        """Advance by ``dt`` seconds with ``held(key) -> bool``; return the camera."""
        turn = self.TURN_RAD_PER_S * dt
        self.yaw += turn * (held(KEY_RIGHT) - held(KEY_LEFT))
        limit = math.radians(89.0)
        self.pitch = min(max(self.pitch + turn * (held(KEY_UP) - held(KEY_DOWN)), -limit), limit)
        f = self.forward()
        right = np.array([math.cos(self.yaw), 0.0, math.sin(self.yaw)])
        move = f * (held(KEY_W) - held(KEY_S)) + right * (held(KEY_D) - held(KEY_A))
        move[1] += held(KEY_E) - held(KEY_Q)
        fast = 4.0 if held(KEY_LEFT_SHIFT) else 1.0
        self.eye += move * self.speed * fast * dt
        return Camera(
            self.eye.astype(np.float32),
            (self.eye + f).astype(np.float32),
            fov_y_deg=self.fov_y_deg,
            near=self.near,
        )
