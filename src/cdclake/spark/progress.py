"""What a replication job knows between batches, and its form as rows a sink keeps.

A replication job needs, between batches: where each partition's reading stands and the newest
watermark it announced; the changes read but not applied yet (above the resolved ts); the raw
messages its decoders need again (schema messages, rows waiting for their schema); what it knows of
each upstream table (its schema, its lake table, the resolved ts applied to it); and, while a batch is
being applied, the batch's plan, so that a restart re-applies exactly the same ranges.

All of it is kept as rows of one shape, change records (:mod:`cdclake.spark.changes`) with three more
columns: ``state`` (what the row is), ``batch`` and ``end_offset``. A sink keeps them beside its tables
and replaces them whole, atomically, at each commit (:meth:`cdclake.sinks.Sink.commit`); they hold only
what the next batch needs.

========= =================================================================================
state     the row
========= =================================================================================
position  topic, partition; ``offset`` the next to read, ``end_offset`` the partition's end
          when the batch was planned (for ``cdclake status``'s lag without the source),
          ``commit_ts`` the newest watermark (null before the first), ``timestamp_ms`` the newest
          heartbeat; formats without watermarks: ``sequence`` the newest change sequence
          applied, ``key`` the newest read
plan      topic, partition, ``offset`` .. ``end_offset``: the ranges of batch ``batch``, present
          only between its start and its end; for a batch handed in by a streaming query
          (:class:`cdclake.spark.ChangeApplier`), ``reason`` its application id and ``sequence`` its
          batch id
stream    ``reason`` an application id, ``offset`` the newest batch id of its query applied
pending   a change record waiting for the resolved ts to reach it
carry     a raw message carried into the next batch's decoding (see changes.py)
table     database, table (upstream names); ``event`` the schema as JSON, ``reason`` the lake
          table, ``commit_ts`` the resolved ts applied to it
gone      database, table of an upstream table renamed or dropped; ``commit_ts`` the resolved ts
          applied when it went, so that its changes read again (a replay) do not bring it back
========= =================================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdclake.eventjson.schemas import schema_from_json, schema_to_json
from cdclake.model import Origin, RawMessage, TableSchema
from cdclake.ordering.records import spark_ddl
from cdclake.ordering.resolution import newest_schema_versions
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_FIELDS, CarriedMessage

# (name, Spark SQL type) of a state row: a change record and what the row is.
STATE_FIELDS = (("state", "string"), ("batch", "bigint"), ("end_offset", "bigint"), *CHANGE_FIELDS)
STATE_DDL = spark_ddl(STATE_FIELDS)
STATE_NAMES = tuple(name for name, _ in STATE_FIELDS)


@dataclass
class Position:
    next_offset: int
    watermark: int | None = None
    heartbeat_ms: int | None = None
    sequence: int | None = None  # formats without watermarks: the newest change sequence applied
    read_sequence: int | None = None  # and the newest read
    end: int | None = None  # the partition's end offset when the newest batch was planned


@dataclass
class TableState:
    """What the job knows of one upstream table."""

    schema: TableSchema
    lake_table: str
    applied_ts: int | None = None


@dataclass
class JobState:
    """The state after batch ``batch`` (or, with ``plan``, during batch ``batch + 1``)."""

    batch: int = 0
    positions: dict[tuple[str, int], Position] = field(default_factory=dict)
    carried: dict[tuple[str, int], list[tuple[CarriedMessage, str | None, str | None, int | None]]] = field(
        default_factory=dict
    )
    tables: dict[tuple[str, str], TableState] = field(default_factory=dict)
    gone: dict[tuple[str, str], int] = field(default_factory=dict)
    histories: dict[tuple[str, str], str] = field(default_factory=dict)  # upstream table -> its history table
    plan: list[OffsetRange] = field(default_factory=list)
    streams: dict[str, int] = field(default_factory=dict)  # application id -> the newest batch id applied
    plan_stream: tuple[str, int] | None = None  # (application id, batch id) of the planned batch, if a query's

    def positions_map(self) -> dict[tuple[str, int], int]:
        return {tp: position.next_offset for tp, position in self.positions.items()}



def state_from_rows(rows: Iterable[Any]) -> JobState:
    """The job state the rows (Spark rows of ``STATE_DDL``, the pending changes left out) describe."""
    state = JobState()
    for row in rows:
        kind = row["state"]
        state.batch = max(state.batch, row["batch"] or 0)
        tp = (row["topic"], row["partition"])
        if kind == "position":
            sequence, read = (int(row[name]) if row[name] is not None else None for name in ("sequence", "key"))
            state.positions[tp] = Position(row["offset"], row["commit_ts"], row["timestamp_ms"], sequence, read,
                                           row["end_offset"])
        elif kind == "plan":
            state.plan.append(OffsetRange(row["topic"], row["partition"], row["offset"], row["end_offset"]))
            if row["reason"] is not None:
                state.plan_stream = (row["reason"], int(row["sequence"]))
        elif kind == "stream":
            state.streams[row["reason"]] = row["offset"]
        elif kind == "carry":
            state.carried.setdefault(tp, []).append(carried_from_record(row))
        elif kind == "table":
            schema = schema_from_json(orjson.loads(row["event"]))
            state.tables[(row["database"], row["table"])] = TableState(schema, row["reason"], row["commit_ts"])
        elif kind == "gone":
            state.gone[(row["database"], row["table"])] = row["commit_ts"]
        elif kind == "history":
            state.histories[(row["database"], row["table"])] = row["reason"]
    if state.plan:
        state.batch -= 1  # the plan row carries the batch it plans; the state is that of the one before
    state.plan.sort()
    return state


def carried_from_record(record: Any) -> tuple[CarriedMessage, str | None, str | None, int | None]:
    """A ``carry`` change record (a Spark row) as the message it carries, with the database, table and
    schema version it defines (a ``prime``), or None for those (a ``held`` message)."""
    message = RawMessage(record["raw_key"], record["raw_value"],
                         Origin(topic=record["topic"], partition=record["partition"], offset=record["offset"]),
                         record["timestamp_ms"])
    version = int(record["sequence"]) if record["sequence"] is not None else None
    return CarriedMessage(record["reason"], message, record["commit_ts"]), record["database"], record["table"], version


def _row(state: str, batch: int, **fields: Any) -> tuple[Any, ...]:
    values = {"state": state, "batch": batch, **fields}
    return tuple(values.get(name) for name in STATE_NAMES)


def small_rows(state: JobState, batch: int) -> list[tuple[Any, ...]]:
    """Every state row but the pending changes and a plan (:func:`plan_rows`), for the state after
    ``batch``."""
    rows = []
    for (topic, partition), position in sorted(state.positions.items()):
        rows.append(_row("position", batch, topic=topic, partition=partition, offset=position.next_offset,
                         end_offset=position.end,
                         commit_ts=position.watermark, timestamp_ms=position.heartbeat_ms,
                         sequence=None if position.sequence is None else str(position.sequence),
                         key=None if position.read_sequence is None else str(position.read_sequence)))
    for carried_list in state.carried.values():
        for carried, database, table, version in carried_list:
            origin = carried.message.origin
            rows.append(_row("carry", batch, topic=origin.topic, partition=origin.partition, offset=origin.offset,
                             raw_key=carried.message.key, raw_value=carried.message.value,
                             timestamp_ms=carried.message.timestamp_ms, reason=carried.role, database=database,
                             table=table, sequence=None if version is None else str(version),
                             commit_ts=carried.commit_ts))
    for (database, table), known in sorted(state.tables.items()):
        rows.append(_row("table", batch, database=database, table=table, reason=known.lake_table,
                         commit_ts=known.applied_ts, event=orjson.dumps(schema_to_json(known.schema)).decode()))
    for (database, table), applied_ts in sorted(state.gone.items()):
        rows.append(_row("gone", batch, database=database, table=table, commit_ts=applied_ts))
    for (database, table), target in sorted(state.histories.items()):
        rows.append(_row("history", batch, database=database, table=table, reason=target))
    for app_id, batch_id in sorted(state.streams.items()):
        rows.append(_row("stream", batch, reason=app_id, offset=batch_id))
    return rows


def plan_rows(plan: Iterable[OffsetRange], batch: int, stream: tuple[str, int] | None = None) -> list[tuple[Any, ...]]:
    """The rows recording the ranges batch ``batch`` is about to apply; ``stream`` the (application id,
    batch id) of the streaming query's batch it is."""
    app_id, batch_id = stream or (None, None)
    return [_row("plan", batch, topic=planned.topic, partition=planned.partition, offset=planned.start,
                 end_offset=planned.end, reason=app_id, sequence=None if batch_id is None else str(batch_id))
            for planned in plan]


def prune_primes(
    carried: list[tuple[CarriedMessage, str | None, str | None, int | None]], versions_kept: int = 2
) -> list[tuple[CarriedMessage, str | None, str | None, int | None]]:
    """The schema messages a partition keeps carrying (:func:`~cdclake.ordering.resolution.newest_schema_versions`),
    and every held message."""
    primes = [entry for entry in carried if entry[0].role == "prime"]
    held = [entry for entry in carried if entry[0].role != "prime"]
    return newest_schema_versions(primes, lambda entry: (entry[1], entry[2], entry[3]), versions_kept) + held
