"""The render graph: passes in declaration order, graph-owned resources, automatic timing.

A pass is one of three kinds:

* ``RenderPass`` — the graph begins the wgpu render pass from ``targets(ctx)`` (a dict of
  ``color_attachments`` / ``depth_stencil_attachment``) and hands the pass encoder to
  ``record(ctx, rpass)``.
* ``ComputePass`` — the graph begins the compute pass; ``record(ctx, cpass)``.
* ``TransferPass`` — copies and clears on the command encoder; ``record(ctx, encoder)``,
  wrapped in a debug group of the pass's name.

Because the graph begins every pass itself, it can put the profiler's ``timestamp_writes``
on the pass descriptor and bracket the recording with a CPU scope: a pass added by anyone
is timed without asking. ``graph.profiler`` is ``NULL_PROFILER`` by default and then costs
one attribute test per frame: no query set exists and no timestamp is written. The sink's
protocol is ``engine.profiling.sink.ProfilerSink`` (implemented by
``engine.profiling.FrameProfiler``).

Each pass declares the resources it ``reads`` and ``writes``; before recording a set of
enabled passes for the first time the graph checks that nothing is read before an earlier
pass wrote it (``validate``), and ``describe``/``to_dot`` print the frame (``--graph``).

Two kinds of read reach outside the present moment of the frame:

* **History** ``NAME@prev``: ``NAME`` as it was at the end of the previous frame. A resource
  declared with ``history=True`` (``create_texture`` / ``create_buffer``) is a pair the graph
  alternates at the start of every executed frame: ``view(NAME)`` is this frame's,
  ``view(NAME + "@prev")`` last frame's. On the first frame, after ``resize`` (for
  size-relative textures, which are recreated) and after ``reset_history``, the ``@prev``
  one is **cleared to zero** before any pass runs, and ``history_fresh(NAME)`` is True for
  that frame (a temporal pass then ignores it: exposure snaps, TAA takes the current frame).
  Some enabled pass must write ``NAME`` (checked by ``validate``).
* **Snapshot** ``NAME@PASS``: a copy of texture ``NAME`` as it was right after the earlier
  pass ``PASS`` of the same frame (``PASS`` must write ``NAME``). The graph creates the copy
  target and records the copy (a transfer scope named ``Snapshot``, ``Snapshot.2``, ... in
  frame order, timed like a pass) only while some enabled pass reads it.

Resources are read each frame by name (``view``, ``buffer``); a pass that caches bind
groups keys them on ``resource_key`` (changes on resize and with the history parity).

Names in a graphics debugger (RenderDoc): each render and compute pass is begun with its
name as label and each transfer pass is a debug group, so every pass is a named region.
While ``label_draws`` is set (a capture tool sets it for the frames it captures), each
render and compute pass records through ``DrawLabels``: every draw named with
``draw_label`` (the per-draw names the profiler uses, such as batches) is a debug group of
its name, and no render bundle is used, because wgpu drops debug groups inside bundles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import wgpu

from engine.pass_descriptors import PassDescriptors
from engine.profiling.sink import DRAW_METHODS, NULL_PROFILER, ProfilerSink

RENDER, COMPUTE, TRANSFER = "render", "compute", "transfer"
OUTPUT = "output"  # the imported output texture: written by whichever pass draws to it
PREV = "prev"  # NAME@prev: the history of NAME
SNAPSHOT = "Snapshot"  # the scope name of a snapshot copy
_NONE: frozenset[str] = frozenset()


class DrawLabels:
    """A pass encoder proxy (``RenderGraph.label_draws``) that records the draw or dispatch
    after ``draw_label(text)`` inside a debug group named ``text``; everything else is
    forwarded to the wrapped encoder (the pass, or the per-draw timing proxy, which gets the
    label too). ``timing_draws`` tells passes to record draws one call each, labelled, and
    outside render bundles, as they do for per-draw timing."""

    timing_draws = True

    def __init__(self, encoder):
        self._e = encoder
        self._label: str | None = None

    def __getattr__(self, name):
        return getattr(self._e, name)

    def draw_label(self, text: str, *, alone: bool = True) -> None:
        """Name the next draw or dispatch (``alone``: ``TimedPass.draw_label``)."""
        self._label = text
        inner = getattr(self._e, "draw_label", None)
        if inner is not None:
            inner(text, alone=alone)


def _labelled(name: str):
    def method(self, *args, **kwargs):
        label, self._label = self._label, None
        if label is None:
            return getattr(self._e, name)(*args, **kwargs)
        self._e.push_debug_group(label)
        try:
            return getattr(self._e, name)(*args, **kwargs)
        finally:
            self._e.pop_debug_group()

    method.__name__ = name
    return method


for _n in DRAW_METHODS:
    setattr(DrawLabels, _n, _labelled(_n))


class GraphError(ValueError):
    """An inconsistent render graph: a read nobody writes, a duplicate or empty pass name, a
    history or snapshot without its writer (a sample's or a tool's mistake, found when the
    graph is built or its enabled set changes)."""


def base_name(ref: str) -> str:
    """The resource a reference names: ``"frame.hdr@prev"`` -> ``"frame.hdr"``."""
    return ref.partition("@")[0]


def split_ref(ref: str) -> tuple[str, str | None]:
    """``"frame.hdr@prev"`` -> ``("frame.hdr", "prev")``; ``"a@Main.Late"`` ->
    ``("a", "Main.Late")``; a plain name -> ``(name, None)``."""
    base, at, when = ref.partition("@")
    return (base, when) if at else (ref, None)


class Pass:
    """A named step of the frame. ``name`` is what every table, trace and capture shows; it
    is fixed at construction (read-only) and compared after stripping spaces.

    Subclass and override ``record`` (and ``targets`` for render passes), or pass callables.

    Args:
        name: the pass name (a non-empty string; leading/trailing spaces are stripped).
        record: ``record(ctx, encoder)`` when not overridden: the pass encoder for render and
            compute passes, the command encoder for transfer passes.
        reads, writes: names of the graph resources the pass reads / writes (textures,
            buffers, or logical ones such as ``"cull.counters"``). The graph checks that
            every read was written by an earlier enabled pass or imported.
        enabled: whether the graph records it.

    Raises:
        ValueError: an empty name.
    """

    kind: ClassVar[str] = ""
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    #: A pass that only some tool setting enables: resource -> what turns the pass on to write
    #: it (one line naming the flag or command), said when a tool is asked for the resource
    #: while nothing enabled writes it (``RenderGraph.how_to_write``).
    turned_on_by: ClassVar[dict[str, str]] = {}
    #: On-demand targets: resources this pass writes only while another enabled pass reads
    #: or writes them (``RenderGraph.wanted``; the standard frame's normals, motion and
    #: ambient). It lists them in ``writes`` (and ``reads``, when it loads them) only then.
    on_demand: tuple[str, ...] = ()
    #: The on-demand target this pass exists for (the standard frame's ``Ambient`` compose):
    #: the graph enables it exactly while that target is wanted, and its reads create no
    #: demand.
    serves: str | None = None

    def __init__(
        self,
        name: str,
        record: Callable[..., None] | None = None,
        *,
        reads: tuple[str, ...] | None = None,
        writes: tuple[str, ...] | None = None,
        enabled: bool = True,
    ):
        if not isinstance(name, str) or not name.strip():
            raise GraphError(f"render graph pass name must be a non-empty string, got {name!r}")
        self._name = name.strip()
        if record is not None:
            self.record = record
        if reads is not None:
            self.reads = tuple(reads)
        if writes is not None:
            self.writes = tuple(writes)
        self.enabled = enabled

    @property
    def name(self) -> str:
        return self._name

    def record(self, ctx: FrameContext, encoder) -> None:
        raise NotImplementedError(f"pass {self.name!r} has no record()")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class RenderPass(Pass):
    """A render pass: the graph begins it from ``targets(ctx)`` (a dict of
    ``color_attachments`` / ``depth_stencil_attachment``) and calls ``record(ctx, rpass)``."""

    kind: ClassVar[str] = RENDER

    def __init__(self, name: str, record=None, *, targets=None, **kw):
        super().__init__(name, record, **kw)
        if targets is not None:
            self.targets = targets

    def targets(self, ctx: FrameContext) -> dict:
        return {}


class ComputePass(Pass):
    kind: ClassVar[str] = COMPUTE


class TransferPass(Pass):
    kind: ClassVar[str] = TRANSFER


@dataclass
class TextureDesc:
    format: str
    usage: int
    scale: float = 1.0  # relative to the output size, when ``size`` is None
    size: tuple[int, int] | None = None  # absolute size in pixels
    mip_level_count: int | Callable[[int, int], int] = 1
    #: Values stop growing here (counts accumulated by blending into a float16 target stop at
    #: 2048: 2048 + 1 rounds back to 2048): a reading at it means ">= ceiling". None: no such
    #: limit below the format's range.
    ceiling: float | None = None


@dataclass
class FrameContext:
    """What a pass sees while it records one frame.

    Attributes:
        device: the ``wgpu.GPUDevice``.
        graph: the graph (``graph.texture(name)``, ``graph.buffer(name)``).
        frame_index: 0-based index of the frame being recorded.
        time: seconds of simulated time for this frame.
        size: output size ``(width, height)`` in pixels.
        output: the imported output texture view (window surface or capture target).
    """

    device: wgpu.GPUDevice
    graph: RenderGraph
    frame_index: int
    time: float
    size: tuple[int, int]
    output: Any


class RenderGraph:
    """Passes run in declaration order, with graph-owned textures and buffers.

    Args:
        device: the device every resource is created on.
        output_format: format of the imported output texture (e.g. ``"rgba8unorm-srgb"``).
        size: output size ``(width, height)`` in pixels.
        output_storage_format: the output texture's format as a storage view (its non-sRGB
            twin, ``"rgba8unorm"``/``"bgra8unorm"``) where the target was made with
            ``STORAGE_BINDING`` and ``TEXTURE_BINDING`` usage, so compute passes may write it
            (the HUD does); None where they may not.

    Raises:
        ValueError: from ``add`` for an empty or duplicate pass name.
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        *,
        output_format: str,
        size: tuple[int, int],
        output_storage_format: str | None = None,
    ):
        self.device = device
        self.output_format = output_format
        self.output_storage_format = output_storage_format
        self.size = size
        self.passes: list[Pass] = []
        self._profiler: ProfilerSink = NULL_PROFILER
        self._texture_descs: dict[str, TextureDesc] = {}
        self._textures: dict[str, wgpu.GPUTexture] = {}
        self._views: dict[str, wgpu.GPUTextureView] = {}
        self._buffers: dict[str, wgpu.GPUBuffer] = {}
        self._external: dict[str, Callable[[], wgpu.GPUTexture]] = {}  # import_texture
        self._resize_callbacks: list[Callable[[tuple[int, int]], None]] = []
        self.generation = 0  # bumped whenever size-dependent textures are recreated
        self.readbacks: list = []  # engine.loop.ReadbackClient objects the frame loop drives
        self.imports: set[str] = {OUTPUT}  # resources written outside the graph's passes
        self._validated: tuple | None = None
        self._history: set[str] = set()  # names declared with history=True
        self._fresh: set[str] = set()  # histories whose @prev is cleared next frame
        self._fresh_now: frozenset[str] = frozenset()  # ... cleared in the frame being recorded
        self.parity = 0  # flips at the start of every executed frame with history
        self._snapshots: dict[str, list[tuple[str, str, str]]] = {}  # pass -> (res, ref, scope)
        self._swaps: list[tuple[dict, str, str]] | None = None  # (table, name, name@prev)
        self._copies: dict[tuple, list] = {}  # (generation, parity, pass) -> copy arguments
        self.descriptors = PassDescriptors()  # each pass's C descriptor, built once
        self.label_draws = False  # record through DrawLabels (a debugger capturing the frame)
        self._wanted: frozenset[str] = frozenset()  # on-demand targets some pass reads now

    @property
    def profiler(self) -> ProfilerSink:
        """The profiler sink (``engine.profiling.FrameProfiler``), or ``NULL_PROFILER`` when
        profiling is off; assigning None turns it off."""
        return self._profiler

    @profiler.setter
    def profiler(self, sink: ProfilerSink | None) -> None:
        self._profiler = NULL_PROFILER if sink is None else sink

    # -- passes ---------------------------------------------------------------------------
    def remove(self, p: Pass) -> None:
        """Take pass ``p`` out of the frame (a tool closed); the next ``execute`` validates
        the rest. Nothing when ``p`` is not in the graph."""
        if p in self.passes:
            self.passes.remove(p)
            self._validated = None

    def add(self, p: Pass) -> Pass:
        """Append ``p`` (runs after every pass added before it).

        Raises:
            ValueError: a pass with the same name (after stripping) is already in the graph.
        """
        if any(q.name == p.name for q in self.passes):
            raise GraphError(f"render graph already has a pass named {p.name!r}")
        self.passes.append(p)
        self._validated = None
        return p

    def pass_named(self, name: str) -> Pass:
        """The pass called ``name`` (spaces stripped).

        Raises:
            KeyError: naming the pass and the passes the graph has.
        """
        name = name.strip()
        for p in self.passes:
            if p.name == name:
                return p
        raise KeyError(f"render graph has no pass {name!r}; it has {[p.name for p in self.passes]}")

    def insert(self, p: Pass, *, before: str | None = None, after: str | None = None) -> Pass:
        """Put ``p`` right before or right after the pass named ``before`` / ``after`` (an
        anchor a knob has disabled still places it) and check the frame at once.

        Raises:
            GraphError: no anchor or both, an unknown anchor, a duplicate name, or ``p``
                reads a resource that no enabled pass before it writes (one line naming the
                pass and the resource); the graph is left as it was.
        """
        if (before is None) == (after is None):
            raise GraphError(f"render graph: insert {p.name!r} before= or after= a pass (one)")
        anchor = self._anchor(p, before if before is not None else after)
        self._check_new_name(p)
        at = self.passes.index(anchor) + (0 if before is not None else 1)
        return self._changed(lambda: self.passes.insert(at, p), p)

    def replace(self, name: str, p: Pass) -> Pass:
        """Put ``p`` in place of the pass called ``name`` (its position; ``p`` keeps its own
        name, which every table then shows) and check the frame at once.

        Raises:
            GraphError: no such pass, a duplicate name, ``p`` reads what nothing before it
                writes, or a later pass reads what only the replaced pass wrote; the graph is
                left as it was.
        """
        old = self._anchor(p, name, verb="replace")
        if p.name != old.name:
            self._check_new_name(p)
        at = self.passes.index(old)
        return self._changed(lambda: self.passes.__setitem__(at, p), p, gone=old)

    def remove_named(self, name: str) -> Pass:
        """Take the pass called ``name`` out of the frame and check the frame at once;
        returns it.

        Raises:
            GraphError: no such pass, or another enabled pass reads what only it wrote (one
                line naming both and the resource); the graph is left as it was.
        """
        old = self._anchor(None, name, verb="remove")
        return self._changed(lambda: self.passes.remove(old), old, gone=old)

    def _anchor(self, p: Pass | None, name: str, verb: str = "insert") -> Pass:
        name = name.strip() if isinstance(name, str) else name
        for q in self.passes:
            if q.name == name:
                return q
        what = f"{verb} {p.name!r} next to" if p is not None and verb == "insert" else verb
        raise GraphError(
            f"render graph: cannot {what} {name!r}: no such pass (passes: "
            f"{', '.join(q.name for q in self.passes)})"
        )

    def _check_new_name(self, p: Pass) -> None:
        if any(q.name == p.name for q in self.passes):
            raise GraphError(f"render graph already has a pass named {p.name!r}")

    def _changed(self, change, p: Pass, gone: Pass | None = None) -> Pass:
        """Apply ``change`` to the pass list and validate; undo it on a ``GraphError``."""
        before = list(self.passes)
        change()
        try:
            self.validate()
        except GraphError as e:
            after, self.passes[:] = list(self.passes), before
            self._update_demand()
            raise self._blame(e, gone, before, after) from None
        self._validated = None
        return p

    def _blame(self, e: GraphError, gone, before: list, after: list) -> GraphError:
        """A read that lost its writer when ``gone`` left says which pass took it away."""
        if gone is None:
            return e
        for i, q in enumerate(after):
            if not q.enabled:
                continue
            for r in q.reads:
                base = split_ref(r)[0]
                if base in self.imports or base not in gone.writes:
                    continue
                had = before.index(gone) < before.index(q) if q in before else False
                if had and not any(base in w.writes for w in after[:i] if w.enabled):
                    return GraphError(
                        f"render graph: cannot take {gone.name!r} out: {q.name!r} reads "
                        f"{base!r}, which nothing before it writes then"
                    )
        return e

    def invalidate(self) -> None:
        """Validate again before the next frame: a pass's ``reads`` or ``writes`` changed
        (e.g. it now reads another snapshot; enabling or disabling a pass needs no call)."""
        self._validated = None

    def pass_names(self) -> list[str]:
        return [p.name for p in self.passes if p.enabled]

    def writers(self, name: str, *, besides: Pass | None = None) -> list[str]:
        """Names of the enabled passes (other than ``besides``) that write resource ``name``,
        or that write it while it is wanted (``Pass.on_demand``)."""
        return [
            p.name
            for p in self.passes
            if p.enabled and p is not besides and (name in p.writes or name in p.on_demand)
        ]

    def wanted(self, name: str) -> bool:
        """Whether some enabled pass reads (or writes: blends into) the on-demand target
        ``name`` now, besides the passes that offer it and the pass that ``serves`` it: they
        write it only then. Known from the last ``validate`` (every change of the enabled
        set, ``insert``, ``invalidate``)."""
        return name in self._wanted

    def snapshotted(self, name: str) -> bool:
        """Whether some enabled pass reads a snapshot ``name@PASS`` now (known from the last
        ``validate``): a pass may then not leave ``name`` holding stale pixels for a later
        pass to overwrite (``MainPass``'s skipped clears)."""
        return any(base == name for refs in self._snapshots.values() for base, _, _ in refs)

    def on_demand(self, name: str) -> bool:
        """Whether ``name`` is an on-demand target (some pass lists it in ``on_demand``)."""
        return any(name in p.on_demand for p in self.passes)

    def _update_demand(self) -> None:
        """Which on-demand targets are read, and so which ``serves`` passes run."""
        offered = {n for p in self.passes for n in p.on_demand}
        wanted = set()
        for p in self.passes:
            if p.enabled and p.serves is None:
                # a writer loading its own output (Main.Late after Main.Early) is no demand
                own = p.on_demand  # a pass that only writes one (blends into it) wants it too
                refs = map(base_name, (*p.reads, *p.writes))
                wanted.update(b for b in refs if b in offered and b not in own)
        self._wanted = frozenset(wanted)
        for p in self.passes:
            if p.serves is not None:
                p.enabled = p.serves in self._wanted

    def how_to_write(self, name: str) -> str | None:
        """What turns on a pass that writes ``name`` (a pass's ``turned_on_by``, e.g. a debug
        view's flag), or None when no pass says."""
        return next((p.turned_on_by[name] for p in self.passes if name in p.turned_on_by), None)

    def add_readback(self, client) -> None:
        """Register a readback client (``engine.loop.ReadbackClient``) for the frame loop."""
        self.readbacks.append(client)

    def import_resource(self, *names: str) -> None:
        """Declare resources written outside the passes (CPU uploads, the output)."""
        self.imports.update(names)
        self._validated = None

    def validate(self) -> None:
        """Check that every enabled pass reads only what an earlier enabled pass wrote (or
        what was imported); that each history ``NAME@prev`` read was declared with
        ``history=True`` and is written by some enabled pass; that each snapshot
        ``NAME@PASS`` names an earlier enabled pass that writes the texture ``NAME``. Creates
        the snapshot targets enabled passes read.

        Raises:
            ValueError: naming the pass, the resource, and the pass that writes it too late
                (or that nothing writes it).
        """
        self._update_demand()
        written = set(self.imports)
        enabled = [p for p in self.passes if p.enabled]
        every_write = {r for p in enabled for r in p.writes}
        snapshots: dict[str, list[tuple[str, str, str]]] = {}
        for i, p in enumerate(enabled):
            for r in p.reads:
                base, when = split_ref(r)
                if when == PREV:
                    self._check_history(p, r, base, every_write)
                elif when is not None:
                    self._check_snapshot(p, r, base, when, enabled[:i])
                    refs = snapshots.setdefault(when, [])
                    if all(ref != r for _, ref, _ in refs):
                        refs.append((base, r, ""))
                elif r not in written:
                    later = next((q.name for q in enabled[i + 1 :] if r in q.writes), None)
                    who = (
                        f"only the later pass {later!r} writes it" if later else "no pass writes it"
                    )
                    raise GraphError(
                        f"render graph: pass {p.name!r} reads {r!r} but {who}; "
                        "reorder the passes or import the resource"
                    )
            written.update(p.writes)
        self._install_snapshots(snapshots)

    def _check_history(self, p: Pass, ref: str, base: str, every_write: set[str]) -> None:
        if base not in self._history:
            raise GraphError(
                f"render graph: pass {p.name!r} reads the history {ref!r} but {base!r} was not "
                "created with history=True"
            )
        if base not in every_write and base not in self.imports:
            raise GraphError(
                f"render graph: pass {p.name!r} reads the history {ref!r} but no enabled pass "
                f"writes {base!r}"
            )

    def _check_snapshot(self, p: Pass, ref: str, base: str, after: str, before: list) -> None:
        writer = next((q for q in before if q.name == after), None)
        if writer is None or base not in writer.writes:
            why = "is not an earlier enabled pass" if writer is None else f"does not write {base!r}"
            raise GraphError(
                f"render graph: pass {p.name!r} reads the snapshot {ref!r} but pass {after!r} {why}"
            )
        if base not in self._texture_descs:
            raise GraphError(
                f"render graph: pass {p.name!r} reads the snapshot {ref!r} but {base!r} is not "
                "a graph-owned texture"
            )

    def _install_snapshots(self, snapshots: dict) -> None:
        """Create the snapshot targets (same desc, copied into) and name their scopes."""
        n = sum(len(v) for v in snapshots.values())
        k = 0
        for after in [p.name for p in self.passes if p.name in snapshots]:
            refs = snapshots[after]
            for j, (base, ref, _) in enumerate(refs):
                k += 1
                refs[j] = (base, ref, SNAPSHOT if n == 1 else f"{SNAPSHOT}.{k}")
                src = self._texture_descs[base]
                if not src.usage & wgpu.TextureUsage.COPY_SRC:
                    src = replace(src, usage=src.usage | wgpu.TextureUsage.COPY_SRC)
                    pair = (base, base + "@" + PREV) if base in self._history else (base,)
                    for name in pair:  # a history pair: both, the two swap each frame
                        self._texture_descs[name] = src
                        self._make_texture(name)
                    self.generation += 1
                if ref not in self._textures:
                    u = src.usage | wgpu.TextureUsage.COPY_DST
                    self._texture_descs[ref] = replace(src, usage=u)
                    self._make_texture(ref)
        self._snapshots = snapshots
        self._copies.clear()

    def describe(self) -> str:
        """The enabled passes in order with their resource edges, as text; history reads
        are marked ``(last frame)`` and snapshot reads ``(copy after PASS)``."""

        def label(r: str) -> str:
            base, when = split_ref(r)
            if when is None:
                return r
            return f"{r} (last frame)" if when == PREV else f"{r} (copy after {when})"

        lines = []
        w = max([14, *(len(p.name) for p in self.passes)])  # the kinds in one column
        for i, p in enumerate(self.passes, 1):
            state = "" if p.enabled else "  (disabled)"
            lines.append(f"{i:3d}. {p.name:<{w}} {p.kind}{state}")
            if p.reads:
                lines.append(f"       reads  {', '.join(label(r) for r in p.reads)}")
            if p.writes:
                lines.append(f"       writes {', '.join(p.writes)}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz DOT: passes as boxes (disabled ones dashed), resources as ellipses, an
        edge resource -> pass for a read and pass -> resource for a write. A history read is
        a dashed blue edge labelled ``prev`` from the resource itself (last frame's value);
        a snapshot is its own node (``shape=note``) fed from the pass it copies after."""

        def q(text: str) -> str:  # a DOT string: backslashes and quotes escaped
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

        out = ["digraph frame {", "  rankdir=LR;", '  node [fontname="monospace"];']
        index = {p.name: i for i, p in enumerate(self.passes)}
        for i, p in enumerate(self.passes):
            style = "" if p.enabled else ", style=dashed"
            label = q(f"{i + 1}. {p.name}")[:-1] + f'\\n{p.kind}"'
            out.append(f"  p{i} [shape=box, label={label}{style}];")
        refs = {r for p in self.passes for r in (*p.reads, *p.writes)}
        plain = sorted({split_ref(r)[0] for r in refs if split_ref(r)[1] in (None, PREV)})
        for r in plain:
            out.append(f"  {q(r)} [shape=ellipse];")
        snaps = sorted(r for r in refs if split_ref(r)[1] not in (None, PREV))
        for r in snaps:
            out.append(f"  {q(r)} [shape=note];")
        for r in snaps:
            base, after = split_ref(r)
            if after in index:
                out.append(f'  p{index[after]} -> {q(r)} [style=bold, label="snapshot"];')
        for i, p in enumerate(self.passes):
            for r in p.reads:
                base, when = split_ref(r)
                if when == PREV:
                    out.append(f'  {q(base)} -> p{i} [style=dashed, color=blue, label="prev"];')
                else:
                    out.append(f"  {q(r)} -> p{i};")
            out += [f"  p{i} -> {q(r)};" for r in p.writes]
        out.append("}")
        return "\n".join(out) + "\n"

    # -- resources ------------------------------------------------------------------------
    def create_texture(
        self, name: str, desc: TextureDesc, *, history: bool = False, lazy: bool = False
    ) -> wgpu.GPUTexture | None:
        """Declare a graph-owned texture; relative ones are recreated on ``resize``.

        ``lazy=True`` (an on-demand target): no memory until the first ``view`` or
        ``texture`` of it (returns None); it is readable by name from the start.

        ``history=True`` makes it a pair readable as ``name + "@prev"`` (see the module
        docstring); the graph adds ``RENDER_ATTACHMENT`` to clear it, so the format must be
        a colour format that can be rendered to. Every graph texture can also be copied and
        sampled (``COPY_SRC | TEXTURE_BINDING`` are added), so ``--dump``, ``inspect`` and the
        views read any pass's target without its author asking.
        """
        tools = wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.TEXTURE_BINDING
        desc = replace(desc, usage=desc.usage | tools)
        if history:
            desc = replace(desc, usage=desc.usage | wgpu.TextureUsage.RENDER_ATTACHMENT)
            self._texture_descs[name + "@" + PREV] = desc
            self._make_texture(name + "@" + PREV)
            self._history.add(name)
            self._fresh.add(name)
        self._texture_descs[name] = desc
        if lazy:
            return None
        self._make_texture(name)
        return self._textures[name]

    def _lazy(self, name: str, table: dict):
        """``table[name]`` of a lazily declared texture, made now (KeyError: unknown)."""
        if split_ref(name)[0] not in self._texture_descs or name not in self._texture_descs:
            raise KeyError(name)
        self._make_texture(name)
        return table[name]

    def _make_texture(self, name: str) -> None:
        d = self._texture_descs[name]
        w, h = d.size or (
            max(1, math.floor(self.size[0] * d.scale)),
            max(1, math.floor(self.size[1] * d.scale)),
        )
        mips = d.mip_level_count(w, h) if callable(d.mip_level_count) else d.mip_level_count
        old = self._textures.get(name)
        if old is not None:
            old.destroy()
        tex = self.device.create_texture(
            label=name, size=(w, h, 1), format=d.format, usage=d.usage, mip_level_count=mips
        )
        self._textures[name] = tex
        self._views[name] = tex.create_view(label=name)
        self._swaps = None
        self._copies.clear()
        self.descriptors.clear()  # they hold the replaced views

    def create_buffer(
        self, name: str, *, size: int, usage: int, history: bool = False
    ) -> wgpu.GPUBuffer:
        """Declare (or replace) a graph-owned buffer of ``size`` bytes; ``history=True``
        makes it a pair readable as ``name + "@prev"`` (``COPY_DST`` is added to clear it).
        Replacing one (a pool resized) changes ``resource_key``: bind groups keyed on it
        are made again with the new buffer."""
        names = (name, name + "@" + PREV) if history else (name,)
        if history:
            usage |= wgpu.BufferUsage.COPY_DST
            self._history.add(name)
            self._fresh.add(name)
        replaced = False
        for n in names:
            old = self._buffers.get(n)
            if old is not None:
                old.destroy()
                replaced = True
            self._buffers[n] = self.device.create_buffer(label=n, size=max(4, size), usage=usage)
        self._swaps = None
        if replaced:
            self.generation += 1
        return self._buffers[name]

    def history_fresh(self, name: str) -> bool:
        """Whether ``name + "@prev"`` holds zeros (first frame, after a resize that
        recreated it, after ``reset_history``) rather than last frame's ``name``: in the
        frame being recorded, or between frames in the next one."""
        return name in self._fresh_now or name in self._fresh

    def reset_history(self, name: str | None = None) -> None:
        """Clear the history of ``name`` (None: of every history resource) at the start of
        the next frame (a camera cut, a knob change).

        Raises:
            ValueError: ``name`` was not created with ``history=True``.
        """
        if name is not None and name not in self._history:
            raise GraphError(
                f"render graph: {name!r} has no history; create it with history=True "
                f"(histories: {sorted(self._history)})"
            )
        self._fresh.update(self._history if name is None else {name})

    def resource_key(self) -> tuple[int, int]:
        """``(generation, parity)``: changes whenever a view or buffer returned by name may
        be a different object (a resize, the alternation of history pairs)."""
        return self.generation, self.parity

    def texture(self, name: str) -> wgpu.GPUTexture:
        """The texture called ``name``: graph-owned (history and snapshot copies included)
        or imported with ``import_texture``.

        Raises:
            KeyError: no such texture.
        """
        tex = self._textures.get(name)
        if tex is None and name in self._external:
            return self._external[name]()
        if tex is None:
            return self._lazy(name, self._textures)
        return tex

    def texture_format(self, name: str) -> str:
        """The format of texture ``name`` (graph-owned or imported; ``OUTPUT``: the output's).

        Raises:
            KeyError: no such texture.
        """
        if name == OUTPUT:
            return self.output_format
        desc = self._texture_descs.get(split_ref(name)[0])
        return desc.format if desc is not None else self.texture(name).format

    def import_texture(self, name: str, texture: Callable[[], wgpu.GPUTexture]) -> None:
        """Make a texture owned outside the graph readable by ``name`` (``texture``,
        ``readable_textures``): the standard frame's shadow map and depth pyramid, which it
        recreates itself. ``texture()`` returns the current object. Its writers still declare
        ``name`` in their ``writes``."""
        self._external[name] = texture
        self.imports.discard(name)

    def readable_textures(self) -> list[str]:
        """Texture names a tool may read (``--dump``, ``inspect``, views): the graph's own,
        without history (``@prev``) and snapshot copies, and the imported ones; sorted."""
        return sorted([n for n in self._texture_descs if "@" not in n] + list(self._external))

    def texture_desc(self, name: str) -> TextureDesc | None:
        """How graph texture ``name`` was declared (its ``ceiling`` among others); None for
        an imported texture or an unknown name."""
        return self._texture_descs.get(name)

    def texture_names(self) -> list[str]:
        """Names of the graph-owned textures that exist (a lazy one once used), history
        (``@prev``) and snapshot copies included, in creation order."""
        return list(self._textures)

    def buffer_names(self) -> list[str]:
        """Names of the graph-owned buffers (history ``@prev`` ones included)."""
        return list(self._buffers)

    def view(self, name: str) -> wgpu.GPUTextureView:
        v = self._views.get(name)
        return v if v is not None else self._lazy(name, self._views)

    def buffer(self, name: str) -> wgpu.GPUBuffer:
        return self._buffers[name]

    def on_resize(self, callback: Callable[[tuple[int, int]], None]) -> None:
        """Call ``callback(size)`` after size-relative textures were recreated."""
        self._resize_callbacks.append(callback)

    def resize(self, size: tuple[int, int]) -> None:
        """Recreate every size-relative texture for a new output size in pixels."""
        if tuple(size) == tuple(self.size):
            return
        self.size = tuple(size)
        for name, d in self._texture_descs.items():
            if d.size is None and name in self._textures:  # a lazy one not made stays so
                self._make_texture(name)
                base, when = split_ref(name)
                if when == PREV:
                    self._fresh.add(base)
        self.generation += 1
        for cb in self._resize_callbacks:
            cb(self.size)

    # -- execution ------------------------------------------------------------------------
    def execute(self, encoder: wgpu.GPUCommandEncoder, ctx: FrameContext) -> None:
        """Record every enabled pass into ``encoder``, in declaration order: first the
        history alternation (and clears), each snapshot copy right after its pass.

        Raises:
            ValueError: from ``validate`` when the enabled set changed and is inconsistent.
        """
        key = tuple(p.enabled for p in self.passes)
        if key != self._validated:
            self.validate()  # may switch ``serves`` passes: the key is taken after it
            self._validated = tuple(p.enabled for p in self.passes)
        if self._history:
            self._begin_history(encoder)
        prof = self._profiler
        snaps = self._snapshots
        begin = self.descriptors
        begin.begin_frame(ctx.output)
        labels = self.label_draws
        if not prof.active:
            for p in self.passes:
                if p.enabled:
                    _encode(p, encoder, ctx, begin, None, None, labels)
                    if p.name in snaps:
                        self._copy_snapshots(encoder, p.name, None)
            self._fresh_now = _NONE
            return
        prof.begin_frame(ctx.frame_index, encoder)
        for p in self.passes:
            if p.enabled:
                tw = prof.begin_pass(p.name, p.kind, encoder)
                _encode(p, encoder, ctx, begin, tw, prof, labels)
                prof.end_pass(p.name, p.kind, encoder)
                if p.name in snaps:
                    self._copy_snapshots(encoder, p.name, prof)
        prof.end_frame(encoder)
        self._fresh_now = _NONE

    def _begin_history(self, encoder) -> None:
        """Swap every pair (this frame writes what was read as @prev), clear the fresh."""
        self.parity ^= 1
        if self._swaps is None:  # (re)listed only when a resource was created
            tables = (self._textures, self._views, self._buffers)
            pairs = [(name, name + "@" + PREV) for name in self._history]
            self._swaps = [(t, a, b) for a, b in pairs for t in tables if a in t]
        for table, name, prev in self._swaps:
            table[name], table[prev] = table[prev], table[name]
        if not self._fresh:
            self._fresh_now = _NONE
            return
        self._fresh_now = frozenset(self._fresh)
        self._fresh.clear()
        for name in self._fresh_now:
            prev = name + "@" + PREV
            if prev in self._buffers:
                encoder.clear_buffer(self._buffers[prev])
            else:
                encoder.begin_render_pass(
                    label=f"clear {prev}",
                    color_attachments=[
                        {
                            "view": self._views[prev],
                            "clear_value": (0, 0, 0, 0),
                            "load_op": "clear",
                            "store_op": "store",
                        }
                    ],
                ).end()

    def _copy_snapshots(self, encoder, after: str, prof) -> None:
        """Record the snapshot copies after pass ``after`` (their arguments are kept per
        generation and history parity: a swap or a resize changes the source texture)."""
        key = (self.generation, self.parity, after)
        copies = self._copies.get(key)
        if copies is None:
            if len(self._copies) > 8:
                self._copies.clear()
            copies = self._copies[key] = [
                (scope, {"texture": src}, {"texture": self._textures[ref]}, (*src.size[:2], 1))
                for base, ref, scope in self._snapshots[after]
                for src in (self._textures[base],)
            ]
        for scope, src, dst, size in copies:
            if prof is not None:
                prof.begin_pass(scope, TRANSFER, encoder)
            encoder.push_debug_group(scope)
            encoder.copy_texture_to_texture(src, dst, size)
            encoder.pop_debug_group()
            if prof is not None:
                prof.end_pass(scope, TRANSFER, encoder)


def _encode(
    p: Pass,
    encoder,
    ctx: FrameContext,
    begin: PassDescriptors,
    timestamp_writes,
    prof=None,
    labels: bool = False,
) -> None:
    """Begin (``begin``: cached descriptors), record and end one pass. With a profiler,
    ``record`` gets the encoder ``prof.pass_encoder`` returns (per-draw timing wraps it);
    with ``labels``, that wrapped in ``DrawLabels``."""
    if p.kind == RENDER:
        targets = p.targets(ctx)
        rpass = begin.render(encoder, p.name, targets, timestamp_writes)
        rec = rpass if prof is None else prof.pass_encoder(p.name, RENDER, rpass, targets)
        p.record(ctx, DrawLabels(rec) if labels else rec)
        rpass.end()
    elif p.kind == COMPUTE:
        cpass = begin.compute(encoder, p.name, timestamp_writes)
        rec = cpass if prof is None else prof.pass_encoder(p.name, COMPUTE, cpass, None)
        p.record(ctx, DrawLabels(rec) if labels else rec)
        cpass.end()
    else:
        encoder.push_debug_group(p.name)
        p.record(ctx, encoder)
        encoder.pop_debug_group()
