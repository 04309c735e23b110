"""The Open Protocol decoder: frames → events, with the row shapes it learns per column list cached
(see :mod:`.fast_path`), and the messages that say what is wrong with a key, a table or a column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from cdclake.errors import DecodeError
from cdclake.formats.compression import decompressor
from cdclake.formats.limits import COLUMN_CACHE_SIZE, SHAPE_CACHE_SIZE, Lru, too_many_columns
from cdclake.formats.open_protocol.fast_path import _compile_shape
from cdclake.formats.open_protocol.values import _ColumnDecoding, _converter, _describe, _type_of
from cdclake.formats.open_protocol.wire import (
    _DDL_KINDS,
    _KEY_FLAGS,
    _U64_MAX,
    DDL,
    FORMAT,
    RESOLVED,
    ROW,
    _Invalid,
    _split_batch,
)
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
from cdclake.types import MySQLType
from cdclake.values import zone


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
        # Both bounded: flags are any uint64, and with only-output-updated-columns every set of changed
        # columns is a shape of its own (one per update, once 20,001 shapes and 271 MB).
        self._columns: Lru[tuple[int, int], _ColumnDecoding] = Lru(COLUMN_CACHE_SIZE)
        self._shapes: Lru[tuple[str, ...], _Shape] = Lru(SHAPE_CACHE_SIZE)

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
        self._shapes.put(names, shape)
        return shape, values

    def _learn_shape(self, image: dict[str, Any], name: str) -> tuple[_Shape, dict[str, Any]]:
        fault = too_many_columns(len(image), f'row image "{name}"')
        if fault is not None:  # compiled, 100,000 columns took 32 s and 3.7 GB
            raise _Invalid(fault)
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
        self._columns.put((code, flags), decoding)
        return decoding


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
