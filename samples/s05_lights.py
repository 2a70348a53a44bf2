"""s05: many local lights three ways: plain forward, clustered forward and deferred, swept.

The procedural city at night (the ``night`` knob) with its street lights (spot) and lit
windows (point), ``--lights N`` of them (KHR_lights_punctual terms: candela, range, cones;
engine/lights). The variants are the standard frame's ``light_path`` knob:

    clustered  Lights.Cluster assigns the lights to 16 x 9 x 24 froxels (exponential depth
               slices; Olsson et al. 2012); Main and Transparent shade their cluster's list
    forward    every light in every fragment (no assignment)
    deferred   Main writes a G-buffer (frame.normals + frame.albedo), Lights.Deferred lights
               each opaque pixel with its cluster's list; Transparent shades clustered

``--sweep`` measures them: for each light count (``--sweep-counts``; ``--quick`` a tiny
one for a software rasteriser) the paths run in interleaved blocks (``--sweep-frames``
frames each, ``--sweep-rounds`` times round), from a fixed camera; a path stops once its
median GPU frame passes ``--sweep-stop-ms`` (100 ms). The report gives per count and path the median
GPU time of light culling (Lights.Reset + Lights.Cluster) and of shading (Main.Early,
Main.Late, Lights.Deferred, Transparent), and the crossover counts (clustered over
forward, deferred over clustered) with the 95% block-bootstrap interval of the difference
on either side::

    python -m samples.s05 --gpu-profile --sweep --capture sweep.png
    python -m samples.s05 --gpu-profile --sweep --quick --capture sweep.png --size 320x180

Without ``--sweep`` it is an ordinary sample: ``variant next`` (console) or
``--variant-cycle 30 --telemetry run.jsonl`` then ``lantern compare run.jsonl``;
``view lights`` shows lights per cluster. docs/lights.md has the figures.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np

from engine.app import Sample, main
from engine.frame import StandardFrame
from engine.lights.gpu import CLUSTER_CAP
from engine.lights.model import MAX_LIGHTS
from engine.options import OptionError, option_set
from engine.scene.city_lights import city_lights
from engine.scene.procedural import city
from engine.settings import FRAME_KNOBS, LIGHT_PATHS, add_frame_arguments, settings_from_args
from engine.telemetry.compare import compare_samples

log = logging.getLogger("lantern")
DEFAULT_INSTANCES = 20_000
DEFAULT_LIGHTS = 2_000
STOP_MS = 100.0  # a path whose median frame is slower drops out of the larger counts
SWEEP_FRAMES, SWEEP_ROUNDS = 12, 3  # a block's timed frames, and rounds over the paths
SETTLE = 3  # frames after each switch not measured (uploads, first use of a pipeline)
MAX_BLOCK = 4  # a block waits at most this many times its frames for timed records
CULL_PASSES = ("Lights.Reset", "Lights.Cluster")
SHADE_PASSES = ("Main.Early", "Main.Late", "Lights.Deferred", "Transparent")
COUNTS = (1, 64, 256, 1024, 4096, 16384, 65536)
QUICK_COUNTS = (1, 32, 256)
#: the crossovers the report looks for: (slower below, faster above)
CROSSOVERS = (("forward", "clustered"), ("clustered", "deferred"))


def _counts(text: str) -> tuple[int, ...]:
    import argparse

    try:
        counts = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected counts like 1,64,1024, got {text!r}") from None
    if not counts or min(counts) < 1 or list(counts) != sorted(set(counts)):
        raise argparse.ArgumentTypeError(f"expected increasing counts >= 1, got {text!r}")
    if counts[-1] > MAX_LIGHTS:
        raise argparse.ArgumentTypeError(f"expected counts from 1 to {MAX_LIGHTS:,} (the most "
                                         f"a light set holds), got {counts[-1]:,}")  # fmt: skip
    return counts


@dataclass
class Sweep:
    """The sweep's schedule and readings: ``(count, path) -> [(cull, shade, frame), ...]``
    (GPU ms: the light culling passes, the shading passes, every pass of the frame)."""

    counts: tuple[int, ...]
    frames: int
    rounds: int
    stop_ms: float = STOP_MS
    active: list[str] = field(default_factory=lambda: list(LIGHT_PATHS))
    readings: dict[tuple[int, str], list[tuple[float, float, float]]] = field(default_factory=dict)
    blocks: list[tuple[int, str]] = field(default_factory=list)  # to run, next first
    tags: dict[int, tuple[int, str]] = field(default_factory=dict)  # frame -> measured as
    stopped: dict[str, int] = field(default_factory=dict)  # path -> the count it stopped at

    def total(self, count: int, path: str) -> np.ndarray:
        return np.array([c + s for c, s, _ in self.readings.get((count, path), ())])

    def plan(self, count: int) -> None:
        """Queue ``count``'s blocks, interleaved, for the paths whose median frame at the
        previous count was within ``stop_ms``."""
        done = [c for c in self.counts if c < count]
        for p in list(self.active):
            r = self.readings.get((done[-1], p), ()) if done else ()
            if len(r) and np.median([f for _, _, f in r]) > self.stop_ms:
                self.active.remove(p)
                self.stopped[p] = done[-1]
        self.blocks += [(count, p) for _ in range(self.rounds) for p in self.active]


class LightsSample(Sample):
    name = "s05"
    category = "techniques"
    description = __doc__.splitlines()[0].split(": ", 1)[1]
    variants = LIGHT_PATHS
    example_args = ("--instances", "3000", "--lights", "1500")

    @classmethod
    def add_arguments(cls, parser) -> None:
        add_frame_arguments(parser, default_instances=DEFAULT_INSTANCES)
        g = parser.add_argument_group("s05 sweep")
        g.add_argument("--sweep", action="store_true",
                       help="measure the light paths over light counts (needs --gpu-profile "
                       "and --capture); the run ends when done")  # fmt: skip
        g.add_argument("--sweep-counts", type=_counts, default=None, metavar="N,N,...",
                       help=f"the light counts (default {','.join(map(str, COUNTS))})")  # fmt: skip
        g.add_argument("--sweep-frames", type=int, default=SWEEP_FRAMES, metavar="F",
                       help=f"frames a block measures, after its first 3 (default "
                       f"{SWEEP_FRAMES})")  # fmt: skip
        g.add_argument("--sweep-rounds", type=int, default=SWEEP_ROUNDS, metavar="R",
                       help=f"times round the paths per count (default "
                       f"{SWEEP_ROUNDS})")  # fmt: skip
        g.add_argument("--sweep-stop-ms", type=float, default=STOP_MS, metavar="MS",
                       help=f"a path stops once its median frame is slower (default "
                       f"{STOP_MS:g})")  # fmt: skip
        g.add_argument("--quick", action="store_true",
                       help=f"a tiny sweep for a software rasteriser: counts "
                       f"{','.join(map(str, QUICK_COUNTS))}, 6 frames, 2 rounds")  # fmt: skip

    @classmethod
    def check_options(cls, args) -> None:
        """The variants are the ``--light-path`` knob's values: the two flags name one choice
        (``--light-path forward`` alone starts forward; both are set to it here, so every
        later check sees the path the run starts in), two different ones are refused, and so
        is either with ``--sweep`` (it runs every path)."""
        path, variant = args.light_path, args.variant
        path_given = option_set(args, "light_path", LIGHT_PATHS[0])
        if variant is not None and path_given and variant != path:
            raise OptionError(f"s05: --light-path {path} and --variant {variant} name the same "
                              "choice (the variants are the light paths); give one")  # fmt: skip
        if args.scene is not None:
            raise OptionError("s05 --scene: s05 sweeps the procedural city's street lights; a "
                              "file's own lights draw in s13: python -m samples.s13 --scene "
                              "FILE --light-path PATH")  # fmt: skip
        sizes = {"--sweep-counts": ("sweep_counts", None),
                 "--sweep-frames": ("sweep_frames", SWEEP_FRAMES),
                 "--sweep-rounds": ("sweep_rounds", SWEEP_ROUNDS),
                 "--sweep-stop-ms": ("sweep_stop_ms", STOP_MS)}  # fmt: skip
        sweep_only = [flag for flag, (dest, default) in sizes.items()
                      if option_set(args, dest, default)]  # fmt: skip
        if sweep_only and not args.sweep:
            raise OptionError(f"s05 {sweep_only[0]}: it sizes a --sweep; add --sweep or drop "
                              f"{sweep_only[0]}")  # fmt: skip
        chosen = variant is not None or path_given or args.variant_cycle
        if args.sweep and chosen:
            raise OptionError("s05 --sweep: it runs every light path in turn; drop --variant, "
                              "--light-path and --variant-cycle")  # fmt: skip
        args.light_path = args.variant = variant or path
        if not args.sweep:
            args.lights = args.lights or DEFAULT_LIGHTS  # (the view checks count them)
        super().check_options(args)

    def build(self, graph) -> None:
        args = self.app.args
        self.sweep = None
        if args.quick and not args.sweep:
            raise OptionError("s05 --quick: it sizes a --sweep; add --sweep or drop --quick")
        if args.sweep:
            if not getattr(args, "gpu_profile", None):
                raise OptionError("s05 --sweep: add --gpu-profile (it times the passes)")
            if self.app.ctx.final_frame is None:
                raise OptionError("s05 --sweep: add --capture FILE (the sweep runs headless)")
            counts = args.sweep_counts or (QUICK_COUNTS if args.quick else COUNTS)
            frames, rounds = (6, 2) if args.quick else (args.sweep_frames, args.sweep_rounds)
            if frames < 2 or rounds < 1 or not args.sweep_stop_ms > 0:
                raise OptionError("s05: --sweep-frames must be >= 2, --sweep-rounds >= 1 and "
                                  "--sweep-stop-ms > 0")  # fmt: skip
            self.sweep = Sweep(counts, frames, rounds, args.sweep_stop_ms)
            self.app.telemetry.subscribe(self._on_record)
            self.app.ctx.final_frame = 1 << 30  # the sweep ends the run (update)
        scene, self.path = city(args.instances or DEFAULT_INSTANCES, seed=args.seed)
        most = max(self.sweep.counts) if self.sweep else (args.lights or DEFAULT_LIGHTS)
        self.pool = city_lights(scene, most, seed=args.seed)  # counts are prefixes of it
        self.lights = scene.lights
        self.lights.extend(self.pool, 0, 0 if self.sweep else most)
        settings = replace(settings_from_args(args), night=True)  # (light_path: check_options)
        self.frame = StandardFrame(self.app.gpu, graph, scene, settings)
        self.frame.register_commands(self.app.commands)
        knob = next(k for k in FRAME_KNOBS if k.name == "light-path")
        self.app.commands.register(  # the variants' twin: the records say the path they drew
            "light-path", self._light_path_command, args=[knob.arg], help=knob.help
        )
        self._block_run, self._finished = 0, False
        self._current: tuple[int, str] | None = None
        log.info("s05: %s instances, %s lights", f"{scene.count:,}", f"{self.lights.count:,}")

    def set_variant(self, name: str) -> None:
        self.frame.set_settings(light_path=name)

    def _light_path_command(self, path: str) -> str:
        self.app.set_variant(path)
        return f"light-path: {path} (the variant)"

    def _set_count(self, n: int) -> None:
        if n < self.lights.count:
            self.lights.truncate(n)
        elif n > self.lights.count:
            self.lights.extend(self.pool, self.lights.count, n)

    def update(self, ctx) -> None:
        if self.sweep is not None:
            self._sweep_step(ctx)
            camera = self.path.at(0.0)
        else:
            camera = self.path.at(ctx.time)
        self.frame.update(ctx, camera)

    def _sweep_step(self, ctx) -> None:
        """Advance the sweep by one frame. A block runs ``SETTLE`` frames, then tags its
        frames until ``frames`` of them came back timed (a record may come without GPU times
        when every query pool was in flight), at most ``MAX_BLOCK`` x as long."""
        s = self.sweep
        if self._current is not None:
            n = len(s.readings[self._current])
            ran = self._block_run - SETTLE
            if (ran >= s.frames and n >= s.frames) or ran >= MAX_BLOCK * s.frames:
                self._current = None
        if self._current is None:
            if self._finished:
                return
            if not s.blocks:
                done = {c for c, _ in s.readings}
                todo = [c for c in s.counts if c > max(done, default=0)]
                if todo and s.active:
                    s.plan(todo[0])
                if not s.blocks or not s.active:  # finished: a few frames for the readbacks
                    self.app.ctx.final_frame = ctx.frame_index + SETTLE + 3
                    self._finished = True
                    return
            self._current = s.blocks.pop(0)
            count, path = self._current
            self._set_count(count)
            if path != self.app.loop.variant:
                self.app.set_variant(path)
            s.readings.setdefault(self._current, [])
            self._block_run = 0
        if self._block_run >= SETTLE:
            s.tags[ctx.frame_index] = self._current
        self._block_run += 1

    def _on_record(self, record) -> None:
        tag = self.sweep.tags.pop(record.frame_index, None)
        if tag is None or record.gpu is None:
            return
        ms = {sc.name: sc.duration_ms for sc in record.gpu}
        cull = sum(ms.get(n, 0.0) for n in CULL_PASSES)
        shade = sum(ms.get(n, 0.0) for n in SHADE_PASSES)
        self.sweep.readings[tag].append((cull, shade, sum(ms.values())))

    def report(self) -> str | None:
        if self.sweep is None:
            return None
        return format_sweep(self.sweep)


def format_sweep(s: Sweep) -> str:
    """The sweep's table (median ms per count and path) and its crossover lines."""
    head = (f"s05 sweep: GPU ms, medians over {s.rounds} interleaved block(s) per path of at "
            f"least {s.frames} timed frames each")  # fmt: skip
    lines = [head, f"{'lights':>7} {'path':<10} {'cull':>8} {'shade':>8} {'total':>8} "
                   f"{'frame':>8}  frames"]  # fmt: skip
    for count in s.counts:
        for path in LIGHT_PATHS:
            r = np.array(s.readings.get((count, path), ()))
            if not len(r):
                continue
            c, sh, f = np.median(r, axis=0)
            t = np.median(r[:, 0] + r[:, 1])
            lines.append(f"{count:>7,} {path:<10} {c:8.3f} {sh:8.3f} {t:8.3f} {f:8.3f}  {len(r)}")
    for p, when in s.stopped.items():
        unit = "light" if when == 1 else "lights"
        lines.append(f"{p} stopped after {when:,} {unit} (median frame over {s.stop_ms:g} ms)")
    lines += [crossover(s, slow, fast) for slow, fast in CROSSOVERS]
    if max(s.counts) > CLUSTER_CAP:
        lines.append(f"(a cluster holds at most {CLUSTER_CAP} lights: see the lights counters)")
    return "\n".join(lines)


def crossover(s: Sweep, a: str, b: str) -> str:
    """Where ``b`` becomes faster than ``a``: the first count from which on ``b``'s median
    total is lower with the 95% interval of the difference below zero, and the count before
    it, each with its difference ``b - a`` (ms) and interval."""
    rows = []
    for count in s.counts:
        ta, tb = s.total(count, a), s.total(count, b)
        if len(ta) < 2 or len(tb) < 2:
            continue
        d = compare_samples(ta, tb, rng=np.random.default_rng(count))
        rows.append((count, d, d.hi_ms < 0))
    if not rows:
        return f"{b} over {a}: not measured"

    def say(row) -> str:
        count, d, _ = row
        return f"{count:,}: {d.diff_ms:+.3f} ms [{d.lo_ms:+.3f}, {d.hi_ms:+.3f}]"

    first = next((i for i in range(len(rows)) if all(r[2] for r in rows[i:])), None)
    if first is None:
        n = rows[-1][0]
        unit = "light" if n == 1 else "lights"
        return f"{b} over {a}: not faster up to {n:,} {unit} ({say(rows[-1])})"
    if first == 0:
        return f"{b} over {a}: faster from the first count on ({say(rows[0])})"
    return (f"{b} over {a}: crossover between {rows[first - 1][0]:,} and {rows[first][0]:,} "
            f"lights ({b} - {a}: {say(rows[first - 1])}; {say(rows[first])}; 95% CI)")  # fmt: skip


if __name__ == "__main__":
    main(LightsSample)
