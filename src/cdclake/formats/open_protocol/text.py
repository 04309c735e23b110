"""Text as TiCDC's Go code writes it: ``strconv.Quote`` / ``Unquote`` (binary CHAR/VARCHAR values), and
JSON strings and floats as its json-iterator writer produces them.
"""

from __future__ import annotations

import codecs
import math
import re
from decimal import Decimal

from cdclake.formats.open_protocol.wire import _Unencodable
from cdclake.values import format_float, to_float32

# --- Go strconv.Quote / Unquote -----------------------------------------------------------------------

_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}
# Every escape Go's Unquote reads, and the characters it refuses unescaped (a lone backslash too).
_GO_UNQUOTE_RE = re.compile(rb'\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|[abfnrtv\\"])|[\\"\n]')
# Text whose escapes all stand for one byte: the common case, read in one pass (see go_unquote).
_ONE_BYTE_ESCAPES_RE = re.compile(r'[^\\"\n]*+(?:\\(?:x[0-9a-fA-F]{2}|[abfnrtv\\"]|[0-3][0-7]{2})[^\\"\n]*+)*+')
_UNICODE_ESCAPE = codecs.getdecoder("unicode_escape")  # looked up once: by name it costs more than the work
_GO_UNESCAPES = {
    **{escape.encode(): char.encode() for char, escape in _GO_ESCAPES.items()},
    **{b"\\x%02x" % byte: bytes((byte,)) for byte in range(256)},  # as Go writes them
}


def go_quote(data: bytes) -> str:
    """Go's ``strconv.Quote(string(data))`` without its outer quotes, as TiCDC writes binary CHAR/VARCHAR.

    Printable runes stay as they are; ``\\`` and ``"`` are backslashed; ``\\a \\b \\f \\n \\r \\t \\v``
    by name; other control bytes and each byte of invalid UTF-8 as ``\\xNN``; other unprintable runes
    as ``\\uNNNN`` / ``\\UNNNNNNNN``. Printability is Python's Unicode database (Go's ``IsPrint`` is
    the same rule, on Go's Unicode version).
    """
    # surrogateescape turns each byte of invalid UTF-8 into its own lone surrogate, as Go decodes
    # each of them as a one-byte RuneError.
    text = data.decode("utf-8", "surrogateescape")
    if text.isprintable() and '"' not in text and "\\" not in text:
        return text
    return "".join(_go_escape(char) for char in text)


def _go_escape(char: str) -> str:
    escaped = _GO_ESCAPES.get(char)
    if escaped is not None:
        return escaped
    if char.isprintable():
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of invalid UTF-8, see go_quote
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def go_unquote(text: str) -> bytes:
    """The bytes of Go's ``strconv.Unquote('"' + text + '"')``: the inverse of :func:`go_quote`.

    Raises ValueError where Go's Unquote fails: an unknown escape, a bare ``"`` or newline, a ``\\u``
    escape of a surrogate or beyond U+10FFFF, an octal escape above ``\\377``.
    """
    if "\\" not in text and '"' not in text and "\n" not in text:
        return text.encode()
    if _ONE_BYTE_ESCAPES_RE.fullmatch(text):
        # Python's unicode_escape reads these escapes as Go does, and Latin-1 turns every character of
        # its result, a literal UTF-8 byte or an escaped one, back into that byte.
        return _UNICODE_ESCAPE(text.encode())[0].encode("latin-1")
    return _GO_UNQUOTE_RE.sub(_go_unescape, text.encode())


def _go_unescape(match: re.Match[bytes]) -> bytes:
    escape = match[0]
    simple = _GO_UNESCAPES.get(escape)
    if simple is not None:
        return simple
    if len(escape) == 1:
        what = {b"\\": "an unknown escape", b'"': 'an unescaped "', b"\n": "a raw newline"}[escape]
        raise ValueError(f"not a Go-quoted string: {what} at byte {match.start()}")
    if escape[1] == ord("x"):
        return bytes((int(escape[2:], 16),))
    if escape[1] in b"uU":
        code = int(escape[2:], 16)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            raise ValueError(f"not a Go-quoted string: {escape.decode()} is not a Unicode scalar value")
        return chr(code).encode()
    code = int(escape[1:], 8)
    if code > 0xFF:
        raise ValueError(f"not a Go-quoted string: octal escape {escape.decode()} is above \\377")
    return bytes((code,))


# --- JSON text as TiCDC's writer (json-iterator, HTML escaping off) produces it ----------------------

_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in range(0x20)} | {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}
_JSON_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def json_string(text: str) -> str:
    """A JSON string as json-iterator writes it: only ``"``, ``\\`` and control characters escaped."""
    if _JSON_NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return '"' + text.translate(_JSON_ESCAPES) + '"'


_FLOAT32_EXPONENT_BELOW = to_float32(1e-6)
_FLOAT32_EXPONENT_FROM = to_float32(1e21)


def json_float(value: float, single: bool) -> str:
    """A FLOAT (``single``) or DOUBLE as json-iterator writes it: Go's shortest digits, plain notation
    between 1e-6 and 1e21 and ``d.ddde±XX`` outside."""
    if not math.isfinite(value):
        raise _Unencodable(f"{value} cannot be written in JSON")
    plain = format_float(value, single)
    below, start = (_FLOAT32_EXPONENT_BELOW, _FLOAT32_EXPONENT_FROM) if single else (1e-6, 1e21)
    magnitude = abs(value)
    if magnitude == 0 or below <= magnitude < start:
        return plain
    sign, digits, exponent = Decimal(plain).normalize().as_tuple()
    assert isinstance(exponent, int)  # finite
    mantissa = "".join(map(str, digits))
    power = exponent + len(mantissa) - 1
    fraction = f".{mantissa[1:]}" if len(mantissa) > 1 else ""
    return f"{'-' if sign else ''}{mantissa[0]}{fraction}e{'-' if power < 0 else '+'}{abs(power):02d}"
