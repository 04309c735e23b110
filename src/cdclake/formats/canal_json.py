"""TiCDC Canal-JSON (``protocol=canal-json``), and the Canal-JSON that Canal, Flink, Flink CDC and
other producers write.

A Kafka value holds one JSON message (TiCDC's storage sink writes several, one per line: the decoder
reads both). A message is a DDL (``isDdl``), a ``TIDB_WATERMARK`` (only with the TiDB extension) or a
row change whose ``data`` array holds one row per element; ``old`` holds the before image of an
UPDATE, whole (TiCDC's default) or only the changed columns (Canal, ``content-compatible``,
``only-output-updated-columns``). Column types come from ``mysqlType``; every value is a JSON string
(SQL NULL is JSON null) rendered as TiDB renders it, binary bytes mapped one to one onto the
code points U+0000..U+00FF (ISO-8859-1). The TiDB extension ``_tidb`` adds the commit ts and marks
messages shrunk for size (``onlyHandleKey``, ``claimCheckLocation``).

Spec: ``specs/ticdc-canal-json-protocol.zh.md``, with ``specs/ticdc-reference-notes.md`` §1.2 (fields and
values), §2 (large messages, compression) and §3.4 (how the reference consumer reads it). The encoder
writes what TiCDC writes, field for field; docs/formats/canal-json.md says what the format cannot carry.

Decoded events keep the message's other top-level fields (``id``, ``es``, ``ts``, Canal's ``gtid``,
InLong's ``batchId`` ...) in ``meta`` under their own names, the Canal type of a DDL (and of Alibaba
Cloud DTS's ``INIT`` rows) in ``meta["type"]`` and TiCDC's ``_tidb.rowkey`` in ``meta["rowkey"]``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

import orjson

from cdclake.errors import DecodeError, EncodeError, TypeParseError
from cdclake.formats.base import TZ_OPTION, Codec, Option, parse_bool
from cdclake.formats.compiled import (
    DATETIME_SHAPE,
    TIME_SHAPE,
    ImageReader,
    OldImageReader,
    compile_old_reader,
    compile_reader,
)
from cdclake.formats.compression import COMPRESSION_OPTION, compressor, decompressor
from cdclake.formats.ddl import TICDC_DDL_TYPES, kind_of_ticdc_type, ticdc_type
from cdclake.model import (
    Ddl,
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
    check_integer,
    enum_index,
    enum_value,
    format_date,
    format_datetime,
    format_decimal,
    format_float,
    format_time,
    format_timestamp,
    is_tidb_datetime_text,
    parse_date,
    parse_datetime,
    parse_decimal,
    parse_time,
    set_bits,
    set_value,
    zone,
)

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
# The largest integer a JSON number read as a float64 is sure to hold exactly.
_EXACT_FLOAT_INT = 2**53

Converter = Callable[[Any], Any]
_Value = TypeVar("_Value")
Writer = Callable[[Any], str]


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


# --- JSON values -> Python values (decoding) ---------------------------------------------------------
#
# A converter takes one non-null JSON value of a column and returns its Python value. TiCDC and Canal
# send strings; Flink CDC, InLong and other third-party producers send typed JSON (numbers, booleans),
# which each converter accepts where the type leaves no doubt.


def _json_integer(raw: Any) -> int:
    if isinstance(raw, int):  # bool too: MySQL's TRUE is 1
        return int(raw)
    if isinstance(raw, float) and raw.is_integer() and abs(raw) <= _EXACT_FLOAT_INT:
        return int(raw)
    raise _Invalid(f"expected an integer, got {_json_kind(raw)}")


def _integer_converter(mtype: MySQLType) -> Converter:
    low, high = mtype.integer_range()

    def convert(raw: Any) -> int:
        value = int(raw) if raw.__class__ is str else _json_integer(raw)
        if low <= value <= high:
            return value
        raise _Invalid(f"{value} is outside the range of {mtype}")

    return convert


def _bit_converter(mtype: MySQLType) -> Converter:
    high = (1 << (mtype.length or 64)) - 1

    def convert(raw: Any) -> int:
        value = int(raw) if raw.__class__ is str else _json_integer(raw)
        if 0 <= value <= high:
            return value
        raise _Invalid(f"{value} is outside the range of {mtype}")

    return convert


def _year(raw: Any) -> int:
    return int(raw) if raw.__class__ is str else _json_integer(raw)


_FLOAT32 = struct.Struct("<f")
_pack_float32, _unpack_float32 = _FLOAT32.pack, _FLOAT32.unpack


def _float32(raw: Any) -> float:
    # types.to_float32, inlined: this runs once per FLOAT value.
    return _unpack_float32(_pack_float32(float(raw)))[0]  # type: ignore[no-any-return]


def _double(raw: Any) -> float:
    return float(raw)


def _decimal(raw: Any) -> Decimal:
    if raw.__class__ is str:
        value = Decimal(raw)
        if value.is_finite():
            return value
        return parse_decimal(raw)  # says why NaN or Infinity is no decimal value
    if isinstance(raw, int):
        return Decimal(raw)
    if isinstance(raw, float) and math.isfinite(raw):
        # A JSON number: the shortest decimal that reads back as the same float64 is what was written
        # wherever the producer wrote no more digits than a float64 holds.
        return Decimal(repr(raw))
    raise _Invalid(f"expected a decimal, got {_json_kind(raw)}")


def _text(raw: Any) -> str:
    if raw.__class__ is str:
        return raw
    raise _Invalid(f"expected a string, got {_json_kind(raw)}")


def _json_text(raw: Any) -> str:
    if raw.__class__ is str:
        return raw
    return orjson.dumps(raw).decode()


def _latin1_bytes(raw: Any) -> bytes:
    """TiCDC writes each byte as the code point of the same number (ISO-8859-1)."""
    if raw.__class__ is str:
        return raw.encode("latin-1")
    raise _Invalid(f"expected a string of ISO-8859-1 characters, got {_json_kind(raw)}")


# TiDB writes dates as YYYY-MM-DD and datetimes as YYYY-MM-DD HH:MM:SS[.ffffff]. Text of exactly that
# shape goes through the C parser fromisoformat; the rest (zero dates, anything malformed) through the
# types module's parsers, which know zero dates and say what is wrong.


_date_from_iso = dt.date.fromisoformat
_datetime_from_iso = dt.datetime.fromisoformat

# The shape checks are written out in each converter: they run once per value, and a call of a shape
# function costs as much as the check itself.


def _date(raw: Any) -> dt.date | ZeroTemporal:
    if raw.__class__ is str and len(raw) == 10 and raw[4] == "-" and raw[7] == "-":
        try:
            return _date_from_iso(raw)
        except ValueError:
            pass
    return _text_only(parse_date, raw)


def _naive_datetime(raw: Any) -> dt.datetime | ZeroTemporal:
    return _text_only(parse_datetime, raw)


def _timestamp_converter(tz: dt.tzinfo) -> Converter:
    """TIMESTAMP text is wall clock in the producer's zone ``tz``; its value is the instant, in UTC.

    In a zone of fixed offset, fromisoformat reads the text with the offset appended; a zone with
    daylight saving time goes through zoneinfo (slower: datetime.replace and astimezone).
    """
    offset = tz.utcoffset(None)
    suffix = None if offset is None else _offset_text(offset)

    utc = offset == _ZERO

    def convert(raw: Any) -> dt.datetime | ZeroTemporal:
        if suffix is not None and raw.__class__ is str and is_tidb_datetime_text(raw):
            try:
                instant = _datetime_from_iso(raw + suffix)
            except ValueError:
                pass
            else:
                return instant if utc else instant.astimezone(dt.UTC)
        local = _naive_datetime(raw)
        if isinstance(local, ZeroTemporal):
            return local
        return local.replace(tzinfo=tz).astimezone(dt.UTC)

    return convert


_ZERO = dt.timedelta(0)


def _offset_text(offset: dt.timedelta) -> str:
    sign = "-" if offset < _ZERO else "+"
    minutes, seconds = divmod(int(abs(offset).total_seconds()), 60)
    text = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return text if not seconds else f"{text}:{seconds:02d}"


def _text_only(parse: Callable[[str], _Value], raw: Any) -> _Value:
    if raw.__class__ is str:
        return parse(raw)
    raise _Invalid(f"expected a string, got {_json_kind(raw)}")


def _time(raw: Any) -> dt.timedelta:
    return _text_only(parse_time, raw)  # which reads TiDB's HH:MM:SS[.ffffff] through the C parser


def _enum_converter(mtype: MySQLType) -> Converter:
    def convert(raw: Any) -> str | int:
        return enum_value(mtype, int(raw) if raw.__class__ is str else _json_integer(raw))

    return convert


def _set_converter(mtype: MySQLType) -> Converter:
    def convert(raw: Any) -> str | int:
        return set_value(mtype, int(raw) if raw.__class__ is str else _json_integer(raw))

    return convert


def _converter(mtype: MySQLType, tz: dt.tzinfo) -> Converter:
    """The converter for a column of ``mtype``; TIMESTAMP text is wall clock in ``tz``."""
    family = mtype.family
    if family is Family.INTEGER:
        return _integer_converter(mtype)
    if (family is Family.ENUM or family is Family.SET) and mtype.elements is None:
        return _year  # enum_value and set_value return a bare type's index or bitmask as it is
    if family is Family.ENUM:
        return _enum_converter(mtype)
    if family is Family.SET:
        return _set_converter(mtype)
    if family is Family.BIT:
        return _bit_converter(mtype)
    if family is Family.TIMESTAMP:
        return _timestamp_converter(tz)
    simple: dict[Family, Converter] = {
        Family.YEAR: _year,
        Family.FLOAT: _float32,
        Family.DOUBLE: _double,
        Family.DECIMAL: _decimal,
        Family.STRING: _text,
        Family.VECTOR: _text,
        Family.JSON: _json_text,
        Family.BINARY: _latin1_bytes,
        Family.GEOMETRY: _latin1_bytes,
        Family.DATE: _date,
        Family.DATETIME: _naive_datetime,
        Family.TIME: _time,
    }
    return simple[family]


# --- compiled row readers -----------------------------------------------------------------------
#
# Rows are read by functions compiled per column order (see cdclake.formats.compiled), each column by
# statements that do what its converter does to the string TiDB writes, and call the converter on
# anything else (typed JSON of third-party producers). Where a statement raises, the row is read
# again by the converters, which say why or read what the statements refused (a zero date).

_INLINE_SCOPE: dict[str, Any] = {
    "Decimal": Decimal,
    "_fromdate": _date_from_iso,
    "_fromisoformat": _datetime_from_iso,
    "_f32_pack": _pack_float32,
    "_f32_unpack": _unpack_float32,
    "_UTC": dt.UTC,
    "_TIME_OF_DAY_DATE": TIME_OF_DAY_DATE,
    "_MIDNIGHT": TIME_OF_DAY_MIDNIGHT,
}


def _inline(mtype: MySQLType, tz: dt.tzinfo) -> str:
    """Statements that turn the non-null JSON value in variable ``{v}`` into what the column's converter
    (in variable ``{c}``, made by :func:`_converter` of ``mtype`` and ``tz``) returns, or raise: a
    ``str.format`` template of the names of :data:`_INLINE_SCOPE`."""
    family = mtype.family
    if family is Family.STRING or family is Family.VECTOR:
        return "if type({v}) is not str: raise TypeError"
    if family is Family.JSON:
        return "if type({v}) is not str: {v} = {c}({v})"
    if family is Family.DOUBLE:
        return "{v} = float({v})"  # _double
    if family is Family.FLOAT:
        return "{v} = _f32_unpack(_f32_pack(float({v})))[0]"  # _float32
    if family is Family.BINARY or family is Family.GEOMETRY:
        return "{v} = {v}.encode('latin-1') if type({v}) is str else {c}({v})"
    if family is Family.DECIMAL:
        return _on_text("{v} = Decimal({v})\nif not {v}.is_finite(): raise ValueError")
    if family is Family.INTEGER or family is Family.BIT:
        low, high = mtype.integer_range() if family is Family.INTEGER else (0, (1 << (mtype.length or 64)) - 1)
        return _on_text(f"{{v}} = int({{v}})\nif not {low} <= {{v}} <= {high}: raise ValueError")
    if family is Family.YEAR or (family in (Family.ENUM, Family.SET) and mtype.elements is None):
        return _on_text("{v} = int({v})")  # _year: a bare enum's index, a bare set's bitmask
    if family is Family.ENUM and mtype.elements is not None:  # enum_value: 0 is '', 1 the first member
        members = repr(("", *mtype.elements)).replace("{", "{{").replace("}", "}}")  # a format template
        in_range = f"if not 0 <= _i <= {len(mtype.elements)}: raise ValueError"
        return _on_text(f"_i = int({{v}})\n{in_range}\n{{v}} = {members}[_i]")
    if family is Family.DATE:
        return _parsed("len({v}) == 10 and {v}[4:8:3] == '--'", "_fromdate({v})")
    if family is Family.DATETIME:
        return _parsed(DATETIME_SHAPE, "_fromisoformat({v})", "_x if _x.tzinfo is None else {c}({v})")
    if family is Family.TIME:
        read = "_x - _MIDNIGHT if _x.tzinfo is None else {c}({v})"
        return _parsed(TIME_SHAPE, "_fromisoformat(_TIME_OF_DAY_DATE + {v})", read)
    offset = tz.utcoffset(None)
    if family is Family.TIMESTAMP and offset is not None:  # _timestamp_converter's fast path
        instant = "_x" if offset == _ZERO else "_x.astimezone(_UTC)"
        return _parsed(DATETIME_SHAPE, f"_fromisoformat({{v}} + {_offset_text(offset)!r})", instant)
    return "{v} = {c}({v})"  # SET, and TIMESTAMP in a zone with daylight saving time


def _on_text(statements: str) -> str:
    """``statements`` on a string ``{v}``; the converter on anything else."""
    indented = "".join(f"    {line}\n" for line in statements.splitlines())
    return f"if type({{v}}) is str:\n{indented}else: {{v}} = {{c}}({{v}})"


def _parsed(shape: str, parse: str, read: str = "_x") -> str:
    """``{v}`` parsed by ``parse`` into ``_x`` and taken as ``read`` where it is a string of ``shape``;
    where ``parse`` refuses it (a zero date) and anything else, the converter."""
    return (
        f"if type({{v}}) is str and {shape}:\n"
        f"    try: _x = {parse}\n"
        "    except ValueError: {v} = {c}({v})\n"
        f"    else: {{v}} = {read}\n"
        "else: {v} = {c}({v})"
    )


# The type a column without mysqlType gets from the JSON values it holds (documented in canal-json.md).
_BIGINT, _BIGINT_UNSIGNED = MySQLType("bigint"), MySQLType("bigint", unsigned=True)
_TYPE_OF_JSON_KIND = {
    bool: MySQLType("tinyint", length=1),
    int: _BIGINT,
    float: MySQLType("double"),
    str: MySQLType("longtext"),
    dict: MySQLType("json"),
    list: MySQLType("json"),
}


def _inferred_type(name: str, values: list[Any]) -> MySQLType:
    kinds = {value.__class__ for value in values}
    if kinds <= {bool, int} and int in kinds:
        # Only a bigint unsigned holds the upper half of uint64.
        return _BIGINT_UNSIGNED if max(values) > _BIGINT.integer_range()[1] else _BIGINT
    if kinds == {int, float}:
        return _TYPE_OF_JSON_KIND[float]
    if kinds <= {dict, list}:
        return _TYPE_OF_JSON_KIND[dict]
    if len(kinds) == 1:
        return _TYPE_OF_JSON_KIND[kinds.pop()]
    found = ", ".join(sorted(kind.__name__ for kind in kinds))
    raise _Invalid(f"column {name!r} has no mysqlType and its values mix JSON kinds ({found})")


# --- reading the JSON text -------------------------------------------------------------------------


def _documents(value: bytes) -> list[Any]:
    """The JSON messages in one Kafka value: normally one, parsed by orjson.

    Anything orjson refuses goes through the standard library, which also reads NaN and Infinity
    (Flink writes them for non-finite doubles), integers beyond 64 bits, and several messages one
    after another (TiCDC's newline terminator). Its errors carry the line and column.
    """
    try:
        return [orjson.loads(value)]
    except orjson.JSONDecodeError:
        return _documents_by_stdlib(value)


def _documents_by_stdlib(value: bytes) -> list[Any]:
    """The JSON messages of a value orjson refused (see :func:`_documents`)."""
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
        raise _Invalid(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})") from None
    except RecursionError:
        raise _Invalid("not JSON this decoder can read: arrays or objects nested too deeply") from None
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


# --- the statement a DDL runs ----------------------------------------------------------------------

# --- the decoder -------------------------------------------------------------------------------------


class _RowReader(NamedTuple):
    """The compiled readers of rows whose columns are ``keys``, in that order."""

    keys: tuple[str, ...]
    read: ImageReader
    # An UPDATE's whole old image (TiCDC's), given data's row and its values: a column of the same
    # string in both takes data's value.
    read_old: OldImageReader


@dataclass(frozen=True, slots=True)
class _Columns:
    """What a message's ``mysqlType`` says: each column's type and the converter of its values, and
    the compiled readers of rows of these columns, per order of columns seen (up to _MAX_ROW_READERS;
    none where ``tz`` is None: types inferred for one message are not worth compiling)."""

    types: Mapping[str, MySQLType]
    converters: dict[str, Converter]
    tz: dt.tzinfo | None
    readers: dict[tuple[str, ...], _RowReader] = field(default_factory=dict)

    def reader_of(self, row: dict[str, Any]) -> _RowReader | None:
        """The reader of rows with ``row``'s columns in its order, where each column has a type."""
        keys = tuple(row)
        reader = self.readers.get(keys)
        tz = self.tz
        if reader is None and tz is not None and len(self.readers) < _MAX_ROW_READERS:
            reader = self._compile(keys, tz)
            if reader is not None:
                self.readers[keys] = reader
        return reader

    def _compile(self, keys: tuple[str, ...], tz: dt.tzinfo) -> _RowReader | None:
        if not all(name in self.converters for name in keys):
            return None  # a column without mysqlType: the careful conversion infers its type
        scope = dict(_INLINE_SCOPE)
        reads = []
        for i, name in enumerate(keys):
            scope[f"c{i}"] = self.converters[name]
            reads.append(_inline(self.types[name], tz).format(v=f"v{i}", c=f"c{i}").splitlines())
        # Text columns are read by a type check, cheaper than comparing them.
        compared = [None if self.types[name].family in _TEXT_FAMILIES else "str" for name in keys]
        return _RowReader(keys, compile_reader(keys, reads, scope), compile_old_reader(keys, reads, compared, scope))


# Orders of columns compiled per mysqlType map: a producer writes a table's columns in one order.
_MAX_ROW_READERS = 8
_TEXT_FAMILIES = frozenset((Family.STRING, Family.VECTOR, Family.JSON))


def _columns_of(types: dict[str, MySQLType], converters: dict[str, Converter], tz: dt.tzinfo | None) -> _Columns:
    return _Columns(MappingProxyType(types), converters, tz)


_NO_COLUMNS = _columns_of({}, {}, None)
# Distinct mysqlType maps (and type texts) kept per decoder; a stream has one per table and schema
# version. A full cache is emptied, so that no input can make it grow without end.
_COLUMNS_CACHE_SIZE = 4096


class CanalJsonDecoder:
    """Reads the messages of one partition. Its only state is a cache of the parsed ``mysqlType``
    maps, so that each distinct map is parsed, and its converters built, once."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._decompress = decompressor(options["large-message-handle-compression"])
        self._compressed = options["large-message-handle-compression"] != "none"
        self._tz = zone(options["tz"])
        self._type_of_text: dict[str, tuple[MySQLType, Converter]] = {}
        # Keyed by the map's names and types: two flat tuples hash faster than one of pairs.
        self._columns_of_types: dict[tuple[tuple[str, ...], tuple[Any, ...]], _Columns] = {}
        # Per table name: its last mysqlType map and what it says. A stream repeats a table's map
        # message after message, and comparing two dicts is cheaper than hashing a key of them.
        self._last_columns: dict[str, tuple[dict[str, Any], _Columns]] = {}
        # Per table name: its last pkNames array and the tuple of it.
        self._last_keys: dict[str, tuple[list[Any], tuple[str, ...]]] = {}

    def flush(self) -> list[Event]:
        """Nothing is held between messages of this format."""
        return []

    def decode(self, message: RawMessage) -> list[Event]:
        value = message.value
        if not value:
            return []  # a tombstone or empty value holds no event (Flink and SeaTunnel read none)
        origin = message.origin
        try:
            if self._compressed:
                try:
                    value = self._decompress(value)
                except Exception as exc:  # cramjam and lz4 raise their own error types, not ValueError
                    raise _Invalid(f"cannot decompress the value: {exc}") from exc
            events: list[Event] = []
            try:
                documents = [_loads(value)]
            except _JSONDecodeError:
                documents = _documents_by_stdlib(value)
            for document in documents:
                self._decode_message(document, origin, events)
            return events
        except _Invalid as exc:
            raise DecodeError(FORMAT, str(exc), origin) from exc

    def _decode_message(self, message: Any, origin: Origin, events: list[Event]) -> None:
        if message.__class__ is not dict:
            raise _Invalid(f"expected a JSON object, got {_json_kind(message)}")
        canal_type = message.get("type")
        if canal_type.__class__ is not str:
            raise _Invalid(f'the message has no "type" naming its event, got {_json_kind(canal_type)}')
        is_ddl = message.get("isDdl")
        if is_ddl is not None and is_ddl.__class__ is not bool:
            raise _Invalid(f'"isDdl" must be true or false, got {_json_kind(is_ddl)}')
        op = _OPS.get(canal_type)
        if op is not None and not is_ddl:
            self._decode_rows(message, canal_type, op, origin, events)
        elif is_ddl or canal_type in TICDC_DDL_TYPES:
            events.append(self._ddl(message, canal_type, _origin_at(origin, len(events))))
        elif canal_type == WATERMARK_TYPE:
            events.append(self._watermark(message, _origin_at(origin, len(events))))
        elif canal_type == _SNAPSHOT_TYPE:
            self._decode_rows(message, canal_type, Op.INSERT, origin, events)
        else:
            raise _Invalid(
                f"unknown type {canal_type!r}: expected INSERT, UPDATE, DELETE, {WATERMARK_TYPE}, "
                f"or a DDL ({', '.join(TICDC_DDL_TYPES)}) with isDdl true"
            )

    def _decode_rows(
        self, message: dict[str, Any], canal_type: str, op: Op, origin: Origin, events: list[Event]
    ) -> None:
        # The fields the events hold in their own attributes are popped, not read: what is left of the
        # message, which the decoder has just parsed and owns, is the events' meta.
        pop = message.pop
        data = pop("data", None)
        if data.__class__ is not list:
            raise _Invalid(f'"data" of a {canal_type} message must be an array of rows, got {_json_kind(data)}')
        old = pop("old", None)
        if op is not Op.UPDATE:
            old = None
        if old is not None and old.__class__ is not list:
            raise _Invalid(f'"old" of an UPDATE must be an array of rows, got {_json_kind(old)}')
        if old is not None and len(old) > len(data):
            raise _Invalid(f'"old" has {len(old)} rows for the {len(data)} of "data"')
        table = pop("table", None)
        mysql_types = pop("mysqlType", None)
        columns = self._table_columns(table, mysql_types)
        try:
            images = _images(op, data, old, columns)
        except _Untyped:
            columns = self._with_inferred_types(columns, data, old)
            images = _images(op, data, old, columns)

        database = pop("database", None)
        if database.__class__ is not str:
            database = _name(database, "database")
        if table.__class__ is not str:
            table = _name(table, "table")

        pk_names = pop("pkNames", None)
        last_keys = self._last_keys.get(table)
        if last_keys is not None and last_keys[0] == pk_names and pk_names.__class__ is list:
            key_columns = last_keys[1]
        else:
            key_columns = _key_columns(pk_names)
            if pk_names.__class__ is list:
                if len(self._last_keys) >= _COLUMNS_CACHE_SIZE:
                    self._last_keys.clear()
                self._last_keys[table] = (pk_names, key_columns)
        tidb = pop("_tidb", None)
        pop("type", None)
        pop("isDdl", None)
        pop("sql", None)
        pop("sqlType", None)
        meta = message
        large = None
        if tidb is None:
            commit_ts = None
        else:
            if tidb.__class__ is not dict:
                _tidb(tidb)  # raises
            commit_ts = tidb.get("commitTs")
            if not (commit_ts.__class__ is int and 0 <= commit_ts <= _U64_MAX):
                commit_ts = _tso(tidb, "commitTs")
            if len(tidb) != 1 or commit_ts is None:  # more than the commit ts alone
                large = _large_message(tidb)
                if "rowkey" in tidb:
                    meta["rowkey"] = tidb["rowkey"]
        if canal_type == _SNAPSHOT_TYPE:
            meta["type"] = _SNAPSHOT_TYPE
        types = columns.types
        append = events.append
        for before, after in images:
            index = len(events)
            change = RowChange(
                op,
                database,
                table,
                before,
                after,
                types,
                key_columns,
                commit_ts,
                None,
                None,
                origin.at(index) if index else origin,
                meta,
            )
            append(change if large is None else LargeMessageRef(large[0], change, large[1]))

    def _table_columns(self, table: Any, mysql_types: Any) -> _Columns:
        """:meth:`_columns`, through the table's last map when this one equals it."""
        if table.__class__ is not str:  # not a name (refused later): no cache
            return self._columns(mysql_types)
        last = self._last_columns.get(table)
        if last is not None and last[0] == mysql_types and mysql_types.__class__ is dict:
            return last[1]
        columns = self._columns(mysql_types)
        if mysql_types.__class__ is dict:
            if len(self._last_columns) >= _COLUMNS_CACHE_SIZE:
                self._last_columns.clear()
            self._last_columns[table] = (mysql_types, columns)
        return columns

    def _columns(self, mysql_types: Any) -> _Columns:
        if mysql_types is None:
            return _NO_COLUMNS
        if mysql_types.__class__ is not dict:
            raise _Invalid(f'"mysqlType" must map column names to types, got {_json_kind(mysql_types)}')
        key = (tuple(mysql_types), tuple(mysql_types.values()))
        try:
            return self._columns_of_types[key]
        except (KeyError, TypeError):  # not seen yet, or an unhashable value (which _type refuses)
            pass
        types: dict[str, MySQLType] = {}
        converters: dict[str, Converter] = {}
        for name, text in mysql_types.items():
            types[name], converters[name] = self._type(name, text)
        columns = _columns_of(types, converters, self._tz)
        if len(self._columns_of_types) >= _COLUMNS_CACHE_SIZE:
            self._columns_of_types.clear()
        self._columns_of_types[key] = columns
        return columns

    def _type(self, name: str, text: Any) -> tuple[MySQLType, Converter]:
        if text.__class__ is not str:
            raise _Invalid(f"mysqlType of column {name!r} must be a type name, got {_json_kind(text)}")
        known = self._type_of_text.get(text)
        if known is None:
            try:
                mtype = MySQLType.parse(text)
            except TypeParseError as exc:
                raise _Invalid(f"mysqlType of column {name!r}: {exc}") from exc
            if len(self._type_of_text) >= _COLUMNS_CACHE_SIZE:
                self._type_of_text.clear()
            known = self._type_of_text[text] = (mtype, _converter(mtype, self._tz))
        return known

    def _with_inferred_types(self, columns: _Columns, data: list[Any], old: list[Any] | None) -> _Columns:
        values: dict[str, list[Any]] = {}
        for row in [*data, *(old or ())]:
            for name, raw in row.items() if row.__class__ is dict else ():
                if name not in columns.converters and raw is not None:
                    values.setdefault(name, []).append(raw)
        types, converters = dict(columns.types), dict(columns.converters)
        for name, found in values.items():
            types[name] = _inferred_type(name, found)
            converters[name] = _converter(types[name], self._tz)
        return _columns_of(types, converters, None)

    def _ddl(self, message: dict[str, Any], canal_type: str, origin: Origin) -> Ddl:
        sql = message.get("sql")
        if sql.__class__ is not str or not sql.strip():
            raise _Invalid(f'a DDL message needs its statement in "sql", got {_json_kind(sql)}')
        tidb = _tidb(message.get("_tidb"))
        meta = {field: value for field, value in message.items() if field not in _STRUCTURAL}
        meta["type"] = canal_type
        return Ddl(
            kind_of_ticdc_type(canal_type, sql),
            _name(message.get("database"), "database"),
            _name(message.get("table"), "table"),
            sql,
            commit_ts=_tso(tidb, "commitTs") if tidb is not None else None,
            origin=origin,
            meta=meta,
        )

    def _watermark(self, message: dict[str, Any], origin: Origin) -> Watermark:
        tidb = _tidb(message.get("_tidb"))
        ts = _tso(tidb, "watermarkTs") if tidb is not None else None
        if ts is None:
            raise _Invalid(f'a {WATERMARK_TYPE} message needs "_tidb": {{"watermarkTs": ...}}')
        meta = {field: value for field, value in message.items() if field not in _STRUCTURAL}
        return Watermark(ts, origin=origin, meta=meta)


def _origin_at(origin: Origin, index: int) -> Origin:
    return origin.at(index) if index else origin


def _images(
    op: Op, data: list[Any], old: list[Any] | None, columns: _Columns
) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """(before, after) of each row of ``data``."""
    images: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    for index, row in enumerate(data):
        reader = columns.reader_of(row) if row.__class__ is dict else None
        image = _read_row(row, reader, columns.converters, index)
        if op is Op.INSERT:
            images.append((None, image))
        elif op is Op.DELETE:
            # Since v5.4.0 TiCDC sends old=null; before, old repeated data: either way data is the row.
            images.append((image, None))
        else:
            old_row = old[index] if old is not None and index < len(old) else None
            images.append((_before_image(old_row, row, image, columns.converters, reader, index), image))
    return images


def _read_row(row: Any, reader: _RowReader | None, converters: dict[str, Converter], index: int) -> dict[str, Any]:
    if reader is None:
        return _convert_row(row, converters, index)
    try:
        return reader.read(row)
    except Exception:  # whatever it is, the careful conversion says which column and why
        return _convert_row(row, converters, index)


def _convert_row(row: Any, converters: dict[str, Converter], index: int) -> dict[str, Any]:
    if row.__class__ is not dict:
        raise _Invalid(f"data[{index}] must be an object of column values, got {_json_kind(row)}")
    image: dict[str, Any] = {}
    name = ""
    try:
        for name, raw in row.items():
            image[name] = None if raw is None else converters[name](raw)
    except (KeyError, *_CONVERSION_ERRORS) as exc:
        raise _row_error(exc, converters, "data", index, name) from exc
    return image


def _before_image(
    old_row: Any,
    row: dict[str, Any],
    image: dict[str, Any],
    converters: dict[str, Converter],
    reader: _RowReader | None,
    index: int,
) -> dict[str, Any]:
    """An UPDATE's before image: the row ``data`` gives, overlaid with its ``old``. A partial ``old``
    lists the columns that changed, a null in it an old NULL; the columns it leaves out kept their
    value. ``"old":[null]`` (tiflow#4597) and a missing ``old`` say no more than that."""
    if old_row is None:
        return dict(image)
    if old_row.__class__ is not dict:
        raise _Invalid(f"old[{index}] must be an object of column values, got {_json_kind(old_row)}")
    if reader is not None and tuple(old_row) == reader.keys:  # a whole old image, as TiCDC sends by default
        try:
            return reader.read_old(old_row, row, image)
        except Exception:  # whatever it is, the careful loop says which column and why
            return _before_image_carefully(old_row, row, image, converters, index)
    try:
        # The loop below, as one comprehension; whatever it raises (a column missing from data too),
        # the loop says which column and why, or reads the row as it does.
        before = {
            name: None
            if raw is None
            else image[name]
            if raw.__class__ is str and raw == row[name]
            else converters[name](raw)
            for name, raw in old_row.items()
        }
    except Exception:
        before = _before_image_carefully(old_row, row, image, converters, index)
    return before if before.keys() == image.keys() else {**image, **before}


def _before_image_carefully(
    old_row: dict[str, Any], row: dict[str, Any], image: dict[str, Any], converters: dict[str, Converter], index: int
) -> dict[str, Any]:
    before: dict[str, Any] = {}
    name = ""
    try:
        for name, raw in old_row.items():
            if raw is None:
                before[name] = None
            elif raw.__class__ is str and raw == row.get(name):
                before[name] = image[name]  # unchanged (TiCDC sends every column): data's value, converted once
            else:
                before[name] = converters[name](raw)
    except (KeyError, *_CONVERSION_ERRORS) as exc:
        raise _row_error(exc, converters, "old", index, name) from exc
    return before


_CONVERSION_ERRORS = (ValueError, TypeError, OverflowError, ArithmeticError)


def _row_error(exc: Exception, converters: dict[str, Converter], field: str, index: int, name: str) -> Exception:
    if isinstance(exc, KeyError) and name not in converters:
        return _Untyped(name)
    return _Invalid(f"{field}[{index}] column {name!r}: {exc}")


def _name(value: Any, field: str) -> str:
    """The message's top-level ``field``, given its ``value``, as a name."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""  # third-party producers may leave database and table out
    raise _Invalid(f'"{field}" must be a string, got {_json_kind(value)}')


def _key_columns(pk_names: Any) -> tuple[str, ...]:
    if pk_names is None:
        return ()
    if pk_names.__class__ is list and all(name.__class__ is str for name in pk_names):
        return tuple(pk_names)
    raise _Invalid(f'"pkNames" must be an array of column names, got {_json_kind(pk_names)}')


def _tidb(tidb: Any) -> dict[str, Any] | None:
    """The message's ``_tidb`` object, given its value."""
    if tidb is None or tidb.__class__ is dict:
        return tidb
    raise _Invalid(f'"_tidb" must be an object, got {_json_kind(tidb)}')


def _tso(tidb: dict[str, Any], field: str) -> int | None:
    value = tidb.get(field)
    if value is None or (value.__class__ is int and 0 <= value <= _U64_MAX):
        return value
    raise _Invalid(f'"_tidb.{field}" must be a TSO (an unsigned 64-bit integer), got {_json_kind(value)}')


def _large_message(tidb: dict[str, Any]) -> tuple[LargeMessageKind, str | None] | None:
    """How TiCDC shrank the message for size, if it did, and where the whole one is stored."""
    location = tidb.get("claimCheckLocation")
    if location is not None:
        if location.__class__ is not str:
            raise _Invalid(f'"_tidb.claimCheckLocation" must be a string, got {_json_kind(location)}')
        return LargeMessageKind.CLAIM_CHECK, location
    only_handle_key = tidb.get("onlyHandleKey")
    if only_handle_key is None or only_handle_key is False:
        return None
    if only_handle_key is True:
        return LargeMessageKind.HANDLE_KEY_ONLY, None
    raise _Invalid(f'"_tidb.onlyHandleKey" must be true or false, got {_json_kind(only_handle_key)}')


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


def _integer_writer(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        if not isinstance(value, int):
            raise TypeParseError(f"a {mtype} value must be an int, got {type(value).__name__}")
        return str(check_integer(mtype, value))

    return write


def _bit_writer(mtype: MySQLType) -> Writer:
    high = (1 << (mtype.length or 64)) - 1

    def write(value: Any) -> str:
        if not isinstance(value, int) or not 0 <= value <= high:
            raise TypeParseError(f"{value!r} is not a {mtype} value")
        return str(value)

    return write


def _write_year(value: Any) -> str:
    if not isinstance(value, int):
        raise TypeParseError(f"a year must be an int, got {type(value).__name__}")
    return str(value)


def _write_decimal(value: Any) -> str:
    if isinstance(value, int):
        value = Decimal(value)
    if not isinstance(value, Decimal) or not value.is_finite():
        raise TypeParseError(f"a decimal value must be a finite Decimal, got {value!r}")
    return format_decimal(value)


def _write_text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeParseError(f"a text value must be str, got {type(value).__name__}")
    return value


def _write_latin1(value: Any) -> str:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeParseError(f"a binary value must be bytes, got {type(value).__name__}")
    return bytes(value).decode("latin-1")


def _timestamp_writer(mtype: MySQLType, tz: dt.tzinfo) -> Writer:
    def write(value: Any) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            raise TypeParseError("a timestamp value must be an aware datetime (an instant), got a naive one")
        return format_timestamp(value, tz, mtype.decimals)

    return write


def _writer(mtype: MySQLType, tz: dt.tzinfo) -> Writer:
    """The function that renders a non-null value of ``mtype`` as TiDB does (the inverse of _converter)."""
    family = mtype.family
    if family is Family.INTEGER:
        return _integer_writer(mtype)
    if family is Family.BIT:
        return _bit_writer(mtype)
    if family is Family.TIMESTAMP:
        return _timestamp_writer(mtype, tz)
    fsp = mtype.decimals
    writers: dict[Family, Writer] = {
        Family.YEAR: _write_year,
        Family.FLOAT: lambda value: format_float(float(value), single=True),
        Family.DOUBLE: lambda value: format_float(float(value), single=False),
        Family.DECIMAL: _write_decimal,
        Family.ENUM: lambda value: str(enum_index(mtype, value)),
        Family.SET: lambda value: str(set_bits(mtype, value)),
        Family.STRING: _write_text,
        Family.VECTOR: _write_text,
        Family.JSON: _write_text,
        Family.BINARY: _write_latin1,
        Family.GEOMETRY: _write_latin1,
        Family.DATE: lambda value: format_date(_temporal(value, dt.date)),
        Family.DATETIME: lambda value: format_datetime(_temporal(value, dt.datetime), fsp),
        Family.TIME: lambda value: format_time(_temporal(value, dt.timedelta), fsp),
    }
    return writers[family]


def _temporal(value: Any, kind: type) -> Any:
    if isinstance(value, kind | ZeroTemporal):
        return value
    raise TypeParseError(f"expected a {kind.__name__}, got {type(value).__name__}")


# --- the encoder -------------------------------------------------------------------------------------


class CanalJsonEncoder:
    """Writes each event as the message TiCDC would send: fields in TiCDC's order, values as TiDB
    renders them, strings escaped as Go escapes them, no key."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._extension: bool = options["enable-tidb-extension"]
        self._full_types: bool = options["content-compatible"]
        # content-compatible implies only-output-updated-columns (TiCDC common/config.go Apply).
        self._only_updated: bool = options["only-output-updated-columns"] or self._full_types
        self._compress = compressor(options["large-message-handle-compression"])
        self._tz = zone(options["tz"])
        self._writers: dict[MySQLType, Writer] = {}

    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        messages = []
        for event in events:
            text = self._message(event)
            try:
                value = text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise EncodeError(FORMAT, f"a string holds a lone UTF-16 surrogate: {exc}") from exc
            messages.append(RawMessage(None, self._compress(value)))
        return messages

    def _message(self, event: Event) -> str:
        if isinstance(event, RowChange):
            return self._row_message(event, None)
        if isinstance(event, LargeMessageRef):
            return self._row_message(event.row, event)
        if isinstance(event, Ddl):
            return self._ddl_message(event)
        if isinstance(event, Watermark):
            return self._watermark_message(event)
        raise EncodeError(FORMAT, f"canal-json carries row changes, DDL and watermarks, not {type(event).__name__}")

    def _head(
        self,
        meta: Mapping[str, Any],
        database: str,
        table: str,
        key_columns: tuple[str, ...],
        is_ddl: bool,
        canal_type: str,
        tso: int | None,
        sql: str,
    ) -> str:
        """Every field before sqlType. ``es`` is the commit's physical time, ``tso >> 18``, unless the
        event came with one (a re-encoded message keeps what it said); ``ts``, the time TiCDC built the
        message, comes only from meta: an encoder reads no clock."""
        pk_names = "[" + ",".join(map(go_json_string, key_columns)) + "]" if key_columns else "null"
        es = _meta_int(meta, "es")
        if es is None:
            es = tso >> 18 if tso is not None else 0
        return (
            f'{{"id":{_meta_int(meta, "id") or 0},"database":{go_json_string(database)},'
            f'"table":{go_json_string(table)},"pkNames":{pk_names},"isDdl":{"true" if is_ddl else "false"},'
            f'"type":{go_json_string(canal_type)},"es":{es},"ts":{_meta_int(meta, "ts") or 0},'
            f'"sql":{go_json_string(sql)},'
        )

    def _end(self, tidb_fields: str) -> str:
        """The end of a message: the ``_tidb`` object with ``tidb_fields`` if the extension is on."""
        return f',"_tidb":{{{tidb_fields}}}}}' if self._extension else "}"

    def _commit_ts(self, commit_ts: int | None, what: str) -> int | None:
        if self._extension and commit_ts is None:
            raise EncodeError(FORMAT, f"enable-tidb-extension writes _tidb.commitTs, but this {what} has no commit ts")
        return commit_ts

    def _ddl_message(self, ddl: Ddl) -> str:
        commit_ts = self._commit_ts(ddl.commit_ts, "DDL")
        canal_type = ticdc_type(ddl.kind, ddl.sql, ddl.meta.get("type"))
        head = self._head(ddl.meta, ddl.database, ddl.table, (), True, canal_type, commit_ts, ddl.sql)
        return head + '"sqlType":null,"mysqlType":null,"data":null,"old":null' + self._end(f'"commitTs":{commit_ts}')

    def _watermark_message(self, watermark: Watermark) -> str:
        if not self._extension:
            raise EncodeError(FORMAT, "TiCDC sends TIDB_WATERMARK messages only with enable-tidb-extension=true")
        head = self._head(watermark.meta, "", "", (), False, WATERMARK_TYPE, watermark.ts, "")
        return (
            head + '"sqlType":null,"mysqlType":null,"data":null,"old":null' + self._end(f'"watermarkTs":{watermark.ts}')
        )

    def _row_message(self, change: RowChange, large: LargeMessageRef | None) -> str:
        if large is not None and not self._extension:
            raise EncodeError(FORMAT, "TiCDC marks shrunk large messages only with enable-tidb-extension=true")
        commit_ts = self._commit_ts(change.commit_ts, "row change")
        image = change.before if change.op is Op.DELETE else change.after
        if image is None:
            raise EncodeError(
                FORMAT, f"a {change.op.name} needs its {'before' if change.op is Op.DELETE else 'after'} image"
            )
        texts = self._texts(change, image)
        sql_types = ",".join(
            f"{go_json_string(name)}:{java_sql_type(change.types[name], image[name])}" for name in texts
        )
        mysql_types = ",".join(
            f"{go_json_string(name)}:{go_json_string(mysql_type_text(change.types[name], self._full_types))}"
            for name in texts
        )
        old = "null"
        if change.op is Op.UPDATE:
            if change.before is None:
                raise EncodeError(FORMAT, "an UPDATE needs its before image: canal-json sends it in old")
            old_texts = self._texts(change, change.before)
            if self._only_updated:
                old_texts = {name: text for name, text in old_texts.items() if name not in texts or texts[name] != text}
            old = f"[{_row_json(old_texts)}]"
        head = self._head(
            change.meta, change.database, change.table, change.key_columns, False, change.op.name, commit_ts, ""
        )
        body = f'"sqlType":{{{sql_types}}},"mysqlType":{{{mysql_types}}},"data":[{_row_json(texts)}],"old":{old}'
        extension = f'"commitTs":{commit_ts}'
        if large is not None and large.kind is LargeMessageKind.CLAIM_CHECK:
            if large.location is None:
                raise EncodeError(FORMAT, "a claim-check reference needs the location of the stored message")
            extension += f',"claimCheckLocation":{go_json_string(large.location)}'
        elif large is not None:
            extension += ',"onlyHandleKey":true'
        return head + body + self._end(extension)

    def _texts(self, change: RowChange, image: Mapping[str, Any]) -> dict[str, str | None]:
        """Each column's value as TiDB renders it (None for NULL), in the image's column order."""
        texts: dict[str, str | None] = {}
        for name, value in image.items():
            mtype = change.types.get(name)
            if mtype is None:
                raise EncodeError(FORMAT, f"column {name!r} of {change.database}.{change.table} has no MySQL type")
            if value is None:
                texts[name] = None
                continue
            writer = self._writers.get(mtype)
            if writer is None:
                writer = self._writers[mtype] = _writer(mtype, self._tz)
            try:
                texts[name] = writer(value)
            except _CONVERSION_ERRORS as exc:
                raise EncodeError(
                    FORMAT, f"column {name!r} ({mtype}) of {change.database}.{change.table}: {exc}"
                ) from exc
        return texts


def _row_json(texts: Mapping[str, str | None]) -> str:
    return (
        "{"
        + ",".join(
            f"{go_json_string(name)}:{'null' if text is None else go_json_string(text)}" for name, text in texts.items()
        )
        + "}"
    )


def _meta_int(meta: Mapping[str, Any], field: str) -> int | None:
    value = meta.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _has_watermarks(options: Mapping[str, Any]) -> bool:
    return bool(options["enable-tidb-extension"])


def _sequence_of(change: RowChange | Ddl) -> str | None:
    """Without the TiDB extension a change carries no commit ts; ``es``, the binlog event's commit time
    in milliseconds, is the same in a re-delivered copy (``ts``, the time of sending, is not)."""
    es = _meta_int(change.meta, "es")
    return None if change.commit_ts is not None or es is None else str(es)


def _commit_ms_of(change: RowChange | Ddl) -> int | None:
    """``es``, the commit's physical time in milliseconds, of a change that has no commit ts."""
    return _meta_int(change.meta, "es") if change.commit_ts is None else None


CODEC = Codec(
    name=FORMAT,
    options={
        "enable-tidb-extension": Option(
            False,
            "write _tidb.commitTs and TIDB_WATERMARK messages (the decoder reads _tidb whenever present)",
            parse_bool,
        ),
        "content-compatible": Option(
            False,
            "write Canal's full mysqlType (decimal(10,4), enum('a','b')) and only changed columns in old",
            parse_bool,
        ),
        "only-output-updated-columns": Option(False, "write only the changed columns of an UPDATE in old", parse_bool),
        "large-message-handle-compression": COMPRESSION_OPTION,
        "tz": TZ_OPTION,
    },
    make_decoder=CanalJsonDecoder,
    make_encoder=CanalJsonEncoder,
    has_watermarks=_has_watermarks,
    sequence_of=_sequence_of,
    commit_ms_of=_commit_ms_of,
)
