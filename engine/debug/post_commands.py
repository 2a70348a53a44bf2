"""Console (and portal) commands for the standard frame's post chain: ``exposure``,
``bloom``, ``taa``, against an ``engine.frame.StandardFrame`` (``set_settings``)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.commands import Arg, Choice, CommandError, CommandRegistry
from engine.settings import parse_exposure


class ExposureArg(Arg):
    """``auto`` or a multiplier in ``engine.settings.EXPOSURE_RANGE``."""

    metavar = "auto|VALUE"

    def parse(self, text: str):
        try:
            return parse_exposure(text)
        except ValueError as e:
            raise CommandError(str(e)) from None

    def choices(self) -> Sequence[str]:
        return ("auto",)


def register_post_commands(registry: CommandRegistry, frame) -> None:
    """Register ``exposure auto|VALUE``, ``bloom on|off`` and ``taa on|off``."""

    def exposure(value) -> str:
        frame.set_settings(exposure=value)
        if value == "auto":
            return "exposure: auto (GPU histogram, adapted over time)"
        return f"exposure: {value:g}"

    def bloom(on: bool) -> str:
        frame.set_settings(bloom=on)
        return f"bloom: {'on' if on else 'off'}"

    def taa(on: bool) -> str:
        frame.set_settings(taa=on)
        return f"taa: {'on' if on else 'off'}"

    registry.register(
        "exposure", exposure, args=[ExposureArg()], help="exposure: auto or a multiplier"
    )
    onoff = [Choice("on", "off", boolean=True)]
    registry.register("bloom", bloom, args=onoff, help="energy-conserving bloom (Post.Bloom)")
    registry.register("taa", taa, args=onoff, help="temporal anti-aliasing (Post.TAA)")
