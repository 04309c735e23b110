"""The decoder's fast path: what a message's ``mysqlType`` map says (:class:`_Columns`), and the row
readers compiled per order of columns, each column read by statements that do what its converter does
to the string TiDB writes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple

from cdclake.formats.canal_json.values import (
    _ZERO,
    Converter,
    _date_from_iso,
    _datetime_from_iso,
    _offset_text,
    _pack_float32,
    _unpack_float32,
)
from cdclake.formats.compiled import (
    DATETIME_SHAPE,
    TIME_SHAPE,
    ImageReader,
    OldImageReader,
    compile_old_reader,
    compile_reader,
)
from cdclake.formats.limits import MAX_COMPILED_COLUMNS
from cdclake.types import Family, MySQLType
from cdclake.values import TIME_OF_DAY_DATE, TIME_OF_DAY_MIDNIGHT

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
        if len(keys) > MAX_COMPILED_COLUMNS:
            return None  # compiled in seconds: the converters read it in linear time
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
