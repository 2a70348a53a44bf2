"""The HUD's colours (sRGB RGBA bytes), shared by every panel so that all of them read alike:
a dark panel background, a blue header, white text, grey for what matters less, red for what
is over budget or an error, yellow for a warning or a slower reading, green for a faster one."""

from __future__ import annotations

PANEL_BG = (12, 14, 22, 255)
HEADER = (120, 200, 255, 255)
TEXT = (235, 235, 235, 255)
DIM = (140, 140, 150, 255)
HOT = (255, 80, 70, 255)  # over the pass budget
SLOWER = (255, 200, 60, 255)  # a delta beyond 3 MADs, slower
FASTER = (110, 220, 120, 255)  # a delta beyond 3 MADs, faster
BAR_BG = (50, 54, 66, 255)
BAR = (90, 190, 120, 255)
ERROR = (255, 95, 85, 255)  # a log line at ERROR, the notice row
WARNING = (250, 210, 70, 255)  # a log line at WARNING
# series colours, readable on dark backgrounds: one per pass in the timeline (cycled), one
# per wedge or line in a chart
PALETTE = (
    (86, 180, 233),
    (230, 159, 0),
    (0, 158, 115),
    (240, 228, 66),
    (204, 121, 167),
    (213, 94, 0),
    (0, 114, 178),
    (170, 170, 170),
    (150, 220, 90),
    (255, 130, 130),
    (176, 160, 255),
    (96, 224, 224),
    (255, 187, 120),
    (174, 199, 232),
    (197, 176, 213),
    (247, 182, 210),
    (219, 219, 141),
    (196, 156, 148),
    (120, 140, 255),
    (255, 255, 255),
)  # 20: a standard frame with views and tools times about 17 passes

# the cull classification's pie (HUD and portal): frustum, small, occluded, visible
CULL_CLASSES = ("frustum_culled", "small_culled", "occluded", "visible")
CULL_COLORS = ((230, 90, 80), (240, 190, 60), (150, 110, 230), (90, 200, 110))
