"""Hot reload of WGSL: a tool (``engine.tool``) over the shader registry.

A ``watchfiles`` watcher (inotify / FSEvents / ReadDirectoryChangesW: event-driven) on the
folders of every file the device's ``ShaderRegistry`` built from (modules and their
includes) queues the paths that changed; between frames, on the frame thread, the tool
rebuilds only the handles built from them (``PipelineHandle.rebuild``: new module, the
pass's factory, its bind-group callbacks) and logs one line per reload::

    reloaded s02_work.wgsl: 2 pipelines in 4.1 ms

A bad edit keeps the old pipeline and reports the compiler's message once, as
``file:line:column: message`` (the line of the file it is in, through include expansion;
a file saved in another encoding, with a NUL byte or cut inside a character: ``file: not
UTF-8 at byte N (...)``, ``engine/textfile.py``):
in the log (hence the HUD's log panel and the portal's log), and to every ``subscribe``d
listener (the App shows it as a HUD notice and in the console); the next good save clears
it. A watched file deleted keeps the old pipeline and says so once; restoring it reloads.

Commands: ``reload`` (also F5) rebuilds what changed since the last build, now;
``reload on|off`` starts / stops the watcher. On by default in a window, off in captures
unless ``--hot-reload``. When idle the frame pays one truthiness test of a set.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.commands import Choice, CommandError
from engine.shader_registry import (
    PipelineHandle,
    ShaderRegistry,
    _display,
    expand,
    shader_registry,
    undecodable,
)
from engine.shaders import shader_hashes, wgsl_hash
from engine.textfile import NotUtf8

log = logging.getLogger("lantern")
logging.getLogger("watchfiles").setLevel(logging.WARNING)  # not "3 changes detected" per save

KEY_F5 = 294  # glfw
STEP_MS = 30  # the watcher yields once no new change came for this long (an editor's save);
# also how often its Rust loop wakes. H200 host: 20 ms -> save-to-drawn 40 ms, 2.6 ms CPU a
# second idle on the watcher thread; 50 ms -> 101 ms (over the 100 ms goal), 1.0 ms/s
DEBOUNCE_MS = 200  # ...or after this long of continuous changes
TIMEOUT_MS = 1000  # the watcher yields to Python at least this often (stop is checked each step)


@dataclass(frozen=True)
class ReloadEvent:
    """One outcome, for tests and the portal. kind: ``"reloaded"`` (files, pipelines,
    ms), ``"error"`` (text), ``"deleted"`` / ``"restored"`` (files)."""

    kind: str
    files: tuple[str, ...]
    pipelines: int = 0
    ms: float = 0.0
    text: str = ""


class HotReload:
    """The ``reload`` tool.

    Args:
        registry: the shader registry to rebuild (default: the device's).
        enabled: start the watcher at install (None: in a window, or with ``--hot-reload``).

    Attributes:
        events: every ``ReloadEvent`` so far, oldest first. batches: change batches handled.
        notice: the current error text (None when every watched shader builds).
        watching: whether the watcher thread runs.
        on_swap: callables ``fn(handles)`` run right after pipelines were replaced (the cost
            tracker marks the frame).
    """

    name = "reload"

    def __init__(self, registry: ShaderRegistry | None = None, *, enabled: bool | None = None):
        self.registry = registry
        self.enabled = enabled
        self.events: list[ReloadEvent] = []
        self.batches = 0
        self.notice: str | None = None
        self.on_swap: list[Callable[[list[PipelineHandle]], None]] = []
        self._listeners: list[Callable[[str | None], None]] = []
        self._pending: set[Path] = set()
        self._lock = threading.Lock()
        self._missing: set[Path] = set()
        self._bad_code: dict[int, str] = {}  # id(handle) -> the code that failed last
        self._thread: threading.Thread | None = None
        self._stop: threading.Event | None = None
        self._ready = threading.Event()
        self.last_event_s = 0.0
        self._arrived = threading.Event()  # set while changes wait for the frame thread
        self._dirs: tuple[Path, ...] = ()
        self._handles_seen = 0  # registry handles when the watched folders were last checked
        self._loop = None
        self._telemetry = None

    # -- tool protocol ---------------------------------------------------------------------
    def install(self, ctx) -> None:
        if self.registry is None:
            self.registry = shader_registry(ctx.gpu.device)
        ctx.commands.register(
            "reload",
            self.command,
            args=[Choice("on", "off", optional=True)],
            help="rebuild the pipelines whose WGSL changed (F5); on|off: watch the files",
        )
        self._loop = ctx.loop
        ctx.loop.between_frames.append(self.between_frames)
        on = self.enabled
        if on is None:
            on = ctx.window is not None or bool(ctx.option("hot_reload", False))
        if on:
            self.start()
        self._telemetry = ctx.telemetry
        ctx.telemetry.set_fact("shaders", shader_hashes())  # compare.py names what changed
        self._show_in_views(ctx)

    def _show_in_views(self, ctx) -> None:
        """The error notice on the HUD's bottom row (the console prints the HUD's notices;
        the log line reaches the HUD's log panel and the portal by itself)."""
        if ctx.hud is not None:
            self.subscribe(ctx.hud.set_notice)

    def close(self) -> None:
        self.stop()
        if self._loop is not None and self.between_frames in self._loop.between_frames:
            self._loop.between_frames.remove(self.between_frames)

    def subscribe(self, fn: Callable[[str | None], None]) -> None:
        """Call ``fn(text)`` when the error notice changes (None: cleared), frame thread."""
        self._listeners.append(fn)

    # -- watcher ---------------------------------------------------------------------------
    @property
    def watching(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Watch the folders of every registered file (no-op when already watching)."""
        if self._thread is not None:
            return
        self._handles_seen = len(self.registry.handles)
        self._dirs = tuple(sorted({f.parent for f in self.registry.files()}))  # resolved
        if not self._dirs:
            return
        self._stop, self._ready = threading.Event(), threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(self._dirs, self._stop, self._ready), daemon=True,
            name="lantern-reload",
        )  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._thread = None

    def wait_ready(self, timeout_s: float = 5.0) -> bool:
        """Block until the watcher has its watches in place (tests, benchmarks)."""
        return self._ready.wait(timeout_s)

    def wait_changes(self, timeout_s: float = 5.0) -> bool:
        """Block until the watcher queued changes for ``between_frames`` (tests without a
        frame loop); False on timeout."""
        return self._arrived.wait(timeout_s)

    def _watch(self, dirs, stop: threading.Event, ready: threading.Event) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(
                *dirs, watch_filter=None, debounce=DEBOUNCE_MS, step=STEP_MS,
                stop_event=stop, rust_timeout=TIMEOUT_MS, yield_on_timeout=True,
                raise_interrupt=False, recursive=False,
            ):  # fmt: skip
                ready.set()  # the first yield (a timeout at the latest) means watches are set
                if changes:
                    paths = {Path(p).resolve() for _, p in changes}
                    with self._lock:
                        self._pending |= paths
                        self.last_event_s = time.perf_counter()  # benchmarks: watcher delay
                        self._arrived.set()
                    if self._loop is not None:  # an idle window draws (and reloads) now
                        self._loop.request_frame()
        except Exception as e:  # a watcher that dies must not take the sample with it
            log.warning("reload: the file watcher stopped (%s: %s); F5 still reloads",
                        type(e).__name__, e)  # fmt: skip
        finally:
            ready.set()

    # -- frame thread ----------------------------------------------------------------------
    def between_frames(self) -> None:
        """Frame-thread hook: watch the folders of pipelines built since the watcher started
        (the HUD's, a tool's: they come after it), then handle what the watcher queued (two
        tests when idle)."""
        if self.watching and len(self.registry.handles) != self._handles_seen:
            self._watch_new_folders()
        if not self._pending:
            return
        with self._lock:
            paths, self._pending = self._pending, set()
            self._arrived.clear()
        self.process(paths)

    def _watch_new_folders(self) -> None:
        """Restart the watcher on the folders of every registered file where pipelines built
        since it started added one."""
        self._handles_seen = len(self.registry.handles)
        if {f.parent for f in self.registry.files()} - set(self._dirs):
            self.stop()
            self.start()

    def command(self, state: str | None = None) -> str:
        if state == "off":
            self.stop()
            return "reload: watcher off (F5 or 'reload' still rebuilds)"
        if state == "on":
            self.start()
            if not self.watching:
                raise CommandError("reload: no WGSL file to watch")
            return f"reload: watching {len(self.registry.files())} file(s)"
        done = self.process(self.registry.files(), manual=True)
        if self.notice is not None:  # a file still fails (or is gone): the page says error
            raise CommandError(done or f"no WGSL changed; still {self.notice}")
        return done or f"reload: no WGSL changed ({len(self.registry.handles)} pipelines)"

    def process(self, paths, *, manual: bool = False) -> str | None:
        """Rebuild the handles built from ``paths`` whose code changed; log and return the
        outcome line (None when nothing changed)."""
        if self.watching:
            self._watch_new_folders()
        paths = {Path(p).resolve() for p in paths} & self.registry.files()
        if not paths:
            return None
        self.batches += 1
        lines = self._deleted_or_restored(paths)
        present = {p for p in paths if p.exists()}
        t0 = time.perf_counter()
        done, failed = [], {}
        cleared = []
        for h in self.registry.using(present):
            outcome = self._rebuild_if_changed(h)
            if outcome is True:
                done.append(h)
            elif outcome == "cleared":
                cleared.append(h)
            elif outcome is not None:
                failed.setdefault(str(outcome), h)
        if cleared:
            names = ", ".join(sorted({_rel(h.path) for h in cleared}))
            line = f"{names}: back to the code that is running (error cleared)"
            log.info("%s", line)
            lines.append(line)
        ms = (time.perf_counter() - t0) * 1e3
        if done:
            changed = sorted({_rel(f) for h in done for f in h.files if f.resolve() in present})
            names = ", ".join(changed)
            n = sum(h.count for h in done)
            line = f"reloaded {names}: {n} pipeline{'s' * (n != 1)} in {ms:.1f} ms"
            log.info("%s", line)
            lines.append(line)
            self.events.append(ReloadEvent("reloaded", tuple(changed), n, ms))
            if self._telemetry is not None:  # the session names the WGSL now running
                hashes = self._telemetry.session.facts.get("shaders", {})
                new = {h.name: wgsl_hash(h.source.code) for h in done}
                self._telemetry.set_fact("shaders", {**hashes, **new})
            for fn in self.on_swap:
                fn(done)
        for text in failed:
            line = f"{text} (keeping the old pipeline)"
            log.error("%s", line)
            lines.append(line)
            self.events.append(ReloadEvent("error", (), text=text))
        self._update_notice()
        return "\n".join(lines) if lines else None

    def _rebuild_if_changed(self, h: PipelineHandle):
        """True (rebuilt), a ``ShaderError`` (new failure), ``"cleared"`` (back to the
        running code while it had an error), or None (nothing to do)."""

        try:
            code = expand(h.path, h.folders, h.defines).code
        except OSError:
            return None  # a missing include: said once by _deleted_or_restored
        except NotUtf8 as e:  # saved in another encoding: say where, keep the old pipeline
            h.error = undecodable(e)
            said, self._bad_code[id(h)] = self._bad_code.get(id(h)), (str(e),)
            return None if said == (str(e),) else h.error
        if code == h.source.code:  # back to the working code: the error is gone
            cleared, h.error = h.error is not None, None
            self._bad_code.pop(id(h), None)
            return "cleared" if cleared else None
        if self._bad_code.get(id(h)) == code:
            return None  # the same broken code saved again: said already
        err = h.rebuild()
        if err is None:
            self._bad_code.pop(id(h), None)
            return True
        self._bad_code[id(h)] = code
        return err

    def _deleted_or_restored(self, paths: set[Path]) -> list[str]:
        lines = []
        for p in sorted(paths):
            users = len(self.registry.using([p]))
            if not p.exists() and p not in self._missing:
                self._missing.add(p)
                line = f"{_rel(p)} deleted: keeping the old pipeline ({users} use it)"
                log.warning("%s", line)
                self.events.append(ReloadEvent("deleted", (_rel(p),)))
                lines.append(line)
            elif p.exists() and p in self._missing:
                self._missing.discard(p)
                line = f"{_rel(p)} restored"  # (a rebuild, if its code changed, says so next)
                log.info("%s", line)
                self.events.append(ReloadEvent("restored", (_rel(p),)))
                lines.append(line)
        return lines

    def _update_notice(self) -> None:
        errors = [str(h.error) for h in self.registry.handles if h.error is not None]
        missing = [f"{_rel(p)} deleted: keeping the old pipeline" for p in sorted(self._missing)]
        notice = (errors + missing or [None])[0]
        if notice != self.notice:
            self.notice = notice
            for fn in self._listeners:
                fn(notice)


def _rel(path: Path) -> str:
    return _display(path)
