"""The standard frame's knobs: ``FrameSettings`` and ``FRAME_KNOBS``, each knob's field, flag and
console command declared once (``engine.knobs``).

Kept apart from ``engine.frame`` so a sample, the console or a test can read and parse the
knobs without building a frame.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from engine.commands import Arg, Choice, CommandError, Float, Int, Switch
from engine.culling.cull import LOD_BASE_PX, MAX_CASCADES, MAX_INSTANCES
from engine.knobs import Knob, add_knob_arguments, values_from_args
from engine.lights.model import MAX_LIGHTS
from engine.options import OptionError, option_set
from engine.passes.shadow import DEFAULT_LAMBDA
from engine.scene.camera import CAMERA_FORMAT, parse_camera

#: How the local lights are shaded (``engine.passes.lights``): every light in every fragment,
#: the fragment's cluster's lights, or a G-buffer lit by a fullscreen pass.
LIGHT_PATHS = ("clustered", "forward", "deferred")

#: Shadow map sizes in texels: a power of two in this range (inclusive).
SHADOW_SIZES = (256, 8192)


def check_shadow_size(size) -> int:
    """``size`` if it is a valid shadow map size (a power of two in ``SHADOW_SIZES``).

    Raises:
        ValueError: ``expected a power of two from 256 to 8,192, got ...``.
    """
    lo, hi = SHADOW_SIZES
    ok = isinstance(size, int) and lo <= size <= hi and not size & (size - 1)
    if not ok:
        raise ValueError(f"expected a power of two from {lo:,} to {hi:,}, got {size!r}")
    return size


#: The practical split scheme's default weight of the logarithmic split (Zhang et al. 2006).
CASCADE_LAMBDA = DEFAULT_LAMBDA

#: A fixed exposure multiplier's range (inclusive).
EXPOSURE_RANGE = (0.01, 100.0)


def check_exposure(value) -> float | str:
    """``value`` if it is ``"auto"`` or a number in ``EXPOSURE_RANGE``.

    Raises:
        ValueError: ``expected 'auto' or a number from 0.01 to 100, got ...``.
    """
    lo, hi = EXPOSURE_RANGE
    if value == "auto":
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and lo <= value <= hi:
        return float(value)
    raise ValueError(f"expected 'auto' or a number from {lo:g} to {hi:g}, got {value!r}")


def parse_exposure(text: str) -> float | str:
    """``"auto"`` or a float in ``EXPOSURE_RANGE`` from ``text`` (CLI and console).

    Raises:
        ValueError: the one-line message of ``check_exposure`` naming ``text``.
    """
    text = text.strip().lower()
    try:
        return check_exposure(text if text == "auto" else float(text))
    except ValueError:
        lo, hi = EXPOSURE_RANGE
        raise ValueError(
            f"expected 'auto' or a number from {lo:g} to {hi:g}, got {text!r}"
        ) from None


@dataclass(frozen=True)
class FrameSettings:
    """The standard frame's knobs.

    Attributes:
        shadows: render the sun shadow map. ``shadow_size``: its size in texels, a power of
            two in 256..8192.
        cascades: shadow cascades, 1..4 (``Shadow.C0`` .. ``Shadow.C3``, each a
            ``shadow_size`` square layer of ``shadow.map``; 1: one map over the whole
            shadow distance). ``cascade_lambda``: the practical split scheme's weight of the
            logarithmic split, 0..1 (``engine.passes.shadow.cascade_splits``).
        shadow_snap: move each cascade by whole shadow texels only (off: it follows the
            camera continuously and static shadows shimmer; for comparison).
        cull: GPU culling on (off: every instance is drawn, LODs still chosen).
        occlusion: two-phase Hi-Z occlusion culling on (needs ``cull``).
        post: HDR target + the post chain (off: Main renders to the output).
        fog_density: exponential fog per world unit (0 = none).
        exposure: multiplier before tone mapping (``EXPOSURE_RANGE``), or ``"auto"``: from
            the GPU luminance histogram, adapted over time (``Post.Luminance``,
            ``Post.Exposure``).
        bloom: the energy-conserving bloom chain (``Post.Bloom``).
        taa: temporal anti-aliasing with a jittered projection (``Post.TAA``).
        shadow_radius: shadow distance: receivers the camera sees up to this view depth
            (world units) are shadowed (None: ``engine.passes.shadow.SHADOW_DISTANCE``, 90).
        lod_base_px: projected diameter in pixels below which LOD 1 is used (halving per LOD).
        textures: sample the materials' textures (off: factors only, the untextured cost).
        depth_prepass: the Main pass that clears draws its instances' depth first, then
            shades with depth ``equal``: each pixel shaded once (off: shaded as often as
            instances cover it, in the cull's order).
        light_path: how the local lights are shaded, one of ``LIGHT_PATHS``: ``clustered``
            (clustered forward: ``Lights.Cluster`` assigns them to froxels), ``forward``
            (every light in every fragment) or ``deferred`` (G-buffer + ``Lights.Deferred``).
        night: the night sky (a dim sky and a moon in the sun's place) instead of the day's.

    Raises:
        ValueError: a bad ``shadow_size``, ``exposure``, ``light_path``, ``cascades``,
            ``cascade_lambda`` or a negative number.
    """

    shadows: bool = True
    shadow_size: int = 2048
    cull: bool = True
    occlusion: bool = True
    post: bool = True
    fog_density: float = 0.004
    exposure: float | str = 0.9
    shadow_radius: float | None = None
    lod_base_px: float = LOD_BASE_PX
    bloom: bool = True
    taa: bool = True
    textures: bool = True
    depth_prepass: bool = True
    light_path: str = "clustered"
    night: bool = False
    cascades: int = 1
    cascade_lambda: float = CASCADE_LAMBDA
    shadow_snap: bool = True

    def __post_init__(self):
        try:
            check_shadow_size(self.shadow_size)
        except ValueError as e:
            raise ValueError(f"shadow_size: {e}") from None
        c = self.cascades
        if not (isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= MAX_CASCADES):
            raise ValueError(f"cascades: expected 1 to {MAX_CASCADES}, got {c!r}")
        if not 0.0 <= self.cascade_lambda <= 1.0:
            raise ValueError(f"cascade_lambda: expected 0 to 1, got {self.cascade_lambda!r}")
        check_exposure(self.exposure)
        if self.fog_density < 0 or self.lod_base_px <= 0:
            raise ValueError("fog_density must be >= 0 and lod_base_px > 0")
        if self.light_path not in LIGHT_PATHS:
            raise ValueError(f"light_path: expected one of {', '.join(LIGHT_PATHS)}, "
                             f"got {self.light_path!r}")  # fmt: skip

    @property
    def auto_exposure(self) -> bool:
        return self.exposure == "auto"


instances_type = Int(1, MAX_INSTANCES, what="an instance count").argparse_type()


def scene_type(path: str):
    """argparse type: a glTF scene the standard frame can hold (at most MAX_INSTANCES)."""
    from engine.scene.gltf import scene_file_type

    scene = scene_file_type(path)
    if scene.count > MAX_INSTANCES:
        raise argparse.ArgumentTypeError(
            f"{path}: {scene.count:,} instances (node x primitive); at most {MAX_INSTANCES:,}"
        )
    return scene


SHADOW_CONFIRM_MIB = 64  # shadow maps larger than this (8192, or 4 cascades of 4096: 256 MiB)
# need "confirm"


def shadow_map_mib(n: int, cascades: int = 1) -> float:
    """MiB of ``cascades`` layers of an ``n x n`` depth32float shadow map (4 bytes a texel)."""
    return n * n * 4 * cascades / 2**20


def _shadow_cost(n: int, cascades: int, command: str, knob) -> str | None:
    """The reason to confirm ``command``, which makes the shadow map ``cascades`` layers of
    ``n x n``: None when that stays within ``SHADOW_CONFIRM_MIB`` or costs no more than the
    map of now (``knob``: the current knob values; going down never asks)."""
    mib = shadow_map_mib(n, cascades)
    now = shadow_map_mib(knob("shadow_size") or 0, knob("cascades") or 1)
    if mib <= max(SHADOW_CONFIRM_MIB, now):
        return None
    what = f"{n}x{n} is a" if cascades == 1 else f"{cascades} cascades of {n}x{n} are a"
    return (
        f"{what} {mib:g} MiB shadow map (depth32float), {cascades * (n / 2048) ** 2:g}x the "
        f"texels of the default 2048 to render every frame; type '{command} confirm' to do it"
    )


class ExposureArg(Arg):
    """``auto`` or a multiplier in ``EXPOSURE_RANGE``."""

    metavar = "auto|VALUE"

    def parse(self, text: str):
        try:
            return parse_exposure(text)
        except ValueError as e:
            raise CommandError(str(e)) from None

    def choices(self) -> Sequence[str]:
        return ("auto",)


def _exposure_text(value) -> str:
    if value == "auto":
        return "exposure: auto (GPU histogram, adapted over time)"
    return f"exposure: {value:g}"


#: The standard frame's knobs, each declared once: its ``FrameSettings`` field, its flag and
#: its console/portal command (``engine.knobs``), in ``--help`` order.
FRAME_KNOBS = (
    Knob("cull", Switch(), True, "GPU culling (off: every instance is drawn)", command="culling"),
    Knob(
        "occlusion",
        Switch(),
        True,
        "two-phase Hi-Z occlusion culling (off: frustum + sub-pixel culling only)",
    ),  # fmt: skip
    Knob("shadows", Switch(), True, "sun shadow map"),
    Knob(
        "shadow-size",
        Int(*SHADOW_SIZES, power_of_two=True),
        FrameSettings.shadow_size,
        "shadow map size in texels",
        describe=lambda n: f"shadow map: {n}x{n} ({shadow_map_mib(n):g} MiB)",
        confirm=lambda n, knob: _shadow_cost(n, knob("cascades") or 1, f"shadow-size {n}", knob),
        confirm_help=f"over {SHADOW_CONFIRM_MIB} MiB in all cascades: add confirm",
    ),
    Knob(
        "cascades",
        Int(1, MAX_CASCADES),
        FrameSettings.cascades,
        "sun shadow cascades (Shadow.C0..C3), each a shadow-size layer of shadow.map",
        describe=lambda n: (
            f"cascades: {n}"
            + (" (one map over the shadow distance)" if n == 1 else " (practical split scheme)")
        ),
        confirm=lambda n, knob: _shadow_cost(
            knob("shadow_size") or FrameSettings.shadow_size, n, f"cascades {n}", knob
        ),
        confirm_help=f"over {SHADOW_CONFIRM_MIB} MiB of shadow map: add confirm",
    ),
    Knob(
        "cascade-lambda",
        Float(0.0, 1.0, what="a weight"),
        FrameSettings.cascade_lambda,
        "cascade splits: weight of the logarithmic split against the uniform one (Zhang et "
        "al. 2006)",
    ),
    Knob(
        "shadow-snap",
        Switch(),
        True,
        "texel snapping of the shadow cascades (off: static shadows shimmer as the camera moves)",
    ),
    Knob(
        "post", Switch(), True, "HDR target and post chain (without it Main draws to the output)"
    ),  # fmt: skip
    Knob(
        "exposure",
        ExposureArg(),
        FrameSettings.exposure,
        "exposure before tone mapping: a fixed multiplier, or auto (adapted from a GPU "
        "luminance histogram: adds Post.Luminance and Post.Exposure)",
        describe=_exposure_text,
    ),
    Knob("bloom", Switch(), True, "energy-conserving bloom (Post.Bloom)"),
    Knob("taa", Switch(), True, "temporal anti-aliasing (Post.TAA)"),
    Knob("textures", Switch(), True, "material textures (off: factors only, untextured)"),
    Knob(
        "depth-prepass",
        Switch(),
        True,
        "depth prepass in the first Main pass: each pixel shaded once (off: as often as "
        "instances cover it)",
    ),
    Knob(
        "light-path",
        Choice(*LIGHT_PATHS),
        FrameSettings.light_path,
        "how the local lights are shaded: clustered (Lights.Cluster assigns them to froxels), "
        "forward (every light in every fragment) or deferred (G-buffer + Lights.Deferred)",
    ),
    Knob("night", Switch(), False, "the night sky: a dim sky and a moon in the sun's place"),
)

lights_type = Int(0, MAX_LIGHTS, what="a light count").argparse_type()


def add_frame_arguments(parser: argparse.ArgumentParser, *, default_instances: int) -> None:
    """Add the standard frame's flags: its knobs (``FRAME_KNOBS``) and what a sample of the
    standard frame takes besides (scene, instances, cameras).

    ``--instances`` is None unless given, so a sample can tell "the procedural default"
    from "repeat the --scene file this many times"."""

    add_knob_arguments(parser, FRAME_KNOBS, "standard frame")
    g = parser.add_argument_group("scene")
    g.add_argument(
        "--instances",
        type=instances_type,
        default=None,
        metavar="N",
        help=f"instances, 1..{MAX_INSTANCES:,}: the procedural city's size (default "
        f"{default_instances:,}), or with --scene the file repeated on a grid up to N",
    )
    g.add_argument(
        "--lights",
        type=lights_type,
        default=0,
        metavar="N",
        help=f"local lights, 0..{MAX_LIGHTS:,}: the procedural city's street lights (spot) "
        "and lit windows (point); ignored with --scene (its KHR_lights_punctual lights)",
    )
    g.add_argument(
        "--camera",
        type=parse_camera,
        default=None,
        metavar=CAMERA_FORMAT,
        help="fixed camera instead of the fly-through (world units, degrees)",
    )
    g.add_argument(
        "--cull-camera",
        type=parse_camera,
        default=None,
        metavar=CAMERA_FORMAT,
        help="freeze culling at this camera (as F2 does in a window) while rendering from the "
        "other: captures of what it culls (the views and the debug lines show why)",
    )
    g.add_argument(
        "--shadow-camera",
        type=parse_camera,
        default=None,
        metavar=CAMERA_FORMAT,
        help="fit the shadow cascades to this camera while rendering from the other: how "
        "they follow a camera, seen from outside (--view cascades shows them)",
    )
    g.add_argument(
        "--scene",
        type=scene_type,
        metavar="FILE",
        default=None,
        help="render a glTF 2.0 scene (.gltf/.glb) instead of the procedural city",
    )


#: (option, the knob whose value turns its feature off, that value): an option (a knob's name,
#: or another flag of the frame's) set while such a value makes it moot is refused, not
#: silently ignored.
MOOT_WITH = (
    ("shadow-size", "shadows", False),
    ("cascades", "shadows", False),
    ("cascade-lambda", "shadows", False),
    ("cascade-lambda", "cascades", 1),
    ("exposure", "post", False),
    ("shadow-camera", "shadows", False),
    ("cull-camera", "cull", False),
)


def local_light_count(args) -> int:
    """The local lights a command line starts with: the ``--scene`` file's
    (``KHR_lights_punctual``), else ``--lights`` (0 for a sample without the flag: its own
    scene has none)."""
    scene = getattr(args, "scene", None)  # (scene_type: a loaded Scene)
    if scene is not None:
        return scene.lights.count
    return getattr(args, "lights", None) or 0


def check_knob_conflicts(args: argparse.Namespace) -> None:
    """Refuse flags that contradict each other: a knob set away from its default (or a flag
    such as ``--cull-camera`` given) while another flag turns off what it tunes
    (``--cascades 4 --no-shadows``; ``MOOT_WITH``). Turning off two things at once
    (``--no-post --no-taa``) is no contradiction. A namespace without the frame's knobs
    passes.

    Raises:
        OptionError: one line naming both flags and what to do.
    """
    knobs = {k.name: k for k in FRAME_KNOBS}
    values = {k.name: getattr(args, k.attr, k.default) for k in FRAME_KNOBS}
    for name, needs, off in MOOT_WITH:
        other = knobs[needs]
        if values[needs] != off:
            continue
        if name in knobs:
            knob = knobs[name]
            if not option_set(args, knob.attr, knob.default):
                continue
            value = values[name]
            shown = f"{value:g}" if isinstance(value, float) else value
            flag = knob.flag if knob.switch else f"{knob.flag} {shown}"
        elif getattr(args, name.replace("-", "_"), None) is None:
            continue
        else:
            flag = f"--{name}"
        moot = other.flag if other.switch else f"{other.flag} {off}"
        todo = "drop one of the two"
        if not option_set(args, other.attr, other.default):  # not given: say it is the default
            moot, todo = f"{moot}, the default", f"drop it or give {other.flag} another value"
        raise OptionError(f"argument {flag}: it has no effect with {moot}; {todo}")
    path = values["light-path"]
    if option_set(args, "light_path", knobs["light-path"].default) and not local_light_count(args):
        raise OptionError(f"argument --light-path {path}: it has no effect without local lights "
                          "(--lights N in s13 and s05, or a --scene file's); drop it or add "
                          "lights")  # fmt: skip


def check_post_options(args, sample: str, why: str, *, variants=(), knobs=()) -> None:
    """Refuse ``--no-post`` beside options that act only on the post chain's HDR colour: the
    sample's ``variants`` that need it (``--variant NAME``, or ``--variant-cycle``, which
    reaches them) and its ``knobs`` set away from their defaults. ``why``: what needs it.

    Raises:
        OptionError: one line naming the options and what to do.
    """
    if getattr(args, "post", True):
        return
    given = []
    if getattr(args, "variant", None) in variants:
        given.append(f"--variant {args.variant}")
    if variants and getattr(args, "variant_cycle", None):
        given.append("--variant-cycle")
    given += [k.flag for k in knobs if option_set(args, k.attr, k.default)]
    if given:
        raise OptionError(f"{sample} --no-post: {why}, which only the post chain has; drop "
                          f"--no-post or {' and '.join(given)}")  # fmt: skip


def settings_from_args(args: argparse.Namespace) -> FrameSettings:
    """``FrameSettings`` from the knobs' flags (occlusion needs culling)."""
    values = values_from_args(args, FRAME_KNOBS)
    values["occlusion"] = values["occlusion"] and values["cull"]
    return FrameSettings(**values)


def register_frame_commands(commands, frame, *, freeze=None) -> None:
    """Each knob's console and portal command (``FRAME_KNOBS``: ``shadows on|off``,
    ``shadow-size N``, ``exposure auto|VALUE``, ...) and ``cull freeze [on|off]``, against a
    frame with ``settings``, ``set_settings(**changes)`` and ``freeze_culling(on)`` (an
    ``engine.frame.StandardFrame``). ``freeze(on)``: the sample's own freeze (s13 also
    starts its fly camera, as F2 does), returning the output line."""

    def current(attr: str):
        return getattr(frame.settings, attr)

    for knob in FRAME_KNOBS:
        knob.register(
            commands,
            lambda k=knob: current(k.attr),
            lambda v, k=knob: frame.set_settings(**{k.attr: v}),
            current,
        )

    def cull(_: str, on: bool | None) -> str:
        if freeze is not None:
            return freeze(on)
        return f"culling camera {'frozen' if frame.freeze_culling(on) else 'released'}"

    commands.register(
        "cull",
        cull,
        args=[Choice("freeze"), Choice("on", "off", boolean=True, optional=True)],
        help="freeze the culling camera (no argument toggles)",
    )
