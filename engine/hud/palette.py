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
