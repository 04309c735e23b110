"""The oracle: what the upstream tables hold, to compare a replicated copy with.

The state is the simulator's own (its tables after the commits), not a replay of the events it sent, so
a consumer that applies the stream and ends with the oracle's rows has applied it correctly.

* A table is named ``(database, table)``; one dropped upstream is absent, a truncated one is empty, a
  renamed one is under its new name. Its ``schema`` is the MySQL schema as TiDB has it.
* ``rows`` maps each row's key to the row (column name -> exact Python value, the forms of
  :mod:`cdclake.types`). The key is the tuple of the key columns' values (the primary key, else the
  unique NOT NULL key TiCDC uses as handle), in key order. A table without any key has no row
  identity a lake can use: a consumer can only find a row by all its values (an UPDATE or DELETE
  matches the whole before image). Its key is therefore the whole row, as ``(column, value)`` pairs in
  column-name order; the simulator keeps its rows distinct, so this is a set, not a multiset.
* :meth:`Oracle.at` is the state as of a commit ts: every commit at or below it, none above; what a
  consumer that has applied the stream up to a resolved ts must hold.
* :meth:`Oracle.carried` is the same state as a format's consumer can have it (:func:`value_carrier`):
  Open Protocol sends an ENUM as its index, DataWorks a DECIMAL as text, and so on.
* ``history`` holds every version of a table's rows (:mod:`cdclake.workload.history`);
  :meth:`Oracle.history_tables` the history tables a job keeps of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from cdclake.formats import get_codec
from cdclake.formats.base import ValueCarrier
from cdclake.model import TableSchema
from cdclake.schema.history import HISTORY_SUFFIX, HistorySettings, history_schema
from cdclake.workload.history import Version, history_rows, kept_versions

if TYPE_CHECKING:
    from cdclake.workload.generator import Workload

TableName = tuple[str, str]
Row = Mapping[str, Any]


def key_of(key_columns: tuple[str, ...], row: Row) -> tuple[Any, ...]:
    """A row's key in the oracle: its key columns' values, or for a keyless table the whole row."""
    if key_columns:
        return tuple(row[c] for c in key_columns)
    return tuple(sorted(row.items()))


@dataclass(frozen=True)
class TableState:
    schema: TableSchema
    rows: Mapping[tuple[Any, ...], Row]
    history: tuple[Version, ...] = ()

    @classmethod
    def of(cls, schema: TableSchema, rows: Iterable[Row], history: Iterable[Version] = ()) -> TableState:
        key_columns = schema.key_columns
        return cls(schema, {key_of(key_columns, row): row for row in rows}, tuple(history))


class Oracle:
    """The upstream tables as of commit ts ``ts`` (``None`` for a workload of no commits)."""

    def __init__(self, workload: Workload, ts: int | None, tables: Mapping[TableName, TableState]) -> None:
        self.workload = workload
        self.ts = ts
        self.tables = tables

    def at(self, ts: int) -> Oracle:
        """The state as of commit ts ``ts``: every commit at or below it applied, none above."""
        return Oracle(self.workload, ts, self.workload.state_at(ts))

    def carried(self, format_name: str, options: Mapping[str, Any] | None = None) -> Oracle:
        """This state as a consumer of ``format_name`` can know it, the codec having the options
        ``options`` (a :class:`~cdclake.workload.production.Stream`'s ``codec_options``)."""
        carry = value_carrier(format_name, options)
        tables = {}
        for name, state in self.tables.items():
            converters = {c.name: carry(c.type) for c in state.schema.columns}
            converted = functools.partial(_converted, converters)
            tables[name] = TableState.of(state.schema, map(converted, state.rows.values()),
                                         (replace(version, row=converted(version.row)) for version in state.history))
        return Oracle(self.workload, self.ts, tables)

    def history_tables(self, settings: HistorySettings) -> dict[TableName, TableState]:
        """The history table a job with ``settings`` keeps of each table that has one, named as the table
        with :data:`~cdclake.schema.history.HISTORY_SUFFIX`: its schema with the version columns, and its
        rows (keyed by their place: a history table has no key of its own)."""
        tables = {}
        for (database, table), state in self.tables.items():
            if settings.wanted(database, table):
                versions = kept_versions(state.history, functools.partial(key_of, state.schema.key_columns),
                                         settings.for_table(database, table))
                rows = history_rows(versions)
                tables[(database, table + HISTORY_SUFFIX)] = TableState(
                    history_schema(state.schema), {(index,): row for index, row in enumerate(rows)})
        return tables


def _converted(converters: Mapping[str, Callable[[Any], Any]], row: Row) -> Row:
    return {column: converters[column](value) for column, value in row.items()}


def value_carrier(format_name: str, options: Mapping[str, Any] | None = None) -> ValueCarrier:
    """For each column type, the function from an upstream value to the value a consumer of the format
    decodes, with ``options`` (the format's codec says: :attr:`~cdclake.formats.base.Codec.value_carrier`)."""
    codec = get_codec(format_name)
    return codec.value_carrier(codec.resolve(options))
