"""The frame inspector: a GPU-drawn flame chart of every CPU and GPU scope.

One idea per module: ``traceload`` (files -> columnar span table), ``spans`` (the span store
on the GPU), ``select`` (compute pass: what is in view, pixel-column level of detail,
picking), ``reference`` (numpy twin of the selection), ``draw`` (one instanced draw of
rounded rectangles with labels), ``view`` (the camera: time range, zoom, pan, statistics),
``chart`` (the three render-graph passes of one chart), ``live`` (the HUD's ``flame`` mode
fed by ``engine.telemetry``), ``synthetic`` (generated traces of any size).
"""
