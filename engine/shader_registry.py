"""Pipelines that can be rebuilt from their WGSL: the layer hot reload stands on.

A pass asks for its pipeline(s) through a handle instead of caching a shader module forever:

    self.shader = shader_pipeline(device, "post.wgsl", self._make_pipeline)
    self.shader.on_reload(self._bind)       # only if bind groups came from an "auto" layout
    ...
    rpass.set_pipeline(self.shader.get())

``factory(module)`` builds whatever the pass draws with from one ``GPUShaderModule`` (a
pipeline, or a tuple / dict of them). ``rebuild()`` reads the files again (includes
expanded), makes a new module and calls the factory; only when both succeed does ``get()``
return the new object and the ``on_reload`` callbacks run (a pipeline made with
``layout="auto"`` has its own bind group layouts: bind groups made from the old one no longer
fit). If a callback fails (a binding's type changed to one the pass's resources cannot fill)
the old pipeline is put back and the callbacks run again for it. A failure never raises: it
returns a ``ShaderError`` with the compiler's message and its position mapped back through
the include expansion to the file the line came from.

The first build (``ShaderRegistry.pipeline``) raises like ``device.create_*`` does: a sample
that starts with a broken shader stops with the compiler's message.
"""

from __future__ import annotations

import os
import re
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import wgpu

from engine.shaders import _INCLUDE, MODULE_HASHES, SHADER_DIR, wgsl_hash
from engine.textfile import NotUtf8, read_utf8

T = TypeVar("T")
_POSITION = re.compile(r"wgsl:(\d+):(\d+)")


@dataclass(frozen=True)
class ExpandedSource:
    """One shader module's source after ``// #include "x.wgsl"`` expansion.

    Attributes:
        path: the module's file. code: the expanded WGSL.
        files: every file read (the module first, then its includes, each once).
        origin: per line of ``code`` (0-based index), ``(file, 1-based line)`` it came from.
    """

    path: Path
    code: str
    files: tuple[Path, ...]
    origin: tuple[tuple[Path, int], ...]

    def locate(self, line: int) -> tuple[Path, int]:
        """``(file, line)`` of the expanded code's 1-based ``line`` (clamped to the end)."""
        if not self.origin:
            return self.path, line
        return self.origin[min(max(line, 1), len(self.origin)) - 1]


def expand(path: Path, root: Path | tuple[Path, ...] = SHADER_DIR,
           defines: dict | None = None) -> ExpandedSource:  # fmt: skip
    """Read ``path`` and expand its includes (resolved beside the including file, then in
    ``root``, a folder or several in order, then in ``shaders/``), each file at most once
    per module (an include cycle is
    cut there). Each file must be UTF-8 (a byte-order mark is stripped) without NUL bytes
    (wgpu hands WGSL to C, which would stop reading there).

    ``defines`` (shader variants, as Bevy's shader defs): lines between ``// #if NAME`` and
    ``// #endif`` (with an optional ``// #else``; blocks nest) are kept only when
    ``defines[NAME]`` is true; an integer define is also a module constant ``const NAME: i32``
    (e.g. an output's ``@location``). A removed line stays as an empty one, so positions in
    messages still name the file's own lines.

    Raises:
        OSError: a file cannot be read (``FileNotFoundError`` when deleted).
        NotUtf8: a file is not UTF-8 text; the message names it and the byte.
    """
    folders = (root,) if isinstance(root, Path) else tuple(root)
    files: list[Path] = []
    lines: list[str] = []
    origin: list[tuple[Path, int]] = []
    defines = defines or {}
    keep: list[bool] = [True]  # one entry per open #if: whether its lines are kept

    def walk(p: Path) -> None:
        files.append(p)
        for i, text in enumerate(read_utf8(p, name=_display(p), nul=False).split("\n"), 1):
            d = _DIRECTIVE.fullmatch(text)
            if d is not None and defines is not None:
                _directive(d.group(1), d.group(2), keep, defines)
                text = ""
            elif not all(keep):
                text = ""
            m = _INCLUDE.fullmatch(text)
            if m is None:
                lines.append(text)
                origin.append((p, i))
                continue
            inc = find_include(m.group(1), p.parent, *folders)
            if inc.resolve() not in {f.resolve() for f in files}:
                walk(inc)

    walk(path)
    consts = [f"const {k}: i32 = {v};" for k, v in sorted(defines.items())
              if isinstance(v, int) and not isinstance(v, bool)]  # fmt: skip
    if consts:  # on the module's last line: the file's own lines keep their numbers
        lines[-1] = lines[-1] + "  " + " ".join(consts)
    return ExpandedSource(path, "\n".join(lines), tuple(files), tuple(origin))


_DIRECTIVE = re.compile(r"^\s*//\s*#(if|else|endif)\b\s*(\w*)\s*$")


def _directive(kind: str, name: str, keep: list[bool], defines: dict) -> None:
    if kind == "if":
        keep.append(bool(defines.get(name)))
    elif kind == "else" and len(keep) > 1:
        keep[-1] = not keep[-1]
    elif kind == "endif" and len(keep) > 1:
        keep.pop()


def find_include(name: str, *folders: Path) -> Path:
    """The first ``folder / name`` that exists, else in ``shaders/`` (which may not)."""
    for folder in folders:
        if (folder / name).exists():
            return folder / name
    return SHADER_DIR / name


@dataclass(frozen=True)
class ShaderError:
    """A failed rebuild: ``file:line:column: message`` (line and column are None when the
    error has no position, e.g. a missing entry point found at pipeline creation)."""

    file: Path
    line: int | None
    column: int | None
    message: str

    def __str__(self) -> str:
        where = _display(self.file)
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        return f"{where}: {self.message}"


def undecodable(e: NotUtf8) -> ShaderError:
    """The ``ShaderError`` of a WGSL file that is not UTF-8 (no line: the byte is named)."""
    return ShaderError(Path(e.name), None, None, e.what)


def _display(path: Path) -> str:
    """``path`` relative to the working folder when inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def parse_error(text: str, source: ExpandedSource | None, fallback: Path) -> ShaderError:
    """The ``ShaderError`` of a ``GPUValidationError``'s text: its first ``wgsl:L:C``
    position mapped through ``source``'s include expansion, and the one line that says what
    is wrong (naga's ``... error: X`` line, else the innermost ``Caused by`` line)."""
    lines = [s.strip() for s in text.splitlines() if s.strip()]
    message = next((s for s in lines if " error: " in s), None)
    if message is not None:
        message = message.split(" error: ", 1)[1]
    else:
        tail = [s for s in lines if s not in ("Validation Error", "Caused by:")]
        message = tail[-1] if tail else text.strip() or "validation error"
    m = _POSITION.search(text)
    if m is None or source is None:
        return ShaderError(fallback, None, None, message)
    file, line = source.locate(int(m.group(1)))
    return ShaderError(file, line, int(m.group(2)), message)


class ShaderBuildError(wgpu.GPUValidationError):
    """A module that does not build the first time (no old pipeline to keep): its message is
    the ``ShaderError`` line, ``file:line:column: what``."""


class PipelineHandle(Generic[T]):
    """What ``factory(module)`` built from one WGSL module, rebuilt on demand.

    Attributes:
        name: the module's name as asked for (``"post.wgsl"``). path: its file.
        label: for messages. version: 0 after the first build, +1 per successful rebuild.
        source: the ``ExpandedSource`` the current object was built from.
        error: the last rebuild's ``ShaderError`` while the file is still broken, else None.
        build_ms: how long the last successful build took (module + factory + callbacks).
    """

    def __init__(self, registry: ShaderRegistry, name: str, path: Path, factory, label: str,
                 defines: dict | None = None, home: Path | None = None):  # fmt: skip
        self.registry, self.name, self.path, self.label = registry, name, path, label
        # where includes are looked for after the including file's folder
        self.folders = (registry.root,) + ((home,) if home is not None else ())
        self.defines = dict(defines or {})
        self.factory: Callable[[wgpu.GPUShaderModule], T] = factory
        self.version = 0
        self.error: ShaderError | None = None
        self.build_ms = 0.0
        self._callbacks: list[Callable[[], Any]] = []
        self.source = expand(path, self.folders, self.defines)
        t = time.perf_counter()
        try:
            self._current: T = factory(self._module(self.source))
        except wgpu.GPUError as e:  # the first build: one line naming file, line and column
            raise ShaderBuildError(str(parse_error(str(e), self.source, path))) from e
        self.build_ms = (time.perf_counter() - t) * 1e3

    @property
    def variant_name(self) -> str:
        """``name``, with its defines when it has some: ``"mesh.wgsl[NORMALS]"``."""
        on = [k if v is True else f"{k}={v}" for k, v in sorted(self.defines.items()) if v]
        return f"{self.name}[{','.join(on)}]" if on else self.name

    def get(self) -> T:
        """The current pipeline(s): record with this every frame, never keep it."""
        if _PROBE is not None:  # a frame probed for which pass draws with which handle
            _PROBE.seen.add((self, _PROBE.current))
        return self._current

    @property
    def files(self) -> tuple[Path, ...]:
        return self.source.files

    @property
    def count(self) -> int:
        """Pipelines the factory's object holds (a tuple / list / dict of them, else 1)."""
        obj = self._current
        return len(obj) if isinstance(obj, tuple | list | dict) else 1

    def on_reload(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Run ``fn()`` after each rebuild that replaced the pipeline (re-create the bind
        groups made from its ``auto`` layout; read the new one with ``get()``). Returns
        ``fn``; a ``GPUError`` raised by it rolls the rebuild back."""
        self._callbacks.append(fn)
        return fn

    def changed(self) -> bool:
        """Whether the files now expand to other code than the current object's (a file that
        cannot be read, or is not UTF-8, counts as unchanged: the old pipeline stays)."""
        try:
            return expand(self.path, self.folders, self.defines).code != self.source.code
        except (OSError, NotUtf8):
            return False

    def rebuild(self) -> ShaderError | None:
        """Build from the files as they are now; on success swap it in and run the
        ``on_reload`` callbacks. Returns None on success, else the error (the old pipeline
        and its bind groups stay). Never raises for a bad shader or a missing file."""
        t = time.perf_counter()
        try:
            source = expand(self.path, self.folders, self.defines)
        except OSError as e:
            self.error = ShaderError(Path(e.filename or self.path), None, None, "cannot read: "
                                     + (e.strerror or str(e)))  # fmt: skip
            return self.error
        except NotUtf8 as e:
            self.error = undecodable(e)
            return self.error
        try:
            new = self.factory(self._module(source))
        except wgpu.GPUError as e:
            self.error = parse_error(str(e), source, source.path)
            return self.error
        old, self._current = self._current, new
        try:
            self._run_callbacks()
        except wgpu.GPUError as e:
            self._current = old
            self._run_callbacks()  # the old pipeline's bind groups again
            self.error = parse_error(str(e), None, source.path)
            return self.error
        self.source, self.error = source, None
        self.version += 1
        self.build_ms = (time.perf_counter() - t) * 1e3
        return None

    def _run_callbacks(self) -> None:
        for fn in self._callbacks:
            fn()

    def _module(self, source: ExpandedSource) -> wgpu.GPUShaderModule:
        module = self.registry.device.create_shader_module(label=self.name, code=source.code)
        MODULE_HASHES[self.variant_name] = wgsl_hash(source.code)
        return module


class ShaderRegistry:
    """Every ``PipelineHandle`` of one device.

    Args:
        device: the ``GPUDevice`` pipelines are created on.
        root: the folder names are looked up in first (default ``shaders/``, or the
            ``LANTERN_SHADER_DIR`` environment variable: a working copy of some shaders,
            found by file name, a tool package's WGSL included; what it lacks comes from
            ``shaders/`` or the package).

    Attributes:
        handles: in creation order.
    """

    def __init__(self, device: wgpu.GPUDevice, root: Path | str | None = None):
        self.device = device
        self.root = Path(root or os.environ.get("LANTERN_SHADER_DIR") or SHADER_DIR).resolve()
        self.handles: list[PipelineHandle] = []

    def pipeline(
        self,
        name: str | Path,
        factory: Callable[[wgpu.GPUShaderModule], T],
        *,
        label: str | None = None,
        defines: dict | None = None,
    ) -> PipelineHandle[T]:
        """Build ``factory(module)`` from ``name`` (a file in ``root``, or a path: a tool
        package's or a sample's own WGSL, taken from a ``root`` other than ``shaders/``
        when that folder has a file of the same name) and keep the handle for rebuilds;
        ``defines``: the variant of the file to build (see ``expand``).

        Raises:
            OSError: the file cannot be read. NotUtf8: it is not UTF-8 text (one line
                naming the file and the byte). wgpu.GPUValidationError: it does not compile
                or the factory's pipeline is invalid.
        """
        path, home = Path(name), None
        if path.is_absolute():
            copy = self.root / path.name
            if self.root != SHADER_DIR.resolve() and copy.is_file():  # its own includes are
                path, home = copy, path.parent  # still beside the file it stands in for
        else:
            path = find_include(str(path), self.root)
        path = path.resolve()
        handle = PipelineHandle(self, Path(name).name, path, factory, label or path.name, defines,
                                home)  # fmt: skip
        self.handles.append(handle)
        return handle

    def files(self) -> set[Path]:
        """Every file some handle was built from (modules and includes), resolved."""
        return {f.resolve() for h in self.handles for f in h.files}

    def using(self, paths) -> list[PipelineHandle]:
        """Handles built from any of ``paths`` (resolved), in creation order."""
        paths = {Path(p).resolve() for p in paths}
        return [h for h in self.handles if paths & {f.resolve() for f in h.files}]


class UsageProbe:
    """Which passes call which handle's ``get()`` while one frame records (``probe``)."""

    def __init__(self):
        self.current: str | None = None
        self.seen: set[tuple[PipelineHandle, str | None]] = set()

    def passes_of(self, handles) -> list[str]:
        """Names of the passes that drew with any of ``handles``, sorted."""
        ids = {id(h) for h in handles}
        return sorted({p for h, p in self.seen if id(h) in ids and p is not None})


_PROBE: UsageProbe | None = None


def probe(graph) -> Callable[[], UsageProbe]:
    """Start probing the next frame of ``graph``: each pass's ``record`` is wrapped to name
    the pass while it records. Returns ``stop()``, which unwraps and returns the probe."""
    global _PROBE
    usage = _PROBE = UsageProbe()
    wrapped = []
    for p in graph.passes:
        own = p.__dict__.get("record")  # an instance attribute to put back, or None

        def record(ctx, encoder, _p=p, _inner=p.record):
            usage.current = _p.name
            try:
                return _inner(ctx, encoder)
            finally:
                usage.current = None

        p.record = record
        wrapped.append((p, own))

    def stop() -> UsageProbe:
        global _PROBE
        for p, own in wrapped:
            if own is None:
                del p.record
            else:
                p.record = own
        if _PROBE is usage:
            _PROBE = None
        return usage

    return stop


_REGISTRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shader_registry(device: wgpu.GPUDevice) -> ShaderRegistry:
    """The device's registry (created on first use)."""
    reg = _REGISTRIES.get(device)
    if reg is None:
        reg = _REGISTRIES[device] = ShaderRegistry(device)
    return reg


def shader_pipeline(
    device: wgpu.GPUDevice,
    name: str | Path,
    factory: Callable[[wgpu.GPUShaderModule], T],
    *,
    label: str | None = None,
    defines: dict | None = None,
) -> PipelineHandle[T]:
    """``shader_registry(device).pipeline(name, factory)``: the one-line replacement of
    ``shader_module`` + ``create_*_pipeline`` in a pass."""
    return shader_registry(device).pipeline(name, factory, label=label, defines=defines)


def compute_pipelines(
    device: wgpu.GPUDevice,
    module: wgpu.GPUShaderModule,
    entries,
    *,
    label: str,
    layout: Any = "auto",
) -> dict[str, wgpu.GPUComputePipeline]:
    """``{entry: pipeline}``: a compute pipeline per entry point of ``module`` (what a
    ``shader_pipeline`` factory of a multi-dispatch pass returns), labelled ``"<label>
    <entry>"``. ``layout``: ``"auto"``, a ``GPUPipelineLayout``, or a callable from the entry
    name to either (entries that bind more groups than the others)."""
    pick = layout if callable(layout) else (lambda e: layout)
    return {
        e: device.create_compute_pipeline(
            label=f"{label} {e}", layout=pick(e), compute={"module": module, "entry_point": e}
        )
        for e in entries
    }


def set_shader_registry(device: wgpu.GPUDevice, registry: ShaderRegistry | None):
    """Make ``registry`` the device's (None: a fresh one on next use); returns the previous
    one or None (tests: pipelines built from a temporary copy of the shaders)."""
    previous = _REGISTRIES.pop(device, None)
    if registry is not None:
        _REGISTRIES[device] = registry
    return previous
