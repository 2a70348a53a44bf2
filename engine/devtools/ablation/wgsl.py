"""A small WGSL front end: tokenizer, module declarations, statement boundaries, reflection.

Not a full WGSL parser (there is no maintained one for Python). It finds what ablation needs
and leaves expressions as token runs: module-scope declarations (structs, bound variables,
constants, aliases, functions with their attributes), the statement tree of a function body
(blocks, ``if``/``else`` chains, ``switch``, ``loop``/``continuing``, ``for``, ``while``),
which functions and bound variables an entry point reaches, and the host-shareable memory
layout of a type (WGSL spec section 14.4, "Memory Layout"). Validation is left to naga: the
ablation tool compiles the original shader first, so this code only sees valid WGSL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.shader_registry import expand
from engine.textfile import NotUtf8

PUNCT = (
    "<<=",
    ">>=",
    "->",
    "&&",
    "||",
    "==",
    "!=",
    "<=",
    ">=",
    "<<",
    ">>",
    "++",
    "--",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "&=",
    "|=",
    "^=",
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F.]+(?:[pP][+-]?[0-9]+)?[fhiu]?|"
    r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?[fhiu]?"
)


class WgslSyntaxError(ValueError):
    """The text is not WGSL this front end can read; the message names the line."""


@dataclass(frozen=True)
class Token:
    kind: str  # "ident", "num", "punct"
    text: str
    start: int  # character offsets into the source
    end: int
    line: int  # 1-based


def tokenize(src: str) -> list[Token]:
    """Tokens of ``src`` without comments (``//`` lines, nestable ``/* */`` blocks).

    Raises:
        WgslSyntaxError: an unterminated block comment or a character WGSL does not use.
    """
    out: list[Token] = []
    i, line, n = 0, 1, len(src)
    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j, start_line = 1, i + 2, line
            while depth and j < n:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    line += src[j] == "\n"
                    j += 1
            if depth:
                raise WgslSyntaxError(f"line {start_line}: block comment never closed")
            i = j
        elif m := _IDENT.match(src, i):
            out.append(Token("ident", m.group(), i, m.end(), line))
            i = m.end()
        elif (m := _NUMBER.match(src, i)) and m.end() > i:
            out.append(Token("num", m.group(), i, m.end(), line))
            i = m.end()
        else:
            p = next((p for p in PUNCT if src.startswith(p, i)), None)
            if p is None:
                if c not in "{}()[]<>;:,.=+-*/%&|^!~@?":
                    raise WgslSyntaxError(f"line {line}: unexpected character {c!r}")
                p = c
            out.append(Token("punct", p, i, i + len(p), line))
            i += len(p)
    return out


def load_source(path: Path, defines: dict | None = None) -> tuple[str, list[tuple[str, int]]]:
    """``path``'s text expanded as the engine builds it (``engine.shader_registry.expand``:
    ``// #include`` lines, each file once; ``// #if NAME`` blocks by ``defines``, the
    variant of the shader to measure), and for each line of the result its (file name,
    1-based line) of origin.

    Raises:
        OSError: a file cannot be read. WgslSyntaxError: a file that is not UTF-8 text or
            holds a NUL byte (``engine.textfile``: the byte's offset).
    """
    try:
        src = expand(Path(path), defines=defines or {})
    except NotUtf8 as e:
        name = Path(e.name).name
        where = f"{name}: " if name != Path(path).name else ""  # (the caller names the top file)
        raise WgslSyntaxError(f"{where}{e.what}") from None
    return src.code + "\n", [(p.name, line) for p, line in src.origin]


# ---------------------------------------------------------------------------------------------
# Declarations


@dataclass
class Attr:
    name: str
    args: str = ""  # text between the parentheses


@dataclass
class Param:
    attrs: list[Attr]
    name: str
    type: str


@dataclass
class Stmt:
    """One statement of a function body. ``blocks`` are its nested bodies (then/else, case,
    loop body, continuing); ``header`` the tokens of its condition or ``for(;;)`` header."""

    kind: str  # let var const assign call if switch loop for while block return break
    #            continue discard continuing break_if other
    first: int  # token index of its first token (including attributes)
    last: int  # token index of its last token (``;`` or ``}``)
    line: int
    text: str
    header: list[Token] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Block:
    kind: str  # body then else case loop continuing block
    open: int  # token index of ``{``
    close: int  # token index of ``}``
    stmts: list[Stmt] = field(default_factory=list)


@dataclass
class Function:
    name: str
    attrs: list[Attr]
    params: list[Param]
    ret_attrs: list[Attr]
    ret_type: str | None
    body: Block
    line: int

    @property
    def stage(self) -> str | None:
        """``"compute"``, ``"vertex"``, ``"fragment"`` for an entry point, else None."""
        return next((a.name for a in self.attrs if a.name in STAGES), None)

    def attr(self, name: str) -> Attr | None:
        return next((a for a in self.attrs if a.name == name), None)


@dataclass
class GlobalVar:
    name: str
    space: str  # "" (handle: texture/sampler), uniform, storage, workgroup, private
    access: str  # read, read_write ("" when not storage)
    type: str
    group: int | None
    binding: int | None
    line: int


@dataclass
class Override:
    """A pipeline-overridable constant: ``@id(key) override name: type = default;``."""

    name: str
    type: str  # "" when inferred from the default
    default: str  # initializer text, "" when none (the pipeline must supply a value)
    id: int | None
    line: int

    @property
    def key(self) -> str:
        """The key of the pipeline's ``constants`` map: the ``@id`` when given, else the name."""
        return str(self.id) if self.id is not None else self.name


@dataclass
class Module:
    source: str
    tokens: list[Token]
    structs: dict[str, list[Param]] = field(default_factory=dict)
    globals: dict[str, list[GlobalVar]] = field(default_factory=dict)  # name -> decls
    consts: dict[str, str] = field(default_factory=dict)  # const and override -> init text
    overrides: dict[str, Override] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)

    @property
    def entry_points(self) -> list[Function]:
        return [f for f in self.functions.values() if f.stage]

    def bindings(self) -> list[GlobalVar]:
        return [v for vs in self.globals.values() for v in vs if v.group is not None]

    def text(self, first: int, last: int) -> str:
        """Source text from token ``first`` to token ``last`` inclusive, comments dropped and
        whitespace collapsed."""
        return join_tokens(self.tokens[first : last + 1])


STAGES = ("compute", "vertex", "fragment")


def join_tokens(toks: list[Token]) -> str:
    """Tokens as text: one space where the source had any gap, none where it had none."""
    out = []
    for k, t in enumerate(toks):
        if k and t.start > toks[k - 1].end:
            out.append(" ")
        out.append(t.text)
    return "".join(out)


class _Parser:
    def __init__(self, src: str):
        self.src = src
        self.toks = tokenize(src)
        self.i = 0

    # -- token helpers
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.text == text

    def error(self, what: str) -> WgslSyntaxError:
        t = self.peek() or (self.toks[-1] if self.toks else None)
        where = f"line {t.line}" if t else "end of file"
        got = f" (found {t.text!r})" if t and self.peek() else ""
        return WgslSyntaxError(f"{where}: expected {what}{got}")

    def take(self, text: str | None = None, kind: str | None = None) -> Token:
        t = self.peek()
        if t is None or (text is not None and t.text != text) or (kind and t.kind != kind):
            raise self.error(repr(text) if text else kind or "a token")
        self.i += 1
        return t

    def skip_balanced(self) -> int:
        """Skip a ``(``/``[``/``{`` group starting at the current token; index of its close."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        stack = [pairs[self.take().text]]
        while stack:
            t = self.peek()
            if t is None:
                raise self.error(repr(stack[-1]))
            if t.text in pairs:
                stack.append(pairs[t.text])
            elif t.text in ")]}":
                if t.text != stack[-1]:
                    raise self.error(repr(stack[-1]))
                stack.pop()
            self.i += 1
        return self.i - 1

    def until(self, stops: set[str]) -> list[Token]:
        """Tokens up to (not including) one of ``stops`` at bracket depth 0."""
        out, depth = [], 0
        while True:
            t = self.peek()
            if t is None:
                raise self.error(" or ".join(sorted(stops)))
            if depth == 0 and t.text in stops:
                return out
            depth += t.text in "([{"
            depth -= t.text in ")]}"
            if depth < 0:
                raise self.error(" or ".join(sorted(stops)))
            out.append(t)
            self.i += 1

    def type_text(self, stops: set[str]) -> str:
        """A type up to a stop at template depth 0 (``>>`` closes two templates)."""
        start, depth = self.i, 0
        while True:
            t = self.peek()
            if t is None:
                raise self.error("a type")
            if depth == 0 and t.text in stops:
                break
            depth += {"<": 1, ">": -1, ">>": -2}.get(t.text, 0)
            self.i += 1
        if self.i == start:
            raise self.error("a type")
        return "".join(x.text for x in self.toks[start : self.i])

    def attrs(self) -> list[Attr]:
        out = []
        while self.at("@"):
            self.take()
            name = self.take(kind="ident").text
            args = ""
            if self.at("("):
                a = self.i
                b = self.skip_balanced()
                args = self.src[self.toks[a].end : self.toks[b].start].strip()
            out.append(Attr(name, args))
        return out

    # -- module
    def module(self) -> Module:
        m = Module(self.src, self.toks)
        while self.peek() is not None:
            attrs = self.attrs()
            t = self.peek()
            if t is None:
                raise self.error("a declaration after the attribute")
            if t.text == ";":
                self.i += 1
            elif t.text == "struct":
                self.struct(m)
            elif t.text == "var":
                self.global_var(m, attrs)
            elif t.text in ("const", "override"):
                line = self.take().line
                name = self.take(kind="ident").text
                ty = ""
                if self.at(":"):
                    self.take()
                    ty = self.type_text({"=", ";"})
                init = ""
                if self.at("="):
                    self.take()
                    init = " ".join(x.text for x in self.until({";"}))
                self.take(";")
                m.consts[name] = init
                if t.text == "override":
                    ident = next((a.args for a in attrs if a.name == "id"), None)
                    key = None if ident is None else const_int(ident, m)
                    m.overrides[name] = Override(name, ty, init, key, line)
            elif t.text == "alias":
                self.take()
                name = self.take(kind="ident").text
                self.take("=")
                m.aliases[name] = self.type_text({";"})
                self.take(";")
            elif t.text == "fn":
                f = self.function(attrs)
                m.functions[f.name] = f
            elif t.text in ("enable", "requires", "diagnostic", "const_assert"):
                self.until({";"})
                self.take(";")
            else:
                raise self.error("a declaration (struct, var, const, override, alias, fn)")
        return m

    def struct(self, m: Module) -> None:
        self.take("struct")
        name = self.take(kind="ident").text
        self.take("{")
        members = []
        while not self.at("}"):
            attrs = self.attrs()
            mname = self.take(kind="ident").text
            self.take(":")
            members.append(Param(attrs, mname, self.type_text({",", "}"})))
            if self.at(","):
                self.take()
        self.take("}")
        if self.at(";"):
            self.take()
        m.structs[name] = members

    def global_var(self, m: Module, attrs: list[Attr]) -> None:
        line = self.take("var").line
        space = access = ""
        if self.at("<"):
            self.take()
            parts = [x.text for x in self.until({">"}) if x.text != ","]
            self.take(">")
            space = parts[0] if parts else ""
            access = parts[1] if len(parts) > 1 else ("read" if space == "storage" else "")
        name = self.take(kind="ident").text
        self.take(":")
        ty = self.type_text({"=", ";"})
        if self.at("="):
            self.take()
            self.until({";"})
        self.take(";")
        ints = {a.name: a.args for a in attrs}
        group = _int_or_none(ints.get("group"), m)
        binding = _int_or_none(ints.get("binding"), m)
        m.globals.setdefault(name, []).append(
            GlobalVar(name, space, access, ty, group, binding, line)
        )

    def function(self, attrs: list[Attr]) -> Function:
        line = self.take("fn").line
        name = self.take(kind="ident").text
        self.take("(")
        params = []
        while not self.at(")"):
            pattrs = self.attrs()
            pname = self.take(kind="ident").text
            self.take(":")
            params.append(Param(pattrs, pname, self.type_text({",", ")"})))
            if self.at(","):
                self.take()
        self.take(")")
        ret_attrs, ret = [], None
        if self.at("->"):
            self.take()
            ret_attrs = self.attrs()
            ret = self.type_text({"{"})
        self.attrs()
        body = self.block("body")
        return Function(name, attrs, params, ret_attrs, ret, body, line)

    # -- statements
    def block(self, kind: str) -> Block:
        b = Block(kind, self.i, -1)
        self.take("{")
        while not self.at("}"):
            if self.peek() is None:
                raise self.error("'}'")
            if self.at(";"):
                self.i += 1
                continue
            b.stmts.append(self.statement())
        b.close = self.i
        self.take("}")
        return b

    def statement(self) -> Stmt:
        first = self.i
        self.attrs()
        t = self.peek()
        if t is None:
            raise self.error("a statement")
        word = t.text
        s = Stmt("other", first, -1, t.line, "")
        if word == "{":
            s.kind = "block"
            s.blocks.append(self.block("block"))
        elif word == "if":
            s.kind = "if"
            self.take()
            s.header = self.until({"{"})
            s.blocks.append(self.block("then"))
            while self.at("else"):
                self.take()
                if self.at("if"):
                    self.take()
                    s.header = s.header + [Token("punct", "||", 0, 0, 0)] + self.until({"{"})
                    s.blocks.append(self.block("then"))
                else:
                    s.blocks.append(self.block("else"))
        elif word == "switch":
            s.kind = "switch"
            self.take()
            s.header = self.until({"{"})
            self.take("{")
            while not self.at("}"):
                if self.at("case") or self.at("default"):
                    self.until({"{"})
                    self.attrs()
                    s.blocks.append(self.block("case"))
                else:
                    raise self.error("'case' or 'default'")
            self.take("}")
        elif word == "loop":
            s.kind = "loop"
            self.take()
            self.attrs()
            s.blocks.append(self.block("loop"))
        elif word in ("for", "while"):
            s.kind = word
            self.take()
            if word == "for":
                self.take("(")
                s.header = self.until({")"})
                self.take(")")
            else:
                s.header = self.until({"{"})
            self.attrs()
            s.blocks.append(self.block("loop"))
        elif word == "continuing":
            s.kind = "continuing"
            self.take()
            s.blocks.append(self.block("continuing"))
        else:
            if word in ("let", "var", "const", "return", "break", "continue", "discard"):
                s.kind = word
            toks = self.until({";"})
            if word == "break" and len(toks) > 1 and toks[1].text == "if":
                s.kind, s.header = "break_if", toks[2:]
            elif s.kind == "other" and toks:
                if any(x.text in ASSIGN_OPS for x in toks):
                    s.kind = "assign"
                elif toks[-1].text == ")" and toks[0].kind == "ident":
                    s.kind = "call"
            self.take(";")
        s.last = self.i - 1
        s.text = join_tokens(self.toks[first : s.last + 1])
        return s


ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


def _int_or_none(text: str | None, m: Module) -> int | None:
    if text is None:
        return None
    return const_int(text, m)


def const_int(text: str, m: Module) -> int:
    """Value of an integer literal or a module constant that is one (``64u``, ``WG``)."""
    text = text.strip()
    seen = set()
    while text in m.consts and text not in seen:
        seen.add(text)
        text = m.consts[text].strip()
    try:
        return int(text.rstrip("iu"), 0)
    except ValueError:
        raise WgslSyntaxError(f"cannot evaluate {text!r} as an integer constant") from None


def parse(src: str) -> Module:
    """Parse WGSL ``src``. Raises WgslSyntaxError naming the line on text it cannot read."""
    return _Parser(src).module()


# ---------------------------------------------------------------------------------------------
# Reachability


def _idents(m: Module, block: Block) -> set[str]:
    out = set()
    for k in range(block.open, block.close):
        t = m.tokens[k]
        if t.kind == "ident" and not (k > 0 and m.tokens[k - 1].text == "."):
            out.add(t.text)
    return out


def reachable_functions(m: Module, entry: str) -> list[Function]:
    """``entry`` and every user function it calls, directly or not (declaration order)."""
    seen = {entry}
    todo = [entry]
    while todo:
        f = m.functions[todo.pop()]
        for name in _idents(m, f.body):
            if name in m.functions and name not in seen:
                seen.add(name)
                todo.append(name)
    return [f for f in m.functions.values() if f.name in seen]


def used_identifiers(m: Module, entry: str) -> set[str]:
    out: set[str] = set()
    for f in reachable_functions(m, entry):
        out |= _idents(m, f.body)
    return out


def entry_bindings(m: Module, entry: str) -> list[GlobalVar]:
    """Bound variables (``@group @binding``) that ``entry`` statically uses, by (group,
    binding). Where two declarations share a binding (different entry points), the used one."""
    used = used_identifiers(m, entry)
    out = [v for v in m.bindings() if v.name in used]
    return sorted(out, key=lambda v: (v.group, v.binding))


# ---------------------------------------------------------------------------------------------
# Types and memory layout (WGSL spec 14.4.1: alignment and size)

_VEC = re.compile(r"^vec([234])(?:<(.+)>|([fihu]))$")
_MAT = re.compile(r"^mat([234])x([234])(?:<(.+)>|([fh]))$")
_SHORT = {"f": "f32", "i": "i32", "u": "u32", "h": "f16"}


def split_template(t: str) -> tuple[str, list[str]]:
    """``"array<vec4<f32>, 8>"`` -> ``("array", ["vec4<f32>", "8"])``."""
    t = t.replace(" ", "")
    if "<" not in t:
        return t, []
    name, rest = t.split("<", 1)
    if not rest.endswith(">"):
        raise WgslSyntaxError(f"cannot read type {t!r}")
    rest = rest[:-1]
    args, depth, cur = [], 0, ""
    for c in rest:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        if c == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += c
    if cur:
        args.append(cur)
    return name, args


def resolve_alias(t: str, m: Module) -> str:
    t = t.replace(" ", "")
    seen = set()
    while t in m.aliases and t not in seen:
        seen.add(t)
        t = m.aliases[t].replace(" ", "")
    return t


def scalar_of(t: str, m: Module) -> tuple[str, int]:
    """(component scalar type, component count) of a scalar or vector type."""
    t = resolve_alias(t, m)
    if v := _VEC.match(t):
        return (v.group(2) or _SHORT[v.group(3)]), int(v.group(1))
    if t.startswith("atomic<"):
        return split_template(t)[1][0], 1
    return t, 1


def _round_up(align: int, n: int) -> int:
    return -(-n // align) * align


def _member_attr(member: Param, name: str, m: Module) -> int | None:
    a = next((a for a in member.attrs if a.name == name), None)
    return None if a is None else const_int(a.args, m)


def matrix_shape(t: str, m: Module) -> tuple[int, int, str] | None:
    """(columns, rows, column type ``vecR<T>``) of a matrix type, else None."""
    mt = _MAT.match(resolve_alias(t, m))
    if mt is None:
        return None
    return (
        int(mt.group(1)),
        int(mt.group(2)),
        f"vec{mt.group(2)}<{mt.group(3) or _SHORT[mt.group(4)]}>",
    )


def array_stride(t: str, m: Module) -> int:
    """Byte stride between elements of array type ``t``: roundUp(AlignOf(E), SizeOf(E))."""
    _, args = split_template(resolve_alias(t, m))
    size, align = layout(args[0], m)
    return _round_up(align, size)


def layout(t: str, m: Module, runtime_count: int = 1) -> tuple[int, int]:
    """(size, alignment) in bytes of WGSL type ``t`` in host-shareable memory (WGSL spec
    "Alignment and Size": vec3 aligned as vec4, matCxR as C columns of vecR at the column's
    aligned stride, array stride roundUp(align, size), struct members at their ``@align`` /
    ``@size``, struct size rounded up to its alignment); a runtime-sized array counts
    ``runtime_count`` elements. The uniform address space's extra rules are validation
    rules (naga rejects a uniform struct that breaks them), not a different layout.

    Raises:
        WgslSyntaxError: a type this function does not know.
    """
    t = resolve_alias(t, m)
    if t in ("f32", "i32", "u32", "bool"):
        return 4, 4
    if t == "f16":
        return 2, 2
    if v := _VEC.match(t):
        n = int(v.group(1))
        s, _ = layout(v.group(2) or _SHORT[v.group(3)], m)
        return n * s, (4 if n == 3 else n) * s
    if mt := _MAT.match(t):
        cols, rows = int(mt.group(1)), int(mt.group(2))
        col_size, col_align = layout(f"vec{rows}<{mt.group(3) or _SHORT[mt.group(4)]}>", m)
        return cols * _round_up(col_align, col_size), col_align
    name, args = split_template(t)
    if name == "atomic":
        return 4, 4
    if name == "array":
        _, ea = layout(args[0], m)
        count = const_int(args[1], m) if len(args) > 1 else runtime_count
        return array_stride(t, m) * count, ea
    if t in m.structs:
        end, align = 0, 1
        for offset, size, a in _members(t, m, runtime_count):
            end, align = offset + size, max(align, a)
        return _round_up(align, end), align
    raise WgslSyntaxError(f"cannot lay out type {t!r}")


def _members(struct: str, m: Module, runtime_count: int = 1) -> list[tuple[int, int, int]]:
    """(offset, size, alignment) of each member: ``@align(n)`` replaces the member's
    alignment, ``@size(n)`` its size; each offset is the previous end rounded up."""
    out, end = [], 0
    for member in m.structs[struct]:
        size, align = layout(member.type, m, runtime_count)
        align = _member_attr(member, "align", m) or align
        size = _member_attr(member, "size", m) or size
        offset = _round_up(align, end)
        out.append((offset, size, align))
        end = offset + size
    return out


def member_offsets(struct: str, m: Module) -> dict[str, tuple[int, str]]:
    """Field name -> (byte offset, type) of a struct in host-shareable memory."""
    return {
        member.name: (offset, member.type)
        for member, (offset, _, _) in zip(m.structs[struct], _members(struct, m), strict=True)
    }
