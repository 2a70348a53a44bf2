"""Helpers for tests that run samples the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from engine.scene.meshes import MeshData

ROOT = Path(__file__).resolve().parents[1]


def run_sample(short: str, *args: str, timeout: float = 300, env: dict | None = None):
    """Run ``python -m samples.<short> *args`` in a subprocess; return CompletedProcess."""
    e = dict(os.environ)
    e.setdefault("XDG_RUNTIME_DIR", "/tmp")
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-m", f"samples.{short}", *args],
        cwd=ROOT,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def signed_volume(mesh: MeshData) -> float:
    """Volume enclosed by a closed mesh (divergence theorem: sum of ``a · (b × c) / 6`` over
    triangles); positive when triangles are counter-clockwise seen from outside."""
    p = mesh.vertices[:, :3].astype(np.float64)[mesh.indices.reshape(-1, 3)]
    return float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0)


def face_normals(mesh: MeshData) -> np.ndarray:
    """Unit normals ``(M/3, 3)`` float64 of each triangle from its CCW winding."""
    p = mesh.vertices[:, :3].astype(np.float64)[mesh.indices.reshape(-1, 3)]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return n / np.where(length > 0, length, 1.0)
