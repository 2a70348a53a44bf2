"""The layout states the architecture: every module of ``engine`` belongs to one layer, and a
module never imports (at run time) from a layer above its own. Imports under ``if
TYPE_CHECKING:`` are annotations only and do not count.

Layers, lowest first (DESIGN.md):
    base       device, readback, surfaces, resources, shaders, log tail, small helpers
    core       render graph, frame loop, telemetry, commands, option types
    producers  profiling, scene, culling, passes
    frame      the standard frame's wiring, settings and knobs
    services   the HUD (grid, font, overlay pass, panel protocol, layout, palette) and the flame
               chart's drawing, which the live flame panel and s14 share (it writes with the
               HUD's font)
    tools      the tool protocol and one package per tool under engine/tools/
    app        the sample runner, its command line, the offline ``lantern`` programs

Inside the tools layer, a tool package never imports another tool package: tools meet only
through the hubs (commands, telemetry) and the services (``ctx.hud``, ``ctx.log_tail``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "engine"
LAYERS = (
    ("base", ("__init__", "gpu", "readback", "surfaces", "resources", "shaders",
              "shader_registry", "safe_write", "math3d", "interrupt", "progress",
              "pass_descriptors", "logtail", "textfile", "counters", "gpu_sort")),
    ("core", ("graph", "loop", "telemetry", "commands", "profiling.sink", "options")),
    ("producers", ("profiling", "scene", "culling", "passes", "materials", "lights")),
    ("frame", ("frame", "settings", "knobs")),
    ("services", ("hud", "flamechart")),
    ("tools", ("tool", "tools")),
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
        elif isinstance(node, ast.ImportFrom) and node.module == "engine":  # from engine import app
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine."):
            out.append(node.module[len("engine.") :])
        elif isinstance(node, ast.Import):
            out += [a.name[len("engine.") :] for a in node.names if a.name.startswith("engine.")]
        elif isinstance(node, ast.Call) and _imports_by_name(node):  # importlib strings
            arg = node.args[0].value
            out += [arg[len("engine.") :]] if arg.startswith("engine.") else []
    return [m.strip(".") for m in out if m.strip(".")]


def _imports_by_name(node: ast.Call) -> bool:
    """``importlib.import_module("engine.x")`` / ``import_module(...)`` / ``__import__(...)``
    with a string constant first."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    first = node.args[0] if node.args else None
    return name in ("import_module", "__import__") and isinstance(first, ast.Constant) and \
        isinstance(first.value, str)  # fmt: skip


def tool_package(module: str) -> str | None:
    """``"tools.views"`` for ``tools.views.tool``; None outside ``engine/tools/<package>/``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0] == "tools" else None


def cross_tool_imports(root: Path = ENGINE) -> list[str]:
    """Imports from one tool package into another (the package index ``engine.tools``
    itself lists them all and is no tool)."""
    bad = []
    for path in sorted((root / "tools").rglob("*.py")):
        module = _module(path, root)
        src = tool_package(module)
        for target in runtime_imports(path, root):
            dst = tool_package(target)
            if src is not None and dst is not None and dst != src:
                bad.append(f"engine.{module} imports engine.{target}")
    return bad


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


def test_no_tool_package_imports_another():
    assert cross_tool_imports() == []


def test_the_tool_check_catches_each_kind_of_import(tmp_path):
    """A plain import, ``from engine import ...`` and an importlib string are each caught
    (the check can fail); the tools' index may import every tool."""
    (tmp_path / "tools" / "views").mkdir(parents=True)
    (tmp_path / "tools" / "dump").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("from engine.tools.views import ViewTool\n")
    (tmp_path / "tools" / "views" / "__init__.py").write_text("")
    (tmp_path / "tools" / "dump" / "__init__.py").write_text(
        "import importlib\nfrom engine.tools.views.tool import x\n"
        "def f():\n    from engine import tools\n"
        "    return importlib.import_module('engine.tools.views.passes')\n"
    )
    assert cross_tool_imports(tmp_path) == [
        "engine.tools.dump imports engine.tools.views.tool",
        "engine.tools.dump imports engine.tools.views.passes",
    ]
    assert "engine.tools.dump (tools) imports engine.tools (tools)" not in violations(tmp_path)


def _body_imports(root: Path = ENGINE) -> list[str]:
    """``module:function -> engine.target`` of every engine import inside a function body."""
    out = []
    for path in sorted(root.rglob("*.py")):
        module = _module(path, root)
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").split(".")[0] == "engine"
                ):
                    out.append(f"{module}:{fn.name} -> {node.module}")
                elif isinstance(node, ast.Import):
                    out += [f"{module}:{fn.name} -> {a.name}" for a in node.names
                            if a.name.split(".")[0] == "engine"]  # fmt: skip
    return sorted(set(out))


def test_few_engine_imports_hide_in_function_bodies():
    """Imports inside functions hide the structure (issue 25 counted 55): under 15 are left,
    each one a start-up cost kept off the common path; the ``lantern`` command's subcommand
    dispatch is exempt (it imports the one program asked for)."""
    hidden = [r for r in _body_imports() if not r.startswith("devtools.cli:")]
    assert len(hidden) < 15, "\n".join(hidden)


def test_every_module_has_a_layer():
    for path in ENGINE.rglob("*.py"):
        layer_of(_module(path))  # raises for a module in no layer


def test_the_check_catches_an_upward_import(tmp_path):
    """A core module importing a tool or the app is reported; an annotation-only import is
    not (the check can fail)."""
    (tmp_path / "graph.py").write_text("from .hud.service import Hud\nimport engine.app\n")
    (tmp_path / "tool.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .app import App\n"
    )
    assert violations(tmp_path) == [
        "engine.graph (core) imports engine.hud.service (services)",
        "engine.graph (core) imports engine.app (app)",
    ]


@pytest.mark.parametrize(
    "module, layer",
    [
        ("profiling.sink", "core"),
        ("profiling.gpu", "producers"),
        ("hud.service", "services"),
        ("tools.views.tool", "tools"),
    ],  # fmt: skip
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
    (tmp_path / "hud").mkdir()
    (tmp_path / "passes").mkdir()
    (tmp_path / "hud" / "service.py").write_text("from ..passes.overlay import X\n")
    (tmp_path / "passes" / "overlay.py").write_text("from ..hud.service import Y\n")
    assert folder_cycles(tmp_path) == [("hud", "passes")]  # the check can fail
