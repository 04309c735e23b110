"""A reference consumer for the workload's streams: decodes every partition, drops the copies that
at-least-once delivery and DDL broadcast bring, orders the changes by commit and applies them.

It is what the oracle is checked against, so it is written for clarity, not speed: it holds the whole
stream, and it reads the DDL text the workload writes (ALTER TABLE ... ADD/DROP/RENAME/MODIFY COLUMN,
TRUNCATE, RENAME TABLE, DROP TABLE, CREATE TABLE) with regular expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from cdclake.model import Ddl, DdlKind, Event, Heartbeat, Op, PendingRow, RowChange, Watermark
from cdclake.workload import Stream, key_of

TableName = tuple[str, str]
Tables = dict[TableName, dict[tuple[Any, ...], dict[str, Any]]]

_NAME = r"`((?:[^`]|``)+)`"
_QUALIFIED = rf"{_NAME}\.{_NAME}"
_ALTER = re.compile(rf"ALTER TABLE {_QUALIFIED} (ADD|DROP|RENAME|MODIFY) COLUMN {_NAME}(?: TO {_NAME})?")
_RENAME_TABLE = re.compile(rf"RENAME TABLE {_QUALIFIED} TO {_QUALIFIED}")


def decoded(stream: Stream) -> dict[int, list[Event]]:
    """Every partition's events, each partition read by a decoder of its own."""
    events = {}
    for partition, messages in stream.partitions.items():
        decoder = stream.decoder()
        events[partition] = [event for message in messages for event in decoder.decode(message)]
        events[partition] += decoder.flush()
    return events


def order_ts(event: RowChange | Ddl) -> int:
    """The commit's ts, or where the format has none, its milliseconds (Canal-JSON's ``es``, DataWorks'
    ``eventTime``): the workload gives every commit a millisecond of its own."""
    if event.commit_ts is not None:
        return event.commit_ts
    if "es" in event.meta:
        return int(event.meta["es"])
    return int(event.meta["timestamp"]["eventTime"])


def changes(events: Iterable[Event], up_to: int | None = None) -> list[RowChange | Ddl]:
    """The row changes and DDL, each once, in commit order; only those at or below ``up_to`` if given."""
    seen: set[Any] = set()
    kept: list[RowChange | Ddl] = []
    for event in events:
        if isinstance(event, PendingRow):
            raise AssertionError(f"a row of {event.database}.{event.table} was never released")
        if not isinstance(event, RowChange | Ddl) or (up_to is not None and order_ts(event) > up_to):
            continue
        if isinstance(event, Ddl):
            identity: Any = (order_ts(event), event.sql)
        else:
            before = None if event.before is None else key_of(event.key_columns, event.before)
            after = None if event.after is None else key_of(event.key_columns, event.after)
            identity = (order_ts(event), event.database, event.table, event.op, before, after)
        if identity not in seen:
            seen.add(identity)
            kept.append(event)
    return sorted(kept, key=order_ts)


def apply(ordered: Iterable[RowChange | Ddl]) -> Tables:
    """The tables after the changes: an INSERT (or an update without its before image) puts the row
    under its key, an UPDATE moves it from its old key, a DELETE removes it."""
    tables: Tables = {}
    key_columns: dict[TableName, tuple[str, ...]] = {}
    for change in ordered:
        if isinstance(change, Ddl):
            _apply_ddl(tables, key_columns, change)
            continue
        name = (change.database, change.table)
        rows = tables.setdefault(name, {})
        key_columns[name] = change.key_columns
        if change.before is not None and change.op is not Op.INSERT:
            rows.pop(key_of(change.key_columns, change.before))
        if change.after is not None:
            rows[key_of(change.key_columns, change.after)] = dict(change.after)
    return tables


def _apply_ddl(tables: Tables, key_columns: dict[TableName, tuple[str, ...]], ddl: Ddl) -> None:
    name = (ddl.database, ddl.table)
    if ddl.kind in (DdlKind.CREATE_TABLE, DdlKind.TRUNCATE_TABLE):
        tables[name] = {}
    elif ddl.kind is DdlKind.DROP_TABLE:
        tables.pop(name, None)
    elif ddl.kind is DdlKind.RENAME_TABLE:
        match = _RENAME_TABLE.fullmatch(ddl.sql)
        assert match, ddl.sql
        old = (match[1], match[2])
        tables[name] = tables.pop(old, {})
        key_columns[name] = key_columns.pop(old, ())
    else:
        match = _ALTER.match(ddl.sql)
        assert match, ddl.sql
        action, column, new_name = match[3], match[4], match[5]
        if action == "MODIFY":  # int to bigint: the values stay
            return
        rows = []
        for row in tables.get(name, {}).values():
            if action == "ADD":
                row[column] = None
            elif action == "DROP":
                del row[column]
            else:
                row[new_name] = row.pop(column)
            rows.append(row)
        # A keyless table's keys are its whole rows, which the DDL changed.
        tables[name] = {key_of(key_columns.get(name, ()), row): row for row in rows}


def watermarks(events: Iterable[Event]) -> list[int]:
    """The ts of a partition's watermarks (a DataWorks heartbeat's milliseconds)."""
    return [e.ts if isinstance(e, Watermark) else e.ts_ms for e in events if isinstance(e, Watermark | Heartbeat)]
