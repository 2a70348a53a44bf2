"""The frame inspector: a GPU-drawn flame chart of every CPU and GPU scope.

One idea per module: ``traceload`` (files -> columnar span table, counters, flows),
``jsonstream`` (a trace's event array as a stream of decoded chunks, plain or gzip),
``spans`` (the span store on the GPU, split in chunks within the binding limit), ``select``
(compute pass: what is in view, pixel-column level of detail, picking), ``reference`` (numpy
twin of the selection), ``draw`` (one instanced draw of rounded rectangles with labels, and
the ruler), ``ruler`` (tick steps and labels), ``extras`` (counter step charts and flow
arrows as one segment draw), ``rows`` (which rows hold a span in view), ``view`` (the camera:
time range, zoom, pan, lanes, statistics, self time), ``chart`` (the render-graph passes of
one chart), ``live`` (the HUD's ``flame`` mode fed by ``engine.telemetry``), ``synthetic``
(generated traces of any size).
"""
