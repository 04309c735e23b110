"""The Open Protocol encoder: events → batched messages as TiCDC writes them, row events filling a
message up to max-batch-size events or max-message-bytes, each DDL and resolved event in one of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cdclake.errors import EncodeError
from cdclake.formats.compression import compressor
from cdclake.formats.open_protocol.text import json_string
from cdclake.formats.open_protocol.values import _writer
from cdclake.formats.open_protocol.wire import (
    _BASE64_CODES,
    _CODE_ALIASES,
    _CODE_OF,
    _DDL_CODES,
    _DDL_KINDS,
    _KEY_FLAGS,
    _NULL_TYPE_CODE,
    _QUOTED_CODES,
    _RECORD_OVERHEAD,
    _SIGNED_FAMILIES,
    _U64,
    _U64_MAX,
    BATCH_VERSION,
    BINARY_FLAG,
    DDL,
    FORMAT,
    HANDLE_KEY_FLAG,
    NULLABLE_FLAG,
    PRIMARY_KEY_FLAG,
    RESOLVED,
    ROW,
    UNSIGNED_FLAG,
    _frame,
    _Unencodable,
)
from cdclake.model import Ddl, DdlKind, Event, LargeMessageKind, LargeMessageRef, Op, RawMessage, RowChange, Watermark
from cdclake.types import Family, MySQLType
from cdclake.values import zone


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
