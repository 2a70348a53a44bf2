"""The layout states the architecture: every module of ``engine`` belongs to one layer, and a
module never imports (at run time) from a layer above its own. Imports under ``if
TYPE_CHECKING:`` are annotations only and do not count.

Layers, lowest first (DESIGN.md):
    base       device, readback, surfaces, resources, shaders, small helpers
    core       render graph, frame loop, telemetry (record/stats/stream/wire), commands
    producers  profiling, scene, culling, passes, the overlay primitive
    frame      the standard frame's wiring and settings
    tools      the tool protocol and every tool: HUD, console, portal, inspector, exporters
    app        the sample runner, its command line, the lantern command
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "engine"
LAYERS = (
    ("base", ("__init__", "gpu", "readback", "surfaces", "resources", "shaders",
              "shader_registry", "safe_write", "math3d", "interrupt", "progress",
              "pass_descriptors", "textfile")),
    ("core", ("graph", "loop", "telemetry", "commands", "profiling.sink")),
    ("producers", ("profiling", "scene", "culling", "passes", "overlay")),
    ("frame", ("frame", "settings")),
    ("tools", ("tool", "tools", "debug", "portal", "inspect", "export", "ablation",
               "reload", "reload_cost", "compare")),
    ("app", ("app", "cli", "devtools")),
)  # fmt: skip


def layer_of(module: str) -> int:
    """The layer index of ``module`` (dotted, relative to ``engine``): its longest listed
    prefix wins (``profiling.sink`` is core, the rest of ``profiling`` a producer)."""
    best = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    if best is None:
        raise LookupError(f"engine.{module} is in no layer: add it to LAYERS in {__file__}")
    return best[0]


def _module(path: Path, root: Path = ENGINE) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def runtime_imports(path: Path, root: Path = ENGINE) -> list[str]:
    """The ``engine`` modules ``path`` imports outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = [ast.Pass()]
    package = _module(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1] if node.level > 1 else package
            if node.module:
                out.append(".".join([*base, node.module]))
            else:
                out += [".".join([*base, a.name]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine."):
            out.append(node.module[len("engine.") :])
        elif isinstance(node, ast.Import):
            out += [a.name[len("engine.") :] for a in node.names if a.name.startswith("engine.")]
    return [m.strip(".") for m in out if m.strip(".")]


def violations(root: Path = ENGINE) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.py")):
        module = _module(path, root)
        for target in runtime_imports(path, root):
            lm, lt = layer_of(module), layer_of(target)
            if lt > lm:
                bad.append(f"engine.{module} ({LAYERS[lm][0]}) imports engine.{target} "
                           f"({LAYERS[lt][0]})")  # fmt: skip
    return bad


def test_no_module_imports_from_a_layer_above_it():
    assert violations() == []


def test_every_module_has_a_layer():
    for path in ENGINE.rglob("*.py"):
        layer_of(_module(path))  # raises for a module in no layer


def test_the_check_catches_an_upward_import(tmp_path):
    """A core module importing a tool or the app is reported; an annotation-only import is
    not (the check can fail)."""
    (tmp_path / "graph.py").write_text("from .debug.hud import Hud\nimport engine.app\n")
    (tmp_path / "tool.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .app import App\n"
    )
    assert violations(tmp_path) == [
        "engine.graph (core) imports engine.debug.hud (tools)",
        "engine.graph (core) imports engine.app (app)",
    ]


@pytest.mark.parametrize(
    "module, layer",
    [("profiling.sink", "core"), ("profiling.gpu", "producers"), ("debug.hud", "tools")],
)
def test_layer_of(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


def folder_cycles(root: Path = ENGINE) -> list[tuple[str, str]]:
    """Pairs of top-level folders (or root modules) of ``engine`` that import each other,
    directly or through others, at run time."""
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        src = _module(path, root).split(".")[0]
        for target in runtime_imports(path, root):
            dst = target.split(".")[0]
            if dst != src:
                edges.setdefault(src, set()).add(dst)

    def reaches(a: str, b: str) -> bool:
        todo, seen = [a], {a}
        while todo:
            for n in edges.get(todo.pop(), ()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    return sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if reaches(b, a)})


def test_no_import_cycle_between_folders(tmp_path):
    assert folder_cycles() == []
    (tmp_path / "debug").mkdir()
    (tmp_path / "passes").mkdir()
    (tmp_path / "debug" / "hud.py").write_text("from ..passes.overlay import X\n")
    (tmp_path / "passes" / "overlay.py").write_text("from ..debug.hud import Y\n")
    assert folder_cycles(tmp_path) == [("debug", "passes")]  # the check can fail
