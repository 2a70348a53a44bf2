"""engine/textfile.py: a user's file as UTF-8 text, or one line naming the byte; and the
engine's own WGSL loader (``shaders.load_wgsl``) through it."""

from __future__ import annotations

import pytest

from engine import shaders
from engine.textfile import NotUtf8, decode_utf8, read_utf8, replace_invalid, utf8_problem


@pytest.mark.parametrize(
    ("data", "offset", "starts"),
    [
        ("// café\n".encode("latin-1"), 6, "not UTF-8 at byte 6 (0xE9: Latin-1"),
        ("x".encode("utf-16-le").join([b"\xff\xfe", b""]), 0, "UTF-16 text"),
        ("x".encode("utf-16-be").join([b"\xfe\xff", b""]), 0, "UTF-16 text"),
        (b"\xff\xfe\x00\x00x\x00\x00\x00", 0, "UTF-32 text"),  # not mistaken for UTF-16
        ("ab é".encode()[:-1], 3, "not UTF-8 at byte 3 (0xC3 begins a character the data"),
        (b"\xef\xbb\xbf" + "é".encode() + b"\xff", 5, "not UTF-8 at byte 5 (0xFF"),
        (b"\xed\xa0\x80", 0, "not UTF-8 at byte 0 (0xED"),  # an encoded surrogate (CESU-8)
    ],
)
def test_problems_are_named_at_their_byte(tmp_path, data, offset, starts):
    got = utf8_problem(data)
    assert got is not None and got[0] == offset and got[1].startswith(starts), got
    (tmp_path / "f.txt").write_bytes(data)
    with pytest.raises(NotUtf8) as e:
        read_utf8(tmp_path / "f.txt", name="f.txt")
    assert str(e.value) == f"f.txt: {got[1]}" and e.value.offset == offset
    assert "\n" not in str(e.value)


def test_a_byte_order_mark_is_stripped_and_nul_refused_only_when_asked():
    assert decode_utf8(b"\xef\xbb\xbfcaf\xc3\xa9", "f") == "café"
    assert decode_utf8(b"a\x00b", "f") == "a\x00b"
    with pytest.raises(NotUtf8, match=r"^f: a NUL byte at byte 4 \(UTF-16 without"):
        decode_utf8(b"\xef\xbb\xbfa\x00b", "f", nul=False)
    # a part of a file: offsets are the file's; a byte-order mark is only one at byte 0
    assert utf8_problem(b"ab\xe9", base=100)[0] == 102
    assert utf8_problem(b"\xff\xfe", base=100)[0] == 100


def test_replace_invalid_is_what_a_browser_reads():
    assert replace_invalid(b"ok") is None
    fixed, at = replace_invalid(b"a\xe9b\xffc", base=10)
    assert fixed.decode() == "a\ufffdb\ufffdc" and at == 11


@pytest.mark.parametrize("kind", ["latin-1", "nul", "bom"])
def test_the_engines_wgsl_loader(tmp_path, monkeypatch, kind):
    """``load_wgsl`` (shaders/ as a user may edit it) strips a byte-order mark and names the
    file and byte of anything else, in the include it is in."""
    monkeypatch.setattr(shaders, "SHADER_DIR", tmp_path)
    shaders.load_wgsl.cache_clear()
    inc = {"latin-1": b"// \xb5s\n", "nul": b"//\x00\n", "bom": b"\xef\xbb\xbf// ok\n"}[kind]
    (tmp_path / "inc.wgsl").write_bytes(inc)
    (tmp_path / "main.wgsl").write_bytes(b'// #include "inc.wgsl"\nfn f() {}\n')
    try:
        if kind == "bom":
            assert shaders.load_wgsl("main.wgsl") == "// ok\n\nfn f() {}\n"
            return
        with pytest.raises(NotUtf8) as e:
            shaders.load_wgsl("main.wgsl")
        assert e.value.name == str(tmp_path / "inc.wgsl") and e.value.offset == inc.find(
            b"\xb5" if kind == "latin-1" else b"\x00"
        )
    finally:
        shaders.load_wgsl.cache_clear()
