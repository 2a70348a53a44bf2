"""Pipeline statistics: vertex / fragment / compute shader invocations and clipper primitives
out, the counts ``engine.profiling.draws`` reads per draw with ``--gpu-profile draws``.

Needs the native feature ``pipeline-statistics-query`` (Vulkan's
``VK_QUERY_TYPE_PIPELINE_STATISTICS``); without it every count reads ``None``, shown as
``n/a``. The wgpu-py 0.32 helper ``extras.begin_pipeline_statistics_query`` prints its
arguments, so the draw profiler calls the pass encoder's underlying method
(``_begin_pipeline_statistics_query``), the one the helper wraps.
"""

FEATURE = "pipeline-statistics-query"
#: Statistics collected, in the order wgpu-native writes them (ascending enum value).
STATISTICS = (
    "vertex-shader-invocations",
    "clipper-primitives-out",
    "fragment-shader-invocations",
    "compute-shader-invocations",
)
