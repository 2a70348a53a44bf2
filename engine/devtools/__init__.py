"""Developer tools behind the ``lantern`` console command (``engine.devtools.cli``): ablation,
benchmarks, the frame inspector, run comparison. ``tools/*.py`` in a checkout are thin shims."""
