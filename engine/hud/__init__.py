"""The debug overlay primitive every on-screen tool draws with: a character grid
(``grid.DebugOverlay``: text, bars, pies, lines), the baked 8x8 font atlas (``font8x8``) and
the render pass that draws the grid over the frame (``debug_overlay.DebugOverlayPass``).
The HUD (``engine.hud.service``), the flame inspector (``engine.flamechart``) and samples use it."""
