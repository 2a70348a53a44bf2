"""Command-line building blocks every front end and tool shares: a one-line-error
``ArgumentParser``, typed values (sizes, bounded integers) and the output-path check.

The command line of a sample is built in ``engine.cli`` from the shared flags plus each
tool's own (``add_arguments``); this module is what both stand on.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from engine.commands import Int
from engine.safe_write import output_problem


def stdout_closed() -> int:
    """stdout's reader went away (``| head``): point stdout at the null device, so that no
    later write (Python's own flush at exit included) raises again; the status to exit
    with, 1. Call it from a ``BrokenPipeError`` handler at an entry point."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1


class OptionError(ValueError):
    """A command-line option a tool cannot apply (``--view``, ``--dump``, ``--baseline``...):
    the user's mistake, reported in one line with exit status 2 like argparse's errors."""


def split_optional_value(args: list[str], option: str, choices: tuple[str, ...]) -> list[str]:
    """``option`` takes an optional value only when the next word is one of ``choices``:
    ``--gpu-profile t.json`` is ``--gpu-profile`` and the positional ``t.json`` (argparse would
    take ``t.json`` as the value); ``--gpu-profile draws`` and ``--gpu-profile=draws`` keep it."""
    out = list(args)
    for i, a in enumerate(out[:-1]):
        nxt = out[i + 1]
        if a == option and nxt not in choices and not nxt.startswith("-"):
            out[i] = f"{option}={choices[0]}"
    return out


def join_negative_values(args: list[str], options: set[str]) -> list[str]:
    """``--camera -128,5,189:...`` -> ``--camera=-128,5,189:...`` for the single-value
    ``options``: argparse reads a value that starts with ``-`` and is not a plain number as
    an option (no Lantern option starts with ``-`` and a digit)."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a in options and i + 1 < len(args) and re.match(r"-\.?[0-9]", args[i + 1]):
            out.append(f"{a}={args[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a single-line error (no usage block) and exit status 2; an unknown
    ``WGPU_BACKEND_TYPE`` is a bad value too, reported like a bad option.

    ``optional_values``: ``{option: choices}`` of options whose value is optional and
    taken only when it is one of ``choices`` (``split_optional_value``); a tool adds its
    own (``--gpu-profile [passes|draws]``)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.optional_values: dict[str, tuple[str, ...]] = {}

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        if any(not a.option_strings for a in self._actions):  # else a typo reads "invalid choice"
            for option, choices in self.optional_values.items():
                args = split_optional_value(args, option, choices)
        single = {o for a in self._actions if a.nargs is None for o in a.option_strings}
        args = join_negative_values(args, single)
        result = super().parse_known_args(args, namespace)
        from engine.gpu import GpuError, check_backend_env  # imports wgpu: only once parsed

        try:
            check_backend_env()
        except GpuError as e:
            self.error(str(e))
        result[0].options_given = self.given(args)
        return result

    def given(self, args: list[str]) -> frozenset[str]:
        """The dests of the options that ``args`` names (``--flag``, ``--flag=value``, a
        unique ``--prefix`` as argparse takes it): a value equal to the default, given on
        purpose, is told from no flag at all (``option_set``)."""
        dests = set()
        for a in args:
            if a == "--":
                break
            flag = a.split("=", 1)[0]
            if not flag.startswith("-") or flag == "-":
                continue
            action = self._option_string_actions.get(flag)
            if action is None and flag.startswith("--") and self.allow_abbrev:
                hits = {x for o, x in self._option_string_actions.items() if o.startswith(flag)}
                action = hits.pop() if len(hits) == 1 else None
            if action is not None:
                dests.add(action.dest)
        return frozenset(dests)


def option_set(args, dest: str, default) -> bool:
    """Whether the command line set ``dest``: a value other than ``default``, or the flag
    given even with the default's value (``ArgumentParser.given``; a namespace made
    otherwise knows only the value)."""
    return getattr(args, dest, default) != default or dest in getattr(args, "options_given", ())


def size_type(text: str) -> tuple[int, int]:
    """``WxH`` in pixels, each 1..16384."""
    m = re.fullmatch(r"\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected WxH in pixels (e.g. 1280x720), got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        raise argparse.ArgumentTypeError(f"width and height must be 1..16384 pixels, got {text!r}")
    return w, h


def int_type(minimum: int, maximum: int | None = None, what: str = "an integer"):
    """An argparse ``type=``: an integer in ``minimum..maximum`` (inclusive; ``1_000`` is
    accepted), else a one-line error such as ``expected an integer from 1 to 16, got 'x'``
    (``engine.commands.Int``, the console's integer type, checks it)."""
    return Int(minimum, maximum, what=what).argparse_type()


positive_int = int_type(1, what="a positive integer")
non_negative_int = int_type(0)


def check_output(option: str, path: str | None, suffix: str) -> None:
    """Refuse ``path`` for ``option`` unless it can be written, before any rendering
    (``engine.safe_write.output_problem``: a name ending in ``suffix``, an existing folder,
    not a link, and an existing file only of the kind written). Nothing when ``path`` is None.

    Raises:
        OptionError: ``argument OPTION: why``.
    """
    if path is None:
        return
    problem = output_problem(path, suffix)
    if problem is not None:
        raise OptionError(f"argument {option}: {problem}")
