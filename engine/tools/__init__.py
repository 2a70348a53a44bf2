"""Standard tools of a running sample (see ``engine.tool``): the profiling switch and the
frame capture. The HUD and console (``engine.debug``), the portal (``engine.portal``), the
live flame chart (a HUD panel, ``engine.inspect.live``) and the exporters (``engine.export``:
shutdown report, trace, JSON Lines) are tools too; ``engine.app.DEFAULT_TOOLS`` lists them."""
