"""What a Canal-JSON message is made of: its types and structural fields, the exceptions the decoder
turns into DecodeErrors, the JSON text a Kafka value holds (read: several messages, NaN, big integers)
and the text TiCDC writes (Go's string escaping, ``sqlType`` and ``mysqlType``).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson

from cdclake.model import Op
from cdclake.types import Family, MySQLType

FORMAT = "canal-json"

WATERMARK_TYPE = "TIDB_WATERMARK"
_OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
# Alibaba Cloud DTS sends the rows of its initial snapshot as "INIT" (Flink reads them as INSERT,
# FLINK-32862); the decoder does too and keeps the type in meta.
_SNAPSHOT_TYPE = "INIT"


# Top-level fields the events carry in their own attributes; every other one goes to meta. (A row
# message's are popped by name in CanalJsonDecoder._decode_rows.)
_STRUCTURAL = frozenset(
    ("database", "table", "pkNames", "isDdl", "type", "sql", "sqlType", "mysqlType", "data", "old", "_tidb")
)

_U64_MAX = 2**64 - 1


class _Invalid(ValueError):
    """A message that breaks the format; the decoder turns it into a DecodeError with the origin."""


class _Untyped(Exception):
    """Not an error but a signal: a row holds a column its message gives no ``mysqlType`` for
    (third-party producers), so the message is read again with types inferred from its values."""


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "an array" if isinstance(value, list) else "an object"


# --- reading the JSON text -------------------------------------------------------------------------


def _documents_by_stdlib(value: bytes) -> list[Any]:
    """The JSON messages in one Kafka value that orjson refused (the decoder reads a value with orjson
    first: normally it holds one message).

    The standard library also reads NaN and Infinity (Flink writes them for non-finite doubles),
    integers beyond 64 bits, and several messages one after another (TiCDC's newline terminator). Its
    errors carry the line and column.
    """
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Invalid(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    decoder = json.JSONDecoder()
    documents = []
    position = _skip_space(text, 0)
    try:
        while position < len(text):
            document, position = decoder.raw_decode(text, position)
            documents.append(document)
            position = _skip_space(text, position)
    except json.JSONDecodeError as exc:
        # Some of the standard library's messages end in "at" ("Unterminated string starting at"): one "at" is enough.
        what = exc.msg.removesuffix(" at")
        raise _Invalid(f"not JSON: {what} at line {exc.lineno} column {exc.colno} (char {exc.pos})") from None
    except RecursionError:
        raise _Invalid("not JSON this decoder can read: arrays or objects nested too deeply") from None
    except ValueError:  # after JSONDecodeError, a subclass: CPython's limit on int() of a long text
        raise _Invalid(
            f"not JSON this decoder can read: an integer of more than {sys.get_int_max_str_digits()} digits"
        ) from None
    if not documents:
        raise _Invalid("the value holds no JSON message, only whitespace")
    for document in documents:
        # The standard library lets a lone UTF-16 surrogate (\ud800) through; no text holds one.
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _Invalid("not JSON text: a \\u escape is a lone UTF-16 surrogate") from None
    return documents


_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError

_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, position: int) -> int:
    return _end_of(_SPACE, text, position)


def _end_of(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where a match of ``pattern``, which also matches nothing, ends when it starts at ``position``."""
    match = pattern.match(text, position)
    assert match is not None  # the pattern matches the empty string
    return match.end()


# --- Python values -> JSON text (encoding) -----------------------------------------------------------

# Go's JSON writers (encoding/json, the easyjson writer TiCDC uses) escape ", \, control characters
# (\n \r \t by name, others as \u00XX), the HTML characters < > & and the JavaScript line
# separators U+2028 and U+2029; everything else is written as UTF-8.
_GO_ESCAPES: dict[int, str] = {
    **{code: f"\\u{code:04x}" for code in range(0x20)},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029]')


def go_json_string(text: str) -> str:
    """``text`` as a JSON string literal written the way TiCDC's Go code writes it."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return '"' + text.translate(_GO_ESCAPES) + '"'


# java.sql.Types codes TiCDC writes in sqlType (spec: SQL Type 字段; tiflow internal/java.go).
JAVA_SQL_TYPES: dict[str, int] = {
    "tinyint": -6,
    "smallint": 5,
    "mediumint": 4,
    "int": 4,
    "bigint": -5,
    "float": 7,
    "double": 8,
    "decimal": 3,
    "char": 1,
    "varchar": 12,
    **dict.fromkeys(("tinytext", "text", "mediumtext", "longtext"), 2005),  # CLOB
    **dict.fromkeys(("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"), 2004),  # BLOB
    "date": 91,
    "datetime": 93,
    "timestamp": 93,
    "time": 92,
    "year": 12,
    "enum": 4,
    "set": -7,
    "bit": -7,
    "json": 12,
    "vector": 12,
}
# An unsigned integer above its signed range gets the next wider code (spec: 整数类型; Canal's rule).
_UNSIGNED_PROMOTION = {"tinyint": (127, 5), "smallint": (32767, 4), "int": (2147483647, -5), "bigint": (2**63 - 1, 3)}
# TiDB has no spatial types; their WKB bytes travel as a BLOB would.
_GEOMETRY_SQL_TYPE = 2004


def java_sql_type(mtype: MySQLType, value: Any) -> int:
    """The sqlType code TiCDC writes for a column of ``mtype`` holding ``value`` (None for NULL)."""
    if mtype.family is Family.GEOMETRY:
        return _GEOMETRY_SQL_TYPE
    code = JAVA_SQL_TYPES[mtype.name]
    promotion = _UNSIGNED_PROMOTION.get(mtype.name) if mtype.unsigned else None
    if promotion is not None and value is not None and value > promotion[0]:
        return promotion[1]
    return code


def mysql_type_text(mtype: MySQLType, full: bool) -> str:
    """TiCDC's mysqlType: the base type (``int unsigned``), or the whole definition with ``full``
    (content-compatible: ``decimal(10,4)``, ``enum('a','b')``)."""
    if full:
        return str(mtype)
    text = mtype.name
    if mtype.unsigned and mtype.name not in ("bit", "year"):
        text += " unsigned"
    if mtype.zerofill and mtype.name != "year":
        text += " zerofill"
    return text
