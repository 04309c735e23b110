"""TiCDC Open Protocol: batched binary key/value framing around one JSON key and value per event.

A Kafka message carries N events::

    key   = u64be(version=1) || N x ( u64be(len) || key JSON )
    value =                     N x ( u64be(len) || value JSON, compressed if configured )

The key JSON says what the event is (``t``: 1 row, 2 DDL, 3 resolved) and when (``ts``); a row value
has ``u`` (new image), ``p`` (old image of an update) or ``d`` (deleted image), each column as
``{"t": type code, "h": handle, "f": flags, "v": value}``; a DDL value is ``{"q": query, "t": action}``;
a resolved event has an empty value. Field meanings, value encodings and producer rules follow
``specs/ticdc-open-protocol.zh.md`` and ``specs/ticdc-reference-notes.md`` §1.1 and §2; the encoder
writes what TiCDC (pingcap/ticdc ``pkg/sink/codec/open``) writes, byte for byte.

Decoded rows keep each column's type code and flags in ``meta["type_codes"]`` and ``meta["flags"]``
so that the encoder can write them back unchanged; see docs/formats/open.md for what the format
cannot carry.
"""

from __future__ import annotations

import binascii
import codecs
import datetime as dt
import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

import orjson

from cdclake.errors import DecodeError, EncodeError, OptionError, TypeParseError
from cdclake.formats.base import TZ_OPTION, Codec, Option, parse_bool, parse_int
from cdclake.formats.compiled import DATETIME_SHAPE, TIME_SHAPE, returned_image
from cdclake.formats.compression import COMPRESSION_OPTION, compressor, decompressor
from cdclake.model import (
    Ddl,
    DdlKind,
    Event,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    RawMessage,
    RowChange,
    Watermark,
)
from cdclake.types import (
    TIME_OF_DAY_DATE,
    TIME_OF_DAY_MIDNIGHT,
    Family,
    MySQLType,
    ZeroTemporal,
    enum_index,
    format_date,
    format_datetime,
    format_decimal,
    format_float,
    format_time,
    format_timestamp,
    parse_date,
    parse_datetime,
    parse_time,
    set_bits,
    to_float32,
    zone,
)

FORMAT = "open"
BATCH_VERSION = 1

# Event kinds, the key's "t".
ROW, DDL, RESOLVED = 1, 2, 3

# Column flags, the column's "f" (spec: 列标志位).
BINARY_FLAG = 0x01
HANDLE_KEY_FLAG = 0x02
GENERATED_FLAG = 0x04
PRIMARY_KEY_FLAG = 0x08
UNIQUE_KEY_FLAG = 0x10
MULTIPLE_KEY_FLAG = 0x20
NULLABLE_FLAG = 0x40
UNSIGNED_FLAG = 0x80
_KEY_FLAGS = HANDLE_KEY_FLAG | PRIMARY_KEY_FLAG

# The size Kafka's record framing adds to a message, as TiCDC counts it (sarama's MaxRecordOverhead).
_RECORD_OVERHEAD = 36

_U64 = struct.Struct(">Q")
_FLOAT32 = struct.Struct("<f")
_U64_MAX = 2**64 - 1
_YEAR_MAX = 2155

# --- column types -------------------------------------------------------------------------------------

# Type code -> MySQL type name, and the name when BinaryFlag is set (spec: Column 的类型码).
# 6 (NULL) carries no type; its value is always null.
_NULL_TYPE_CODE = 6
_TYPE_NAMES: dict[int, tuple[str, str]] = {
    1: ("tinyint", "tinyint"),
    2: ("smallint", "smallint"),
    3: ("int", "int"),
    4: ("float", "float"),
    5: ("double", "double"),
    7: ("timestamp", "timestamp"),
    8: ("bigint", "bigint"),
    9: ("mediumint", "mediumint"),
    10: ("date", "date"),
    11: ("time", "time"),
    12: ("datetime", "datetime"),
    13: ("year", "year"),
    14: ("date", "date"),  # NEWDATE
    15: ("varchar", "varbinary"),
    16: ("bit", "bit"),
    225: ("vector", "vector"),  # TiDBVectorFloat32
    245: ("json", "json"),
    246: ("decimal", "decimal"),
    247: ("enum", "enum"),
    248: ("set", "set"),
    249: ("tinytext", "tinyblob"),
    250: ("mediumtext", "mediumblob"),
    251: ("longtext", "longblob"),
    252: ("text", "blob"),
    253: ("varchar", "varbinary"),  # VAR_STRING
    254: ("char", "binary"),
    255: ("geometry", "geometry"),
}
_BASE64_CODES = frozenset((249, 250, 251, 252))
_QUOTED_CODES = frozenset((15, 253, 254))
# Families whose UnsignedFlag is part of the type (YEAR and BIT always have it, and are never signed).
_SIGNED_FAMILIES = frozenset((Family.INTEGER, Family.DECIMAL, Family.FLOAT, Family.DOUBLE))

# MySQL type name -> the code TiCDC writes for it, and codes that mean the same type.
_CODE_OF: dict[str, int] = {}
for _code, _names in _TYPE_NAMES.items():
    for _name in _names:
        _CODE_OF.setdefault(_name, _code)
_CODE_ALIASES = {10: frozenset((10, 14)), 15: frozenset((15, 253))}

# --- DDL action types ---------------------------------------------------------------------------------

# TiDB ActionType -> DdlKind. Codes 1-36 are the spec's table (DDL 的类型码); the rest are TiDB's later
# codes (pingcap/tidb meta/model ActionType) grouped as TiCDC's Simple protocol groups them.
_DDL_KINDS: dict[int, DdlKind] = {
    1: DdlKind.CREATE_DATABASE,
    2: DdlKind.DROP_DATABASE,
    3: DdlKind.CREATE_TABLE,
    60: DdlKind.CREATE_TABLE,  # create tables
    4: DdlKind.DROP_TABLE,
    11: DdlKind.TRUNCATE_TABLE,
    14: DdlKind.RENAME_TABLE,
    47: DdlKind.RENAME_TABLE,  # rename tables
    **dict.fromkeys((7, 9, 32), DdlKind.CREATE_INDEX),  # add index, foreign key, primary key
    **dict.fromkeys((8, 10, 33), DdlKind.DROP_INDEX),
    # add/drop/modify column, rebase auto id, set default, table comment, rename index, add/drop/truncate
    # partition, table charset, add/drop columns, index visibility, multi-schema change, reorganize,
    # partition by, remove partitioning
    **dict.fromkeys((5, 6, 12, 13, 15, 17, 18, 19, 20, 22, 23, 37, 38, 41, 61, 64, 71, 72), DdlKind.ALTER_TABLE),
}
# The action type the encoder writes for a DDL whose meta does not say: 61 is TiDB's generic
# "alter table multi-schema change", 0 is ActionNone.
_DDL_CODES: dict[DdlKind, int] = {
    DdlKind.CREATE_DATABASE: 1,
    DdlKind.DROP_DATABASE: 2,
    DdlKind.CREATE_TABLE: 3,
    DdlKind.DROP_TABLE: 4,
    DdlKind.TRUNCATE_TABLE: 11,
    DdlKind.RENAME_TABLE: 14,
    DdlKind.CREATE_INDEX: 7,
    DdlKind.DROP_INDEX: 8,
    DdlKind.ALTER_TABLE: 61,
    DdlKind.OTHER: 0,
}


class _Invalid(Exception):
    """Why one part of a message cannot be decoded; the decoder adds the format and the origin."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Unencodable(Exception):
    """Why a value cannot be written; the encoder adds the column."""


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


# --- framing ------------------------------------------------------------------------------------------


def split_batch(key: bytes | None, value: bytes | None) -> list[tuple[bytes, bytes]]:
    """The (key JSON, value) pairs of one message, checking the version and every length.

    Raises ValueError naming the frame (event index) and offset where the framing breaks.
    """
    try:
        return _split_batch(key or b"", value or b"")
    except _Invalid as exc:
        raise ValueError(exc.reason) from None


def _split_batch(key: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
    if len(key) < 8:
        raise _Invalid(f"the key must start with the 8-byte protocol version, got {len(key)} bytes")
    (version,) = _U64.unpack_from(key)
    if version != BATCH_VERSION:
        raise _Invalid(f"protocol version must be {BATCH_VERSION}, got {version}")
    keys = _frames(key, 8, "key")
    values = _frames(value, 0, "value")
    if len(keys) != len(values):
        raise _Invalid(f"the key holds {len(keys)} events but the value {len(values)}")
    return list(zip(keys, values, strict=True))


def _frames(data: bytes, offset: int, part: str) -> list[bytes]:
    frames: list[bytes] = []
    append, unpack = frames.append, _U64.unpack_from
    end = len(data)
    while offset < end:
        if end - offset < 8:
            raise _Invalid(
                f"{part} frame {len(frames)}: length prefix at byte {offset} cut short ({end - offset} of 8 bytes)"
            )
        (length,) = unpack(data, offset)
        start = offset + 8
        offset = start + length
        if offset > end:
            raise _Invalid(
                f"{part} frame {len(frames)}: length {length} at byte {start - 8} runs past the end "
                f"({end - start} bytes left)"
            )
        append(data[start:offset])
    return frames


def _frame(data: bytes) -> bytes:
    return _U64.pack(len(data)) + data


# --- decoding -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ColumnDecoding:
    """How the columns of one (type code, flags) pair decode."""

    mysql_type: MySQLType | None
    convert: Callable[[Any], Any]
    is_key: bool


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_of(code: int, flags: int) -> MySQLType | None:
    names = _TYPE_NAMES.get(code)
    if names is None:
        if code == _NULL_TYPE_CODE:
            return None
        raise _Invalid(f"unknown column type code {code}")
    name = names[1] if flags & BINARY_FLAG else names[0]
    mysql_type = MySQLType(name)
    if flags & UNSIGNED_FLAG and mysql_type.family in _SIGNED_FAMILIES:
        return MySQLType(name, unsigned=True)
    return mysql_type


def _integer_converter(mysql_type: MySQLType) -> Callable[[Any], Any]:
    low, high = mysql_type.integer_range()

    def convert(value: Any) -> int:
        if type(value) is int and low <= value <= high:
            return value
        raise _Invalid(f"expected {mysql_type}, an integer in [{low}, {high}], got {_describe(value)}")

    return convert


def _whole_number_converter(what: str, low: int, high: int) -> Callable[[Any], Any]:
    def convert(value: Any) -> int:
        if type(value) is int and low <= value <= high:
            return value
        raise _Invalid(f"expected {what} in [{low}, {high}], got {_describe(value)}")

    return convert


def _float_converter(single: bool) -> Callable[[Any], Any]:
    def convert(value: Any) -> float:
        if type(value) is float or type(value) is int:
            try:
                return to_float32(value) if single else float(value)
            except OverflowError:
                raise _Invalid(f"{value} is outside the {'float32' if single else 'float64'} range") from None
        raise _Invalid(f"expected a number, got {_describe(value)}")

    return convert


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    raise _Invalid(f"expected a string, got {_describe(value)}")


def _quoted_bytes(value: Any) -> bytes:
    try:
        return go_unquote(_text(value))
    except ValueError as exc:
        raise _Invalid(str(exc)) from None


def _base64_bytes(value: Any) -> bytes:
    try:
        return binascii.a2b_base64(_text(value), strict_mode=True)
    except ValueError as exc:  # binascii.Error, or a non-ASCII string
        raise _Invalid(f"not standard padded base64: {exc}") from None


def _base64_text(value: Any) -> str:
    try:
        return _base64_bytes(value).decode()
    except UnicodeDecodeError as exc:
        raise _Invalid(f"a TEXT value must be UTF-8 once base64-decoded: {exc}") from None


_DECIMAL_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _decimal(value: Any) -> Decimal:
    # TiDB's MyDecimal.String(): digits with an optional fraction, never an exponent.
    if type(value) is not str or _DECIMAL_RE.fullmatch(value) is None:
        raise _Invalid(f"expected a decimal string, got {_describe(value)}")
    return Decimal(value)


_Parsed = TypeVar("_Parsed")


def _parsed(parse: Callable[[str], _Parsed]) -> Callable[[Any], _Parsed]:
    """A converter of strings read by ``parse``, one of types.py's parsers."""

    def convert(value: Any) -> _Parsed:
        try:
            return parse(_text(value))
        except TypeParseError as exc:
            raise _Invalid(str(exc)) from None

    return convert


# TiDB's Time.String() and Duration.String() layouts. fromisoformat and a plain pattern read them many
# times faster than types.py's general parsers; fromisoformat also reads layouts TiDB never writes (week
# dates, UTC offsets), so it only gets text these patterns admit. Zero dates, out-of-range fields and
# anything else go to the general parsers, which say what is wrong.
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_ISO_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?")
_DURATION = re.compile(r"(-?)([0-9]{2,3}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?")
_parse_date, _parse_datetime, _parse_time = _parsed(parse_date), _parsed(parse_datetime), _parsed(parse_time)


def _date(value: Any) -> dt.date | ZeroTemporal:
    if type(value) is str and _ISO_DATE.fullmatch(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    return _parse_date(value)


def _datetime(value: Any) -> dt.datetime | ZeroTemporal:
    if type(value) is str and _ISO_DATETIME.fullmatch(value):
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            pass
    return _parse_datetime(value)


def _time(value: Any) -> dt.timedelta:
    match = _DURATION.fullmatch(value) if type(value) is str else None
    if match is None:
        return _parse_time(value)
    sign, hours, minutes, seconds, fraction = match.groups()
    micros = int(fraction.ljust(6, "0")) if fraction else 0
    duration = dt.timedelta(0, int(hours) * 3600 + int(minutes) * 60 + int(seconds), micros)
    return -duration if sign else duration


def _timestamp_converter(tz: dt.tzinfo) -> Callable[[Any], dt.datetime | ZeroTemporal]:
    """TIMESTAMP text is wall clock in the producer's zone ``tz``: the value is that instant in UTC."""

    def convert(value: Any) -> dt.datetime | ZeroTemporal:
        local = _datetime(value)
        if isinstance(local, ZeroTemporal):
            return local
        return local.replace(tzinfo=tz).astimezone(dt.UTC)

    def convert_utc(value: Any) -> dt.datetime | ZeroTemporal:
        # With the offset in the text fromisoformat makes the aware datetime itself, several times
        # faster than replace(tzinfo=...); the pattern has made sure the text has no offset of its own.
        if type(value) is str and _ISO_DATETIME.fullmatch(value):
            try:
                return dt.datetime.fromisoformat(value + "+00:00")
            except ValueError:
                pass
        return convert(value)

    return convert_utc if tz is dt.UTC else convert


def _only_null(value: Any) -> None:
    raise _Invalid(f"this type has no values but NULL, got {_describe(value)}")


def _converter(mysql_type: MySQLType | None, code: int, tz: dt.tzinfo) -> Callable[[Any], Any]:
    """The function from a column's non-null JSON ``v`` to its Python value (types.py's table)."""
    if mysql_type is None:
        return _only_null
    family = mysql_type.family
    if family is Family.INTEGER:
        return _integer_converter(mysql_type)
    if family in (Family.FLOAT, Family.DOUBLE):
        return _float_converter(family is Family.FLOAT)
    if family is Family.BIT:
        return _whole_number_converter("a BIT value", 0, _U64_MAX)
    if family is Family.YEAR:
        return _whole_number_converter("a YEAR", 0, _YEAR_MAX)
    if family is Family.ENUM:
        return _whole_number_converter("an ENUM index", 0, _U64_MAX)
    if family is Family.SET:
        return _whole_number_converter("a SET bitmask", 0, _U64_MAX)
    if family is Family.DECIMAL:
        return _decimal
    if family is Family.DATE:
        return _date
    if family is Family.DATETIME:
        return _datetime
    if family is Family.TIMESTAMP:
        return _timestamp_converter(tz)
    if family is Family.TIME:
        return _time
    if code in _BASE64_CODES:
        return _base64_bytes if family is Family.BINARY else _base64_text
    if family is Family.BINARY:
        return _quoted_bytes
    if family is Family.GEOMETRY:
        return _only_null
    return _text  # CHAR/VARCHAR without BinaryFlag, JSON, VECTOR


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the images of one table share: column names, type codes and flags, and so the columns'
    types and value converters. Rows of a table repeat one shape, so it is worked out once."""

    codes: tuple[int, ...]
    flags: tuple[int | None, ...]  # as sent: None where a column had no "f" (written before flags existed)
    types: dict[str, MySQLType]
    type_codes: dict[str, int]
    column_flags: dict[str, int]
    key_columns: tuple[str, ...]
    # The values of an image that fits this shape, else None (see _compile_shape); None where no image
    # can take the fast path (a column without "f").
    values: Callable[[dict[str, Any]], dict[str, Any] | None] | None
    # The same for the old image "p" of an update whose "u" has this shape and the same column names,
    # given "u" and its values: a column whose text is the same in both takes the value from "u".
    old_values: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any] | None] | None
    names: tuple[str, ...]
    # The meta of a row of this shape whose key has no extra fields; shared, never changed.
    meta: dict[str, Any]


class OpenDecoder:
    """Decodes the messages of one partition. Holds only caches of column converters and row shapes."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._tz = zone(options["tz"])
        self._compression = options["large-message-handle-compression"]
        self._decompress = None if self._compression == "none" else decompressor(self._compression)
        self._columns: dict[tuple[int, int], _ColumnDecoding] = {}
        self._shapes: dict[tuple[str, ...], _Shape] = {}

    def flush(self) -> list[Event]:
        """Nothing is held between messages of this format."""
        return []

    def decode(self, message: RawMessage) -> list[Event]:
        origin = message.origin
        try:
            frames = _split_batch(message.key or b"", message.value or b"")
        except _Invalid as exc:
            raise DecodeError(FORMAT, exc.reason, origin) from None
        events: list[Event] = []
        append, event, at = events.append, self._event, Origin.at
        for index, (key, value) in enumerate(frames):
            where = at(origin, index)
            try:
                append(event(key, value, where))
            except _Invalid as exc:
                raise DecodeError(FORMAT, f"event {index}: {exc.reason}", where) from None
            except (LookupError, TypeError, ValueError, ArithmeticError) as exc:
                # Every check above names what is wrong; this only keeps a missed case a DecodeError.
                raise DecodeError(FORMAT, f"event {index}: {type(exc).__name__}: {exc}", where) from exc
        return events

    def _event(self, key_json: bytes, value: bytes, origin: Origin) -> Event:
        try:
            key = orjson.loads(key_json)
            kind, commit_ts = key["t"], key["ts"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise _Invalid(_key_fault(key_json)) from None
        if type(kind) is not int or type(commit_ts) is not int or not 0 <= commit_ts <= _U64_MAX:
            raise _Invalid(_key_fault(key_json))
        if kind == ROW:
            return self._row(key, commit_ts, self._value(value), origin)
        if kind == DDL:
            return self._ddl(key, commit_ts, self._value(value), origin)
        if kind == RESOLVED:
            if value:
                raise _Invalid(f"a resolved event has no value, got {len(value)} bytes")
            return Watermark(commit_ts, origin)
        raise _Invalid(f'key "t" must be 1 (row), 2 (DDL) or 3 (resolved), got {kind}')

    def _value(self, data: bytes) -> dict[str, Any]:
        if self._decompress is not None:
            try:
                data = self._decompress(data)
            except Exception as exc:  # each codec library raises its own error type on corrupt input
                raise _Invalid(f"value is not {self._compression}-compressed: {exc}") from None
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise _Invalid(f"value is not JSON: {exc}") from None
        if type(value) is not dict:
            raise _Invalid(f"value must be a JSON object, got {_describe(value)}")
        return value

    def _ddl(self, key: dict[str, Any], commit_ts: int, value: dict[str, Any], origin: Origin) -> Ddl:
        action = _field(value, "t", int, "DDL value")
        return Ddl(
            kind=_DDL_KINDS.get(action, DdlKind.OTHER),
            database=_optional_field(key, "scm", str, "key", ""),
            table=_optional_field(key, "tbl", str, "key", ""),
            sql=_field(value, "q", str, "DDL value"),
            commit_ts=commit_ts,
            origin=origin,
            meta={"ddl_type": action},
        )

    def _row(
        self, key: dict[str, Any], commit_ts: int, value: dict[str, Any], origin: Origin
    ) -> RowChange | LargeMessageRef:
        database, table = key.get("scm"), key.get("tbl")
        if not isinstance(database, str) or not isinstance(table, str):
            raise _Invalid(_table_fault(key))
        new, old, deleted = value.get("u"), value.get("p"), value.get("d")
        if deleted is not None:
            if new is not None or old is not None:
                raise _Invalid('a row value holds either "d" or "u" (with "p"), not both')
            op = Op.DELETE
            shape, before = self._image(deleted, "d")
            after = None
        elif new is None:
            raise _Invalid('a row value needs "u" (insert, update) or "d" (delete)' + _keys_of(value))
        elif old is None:
            # Without "p" an update cannot be told from an insert; TiCDC's decoders call it an insert.
            op = Op.INSERT
            shape, after = self._image(new, "u")
            before = None
        else:
            op = Op.UPDATE
            shape, after = self._image(new, "u")
            before = None
            if shape.old_values is not None and type(old) is dict and tuple(old) == shape.names:
                before = shape.old_values(old, new, after)
            if before is None:
                before = self._old_image(old, shape, after)
        meta = shape.meta
        # Beyond ts, scm, tbl and t a key has fields only for partitioned tables and large messages.
        extended = len(key) > 4
        if extended:
            meta = dict(meta)
            for field in ("ptn", "rid"):
                if field in key:
                    meta[field] = _field(key, field, int, "key")
        row = RowChange(
            op, database, table, before, after, shape.types, shape.key_columns, commit_ts, None, None, origin, meta
        )  # positional: keyword arguments cost a frozen dataclass more, per event
        return self._large_message(key, row) if extended else row

    @staticmethod
    def _large_message(key: dict[str, Any], row: RowChange) -> RowChange | LargeMessageRef:
        location = _optional_field(key, "ccl", str, "key", "")
        if location:
            return LargeMessageRef(LargeMessageKind.CLAIM_CHECK, row, location)
        if _optional_field(key, "ohk", bool, "key", False):
            return LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, row)
        return row

    def _old_image(self, old: Any, new_shape: _Shape, new_values: dict[str, Any]) -> dict[str, Any]:
        """The old image of an update: ``p``, with the columns it leaves out (only-output-updated-columns)
        taken from ``u``."""
        shape, values = self._image(old, "p", allow_empty=True)
        if shape is new_shape:
            return values
        for name, code in shape.type_codes.items():
            if name not in new_shape.type_codes:
                raise _Invalid(f'column {name!r} is in "p" but not in "u"')
            if new_shape.type_codes[name] != code or new_shape.column_flags[name] != shape.column_flags[name]:
                raise _Invalid(f'column {name!r} has other type code or flags in "p" than in "u"')
        return new_values | values

    def _image(self, image: Any, name: str, allow_empty: bool = False) -> tuple[_Shape, dict[str, Any]]:
        """The shape and the values of one row image (``u``, ``p`` or ``d``)."""
        if type(image) is not dict or not (image or allow_empty):
            raise _Invalid(f'row image "{name}" must be a non-empty JSON object, got {_describe(image)}')
        names = tuple(image)
        known = self._shapes.get(names)
        if known is not None and known.values is not None:
            values = known.values(image)
            if values is not None:
                return known, values
        # A new shape, or a column that does not fit the cached one (or a value the fast path leaves to
        # the careful converters, a zero date): decode column by column.
        shape, values = self._learn_shape(image, name)
        if known is not None and known.values is not None and (known.codes, known.flags) == (shape.codes, shape.flags):
            # The same shape (with "f" on every column, codes and flags decide types and keys): keep it
            # and its compiled fast path.
            return known, values
        self._shapes[names] = shape
        return shape, values

    def _learn_shape(self, image: dict[str, Any], name: str) -> tuple[_Shape, dict[str, Any]]:
        codes, sent_flags, all_flags, decodings, values = [], [], [], [], {}
        types: dict[str, MySQLType] = {}
        key_columns = []
        for column_name, column in image.items():
            try:
                code = column["t"]
                flags = column.get("f")
                legacy_key = False
                if flags is None:  # before "f" existed, "h" alone marked the handle key
                    flags, legacy_key = 0, column.get("h") is True
                if type(code) is not int or type(flags) is not int:
                    raise TypeError
                decoding = self._columns.get((code, flags)) or self._learn_column(code, flags)
                raw = column["v"]
                values[column_name] = None if raw is None else decoding.convert(raw)
            except (KeyError, TypeError, AttributeError):
                raise _Invalid(f'column {column_name!r} in "{name}": {_column_fault(column)}') from None
            except _Invalid as exc:
                raise _Invalid(f'column {column_name!r} in "{name}": {exc.reason}') from None
            codes.append(code)
            sent_flags.append(column.get("f"))
            all_flags.append(flags)
            decodings.append(decoding)
            if decoding.mysql_type is not None:
                types[column_name] = decoding.mysql_type
            if decoding.is_key or legacy_key:
                key_columns.append(column_name)
        type_codes = dict(zip(image, codes, strict=True))
        column_flags = dict(zip(image, all_flags, strict=True))
        shape = _Shape(
            tuple(codes),
            tuple(sent_flags),
            types,
            type_codes,
            column_flags,
            tuple(key_columns),
            *_compile_shape(tuple(image), codes, sent_flags, decodings, self._tz),
            tuple(image),
            {"type_codes": type_codes, "flags": column_flags},
        )
        return shape, values

    def _learn_column(self, code: int, flags: int) -> _ColumnDecoding:
        if not 0 <= flags <= _U64_MAX:
            raise _Invalid(f"flags must be a uint64, got {flags}")
        mysql_type = _type_of(code, flags)
        convert = _converter(mysql_type, code, self._tz)
        decoding = _ColumnDecoding(mysql_type, convert, bool(flags & _KEY_FLAGS))
        self._columns[(code, flags)] = decoding
        return decoding


def _compile_shape(
    names: tuple[str, ...],
    codes: list[int],
    flags: list[int | None],
    decodings: list[_ColumnDecoding],
    tz: dt.tzinfo,
) -> tuple[Callable[[dict[str, Any]], dict[str, Any] | None] | None, Any]:
    """A function from an image with these column names to its values, or to None where a column does
    not fit the shape (another type code or flags, a malformed column or value) or a value needs the
    careful converters (a zero date): the caller then decodes column by column, which says what is
    wrong. Generated once per shape as straight-line code, so that no loop, tuple unpacking or
    converter call is paid per column where a type check does.

    Every value it returns is the one the column's converter returns: the inline checks are the
    converters' own fast paths, and anything they do not accept returns None.

    The second function is the shape's ``old_values`` (see _Shape); both are None where no image can
    take the fast path.
    """
    if any(flag is None for flag in flags):  # a legacy column without "f": the careful path decodes
        return None, None
    namespace: dict[str, Any] = {
        "_Invalid": _Invalid,
        "Decimal": Decimal,
        "DECIMAL": _DECIMAL_RE.fullmatch,
        "date_iso": dt.date.fromisoformat,
        "datetime_iso": dt.datetime.fromisoformat,
        "TIME_OF_DAY_DATE": TIME_OF_DAY_DATE,
        "MIDNIGHT": TIME_OF_DAY_MIDNIGHT,
        "f32_pack": _FLOAT32.pack,
        "f32_unpack": _FLOAT32.unpack,
        "a2b_base64": binascii.a2b_base64,
        "unicode_escape": _UNICODE_ESCAPE,
        "QUOTE": '"',
        "NEWLINE": "\n",
        "BACKSLASH": "\\",
        "HEX_ESCAPE": "\\x",
    }
    checks, lines, old_lines = [], [], []
    for i, (code, flag, decoding) in enumerate(zip(codes, flags, decodings, strict=True)):
        # Identity, not equality: orjson returns CPython's shared small ints, which type codes and
        # common flags are, and a JSON true must not pass for the 1 it equals. Anything else, an
        # uncommon large flag included, takes the careful path.
        namespace[f"T{i}"], namespace[f"F{i}"] = code, flag
        checks.append(f'c{i}["t"] is not T{i} or c{i}["f"] is not F{i}')
        conversion = _inline_conversion(i, decoding, tz, namespace)
        lines += [f'v{i} = c{i}["v"]', *conversion]
        if _reusable(decoding):
            # Equal text converts to an equal value (the converters are pure), and to the same type:
            # only strings are compared, so that no JSON true passes for a 1 or 0.0 for a -0.0.
            old_lines += [
                f'v{i} = c{i}["v"]',
                f'if type(v{i}) is str and v{i} == n{i}["v"]:',
                f"    v{i} = new_values[{names[i]!r}]",
                "else:",
                *(f"    {line}" for line in conversion),
            ]
        else:
            old_lines += [f'v{i} = c{i}["v"]', *conversion]
    columns = "".join(f"c{i}, " for i in range(len(names)))
    check = [f"        if {' or '.join(checks)}:", "            return None"]
    catch = ["    except (KeyError, TypeError, ValueError, ArithmeticError, _Invalid):", "        return None"]
    result = returned_image(names)
    body = [
        "def values(image):",
        "    try:",
        f"        {columns}= image.values()",
        *check,
        *(f"        {line}" for line in lines),
        *catch,
        *result,
        "def old_values(image, new, new_values):",
        "    try:",
        f"        {columns}= image.values()",
        f"        {columns.replace('c', 'n')}= new.values()",
        *check,
        *(f"        {line}" for line in old_lines),
        *catch,
        *result,
    ]
    # The text is ours: column names appear in it only as repr literals.
    exec(compile("\n".join(body), f"<open protocol shape {names[:3]}...>", "exec"), namespace)
    return namespace["values"], namespace["old_values"]


# Families whose JSON values are numbers, or strings passed on as they are: checked, not converted.
_CHECKED_FAMILIES = frozenset(
    (Family.INTEGER, Family.BIT, Family.YEAR, Family.ENUM, Family.SET, Family.FLOAT, Family.DOUBLE)
)


def _reusable(decoding: _ColumnDecoding) -> bool:
    """Whether "p" takes a column's value from "u" where the text is the same: where converting costs."""
    mysql_type = decoding.mysql_type
    return mysql_type is not None and mysql_type.family not in _CHECKED_FAMILIES and decoding.convert is not _text


def _inline_conversion(i: int, decoding: _ColumnDecoding, tz: dt.tzinfo, namespace: dict[str, Any]) -> list[str]:
    """The lines that turn a non-null ``v{i}`` into its value as ``decoding.convert`` does."""
    mysql_type, convert = decoding.mysql_type, decoding.convert
    namespace[f"C{i}"] = convert
    call = [f"if v{i} is not None:", f"    v{i} = C{i}(v{i})"]
    if mysql_type is None:
        return call
    family = mysql_type.family
    bounds = None
    if family is Family.INTEGER:
        bounds = mysql_type.integer_range()
    elif family in (Family.BIT, Family.ENUM, Family.SET):
        bounds = (0, _U64_MAX)
    elif family is Family.YEAR:
        bounds = (0, _YEAR_MAX)
    if bounds is not None:
        namespace[f"L{i}"], namespace[f"H{i}"] = bounds
        return [f"if v{i} is not None and (type(v{i}) is not int or not L{i} <= v{i} <= H{i}):", "    return None"]
    if convert is _text:
        return [f"if v{i} is not None and type(v{i}) is not str:", "    return None"]
    if family is Family.DOUBLE:
        return [f"if v{i} is not None and type(v{i}) is not float:", f"    v{i} = C{i}(v{i})"]
    if convert is _decimal:
        # Text that Decimal writes back unchanged, finite and without an exponent, is what _DECIMAL_RE
        # admits (str writes "-"?digits with digits on both sides of any "."); cheaper than the pattern.
        # Decimal refuses other text with InvalidOperation, an ArithmeticError: the careful path says why.
        return [
            f"if v{i} is not None:",
            f"    d = Decimal(v{i})",
            f'    if str(d) != v{i} or not d.is_finite() or "E" in v{i} or "e" in v{i}:',
            "        return None",
            f"    v{i} = d",
        ]
    if family is Family.FLOAT:
        return [
            f"if v{i} is not None:",
            # to_float32, inline; OverflowError (an ArithmeticError) past the float32 range
            f"    v{i} = f32_unpack(f32_pack(v{i}))[0] if type(v{i}) is float or type(v{i}) is int else C{i}(v{i})",
        ]
    if convert is _quoted_bytes:
        # go_unquote's first two cases: nothing to unescape, or only \xNN escapes (every backslash
        # starts one), which unicode_escape reads as _ONE_BYTE_ESCAPES_RE's text; it raises
        # UnicodeDecodeError, a ValueError, where two hex digits do not follow.
        return [
            f"if v{i} is not None:",
            f"    if type(v{i}) is not str or QUOTE in v{i} or NEWLINE in v{i}:",
            f"        v{i} = C{i}(v{i})",
            f"    elif BACKSLASH not in v{i}:",
            f"        v{i} = v{i}.encode()",
            f"    elif v{i}.count(BACKSLASH) == v{i}.count(HEX_ESCAPE):",
            f'        v{i} = unicode_escape(v{i}.encode())[0].encode("latin-1")',
            "    else:",
            f"        v{i} = C{i}(v{i})",
        ]
    if convert is _base64_bytes or convert is _base64_text:
        decode = ".decode()" if convert is _base64_text else ""
        return [
            f"if v{i} is not None:",
            f"    v{i} = a2b_base64(v{i}, strict_mode=True){decode} if type(v{i}) is str else C{i}(v{i})",
        ]
    if convert is _time:
        # parse_time's fast path (the shape of types.is_time_of_day_text), which _time agrees with;
        # hours past 23 or a field past 59 raise ValueError, a sign or three-digit hours fail the
        # shape: all go to _time.
        parse, read = f"datetime_iso(TIME_OF_DAY_DATE + v{i})", f"_x - MIDNIGHT if _x.tzinfo is None else C{i}(v{i})"
        return _iso_or_careful(i, TIME_SHAPE.format(v=f"v{i}"), parse, read)
    if convert is _date:
        return _iso_or_careful(i, f"len(v{i}) == 10 and v{i}[4:8:3] == '--'", f"date_iso(v{i})")
    datetime_shape = DATETIME_SHAPE.format(v=f"v{i}")
    if convert is _datetime:
        return _iso_or_careful(i, datetime_shape, f"datetime_iso(v{i})", f"_x if _x.tzinfo is None else C{i}(v{i})")
    if family is Family.TIMESTAMP and tz is dt.UTC:  # see _timestamp_converter's convert_utc
        return _iso_or_careful(i, datetime_shape, f'datetime_iso(v{i} + "+00:00")')
    return call


def _iso_or_careful(i: int, admitted: str, parse: str, read: str = "_x") -> list[str]:
    """Text of a shape the column's converter reads with fromisoformat, parsed so into ``_x`` and taken
    as ``read``; text fromisoformat refuses (a zero date, hours past 23) and any other text go to the
    converter, as in _date."""
    return [
        f"if v{i} is not None:",
        f"    if type(v{i}) is str and {admitted}:",
        "        try:",
        f"            _x = {parse}",
        "        except ValueError:",
        f"            v{i} = C{i}(v{i})",
        "        else:",
        f"            v{i} = {read}",
        "    else:",
        f"        v{i} = C{i}(v{i})",
    ]


def _key_fault(key_json: bytes) -> str:
    try:
        key = orjson.loads(key_json)
    except orjson.JSONDecodeError as exc:
        return f"key is not JSON: {exc}"
    if type(key) is not dict:
        return f"key must be a JSON object, got {_describe(key)}"
    try:
        _field(key, "t", int, "key")
        commit_ts = _field(key, "ts", int, "key")
    except _Invalid as exc:
        return exc.reason
    return f'key "ts" must be a uint64, got {commit_ts}'


def _table_fault(key: dict[str, Any]) -> str:
    for field in ("scm", "tbl"):
        if field not in key:
            return f'a row event\'s key needs "{field}"'
        if not isinstance(key[field], str):
            return f'key "{field}" must be a string, got {_describe(key[field])}'
    return "malformed key"


def _column_fault(column: Any) -> str:
    if type(column) is not dict:
        return f"a column must be a JSON object, got {_describe(column)}"
    for field, kind in (("t", "type code"), ("v", "value")):
        if field not in column:
            return f'no {kind} "{field}"'
    for field in ("t", "f"):
        if field in column and type(column[field]) is not int:
            return f'"{field}" must be an integer, got {_describe(column[field])}'
    return "malformed column"


def _keys_of(value: dict[str, Any]) -> str:
    return f", got keys {sorted(value)}" if value else ", got {}"


def _field(obj: dict[str, Any], name: str, kind: type, part: str) -> Any:
    if name not in obj:
        raise _Invalid(f'{part} has no "{name}"')
    return _checked(obj[name], name, kind, part)


def _optional_field(obj: dict[str, Any], name: str, kind: type, part: str, default: Any) -> Any:
    return _checked(obj[name], name, kind, part) if name in obj else default


def _checked(value: Any, name: str, kind: type, part: str) -> Any:
    if type(value) is not kind:  # exact: a JSON true is not the integer 1
        raise _Invalid(f'{part} "{name}" must be {_JSON_KINDS[kind]}, got {_describe(value)}')
    return value


_JSON_KINDS = {int: "an integer", str: "a string", bool: "true or false"}


# --- encoding -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ColumnEncoding:
    """How one column is written: ``"name":{"t":code[,"h":true],"f":flags,"v":`` and its value writer."""

    prefix: str
    write: Callable[[Any], str]

    @classmethod
    def of(cls, name: str, code: int, flags: int, write: Callable[[Any], str]) -> _ColumnEncoding:
        handle = ',"h":true' if flags & HANDLE_KEY_FLAG else ""  # TiCDC writes "h" for handle keys only
        return cls(f'{json_string(name)}:{{"t":{code}{handle},"f":{flags},"v":', write)

    def json(self, name: str, value: Any) -> str:
        try:
            return self.prefix + ("null" if value is None else self.write(value)) + "}"
        except _Unencodable as exc:
            raise EncodeError(FORMAT, f"column {name!r}: {exc}") from None


def _int_writer(mysql_type: MySQLType) -> Callable[[Any], str]:
    low, high = mysql_type.integer_range()

    def write(value: Any) -> str:
        if type(value) is not int:
            raise _Unencodable(f"a {mysql_type} value must be int, got {type(value).__name__}")
        if not low <= value <= high:
            raise _Unencodable(f"{value} is outside the range of {mysql_type}")
        return str(value)

    return write


def _whole_number_writer(what: str, high: int) -> Callable[[Any], str]:
    def write(value: Any) -> str:
        if type(value) is not int or not 0 <= value <= high:
            raise _Unencodable(f"{what} must be an int in [0, {high}], got {value!r}")
        return str(value)

    return write


def _float_writer(single: bool) -> Callable[[Any], str]:
    def write(value: Any) -> str:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _Unencodable(f"a float value must be float, got {type(value).__name__}")
        try:
            # A FLOAT column holds the nearest float32; that is the value written.
            return json_float(to_float32(value) if single else float(value), single)
        except OverflowError:
            raise _Unencodable(f"{value} is outside the {'float32' if single else 'float64'} range") from None

    return write


def _typed(kinds: type | tuple[type, ...], what: str, render: Callable[[Any], str]) -> Callable[[Any], str]:
    accepted = " or ".join(kind.__name__ for kind in (kinds if isinstance(kinds, tuple) else (kinds,)))

    def write(value: Any) -> str:
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise _Unencodable(f"{what} must be {accepted}, got {type(value).__name__}")
        try:
            return render(value)
        except (ValueError, ArithmeticError) as exc:  # TypeParseError, a date moved past year 9999
            raise _Unencodable(str(exc)) from None

    return write


def _text_writer(value: Any) -> str:
    if type(value) is not str:
        raise _Unencodable(f"a string column takes str, got {type(value).__name__}")
    return json_string(value)


def _decimal_text(value: Decimal | int) -> str:
    decimal = Decimal(value)
    if not decimal.is_finite():
        raise _Unencodable(f"{value} is not a finite decimal")
    return json_string(format_decimal(decimal))


def _timestamp_text(mysql_type: MySQLType, tz: dt.tzinfo) -> Callable[[Any], str]:
    def render(value: dt.datetime | ZeroTemporal) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            raise _Unencodable("a TIMESTAMP value must be a timezone-aware datetime (UTC)")
        return json_string(format_timestamp(value, tz, mysql_type.decimals))

    return render


def _datetime_text(mysql_type: MySQLType) -> Callable[[Any], str]:
    def render(value: dt.datetime | ZeroTemporal) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            raise _Unencodable("a DATETIME value is a wall clock: a naive datetime, not an aware one")
        return json_string(format_datetime(value, mysql_type.decimals))

    return render


def _member_number(number: int) -> str:
    """An enum index or set bitmask: TiCDC writes the uint64 it stores."""
    if not 0 <= number <= _U64_MAX:
        raise _Unencodable(f"an enum index or set bitmask must be a uint64, got {number}")
    return str(number)


def _date_text(value: dt.date | ZeroTemporal) -> str:
    if isinstance(value, dt.datetime):
        raise _Unencodable("a DATE value must be a date, not a datetime")
    return json_string(format_date(value))


def _base64(data: bytes) -> str:
    return f'"{binascii.b2a_base64(data, newline=False).decode()}"'


def _geometry(value: Any) -> str:
    raise _Unencodable("TiCDC's Open Protocol does not carry GEOMETRY values, only NULL")


def _writer(mysql_type: MySQLType, code: int, tz: dt.tzinfo) -> Callable[[Any], str]:
    """The function from a column's non-null Python value to its JSON ``v`` text."""
    family = mysql_type.family
    if family is Family.INTEGER:
        return _int_writer(mysql_type)
    if family in (Family.FLOAT, Family.DOUBLE):
        return _float_writer(family is Family.FLOAT)
    if family is Family.BIT:
        return _whole_number_writer("a BIT value", _U64_MAX)
    if family is Family.YEAR:
        return _whole_number_writer("a YEAR", _YEAR_MAX)
    if family is Family.ENUM:
        return _typed((str, int), "an ENUM value", lambda value: _member_number(enum_index(mysql_type, value)))
    if family is Family.SET:
        return _typed((str, int), "a SET value", lambda value: _member_number(set_bits(mysql_type, value)))
    if family is Family.DECIMAL:
        return _typed((Decimal, int), "a DECIMAL value", _decimal_text)
    if family is Family.DATE:
        return _typed((dt.date, ZeroTemporal), "a DATE value", _date_text)
    if family is Family.DATETIME:
        return _typed((dt.datetime, ZeroTemporal), "a DATETIME value", _datetime_text(mysql_type))
    if family is Family.TIMESTAMP:
        return _typed((dt.datetime, ZeroTemporal), "a TIMESTAMP value", _timestamp_text(mysql_type, tz))
    if family is Family.TIME:
        return _typed(dt.timedelta, "a TIME value", lambda value: json_string(format_time(value, mysql_type.decimals)))
    if family is Family.GEOMETRY:
        return _geometry
    if family is Family.BINARY:
        if code in _BASE64_CODES:
            return _typed(bytes, "a BLOB value", _base64)
        return _typed(bytes, "a BINARY/VARBINARY value", lambda value: json_string(go_quote(value)))
    if code in _BASE64_CODES:
        return _typed(str, "a TEXT value", lambda value: _base64(value.encode()))
    return _text_writer  # CHAR/VARCHAR, JSON, VECTOR


def _wire_flags(mysql_type: MySQLType, code: int, given: int | None, is_key: bool) -> int:
    """The flags TiCDC would write for this column: the flags the event's meta carries where present,
    made to agree with the column's type and key membership (decode(encode(x)) must give x back)."""
    family = mysql_type.family
    if given is not None:
        flags = given
    else:  # as TiDB sets them: binary charset on non-string types, unsigned on YEAR and BIT
        flags = 0 if is_key else NULLABLE_FLAG
        if family not in (Family.STRING, Family.ENUM, Family.SET):
            flags |= BINARY_FLAG
        if family in (Family.YEAR, Family.BIT):
            flags |= UNSIGNED_FLAG
    if code in _QUOTED_CODES or code in _BASE64_CODES:
        flags = flags | BINARY_FLAG if family is Family.BINARY else flags & ~BINARY_FLAG
    if family in _SIGNED_FAMILIES:
        flags = flags | UNSIGNED_FLAG if mysql_type.unsigned else flags & ~UNSIGNED_FLAG
    if not is_key:
        return flags & ~_KEY_FLAGS
    return flags if flags & _KEY_FLAGS else flags | HANDLE_KEY_FLAG | PRIMARY_KEY_FLAG


def _key_json(fields: Iterable[tuple[str, str | int | bool]]) -> bytes:
    return _utf8("{" + ",".join(f'"{name}":{_scalar_json(value)}' for name, value in fields) + "}")


def _scalar_json(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json_string(value) if isinstance(value, str) else str(value)


class _Batch:
    """One Kafka message being filled with events, closed at max-batch-size or max-message-bytes."""

    def __init__(self) -> None:
        self.key = bytearray(_U64.pack(BATCH_VERSION))
        self.value = bytearray()
        self.count = 0

    def fits(self, key: bytes, value: bytes, max_count: int, max_bytes: int) -> bool:
        size = len(self.key) + len(self.value) + _RECORD_OVERHEAD
        return self.count < max_count and size + len(key) + len(value) + 16 <= max_bytes

    def add(self, key: bytes, value: bytes) -> None:
        self.key += _frame(key)
        self.value += _frame(value)
        self.count += 1

    def message(self) -> RawMessage:
        return RawMessage(bytes(self.key), bytes(self.value))


class OpenEncoder:
    """Encodes the events of one partition, batching row events as TiCDC does."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._tz = zone(options["tz"])
        self._compress = compressor(options["large-message-handle-compression"])
        self._max_batch_size: int = options["max-batch-size"]
        self._max_bytes: int = options["max-message-bytes"]
        self._old_value: bool = options["output-old-value"]
        self._only_updated: bool = options["only-output-updated-columns"]
        self._columns: dict[tuple[str, MySQLType | None, int | None, int | None, bool], _ColumnEncoding] = {}

    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        messages: list[RawMessage] = []
        batch = _Batch()
        for event in events:
            if isinstance(event, RowChange | LargeMessageRef):
                key, value = self._row(event)
                self._check_size(key, value, event)
                if batch.count and not batch.fits(key, value, self._max_batch_size, self._max_bytes):
                    messages.append(batch.message())
                    batch = _Batch()
                batch.add(key, value)
                continue
            # DDL and resolved events each go in a message of their own, after the rows before them.
            if batch.count:
                messages.append(batch.message())
                batch = _Batch()
            if isinstance(event, Ddl):
                messages.append(self._single(self._ddl_key(event), self._compress(self._ddl_value(event))))
            elif isinstance(event, Watermark):
                messages.append(self._single(_key_json((("ts", _ts(event.ts)), ("t", RESOLVED))), b""))
            else:
                raise EncodeError(FORMAT, f"the Open Protocol cannot carry a {type(event).__name__} event")
        if batch.count:
            messages.append(batch.message())
        return messages

    def _check_size(self, key: bytes, value: bytes, event: RowChange | LargeMessageRef) -> None:
        # TiCDC's own measure of a one-event message: both frames, the version and the record overhead.
        size = len(key) + len(value) + _RECORD_OVERHEAD + 16 + 8
        if size > self._max_bytes:
            row = event.row if isinstance(event, LargeMessageRef) else event
            raise EncodeError(
                FORMAT,
                f"a row of {row.database}.{row.table} at ts {row.commit_ts} takes {size} bytes, "
                f"more than max-message-bytes {self._max_bytes}",
            )

    @staticmethod
    def _single(key: bytes, value: bytes) -> RawMessage:
        return RawMessage(_U64.pack(BATCH_VERSION) + _frame(key), _frame(value))

    def _ddl_key(self, ddl: Ddl) -> bytes:
        return _key_json((("ts", _ts(ddl.commit_ts)), ("scm", ddl.database), ("tbl", ddl.table), ("t", DDL)))

    def _ddl_value(self, ddl: Ddl) -> bytes:
        action = ddl.meta.get("ddl_type")
        if type(action) is not int or _DDL_KINDS.get(action, DdlKind.OTHER) is not ddl.kind:
            action = _DDL_CODES[ddl.kind]
        return _utf8("{" + f'"q":{json_string(ddl.sql)},"t":{action}' + "}")

    def _row(self, event: RowChange | LargeMessageRef) -> tuple[bytes, bytes]:
        row = event.row if isinstance(event, LargeMessageRef) else event
        fields: list[tuple[str, str | int | bool]] = [
            ("ts", _ts(row.commit_ts)),
            ("scm", row.database),
            ("tbl", row.table),
            ("t", ROW),
        ]
        if isinstance(event, LargeMessageRef):
            fields.append(("ohk", True))
            if event.kind is LargeMessageKind.CLAIM_CHECK:
                if not event.location:
                    raise EncodeError(FORMAT, "a claim-check reference needs its location")
                # TiCDC writes "ohk" twice here, true then false; JSON readers keep the last.
                fields += [("ohk", False), ("ccl", event.location)]
        partition = row.meta.get("ptn")
        if type(partition) is int:
            fields.append(("ptn", partition))
        return _key_json(fields), self._compress(self._row_value(row))

    def _row_value(self, row: RowChange) -> bytes:
        columns = self._column_encodings(row)
        if row.op is Op.DELETE:
            return _utf8("{" + f'"d":{_image_json(columns, _image(row, "before"))}' + "}")
        after = _image(row, "after")
        text = f'"u":{_image_json(columns, after)}'
        if row.op is Op.UPDATE and self._old_value:
            before = _image(row, "before")
            if self._only_updated:
                text += f',"p":{_changed_json(columns, before, after)}'
            else:
                text += f',"p":{_image_json(columns, before)}'
        return _utf8("{" + text + "}")

    def _column_encodings(self, row: RowChange) -> dict[str, _ColumnEncoding]:
        codes, flags = _int_mapping(row.meta.get("type_codes")), _int_mapping(row.meta.get("flags"))
        keys = row.key_columns
        encodings = {}
        for name in dict.fromkeys([*(row.after or ()), *(row.before or ())]):
            wanted = (name, row.types.get(name), codes.get(name), flags.get(name), name in keys)
            encoding = self._columns.get(wanted)
            if encoding is None:
                encoding = self._columns[wanted] = self._column_encoding(*wanted)
            encodings[name] = encoding
        return encodings

    def _column_encoding(
        self, name: str, mysql_type: MySQLType | None, code: int | None, flags: int | None, is_key: bool
    ) -> _ColumnEncoding:
        if mysql_type is None:  # a column of no type can only be NULL: TiCDC's type code 6
            return _ColumnEncoding.of(name, _NULL_TYPE_CODE, NULLABLE_FLAG if flags is None else flags, _untyped)
        code = _wire_code(mysql_type, code)
        return _ColumnEncoding.of(
            name, code, _wire_flags(mysql_type, code, flags, is_key), _writer(mysql_type, code, self._tz)
        )


def _untyped(value: Any) -> str:
    raise _Unencodable("a column without a type can only be NULL")


def _int_mapping(value: Any) -> dict[str, int]:
    """The ints of a meta mapping (type codes, flags); anything else another format left there is not ours."""
    if not isinstance(value, Mapping):
        return {}
    return {name: given for name, given in value.items() if type(given) is int and 0 <= given <= _U64_MAX}


def _wire_code(mysql_type: MySQLType, given: int | None) -> int:
    if mysql_type.family is Family.GEOMETRY:
        return 255
    try:
        code = _CODE_OF[mysql_type.name]
    except KeyError:
        raise EncodeError(FORMAT, f"the Open Protocol has no type code for {mysql_type}") from None
    return given if given is not None and given in _CODE_ALIASES.get(code, ()) else code


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise EncodeError(FORMAT, f"a string is not valid Unicode (a lone surrogate?): {exc}") from None


def _ts(value: int | None) -> int:
    if type(value) is not int or not 0 <= value <= _U64_MAX:
        raise EncodeError(FORMAT, f"every Open Protocol event needs a uint64 commit ts, got {value!r}")
    return value


def _image(row: RowChange, side: str) -> Mapping[str, Any]:
    image = row.before if side == "before" else row.after
    if not image:
        raise EncodeError(FORMAT, f"a {row.op.value} of {row.database}.{row.table} needs a non-empty {side} image")
    return image


def _image_json(columns: dict[str, _ColumnEncoding], image: Mapping[str, Any]) -> str:
    return "{" + ",".join(columns[name].json(name, value) for name, value in image.items()) + "}"


def _changed_json(columns: dict[str, _ColumnEncoding], before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """``p`` with only-output-updated-columns: the old value of every column whose written value changed."""
    parts = []
    for name, value in before.items():
        old = columns[name].json(name, value)
        if name not in after or old != columns[name].json(name, after[name]):
            parts.append(old)
    return "{" + ",".join(parts) + "}"


# --- the codec ----------------------------------------------------------------------------------------


def _positive_int(value: Any) -> int:
    number = parse_int(value)
    if number < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return number


def _zone_name(value: Any) -> str:
    try:
        zone(str(value))
    except OptionError as exc:
        raise ValueError(str(exc)) from None
    return str(value)


CODEC = Codec(
    name=FORMAT,
    options={
        "tz": Option(TZ_OPTION.default, TZ_OPTION.doc, _zone_name),
        "large-message-handle-compression": COMPRESSION_OPTION,
        "max-batch-size": Option(16, "most events in one Kafka message (encoder)", _positive_int),
        "max-message-bytes": Option(10485760, "largest Kafka message, as TiCDC counts it (encoder)", _positive_int),
        "output-old-value": Option(
            True, 'write an update\'s old image as "p" (sink.open.output-old-value; encoder)', parse_bool
        ),
        "only-output-updated-columns": Option(False, 'write only the changed columns in "p" (encoder)', parse_bool),
    },
    make_decoder=OpenDecoder,
    make_encoder=OpenEncoder,
)
