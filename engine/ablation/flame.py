"""Shader flame graph: function -> loop / branch -> statement, as a standalone SVG or HTML file.

Top-down (icicle) layout. Widths are measured cost where ablation measured it; a statement
without a measurement gets a share of what its parent's measured cost leaves unexplained, split
by a modeled op count (``instrument._model``), and says "modeled" in its label. With no
measurement at all (``result=None``) every width is modeled and the title says so. Statements in
a loop body are measured for one iteration: they are scaled to fill the loop's measured width
(their shares of an iteration), as the tooltip says. Negative readings get zero width and
their tooltip reads "too small to measure"; readings within their noise (two standard errors)
keep their own (small) width and say "within noise": the unexplained remainder of a parent
goes only to statements ablation could not bracket, never to a measured one. A label too
long for its bar is shortened before its "[modeled]" tag, never through it. Colour by kind:
arithmetic, transcendental, texture, memory (see ``instrument.KINDS``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from engine.ablation.instrument import Row

COLORS = {
    "arithmetic": "#5b8def",
    "transcendental": "#f0a030",
    "texture": "#3fb07f",
    "memory": "#b065d8",
}
ROW_H, WIDTH, PAD = 22, 1200, 10


@dataclass
class Node:
    label: str
    kind: str
    value: float  # width units (ns, or modeled ops)
    modeled: bool
    note: str = ""
    children: list[Node] = field(default_factory=list)


def _modeled_total(rows: list[Row], k: int) -> float:
    """A row's modeled ops with its children's, a loop's children times its trip count."""
    r = rows[k]
    return r.modeled + r.trips * sum(_modeled_total(rows, c) for c in r.children)


def build_tree(rows: list[Row], title: str, cost=None, total: float | None = None,
               note=None) -> Node:  # fmt: skip
    """Tree of ``rows`` under a root named ``title``. ``cost(row)`` -> ns or None (not
    measured); ``total``: the root's measured width (None: everything modeled);
    ``note(row)`` -> text for a measured row's tooltip ("within noise ...") or ""."""
    measured = cost is not None and total is not None and total > 0

    def make(k: int, budget: float | None) -> Node:
        r = rows[k]
        c = cost(r) if measured else None
        own = c if c is not None and c >= 0 else None
        tip = (note_of(r) or "") if c is not None else ""
        if c is not None and c < 0:
            tip = f"too small to measure ({c / 1e6:+.4f} ms)"
            own = 0.0
        value = own if own is not None else (budget if budget is not None else 0.0)
        modeled = own is None
        if not measured:
            value, modeled = _modeled_total(rows, k), True
        label = f"L{r.line} {r.text}"
        node = Node(label, r.kind, value, modeled, tip)
        node.children = children(r.children, value if measured else None, r)
        return node

    def children(ks: list[int], parent_value: float | None, parent: Row | None) -> list[Node]:
        if not ks:
            return []
        if parent_value is None:  # all modeled
            return [make(k, None) for k in ks]
        costs = {k: cost(rows[k]) for k in ks}
        known = sum(max(v, 0.0) for v in costs.values() if v is not None)
        unknown = [k for k in ks if costs[k] is None]
        in_loop = parent is not None and parent.stmt.kind in ("loop", "for", "while")
        # One-iteration costs inside a loop: scale them to the loop's measured width.
        scale = parent_value / known if in_loop and known > 0 else 1.0
        if known * scale > parent_value > 0:
            scale = parent_value / known
        left = max(parent_value - known * scale, 0.0)
        weights = {k: _modeled_total(rows, k) for k in unknown}
        wsum = sum(weights.values()) or 1.0
        out = []
        for k in ks:
            if costs[k] is None:
                node = make(k, left * weights[k] / wsum)
            else:
                node = make(k, None)
                node.value = max(costs[k], 0.0) * scale
                if scale != 1.0:
                    node.note = (node.note + " " if node.note else "") + (
                        "one iteration, scaled to the loop" if in_loop else "scaled to fit"
                    )
                node.children = children(rows[k].children, node.value, rows[k])
            out.append(node)
        return out

    def note_of(r: Row) -> str:
        return note(r) if note is not None else ""

    top = [k for k, r in enumerate(rows) if r.parent is None]
    if measured:
        root = Node(title, "arithmetic", total, False)
        root.children = children(top, total, None)
    else:
        root = Node(f"{title} (modeled op counts: nothing measured)", "arithmetic", 0.0, True)
        root.children = children(top, None, None)
        root.value = sum(c.value for c in root.children)
    return root


def _depth(n: Node) -> int:
    return 1 + max((_depth(c) for c in n.children), default=0)


def to_svg(root: Node, unit: str = "ns") -> str:
    """The flame graph as an SVG document (str)."""
    rows = _depth(root)
    height = PAD * 2 + ROW_H * rows + 40
    scale = (WIDTH - 2 * PAD) / root.value if root.value > 0 else 0.0
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
    ]

    def fmt(v: float, modeled: bool) -> str:
        if modeled:
            return f"{v:.0f} modeled ops" if unit == "ops" else f"{v / 1e6:.4f} ms modeled"
        return f"{v / 1e6:.4f} ms" if unit == "ns" else f"{v:.0f} ops"

    def draw(n: Node, x: float, depth: int) -> None:
        w = n.value * scale
        y = PAD + depth * ROW_H
        color = "#9aa3b5" if depth == 0 else COLORS.get(n.kind, "#888888")
        tip = f"{n.label} | {fmt(n.value, n.modeled)} | {n.kind}"
        if n.note:
            tip += f" | {n.note}"
        dash = ' stroke-dasharray="3,2"' if n.modeled else ""
        out.append(
            f'<g><title>{html.escape(tip)}</title><rect x="{x:.2f}" y="{y}" '
            f'width="{max(w, 0.0):.2f}" height="{ROW_H - 2}" fill="{color}" '
            f'stroke="#ffffff"{dash} opacity="{0.55 if n.modeled else 0.95}"/>'
        )
        text = _fit(n.label, " [modeled]" if n.modeled and depth else "", int((w - 6) / 7.2))
        if text:
            out.append(f'<text x="{x + 3:.2f}" y="{y + 15}">{html.escape(text)}</text>')
        out.append("</g>")
        cx = x
        for c in n.children:
            draw(c, cx, depth + 1)
            cx += c.value * scale

    draw(root, PAD, 0)
    ly = PAD + rows * ROW_H + 20
    lx = PAD
    for kind, color in COLORS.items():
        out.append(f'<rect x="{lx}" y="{ly - 11}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{lx + 16}" y="{ly}">{kind}</text>')
        lx += 24 + 7.2 * len(kind) + 12
    out.append(
        f'<text x="{lx}" y="{ly}">dashed/faded: modeled | width: '
        f"{'measured GPU time' if unit == 'ns' else 'modeled op count'} | "
        f"total {html.escape(fmt(root.value, root.modeled and unit != 'ops'))}</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _fit(label: str, tag: str, chars: int) -> str:
    """``label + tag`` in ``chars`` characters: the label shortened (``~``) before the tag;
    a bar too narrow for the whole tag shows ``[m]`` (or nothing), never a cut tag."""
    if len(label) + len(tag) <= chars:
        return label + tag
    for t in (tag, " [m]") if tag else ("",):
        room = chars - len(t)
        if room >= 4:
            return label[: room - 1] + "~" + t
    if tag and chars >= 3:
        return "[m]"
    return "" if tag or chars < 4 else label[: chars - 1] + "~"


def write_flame(path: str | Path, root: Node, unit: str = "ns", title: str = "") -> None:
    """Write ``root`` as ``.svg`` or as ``.html`` (the SVG inside a page), by suffix.

    Raises:
        ValueError: another suffix. OSError: the file cannot be written.
    """
    path = Path(path)
    svg = to_svg(root, unit)
    if path.suffix.lower() == ".svg":
        path.write_text(svg)
    elif path.suffix.lower() in (".html", ".htm"):
        t = html.escape(title or root.label)
        path.write_text(
            f"<!doctype html><html><head><meta charset='utf-8'><title>{t}</title></head>"
            f"<body><h3>{t}</h3><p>Hover a bar for its cost. Top: the entry point; below: "
            f"its statements, nested function &rarr; loop &rarr; statement.</p>"
            f"{svg}</body></html>\n"
        )
    else:
        raise ValueError(f"{path}: flame graph file must end in .svg or .html")


def result_tree(result) -> Node:
    """Flame tree of an ``AblationResult`` (width: measured ns of the body, scaled as the
    result's table is). A row within its noise keeps its own reading, marked so."""

    def note(row):
        if not result.within_noise(row):
            return ""
        return f"within noise (+-{result.noise_ns(row) / 1e6:.4f} ms)"

    title = f"{result.entry} ({result.stage})"
    return build_tree(result.rows, title, cost=result.cost_ns, total=result.total_ns, note=note)
