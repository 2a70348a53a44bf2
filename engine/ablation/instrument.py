"""Rewrite an entry point with a cut-point guard before each statement of its body.

Guard ``K`` is ``if (_ablate_cut.x == Ku) { return <zero>; }``, inserted on the same source line
as the statement it precedes (line numbers in compiler messages stay the original ones), and
one more at the end of every block that can fall through. ``_ablate_cut`` is a new
``var<uniform>`` in the group after the last one the entry point uses, so the shader is
compiled once and each cut is a different uniform value; ``CUT_NONE`` matches no guard.

Cost of a statement = t(cut after it) - t(cut before it). Inside a loop body a cut returns in
the first iteration, so those rows cost one iteration; the loop's own row costs all of them.
No guard goes inside ``continuing`` (WGSL forbids ``return`` there) or into called functions
(a return there would not end the entry point).

Keeping work alive: a cut that simply returned would let the compiler delete every statement
before it whose value is only used after it (dead code), and the cost of all of them would
land on the statement that finally stores the result. So each guard (compute and fragment
entry points) also stores, under a uniform condition that is never true at run time but that
the compiler cannot know (``_ablate_cut.y != 0u``), a checksum of every local in scope that is
read again after the cut (or anywhere in an enclosing loop it was declared outside of) and
whose type is a scalar, vector or matrix: those values must be computed before the cut. A local
never read again is dead in the original shader too, so it is left out. The types
come from naga itself (``local_types``: one probe compile per local; naga names the type in
its error message). Vertex entry points cannot write storage buffers: no checksum there.

Uniformity: when the entry point reaches a barrier (compute) or a derivative / implicit-LOD
sample (fragment), a guard is placed only where control flow is uniform by a conservative
analysis (after the WGSL spec's uniformity rules, simplified): conditions built only from
uniform variables, constants, ``workgroup_id`` / ``num_workgroups`` and ``let``s of those;
nothing after a return/break/continue taken under a non-uniform condition. The cut value is
uniform, so a guard there returns for the whole workgroup or none of it and every barrier
after it is still reached by all invocations or by none. Statements without a guard before
and after are reported as not measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.ablation.wgsl import (
    ASSIGN_OPS,
    Block,
    Function,
    Module,
    Stmt,
    Token,
    WgslSyntaxError,
    const_int,
    join_tokens,
    reachable_functions,
)

CUT_NONE = 0xFFFFFFFF
CUT_NAME = "_ablate_cut"
SINK_NAME = "_ablate_sink"

BARRIERS = {"workgroupBarrier", "storageBarrier", "textureBarrier", "workgroupUniformLoad"}
DERIVATIVES = {
    "textureSample",
    "textureSampleBias",
    "textureSampleCompare",
    "dpdx",
    "dpdy",
    "fwidth",
    "dpdxCoarse",
    "dpdyCoarse",
    "fwidthCoarse",
    "dpdxFine",
    "dpdyFine",
    "fwidthFine",
}
TRANSCENDENTAL = {
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "exp2",
    "log",
    "log2",
    "pow",
    "sqrt",
    "inverseSqrt",
    "normalize",
    "length",
    "distance",
}
ARITH_OPS = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", ">", "<=", ">=", "=="}
ARITH_OPS |= {"!=", "&&", "||", "+=", "-=", "*=", "/=", "++", "--"}
_COMPOUND = ("if", "switch", "loop", "for", "while", "block")
_TERMINATORS = ("return", "break", "continue", "discard")
KINDS = ("arithmetic", "transcendental", "texture", "memory")


@dataclass
class Row:
    """A statement of the entry point with the cuts that bracket it."""

    stmt: Stmt
    line: int  # line in the (include-expanded) source
    depth: int  # 0: entry body
    loop_line: int | None  # line of the innermost enclosing loop
    before: int | None  # cut index, or None: no guard (see module docstring)
    after: int | None  # cut index, CUT_NONE (the whole entry point), or None
    kind: str  # arithmetic / transcendental / texture / memory
    modeled: float  # op count model (weights in _model); per iteration inside loops
    parent: int | None = None  # index of the enclosing compound row
    children: list[int] = field(default_factory=list)
    trips: float = 1.0  # loops: modeled trip count (children's ``modeled`` is per iteration)

    @property
    def text(self) -> str:
        s = self.stmt
        if s.kind in _COMPOUND:  # header only: "for (var i = 0u; ...)"
            cut = s.text.find("{")
            return (s.text[:cut] if cut > 0 else s.text).strip()
        return s.text

    @property
    def measurable(self) -> bool:
        return self.before is not None and self.after is not None


@dataclass
class Instrumented:
    """The rewritten module for one entry point."""

    entry: Function
    source: str  # instrumented WGSL
    group: int  # bind group of ``_ablate_cut`` (binding 0)
    cuts: int  # guards 0 .. cuts-1
    rows: list[Row]
    uniform_only: str | None  # why guards were limited to uniform control flow, or None
    keeps_alive: bool = False  # guards store a checksum of live locals (binding 1 of group)


class InstrumentError(ValueError):
    """The entry point cannot be instrumented; the message says why."""


def zero_return(f: Function) -> str:
    return f" {f.ret_type}()" if f.ret_type else ""


def _uniformity_need(m: Module, f: Function) -> str | None:
    names = set()
    for g in reachable_functions(m, f.name):
        names |= {m.tokens[k].text for k in range(g.body.open, g.body.close)}
    need = BARRIERS if f.stage == "compute" else DERIVATIVES if f.stage == "fragment" else set()
    hit = sorted(names & need)
    return f"reaches {', '.join(hit)}" if hit else None


class _Uniformity:
    """Conservative uniform-control-flow analysis of one entry point body."""

    def __init__(self, m: Module, f: Function):
        self.m = m
        self.uniform_globals = {n for n, vs in m.globals.items() if vs[0].space == "uniform"}
        self.uniform_globals |= set(m.consts) | {CUT_NAME}
        self.env: dict[str, bool] = {}
        for p in f.params:
            builtin = next((a.args for a in p.attrs if a.name == "builtin"), "")
            self.env[p.name] = builtin in ("workgroup_id", "num_workgroups")
        self.assigned = set()
        self._collect_assigned(f.body)
        self._collect_addressed(f.body)
        self.allowed: dict[int, bool] = {}  # id(stmt) -> guard allowed before it
        self.end_allowed: dict[int, bool] = {}  # id(block) -> guard allowed at its end

    def _collect_assigned(self, b: Block) -> None:
        for s in b.stmts:
            if s.kind == "assign":
                first = next(t for t in self.m.tokens[s.first : s.last + 1] if t.kind == "ident")
                self.assigned.add(first.text)
            if s.kind == "for":
                self._collect_for_header(s.header)
            for c in s.blocks:
                self._collect_assigned(c)

    def _collect_for_header(self, header: list[Token]) -> None:
        """A ``for`` header's init (when not a declaration) and update assign too
        (``for (; k < li; k++)``); the variable the header itself declares is left to
        ``_loop``, which judges it by its initializer and the loop condition."""
        semi = [k for k, t in enumerate(header) if t.text == ";"]
        if len(semi) < 2:
            return
        parts = [header[: semi[0]], header[semi[1] + 1 :]]
        declared = _decl_name(self.m, parts[0]) if parts[0] else None
        for part in parts:
            if not part or part[0].text in ("var", "let", "const"):
                continue
            if any(t.text in ASSIGN_OPS for t in part):
                first = next((t for t in part if t.kind == "ident"), None)
                if first is not None and (declared is None or first.text != declared[0]):
                    self.assigned.add(first.text)

    def _collect_addressed(self, b: Block) -> None:
        """Variables whose address is taken (``put(&k, li)``, ``let p = &k;``) may be
        written through the pointer: treated as assigned (conservative)."""
        toks = self.m.tokens
        for k in range(b.open + 1, b.close - 1):
            t, nxt, prev = toks[k], toks[k + 1], toks[k - 1]
            unary = prev.kind == "punct" and prev.text not in (")", "]")
            if t.text == "&" and unary and nxt.kind == "ident":
                self.assigned.add(nxt.text)

    def expr(self, toks: list[Token]) -> bool:
        for k, t in enumerate(toks):
            if t.kind != "ident" or (k and toks[k - 1].text == "."):
                continue
            if t.text in self.env:
                if not self.env[t.text]:
                    return False
            elif t.text in self.m.functions:
                return False  # user functions: not analysed, assume non-uniform
            elif t.text in self.m.globals and t.text not in self.uniform_globals:
                return False
        return True

    def _decl(self, s: Stmt, uni: bool) -> None:
        toks = self.m.tokens[s.first : s.last]
        names = [t for t in toks if t.kind == "ident"]
        if len(names) < 2:
            return
        name = names[1].text
        eq = next((k for k, t in enumerate(toks) if t.text == "="), None)
        value = uni and eq is not None and self.expr(toks[eq + 1 :])
        if s.kind == "var" and name in self.assigned:
            value = False
        self.env[name] = value

    def walk(self, b: Block, uni: bool) -> tuple[bool, set[str]]:
        """Mark guards in ``b``; return (uniform at its end, non-uniform exits seen)."""
        exits: set[str] = set()
        saved = dict(self.env)
        for s in b.stmts:
            self.allowed[id(s)] = uni
            if s.kind in ("let", "var", "const"):
                self._decl(s, uni)
            elif s.kind in _TERMINATORS and not uni:
                exits.add(s.kind)
            elif s.kind == "break_if" and not (uni and self.expr(s.header)):
                exits.add("break")
            elif s.kind in ("if", "switch", "block"):
                cond = uni and (s.kind == "block" or self.expr(s.header))
                for c in s.blocks:
                    _, e = self.walk(c, cond)
                    exits |= e
            elif s.kind in ("loop", "for", "while"):
                exits |= self._loop(s, uni)
            elif s.kind == "continuing":
                self.walk(s.blocks[0], False)
            if exits:
                uni = False
        self.end_allowed[id(b)] = uni
        self.env = saved
        return uni, exits

    def _loop(self, s: Stmt, uni: bool) -> set[str]:
        cond = uni
        if s.kind == "for":
            header = s.header
            semi = [k for k, t in enumerate(header) if t.text == ";"]
            init = header[: semi[0]] if semi else []
            names = [t.text for t in init if t.kind == "ident"]
            if len(names) >= 2 and names[0] in ("var", "let"):
                eq = next((k for k, t in enumerate(init) if t.text == "="), None)
                ok = eq is not None and self.expr(init[eq + 1 :])
                self.env[names[1]] = uni and ok and names[1] not in self.assigned
            cond = uni and self.expr(header[semi[0] + 1 : semi[1]] if len(semi) > 1 else [])
        elif s.kind == "while":
            cond = uni and self.expr(s.header)
        _, exits = self.walk(s.blocks[0], cond)
        if exits and cond:  # a later iteration may run with fewer invocations: redo
            self.walk(s.blocks[0], False)
        return {"return"} if "return" in exits else ({"loop"} if exits else set())


LOOP_TRIPS = 16  # nominal trip count of a loop whose bound is not a constant (model only)


def loop_trips(m: Module, s: Stmt) -> float:
    """Modeled trip count of a loop statement: ``N - init`` for ``for (var i = a; i < N;``
    (``<=``: +1) with literal or ``const`` bounds, else ``LOOP_TRIPS``; 1 for other kinds."""
    if s.kind not in ("loop", "for", "while"):
        return 1.0
    semi = [k for k, t in enumerate(s.header) if t.text == ";"]
    if s.kind != "for" or len(semi) < 2:
        return float(LOOP_TRIPS)
    init, cond = s.header[: semi[0]], s.header[semi[0] + 1 : semi[1]]
    try:
        eq = next(k for k, t in enumerate(init) if t.text == "=")
        start = const_int(join_tokens(init[eq + 1 :]), m) if init else 0
        op = next(k for k, t in enumerate(cond) if t.text in ("<", "<="))
        end = const_int(join_tokens(cond[op + 1 :]), m) + (cond[op].text == "<=")
    except (StopIteration, WgslSyntaxError):
        return float(LOOP_TRIPS)
    return float(max(end - start, 0))


def _weights(m: Module, toks: list[Token], stack: tuple[str, ...] = ()) -> dict[str, float]:
    """Modeled op counts by kind of a token run: 1 per arithmetic operator or builtin call,
    8 per transcendental call, 16 per texture call, 4 per memory access (storage, workgroup,
    uniform variables, atomics); a call to a user function adds that function's body, with
    ``loop_trips`` iterations per loop (recursion is not followed). A ``var<uniform>`` read
    counts as 1 arithmetic op, not memory: it is loop-invariant and served from a constant
    cache, so a loop bounded by a uniform is not a "memory" loop."""
    w = dict.fromkeys(KINDS, 0.0)
    for k, t in enumerate(toks):
        if t.kind == "punct" and t.text in ARITH_OPS:
            w["arithmetic"] += 1
        elif t.kind == "ident" and not (k and toks[k - 1].text == "."):
            if t.text.startswith("texture"):
                w["texture"] += 16
            elif t.text in TRANSCENDENTAL:
                w["transcendental"] += 8
            elif t.text in m.globals and m.globals[t.text][0].space == "uniform":
                w["arithmetic"] += 1
            elif t.text.startswith("atomic") or t.text in m.globals:
                w["memory"] += 4
            elif t.text in m.functions and t.text not in stack:
                for kind, v in _block_weights(
                    m, m.functions[t.text].body, (*stack, t.text)
                ).items():
                    w[kind] += v
            elif k + 1 < len(toks) and toks[k + 1].text == "(":
                w["arithmetic"] += 1
    return w


def _block_weights(m: Module, b: Block, stack: tuple[str, ...]) -> dict[str, float]:
    w = dict.fromkeys(KINDS, 0.0)
    for s in b.stmts:
        own = s.header if s.kind in _COMPOUND else m.tokens[s.first : s.last + 1]
        parts = [_weights(m, own, stack)]
        trips = loop_trips(m, s)
        parts += [_block_weights(m, c, stack) for c in s.blocks] if s.kind in _COMPOUND else []
        for k, part in enumerate(parts):
            for kind, v in part.items():
                w[kind] += v * (trips if k else 1)
    return w


def _model(m: Module, toks: list[Token]) -> tuple[str, float]:
    """(kind, modeled op count) of a statement's own tokens (``_weights``); kind = the
    category with the largest share."""
    w = _weights(m, toks)
    total = sum(w.values())
    kind = max(KINDS, key=lambda c: w[c]) if total else "arithmetic"
    return kind, max(total, 1.0)


def _decl_name(m: Module, toks: list[Token]) -> tuple[str, int] | None:
    """(name, token index) declared by ``let``/``var`` tokens (``var<function> x``, too)."""
    if not toks or toks[0].text not in ("let", "var"):
        return None
    k = 1
    if len(toks) > 1 and toks[1].text == "<":
        while k < len(toks) and toks[k].text != ">":
            k += 1
        k += 1
    if k < len(toks) and toks[k].kind == "ident":
        return toks[k].text, m.tokens.index(toks[k])
    return None


def _declarations(m: Module, b: Block, out: list) -> list[tuple[str, int, int]]:
    """(name, name token index, char offset where a probe may go) of every local declared in
    ``b`` and below (``continuing`` blocks excepted)."""
    for s in b.stmts:
        if s.kind in ("let", "var"):
            toks = [t for t in m.tokens[s.first : s.last + 1] if t.text != "@"]
            d = _decl_name(m, toks)
            if d:
                out.append((*d, m.tokens[s.last].end))
        if s.kind == "for":
            d = _decl_name(m, s.header)
            if d:
                out.append((*d, m.tokens[s.blocks[0].open].end))
        for c in s.blocks:
            if c.kind != "continuing":
                _declarations(m, c, out)
    return out


_PROBE = re.compile(
    r"the type of `_ablate_probe` is expected to be `_AblateProbeT`, but got `([^`]+)`"
)


def local_types(m: Module, entry: str, compile_source) -> dict[int, str]:
    """Type of each local of ``entry`` (by its name token index), as naga infers it.

    ``compile_source(wgsl)`` must raise an exception whose text is naga's message (e.g.
    ``device.create_shader_module``). One compile per local: a probe ``let`` of a dummy struct
    type is assigned the local and naga's type mismatch message names the local's type.
    """
    out = {}
    for name, tok, at in _declarations(m, m.functions[entry].body, []):
        probe = f" let _ablate_probe: _AblateProbeT = {name};"
        src = m.source[:at] + probe + m.source[at:] + "\nstruct _AblateProbeT { a: u32 }\n"
        try:
            compile_source(src)
        except Exception as e:  # noqa: BLE001 - naga's message is the answer we want
            hit = _PROBE.search(str(e))
            if hit:
                out[tok] = hit.group(1).replace(" ", "")
    return out


_VECTOR = re.compile(r"^vec([234])<(f32|i32|u32|bool)>$")
_MATRIX = re.compile(r"^mat([234])x([234])<f32>$")


def checksum_term(name: str, t: str) -> str | None:
    """A u32 expression that depends on every bit of local ``name`` of type ``t``; None for
    types that are not a scalar, vector or f32 matrix."""
    if t == "u32":
        return name
    if t in ("f32", "i32"):
        return f"bitcast<u32>({name})"
    if t == "bool":
        return f"select(0u, 1u, {name})"
    if v := _VECTOR.match(t):
        n, scalar = v.group(1), v.group(2)
        ones = f"vec{n}<u32>(1u)"
        if scalar == "u32":
            value = name
        elif scalar == "bool":
            value = f"select(vec{n}<u32>(0u), {ones}, {name})"
        else:
            value = f"bitcast<vec{n}<u32>>({name})"
        return f"dot({value}, {ones})"
    if mt := _MATRIX.match(t):
        cols, rows = int(mt.group(1)), mt.group(2)
        ones = f"vec{rows}<u32>(1u)"
        return " + ".join(f"dot(bitcast<vec{rows}<u32>>({name}[{c}]), {ones})" for c in range(cols))
    return None


def instrument(m: Module, entry: str, types: dict[int, str] | None = None) -> Instrumented:
    """Insert the cut guards into ``entry``'s body (see the module docstring). ``types``
    (from ``local_types``) enables the keep-alive checksum of locals at each guard.

    Raises:
        InstrumentError: unknown entry point, or a body with no statement to cut.
    """
    f = m.functions.get(entry)
    if f is None or not f.stage:
        names = ", ".join(e.name for e in m.entry_points) or "none"
        raise InstrumentError(f"no entry point {entry!r} (entry points: {names})")
    if not f.body.stmts:
        raise InstrumentError(f"entry point {entry!r} has no statements to measure")
    need = _uniformity_need(m, f)
    uni = _Uniformity(m, f)
    uni.walk(f.body, True)
    if need is None:
        uni.allowed = {k: True for k in uni.allowed}
        uni.end_allowed = {k: True for k in uni.end_allowed}

    inserts: list[tuple[int, str]] = []  # (char offset, text)
    rows: list[Row] = []
    ret = zero_return(f)
    counter = [0]

    types = types or {}
    can_sink = f.stage in ("compute", "fragment") and bool(types)
    scopes: list[list[tuple[str, int, int]]] = []  # (name, name token, scope's "}" token)
    loops: list[tuple[int, int]] = []  # enclosing loop bodies ("{" token, "}" token)
    sunk = [False]
    uses: dict[str, list[int]] = {}
    for k in range(f.body.open, f.body.close):
        t = m.tokens[k]
        if t.kind == "ident" and m.tokens[k - 1].text != ".":
            uses.setdefault(t.text, []).append(k)

    def live(name: str, tok: int, close: int, pos: int) -> bool:
        """Whether the local's value at token ``pos`` may still be read: a use at or after
        ``pos`` in its scope, or anywhere in an enclosing loop body declared outside it."""
        at = uses.get(name, [])
        if any(pos <= u < close for u in at):
            return True
        return any(lo > tok and any(lo < u < hi for u in at) for lo, hi in loops)

    def guard_text(k: int, pos: int) -> str:
        visible: dict[str, tuple[int, int]] = {}
        for scope in scopes:
            for name, tok, close in scope:
                visible[name] = (tok, close)
        terms = [
            checksum_term(n, types[tok])
            for n, (tok, close) in visible.items()
            if tok in types and live(n, tok, close, pos)
        ]
        terms = [x for x in terms if x] if can_sink else []
        keep = ""
        if terms:
            sunk[0] = True
            keep = f"if ({CUT_NAME}.y != 0u) {{ {SINK_NAME}[0] = {' + '.join(terms)}; }} "
        return f"if ({CUT_NAME}.x == {k}u) {{ {keep}return{ret}; }}"

    def guard(at_token: int) -> int:
        k = counter[0]
        counter[0] += 1
        inserts.append((m.tokens[at_token].start, guard_text(k, at_token) + " "))
        return k

    def declare(s: Stmt, close: int) -> None:
        if s.kind in ("let", "var"):
            d = _decl_name(m, [t for t in m.tokens[s.first : s.last + 1] if t.text != "@"])
            if d:
                scopes[-1].append((*d, close))

    def visit(b: Block, depth: int, loop_line: int | None, parent: int | None,
              header: tuple[str, int] | None = None) -> int | None:  # fmt: skip
        """Guard ``b``'s statements; return the cut at its end (None: no end guard)."""
        scopes.append([(*header, b.close)] if header else [])
        if b.kind == "loop":
            loops.append((b.open, b.close))
        try:
            return _visit(b, depth, loop_line, parent)
        finally:
            scopes.pop()
            if b.kind == "loop":
                loops.pop()

    def _visit(b: Block, depth: int, loop_line: int | None, parent: int | None) -> int | None:
        cuttable = b.kind != "continuing"
        pending: list[int] = []  # rows waiting for their "after" cut
        for s in b.stmts:
            if s.kind == "continuing":  # its guard is the loop body's end guard, below
                visit(s.blocks[0], depth + 1, loop_line, parent)
                continue
            before = None
            if cuttable and uni.allowed.get(id(s), False):
                before = guard(s.first)
            for r in pending:
                rows[r].after = before
            pending = []
            head = s.header if s.kind in _COMPOUND else m.tokens[s.first : s.last + 1]
            kind, modeled = _model(m, head)
            trips = loop_trips(m, s)
            if s.kind in _COMPOUND:  # colour a loop / branch by what its body does, each
                w = _weights(m, head)  # iteration weighed
                for c in s.blocks:
                    for key, v in _block_weights(m, c, ()).items():
                        w[key] += v * trips
                kind = max(KINDS, key=lambda c: w[c])
            rows.append(Row(s, s.line, depth, loop_line, before, None, kind, modeled, parent))
            rows[-1].trips = trips
            me = len(rows) - 1
            if parent is not None:
                rows[parent].children.append(me)
            inner_loop = s.line if s.kind in ("loop", "for", "while") else loop_line
            header = _decl_name(m, s.header) if s.kind == "for" else None
            for c in s.blocks:
                visit(c, depth + 1, inner_loop, me, header)
            declare(s, b.close)
            pending = [me]
        last = b.stmts[-1] if b.stmts else None
        end = None
        falls_through = last is None or last.kind not in _TERMINATORS
        if cuttable and falls_through and uni.end_allowed.get(id(b), False) and depth > 0:
            k = counter[0]
            counter[0] += 1
            at = last.first if last is not None and last.kind == "continuing" else b.close
            inserts.append((m.tokens[at].start, " " + guard_text(k, at) + " "))
            end = k
        for r in pending:
            rows[r].after = CUT_NONE if depth == 0 else end
        return end

    visit(f.body, 0, None, None)
    if not any(r.measurable for r in rows):
        raise InstrumentError(f"entry point {entry!r}: no statement can be bracketed by cuts")
    used_groups = [v.group for v in m.bindings() if v.group is not None and _uses(m, f, v.name)]
    group = max(used_groups, default=-1) + 1
    src = m.source
    for pos, text in sorted(inserts, reverse=True):
        src = src[:pos] + text + src[pos:]
    decl = f"@group({group}) @binding(0) var<uniform> {CUT_NAME}: vec4<u32>;"
    if sunk[0]:
        decl += f" @group({group}) @binding(1) var<storage, read_write> {SINK_NAME}: array<u32>;"
    # The declarations go on the first line so every original line keeps its number.
    src = decl + " " + src
    return Instrumented(f, src, group, counter[0], rows, need, sunk[0])


def _uses(m: Module, f: Function, name: str) -> bool:
    from engine.ablation.wgsl import used_identifiers

    return name in used_identifiers(m, f.name)
