"""s06: GPU particles: emitted, simulated, compacted and sorted in compute, one indirect draw.

A fountain of paint drops at a street crossing of the city: emitted, moved (gravity, drag
towards the air's velocity: a steady wind plus a divergence-free curl field), bounced on the
ground, aged and killed, all on the GPU, from a fixed pool of particles with a dead list and
two alive lists (the "dead/alive list" design of GPU particle systems: G. Thomas, "Compute-based
GPU Particle Systems", GDC 2014). Four passes, inserted after ``Transparent``:

    Particles.Reset     transfer  last frame's counters to the readback ring; counters and sort
                                  keys cleared
    Particles.Simulate  compute   begin, emit, simulate, finish (s06_particles_sim.wgsl): the
                                  alive list compacted, the drawn ones' view depths and slots
                                  appended to the sort's keys and values
    Particles.Sort      compute   back to front: the variant's GPU sort (engine/gpu_sort.py)
    Particles           render    one indirect draw of camera-facing sphere impostors, lit by
                                  the sun through the frame's shadow map and by the sky,
                                  alpha-blended into frame.hdr, depth tested against frame.depth

Alpha-blended, not additive: the drops are lit and shadowed surfaces that hide what is behind
them (an additive particle only adds light: right for sparks and fire, wrong for paint, dust
or smoke), so they must be drawn farthest first, which is what the sort is for. They are drawn
after the frame's own transparent instances and not sorted with them; they write no depth,
motion or normals (TAA's history clamp keeps their trails short), and cast no shadow.

Variants: the sort, ``bitonic`` (the engine's ``GpuSort``, O(n log^2 n), over the capacity
rounded up to a power of two) and ``radix`` (``RadixSort``: a stable LSD radix sort, O(n), 32
dispatches). Both sort every particle slot (the drawn ones and padding), so their cost follows
the capacity, ``--particles``; ``--gpu-profile`` prints each pass's cost at shutdown and
``tools/bench.py particles`` compares the variants per particle count.

The counter block ``particles`` (alive, emitted, killed, culled, drawn, refused) is read back
a few frames late without stalling and shown by the HUD (``--overlay cull``), telemetry, the
trace, the portal and the shutdown report, like the culler's.

    python -m samples.s06 --gpu-profile --overlay all
    python -m samples.s06 --variant radix --particles 262144
    python -m samples.s06 --gpu-profile --variant-cycle 30 --telemetry run.jsonl   # compare
"""

from __future__ import annotations

import logging
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import wgpu

from engine.app import Sample, main
from engine.commands import Float, Int
from engine.counters import CounterReadback, counter_names
from engine.frame import StandardFrame
from engine.gpu_sort import GpuSort, RadixSort, radix_size, sort_size
from engine.graph import ComputePass, RenderPass, TransferPass
from engine.knobs import Knob, add_knob_arguments
from engine.passes.resources import DEPTH, DEPTH_FORMAT, SHADOW_MAP
from engine.profiling.draws import draw_label
from engine.scene.camera import CAMERA_FORMAT, Camera, FixedPath, parse_camera
from engine.scene.procedural import city
from engine.settings import FRAME_KNOBS, settings_from_args
from engine.shader_registry import compute_pipelines, shader_pipeline

log = logging.getLogger("lantern")
HERE = Path(__file__).resolve().parent
SIM_WGSL, DRAW_WGSL = HERE / "s06_particles_sim.wgsl", HERE / "s06_particles_draw.wgsl"
VARIANTS = ("bitonic", "radix")
CAPACITY = 16_384  # default particle pool
MAX_PARTICLES = 1 << 22  # 4,194,304 x 32 bytes: the pool fills a 128 MiB storage binding
CITY = 3000  # instances of the procedural city around the fountain
#: In the street along x = 27 m, looking at the crossing (27, 0, 27) from 18 m away.
CAMERA = Camera(np.array([30.0, 2.5, 45.0]), np.array([26.5, 3.2, 27.0]), 50.0)
WG = 64  # s06_particles_sim.wgsl's workgroup size
MAX_DT = 0.1  # s: a longer frame (a window dragged, a breakpoint) is simulated as this

# graph buffers: the pool, its lists, the persistent state, the indirect arguments, the
# counter block and the sort's keys and values
POOL, LISTS, STATE = "particles.pool", "particles.lists", "particles.state"
ARGS, COUNTERS = "particles.args", "particles.counters"
KEYS, VALUES = "particles.keys", "particles.values"
COUNTER_NAMES = counter_names(SIM_WGSL, "C_")  # alive, emitted, killed, culled, drawn, refused
ARGS_DRAW_OFFSET = 32  # bytes: the draw's arguments in particles.args (Args.draw)

WIND = Knob("wind", Float(0.0, 20.0, what="a wind speed in m/s", metavar="M/S"), 1.5,
            "steady wind speed along +x (m/s)")  # fmt: skip
SWIRL = Knob("swirl", Float(0.0, 10.0, what="a speed in m/s", metavar="M/S"), 1.5,
             "the curl field's speed (m/s): eddies in the wind")  # fmt: skip
EMISSION = Knob("emission", Float(0.0, 4.0, what="a multiple of the refill rate", metavar="X"),
                0.9, "emission rate as a multiple of capacity / mean lifetime (above 1 the "
                "pool runs full and emissions are refused)")  # fmt: skip


def pcg_hash(v: int) -> int:
    """The PCG hash of a u32 (Jarzynski & Olano 2020, "Hash Functions for GPU Rendering",
    JCGT 9(3)), as s06_particles_common.wgsl's ``pcg``: hashes the seed for the uniform."""
    s = (v * 747796405 + 2891336453) & 0xFFFFFFFF
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & 0xFFFFFFFF
    return (w >> 22) ^ w


@dataclass(frozen=True)
class ParticleConfig:
    """What the fountain does, in metres and seconds (the ``Sim`` uniform's fields).

    Attributes:
        emitter: the centre of the emitting disc (world, m); ``emitter_radius``: its radius.
        launch: launch velocity (m/s); ``spread``: m/s, a drop is also thrown outward from
            the disc's centre at 0.8 to 1 times it and up or down by up to a tenth of it.
        gravity: m/s^2, down. ``drag``: 1/s, how fast a drop takes the air's velocity.
        lifetime: ``(shortest, span)`` s: lifetimes are ``shortest + span * k / 256``, k in
            0..255 from the particle's hash (exact in float32).
        radius: ``(smallest, span)`` m of the drops.
        restitution: the part of the downward speed kept in a bounce; ``friction``: of the
            sliding speed.
        swirl_frequency: 1/m, the curl field's spatial frequency. ``ground``: the ground's y.
        seed: the random stream: the same seed emits the same particles.
    """

    emitter: tuple[float, float, float] = (27.0, 0.0, 27.0)  # the crossing nearest the origin
    emitter_radius: float = 0.35
    launch: tuple[float, float, float] = (0.0, 11.0, 0.0)
    spread: float = 2.0
    gravity: float = 9.81
    drag: float = 0.35
    lifetime: tuple[float, float] = (2.0, 1.0)
    radius: tuple[float, float] = (0.035, 0.035)
    restitution: float = 0.45
    friction: float = 0.8
    swirl_frequency: float = 0.35
    ground: float = 0.0
    seed: int = 0

    @property
    def mean_lifetime(self) -> float:
        """s: ``shortest + span * 127.5 / 256``."""
        return self.lifetime[0] + self.lifetime[1] * 127.5 / 256.0


class ParticleSystem:
    """The particles' GPU buffers (graph buffers ``particles.*``), their uniform, both sorts
    and the counter readback; the passes read everything from here.

    Args:
        res: the standard frame's ``FrameResources``.
        capacity: particles in the pool (1..``MAX_PARTICLES``).
        config: the fountain (``ParticleConfig``).
        forces: returns ``(wind m/s, swirl m/s, emission multiple)`` each frame (the knobs).

    Attributes:
        capacity, config, sorts (variant -> ``GpuSort`` / ``RadixSort`` over the shared
        ``keys`` / ``values``), readback (the ``CounterReadback`` of block ``particles``),
        sim (the ``Sim`` uniform), parity (which alive list is incoming), time (the
        simulation's time, s).

    Raises:
        ValueError: a capacity outside 1..``MAX_PARTICLES``.
    """

    def __init__(self, res, capacity: int, config: ParticleConfig,
                 forces: Callable[[], tuple[float, float, float]]):  # fmt: skip
        if not 1 <= capacity <= MAX_PARTICLES:
            raise ValueError(f"particles: expected 1 to {MAX_PARTICLES:,}, got {capacity:,}")
        self.res, self.capacity, self.config, self.forces = res, capacity, config, forces
        d, g = res.device, res.graph
        self.device = d
        b = wgpu.BufferUsage
        rw = b.STORAGE | b.COPY_DST | b.COPY_SRC  # COPY_SRC: tests and tools read them
        n = max(sort_size(capacity), radix_size(capacity))  # both sorts over one key buffer
        self.pool = g.create_buffer(POOL, size=32 * capacity, usage=rw)
        self.lists = g.create_buffer(LISTS, size=12 * capacity, usage=rw)
        self.state = g.create_buffer(STATE, size=32, usage=rw)
        self.args = g.create_buffer(ARGS, size=48, usage=rw | b.INDIRECT)
        self.counters = g.create_buffer(COUNTERS, size=4 * len(COUNTER_NAMES), usage=rw)
        self.keys = g.create_buffer(KEYS, size=4 * n, usage=rw)
        self.values = g.create_buffer(VALUES, size=4 * n, usage=rw)
        g.import_resource(POOL, LISTS, STATE)  # filled here, then carried from frame to frame
        self.sim = d.create_buffer(label="particles sim", size=112, usage=b.UNIFORM | b.COPY_DST)
        self.sorts = {
            "bitonic": GpuSort(d, capacity, descending=True, keys=self.keys, values=self.values),
            "radix": RadixSort(d, capacity, descending=True, keys=self.keys, values=self.values),
        }
        self.readback = CounterReadback(d, "particles", COUNTER_NAMES)
        g.add_readback(self.readback)
        self.seed_hash = pcg_hash(config.seed & 0xFFFFFFFF)
        self.reset()

    def reset(self) -> None:
        """Every particle dead: the dead list holds every slot, no alive list, serial 0."""
        q = self.device.queue
        q.write_buffer(self.lists, 0, np.arange(self.capacity, dtype=np.uint32)[::-1].tobytes())
        q.write_buffer(self.state, 0, struct.pack("<8I", self.capacity, *[0] * 7))
        self.parity, self.time, self._owed = 0, 0.0, 0.0

    def rate(self) -> float:
        """Particles asked for per second: the emission knob x capacity / mean lifetime."""
        return self.forces()[2] * self.capacity / self.config.mean_lifetime

    def step_bytes(self, dt: float, time: float) -> bytes:
        """The ``Sim`` uniform of one step of ``dt`` seconds ending at ``time``; counts the
        emissions owed (a fraction carried to the next step) and flips the alive lists."""
        c = self.config
        wind, swirl, _ = self.forces()
        self._owed += self.rate() * dt
        emit = min(int(self._owed), self.capacity)
        self._owed -= int(self._owed)
        data = struct.pack(
            "<24f4I",
            *c.emitter, c.emitter_radius,
            *c.launch, c.spread,
            wind, 0.0, 0.0, swirl,
            dt, c.drag, c.gravity, time,
            *c.lifetime, c.restitution, c.friction,
            *c.radius, c.swirl_frequency, c.ground,
            emit, self.capacity, self.seed_hash, self.parity,
        )  # fmt: skip
        self.parity ^= 1
        return data

    def record_step(self, cpass, pipes, groups) -> None:
        """The step's four dispatches (the uniform written for it)."""
        args = self.args
        for name in ("begin", "emit", "simulate", "finish"):
            draw_label(cpass, name)
            cpass.set_pipeline(pipes[name])
            cpass.set_bind_group(0, groups[0])
            if name in ("begin", "finish"):
                cpass.set_bind_group(1, groups[1])
                cpass.dispatch_workgroups(1, 1, 1)
            else:
                cpass.dispatch_workgroups_indirect(args, 0 if name == "emit" else 12)


class ParticleResetPass(TransferPass):
    """``Particles.Reset``: last frame's counters copied to the readback ring, then the
    counters and the sort keys cleared (0: the padding that sorts last, descending)."""

    writes = (COUNTERS, KEYS)

    def __init__(self, system: ParticleSystem, name: str = "Particles.Reset"):
        super().__init__(name)
        self.system, self._last = system, None

    def record(self, ctx, encoder) -> None:
        s = self.system
        if self._last is not None:
            s.readback.record_copy(encoder, s.counters, self._last)
        encoder.clear_buffer(s.counters)
        encoder.clear_buffer(s.keys)
        self._last = ctx.frame_index


class ParticleSimulatePass(ComputePass):
    """``Particles.Simulate``: one step of ``ctx.time`` minus the last step's time (at most
    ``MAX_DT``), four dispatches (begin, emit, simulate, finish: s06_particles_sim.wgsl)."""

    reads = (POOL, LISTS, STATE, COUNTERS, KEYS)
    writes = (POOL, LISTS, STATE, ARGS, COUNTERS, KEYS, VALUES)

    def __init__(self, system: ParticleSystem, name: str = "Particles.Simulate"):
        super().__init__(name)
        self.system = s = system
        d, c = system.device, wgpu.ShaderStage.COMPUTE
        uniform, storage = {"type": "uniform"}, {"type": "storage"}
        g0 = d.create_bind_group_layout(
            label=f"{name} 0",
            entries=[{"binding": i, "visibility": c, "buffer": uniform if i < 2 else storage}
                     for i in range(8)],
        )  # fmt: skip
        g1 = d.create_bind_group_layout(
            label=f"{name} 1", entries=[{"binding": 0, "visibility": c, "buffer": storage}]
        )
        with_args = d.create_pipeline_layout(bind_group_layouts=[g0, g1])
        plain = d.create_pipeline_layout(bind_group_layouts=[g0])  # args read as indirect

        def layout(entry: str):
            return with_args if entry in ("begin", "finish") else plain

        def make(m):
            entries = ("begin", "emit", "simulate", "finish")
            return compute_pipelines(d, m, entries, label=name, layout=layout)

        self.shader = shader_pipeline(d, SIM_WGSL, make, label=name)
        buffers = (s.res.view_uniform, s.sim, s.pool, s.state, s.counters, s.lists, s.keys,
                   s.values)  # fmt: skip
        self.groups = (
            d.create_bind_group(layout=g0, entries=[
                {"binding": i, "resource": {"buffer": buf}} for i, buf in enumerate(buffers)]),
            d.create_bind_group(layout=g1, entries=[
                {"binding": 0, "resource": {"buffer": s.args}}]),
        )  # fmt: skip

    def record(self, ctx, cpass) -> None:
        s = self.system
        dt = min(max(ctx.time - s.time, 0.0), MAX_DT)
        s.time = ctx.time
        s.device.queue.write_buffer(s.sim, 0, s.step_bytes(dt, ctx.time))
        s.record_step(cpass, self.shader.get(), self.groups)

    def prewarm(self, seconds: float, step: float = 1.0 / 30.0) -> int:
        """Run the simulation for ``seconds`` before the first frame (steps of ``step`` s,
        one submit each, ending at time 0), so a run starts with the fountain going.
        Returns the steps run."""
        s, d = self.system, self.system.device
        steps = math.ceil(seconds / step) if seconds > 0 else 0
        for i in range(steps):
            t = (i + 1 - steps) * step
            d.queue.write_buffer(s.sim, 0, s.step_bytes(step, t))
            enc = d.create_command_encoder(label="particles prewarm")
            enc.clear_buffer(s.counters)
            cpass = enc.begin_compute_pass(label="particles prewarm")
            s.record_step(cpass, self.shader.get(), self.groups)
            cpass.end()
            d.queue.submit([enc.finish()])
        s.time = 0.0
        return steps


class ParticleSortPass(ComputePass):
    """``Particles.Sort``: the drawn particles' keys (view depths) sorted descending, their
    slots carried along, by the sort of ``variant`` (``VARIANTS``)."""

    reads = (KEYS, VALUES)
    writes = (KEYS, VALUES)

    def __init__(self, system: ParticleSystem, name: str = "Particles.Sort"):
        super().__init__(name)
        self.system, self.variant = system, VARIANTS[0]

    def record(self, ctx, cpass) -> None:
        self.system.sorts[self.variant].record(cpass)


class ParticleDrawPass(RenderPass):
    """``Particles``: one ``draw_indirect`` of 6 vertices per drawn particle, in sorted order,
    alpha-blended into the frame's colour (``frame.hdr``, the output without post), depth
    tested against ``frame.depth`` read-only; samples ``shadow.map`` while shadows are on."""

    def __init__(self, system: ParticleSystem, name: str = "Particles"):
        super().__init__(name)
        self.system = system
        d = system.device
        vf = wgpu.ShaderStage.VERTEX | wgpu.ShaderStage.FRAGMENT
        v, f = wgpu.ShaderStage.VERTEX, wgpu.ShaderStage.FRAGMENT
        ro = {"type": "read-only-storage"}
        self.layout = d.create_bind_group_layout(
            label=name,
            entries=[
                {"binding": 0, "visibility": vf, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": vf, "buffer": {"type": "uniform"}},
                {"binding": 2, "visibility": v, "buffer": ro},
                {"binding": 3, "visibility": v, "buffer": ro},
                {"binding": 4, "visibility": f, "texture": {"sample_type": "depth"}},
                {"binding": 5, "visibility": f, "sampler": {"type": "comparison"}},
            ],
        )
        self.sampler = d.create_sampler(
            mag_filter="linear", min_filter="linear", compare="greater-equal"
        )  # reverse-Z: lit where the receiver is nearer the sun than the caster
        self._pipelines: dict = {}  # colour format -> shader handle
        self._group = None

    @property
    def reads(self) -> tuple[str, ...]:
        res = self.system.res
        shadow = (SHADOW_MAP,) if res.settings.shadows else ()
        return (POOL, VALUES, ARGS, DEPTH, *shadow, res.color_name())

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.system.res.color_name(),)

    def pipeline(self, fmt: str):
        """The pipeline for colour format ``fmt`` (made on first use, hot-reloadable)."""
        handle = self._pipelines.get(fmt)
        if handle is None:
            d = self.system.device
            layout = d.create_pipeline_layout(bind_group_layouts=[self.layout])
            blend = {
                "color": {"src_factor": "src-alpha", "dst_factor": "one-minus-src-alpha",
                          "operation": "add"},
                "alpha": {"src_factor": "one", "dst_factor": "one-minus-src-alpha",
                          "operation": "add"},
            }  # fmt: skip

            def make(m):
                return d.create_render_pipeline(
                    label=self.name, layout=layout,
                    vertex={"module": m, "entry_point": "vs_main"},
                    primitive={"topology": "triangle-list"},
                    depth_stencil={"format": DEPTH_FORMAT, "depth_write_enabled": False,
                                   "depth_compare": "greater"},  # reverse-Z
                    fragment={"module": m, "entry_point": "fs_main",
                              "targets": [{"format": fmt, "blend": blend}]},
                )  # fmt: skip

            handle = self._pipelines[fmt] = shader_pipeline(d, DRAW_WGSL, make, label=self.name)
        return handle.get()

    def targets(self, ctx) -> dict:
        view, _ = self.system.res.color_target(ctx)
        return {
            "color_attachments": [{"view": view, "load_op": "load", "store_op": "store"}],
            "depth_stencil_attachment": {
                "view": self.system.res.graph.view(DEPTH),
                "depth_read_only": True,
            },
        }

    def _bind(self):
        s, g = self.system, self.system.res.graph
        shadow = g.texture(SHADOW_MAP)
        key = (g.resource_key(), shadow)  # a resize, a new shadow map size
        if self._group is None or self._group[0] != key:
            group = s.device.create_bind_group(
                label=self.name,
                layout=self.layout,
                entries=[
                    {"binding": 0, "resource": {"buffer": s.res.view_uniform}},
                    {"binding": 1, "resource": {"buffer": s.sim}},
                    {"binding": 2, "resource": {"buffer": s.pool}},
                    {"binding": 3, "resource": {"buffer": s.values}},
                    {"binding": 4, "resource": shadow.create_view()},
                    {"binding": 5, "resource": self.sampler},
                ],
            )
            self._group = (key, group)
        return self._group[1]

    def record(self, ctx, rpass) -> None:
        _, fmt = self.system.res.color_target(ctx)
        rpass.set_pipeline(self.pipeline(fmt))
        rpass.set_bind_group(0, self._bind())
        rpass.draw_indirect(self.system.args, ARGS_DRAW_OFFSET)


@dataclass
class Particles:
    """What ``add_particles`` put in the frame: the system and its four passes."""

    system: ParticleSystem
    reset: ParticleResetPass
    simulate: ParticleSimulatePass
    sort: ParticleSortPass
    draw: ParticleDrawPass


Forces = Callable[[], tuple[float, float, float]]  # () -> (wind, swirl, emission)


def add_particles(frame: StandardFrame, capacity: int = CAPACITY,
                  config: ParticleConfig | None = None,
                  forces: Forces | None = None) -> Particles:  # fmt: skip
    """Insert the particles' four passes after ``Transparent`` (in frame order: Reset,
    Simulate, Sort, the draw) through the public surgery API.

    Args:
        frame: the standard frame.
        capacity: particles in the pool. config: the fountain (default ``ParticleConfig()``).
        forces: ``() -> (wind, swirl, emission)`` read each frame (default: the knobs'
            defaults).

    Raises:
        ValueError: a capacity outside 1..``MAX_PARTICLES``.
    """
    if forces is None:
        defaults = (WIND.default, SWIRL.default, EMISSION.default)
        forces = lambda: defaults  # noqa: E731
    system = ParticleSystem(frame.res, capacity, config or ParticleConfig(), forces)
    made = Particles(system, ParticleResetPass(system), ParticleSimulatePass(system),
                     ParticleSortPass(system), ParticleDrawPass(system))  # fmt: skip
    anchor = "Transparent"
    for p in (made.reset, made.simulate, made.sort, made.draw):
        frame.insert(p, after=anchor)
        anchor = p.name
    return made


class ParticlesSample(Sample):
    name = "s06"
    category = "techniques"
    description = __doc__.splitlines()[0].split(": ", 1)[1]
    variants = VARIANTS
    knobs = (WIND, SWIRL, EMISSION)
    example_args = ("--particles", "16384")

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_knob_arguments(parser, FRAME_KNOBS, "standard frame")  # --no-taa, --shadow-size...
        g = parser.add_argument_group("particles")
        g.add_argument("--particles", type=Int(1, MAX_PARTICLES, what="a particle count")
                       .argparse_type(), default=CAPACITY, metavar="N",
                       help=f"particles in the pool, 1..{MAX_PARTICLES:,} (default "
                       f"{CAPACITY:,}); both sorts' cost follows it")  # fmt: skip
        g.add_argument("--prewarm", type=Float(0.0, 30.0, what="seconds").argparse_type(),
                       default=3.0, metavar="S",
                       help="seconds simulated before the first frame, so the fountain is "
                       "going (default 3; 0: it starts empty)")  # fmt: skip
        g.add_argument("--camera", type=parse_camera, default=None, metavar=CAMERA_FORMAT,
                       help="fixed camera (world units, degrees; default: down the street "
                       "at the fountain)")  # fmt: skip

    def build(self, graph) -> None:
        args = self.app.args
        scene, _ = city(CITY, seed=args.seed)
        self.path = FixedPath(args.camera or CAMERA)
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings_from_args(args))
        self.frame.add_knobs(self.knobs, args)  # 'wind 4' in the console
        self.frame.register_commands(self.app.commands)
        k = self.frame.knob
        self.particles = add_particles(
            self.frame, args.particles, forces=lambda: (k("wind"), k("swirl"), k("emission"))
        )
        steps = self.particles.simulate.prewarm(args.prewarm)
        log.info("s06: %s particles, %d prewarm steps", f"{args.particles:,}", steps)

    def set_variant(self, name: str) -> None:
        self.particles.sort.variant = name

    def update(self, ctx) -> None:
        self.frame.update(ctx, self.path.at(ctx.time))


if __name__ == "__main__":
    main(ParticlesSample)
