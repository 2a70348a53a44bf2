"""Debug lines (engine/tools/lines/passes.py, engine/tools/lines/tool.py): segments land on the
pixels numpy projects them to, the depth test hides what is behind, batches last as long as
asked, and the frozen camera's culled spheres agree with the GPU culler's counters."""

from __future__ import annotations

import numpy as np

from engine.scene.camera import Camera
from engine.settings import FrameSettings
from engine.tools.lines.passes import DebugLines, box_corners
from engine.tools.lines.tool import LinesTool
from tests.frame_harness import Harness, random_scene
from tests.test_views import CAMERA, SIZE, ground_scene
from tests.tool_fakes import make_ctx

GREEN = (0.0, 1.0, 0.0)


class Lined:
    def __init__(self, gpu, scene=None, settings=None):
        self.h = Harness(gpu, scene or ground_scene(), SIZE, settings or FrameSettings(taa=False))
        self.ctx = make_ctx(gpu, self.h.graph)
        self.tool = self.ctx.install(LinesTool())
        self.lines = self.tool.lines
        self.t = 0.0

    def render(self, frames=1, dt=0.0, camera=CAMERA):
        def update(ctx):
            self.h.frame.update(ctx, camera)
            for fn in self.ctx.updates:
                fn(ctx)

        for _ in range(frames):
            self.h.loop.frame(self.h.target.view, self.t, update)
            self.t += dt
        return self.h.target.read_rgba()[:, :, :3].astype(int)


def project(p) -> tuple[float, float]:
    w, h = SIZE
    clip = CAMERA.proj(w / h).astype(np.float64) @ CAMERA.view() @ np.append(p, 1.0)
    ndc = clip[:3] / clip[3]
    return (ndc[0] + 1) / 2 * w, (1 - ndc[1]) / 2 * h


def green(rgb) -> np.ndarray:
    return (rgb[..., 1] > 200) & (rgb[..., 0] < 60) & (rgb[..., 2] < 60)


def test_an_on_top_line_lands_where_numpy_projects_it(gpu):
    v = Lined(gpu)
    a, b = np.array([-3.0, 1.0, 2.0]), np.array([3.0, 1.0, 2.0])
    v.lines.line(a, b, GREEN, on_top=True)
    hit = green(v.render())
    (x0, y0), (x1, y1) = project(a), project(b)
    assert abs(y0 - y1) < 1e-6  # horizontal on screen
    rows = np.flatnonzero(hit.any(axis=1))
    cols = np.flatnonzero(hit.any(axis=0))
    assert set(rows) <= {int(np.floor(y0)) - 1, int(np.floor(y0)), int(np.floor(y0)) + 1}
    assert abs(cols.min() - x0) <= 1.0 and abs(cols.max() + 1 - x1) <= 1.0
    assert hit.sum() >= (x1 - x0) - 2  # a continuous line, one pixel thick


def test_the_depth_test_hides_a_line_behind_the_box_unless_on_top(gpu):
    v = Lined(gpu)
    a, b = np.array([-0.3, 0.5, -0.8]), np.array([0.3, 0.5, -0.8])  # behind the unit box
    v.lines.line(a, b, GREEN)
    assert green(v.render()).sum() == 0
    v.lines.line(a, b, GREEN, on_top=True)
    assert green(v.render()).sum() > 0
    v.lines.line(a + (0, 0, 1.6), b + (0, 0, 1.6), GREEN)  # in front of the box
    assert green(v.render()).sum() > 0


def test_one_frame_and_kept_batches_and_nothing_when_empty(gpu):
    v = Lined(gpu)
    v.render(1)
    bare = v.h.graph.pass_names()
    assert "Lines" not in bare and v.tool.pass_.count == 0
    v.lines.box((-1, 0, -1), (1, 2, 1), GREEN)  # this frame only: 12 segments
    v.lines.sphere((0, 3, 0), 1.0, GREEN, seconds=0.5)  # 3 circles of 24
    v.render(1, dt=0.2)
    assert v.tool.pass_.count == 12 + 72 and v.h.graph.pass_names() == [*bare, "Lines"]
    v.render(2, dt=0.2)  # t = 0.2, 0.4: the sphere stays
    assert v.tool.pass_.count == 72
    v.render(1, dt=0.2)  # t = 0.6: gone
    assert v.tool.pass_.count == 0 and v.h.graph.pass_names() == bare
    assert "0 segments" in v.ctx.commands.execute("lines").text


def test_box_corners_and_edges():
    c = box_corners((0, 0, 0), (1, 2, 3))
    assert c.shape == (8, 3) and tuple(c[7]) == (1, 2, 3) and tuple(c[0]) == (0, 0, 0)
    d = DebugLines()
    d.box((0, 0, 0), (1, 2, 3))
    rows = d.take(0.0)
    lengths = np.linalg.norm(rows[:, 4:7] - rows[:, 0:3], axis=1)
    assert sorted(lengths.round(6).tolist()) == [1.0] * 4 + [2.0] * 4 + [3.0] * 4


def test_frozen_camera_culled_classes_match_the_gpu_counters(gpu):
    v = Lined(gpu, random_scene(150, seed=5), FrameSettings(taa=False))
    frozen = Camera((0.0, 3.0, 18.0), (0.0, 2.0, 0.0), fov_y_deg=40.0, near=0.1)
    v.h.frame.freeze_culling(True, camera=frozen)
    v.render(3)
    gpu_counts = v.h.counters()
    for _ in range(5):  # the culler's classes are read back asynchronously
        if v.tool.frozen is not None:
            break
        v.h.loop.drain()
        v.render(1)
    assert v.tool.frozen == {
        "frustum": gpu_counts["frustum_culled"],
        "small": gpu_counts["small_culled"],
        "occluded": gpu_counts["occluded"],
    }
    assert v.tool.frozen["frustum"] > 10
    n = min(sum(v.tool.frozen.values()), 400)
    assert v.tool.pass_.count == n * 72 + 12 + 12  # the spheres, the sun's volume, frustum
    assert v.h.frame.res.frustum_lines(("rgba16float",)) is None  # not drawn twice
    v.tool.close()
    assert v.h.frame.res.frustum_lines(("rgba16float",)) is not None  # the frame's own again
