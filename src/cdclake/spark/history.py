"""History tables (SCD type 2, :mod:`cdclake.schema.history`) beside the mirrors of the tables a job names.

A mirror gets each segment's *net* change per key; a history table needs every change of the segment, in
order. Per batch, :meth:`HistoryKeeper.batch` turns the segmented row changes of the tables with history
into version actions, all tables in one shuffle: each key's changes of a segment gathered and sorted by
commit order, then :func:`~cdclake.schema.history.versions_of_key` on the executors. The replicator then
calls the keeper beside each sink call it makes for a mirror: a segment's actions are one write of the
history table, a step of its own (a re-run after a crash skips it where the table holds it, as for the
mirror); DDLs evolve, rename, drop and (TRUNCATE) close it with the mirror.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import OptionError
from cdclake.model import Ddl
from cdclake.schema.ddl.changes import SchemaChange
from cdclake.schema.history import HISTORY_SUFFIX, HistorySettings, KeyChange, versions_of_key
from cdclake.schema.names import Naming, RefusedName
from cdclake.sinks.base import HistorySink, Sink, Step
from cdclake.spark import killpoints
from cdclake.spark.progress import JobState, TableState

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from cdclake.spark.planning import TableWork

ACTION_DDL = ("`database` string, `table` string, `_segment` int, `_op` string, `_image` string, "
              "`_start_ts` bigint, `_end_ts` bigint, `_end_op` string")
_GROUP = ("database", "table", "_segment", "_k")
_ORDER = ("commit_ts", "partition", "offset", "index")
_BATCH_ROWS = 4096


def check_history(settings: HistorySettings, commit_ts: bool) -> None:
    """Refuse, before Spark starts, a job whose history tables could not be kept: a stream whose changes
    carry no commit ts (``commit_ts``)."""
    if settings and not commit_ts:
        raise OptionError("history: versions start and end at their changes' commit ts, which this stream does "
                          "not carry (the formats with TiDB's resolved ts do: canal-json with "
                          "enable-tidb-extension, open, simple, simple-avro)")


class HistoryKeeper:
    """The history tables of a job writing to ``sink``: of the upstream tables ``settings`` names, each
    beside its mirror (``naming``'s name for it, with :data:`HISTORY_SUFFIX`)."""

    def __init__(self, sink: Sink, settings: HistorySettings, naming: Naming) -> None:
        self.sink, self.settings, self.naming = sink, settings, naming
        if settings and not isinstance(sink, HistorySink):
            raise OptionError(f"history: the sink {type(sink).__name__} keeps no history tables (cdclake's own "
                              "sinks do); leave history out of this job")
        self._made: set[str] = set()
        self._actions: DataFrame | None = None

    def target(self, known: TableState) -> str:
        namespace, table = self.naming.target(known.schema.database, known.schema.table)
        return self.sink.target(namespace, table + HISTORY_SUFFIX)

    def wanted(self, known: TableState | None) -> bool:
        return known is not None and self.settings.wanted(known.schema.database, known.schema.table)

    def targets(self) -> list[str]:
        """The history tables this job made or wrote since it started, for upkeep."""
        return sorted(self._made)

    def record(self, state: JobState) -> None:
        """The history tables of ``state``'s tables named in it, for ``cdclake status``: those made or written
        since the job started, and those the state named before that are still its tables' history tables."""
        histories = {}
        for key, known in state.tables.items():
            if self.wanted(known):
                target = self.target(known)
                if target in self._made or state.histories.get(key) == target:
                    histories[key] = target
        state.histories = histories

    @property
    def _history_sink(self) -> HistorySink:
        assert isinstance(self.sink, HistorySink), "checked when the keeper was made"
        return self.sink

    def _ensure(self, known: TableState) -> str:
        """The history table of ``known``, made (with its schema now) if it is not there yet."""
        target = self.target(known)
        if target not in self._made:
            self._history_sink.create_history(target, known.schema)
            self._made.add(target)
        return target

    def _done(self, target: str, step: Step, recovering: bool) -> bool:
        return recovering and (step.batch, step.step) <= self.sink.last_step(target)

    # --- one batch ---------------------------------------------------------------------------------------

    @contextmanager
    def batch(self, rows: DataFrame, work: Mapping[tuple[str, str], TableWork], mirrored: Iterable[tuple[str, str]]
              ) -> Iterator[None]:
        """While a batch's tables are applied: the version actions of ``rows``, its segmented row changes
        (:meth:`~cdclake.spark.planning.TablePlanner.segmented_rows`), where a table of ``work`` (those the
        batch changes) has history; ``mirrored``: the tables the job knows, whose names no history may take."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        kept = [key for key in work if self.settings.wanted(*key)]
        if kept:
            self._check_names({*work, *mirrored})
        if not any(segment.changes for key in kept for segment in work[key].segments.values()):
            yield  # no history table's rows change: its DDLs alone are followed (see below)
            return
        name = F.concat_ws(".", "database", "table")
        actions = version_actions(rows.filter(name.rlike(f"^(?:{self.settings.regex()})$")), self.settings)
        self._actions = actions.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            self._actions.count()
            self._history_sink.stage_history(self._actions)
            yield
        finally:
            self._actions.unpersist()
            self._actions = None

    def _check_names(self, tables: set[tuple[str, str]]) -> None:
        """Refuse a history table whose name a mirror has (upstream ``orders`` and ``orders_history``)."""
        targets = {key: self._mirror_of(key) for key in tables}
        mirrors = {target: key for key, target in targets.items() if target is not None}
        for (database, table), target in targets.items():
            if target is None or not self.settings.wanted(database, table):
                continue
            namespace, name = target
            taken = mirrors.get((namespace, name + HISTORY_SUFFIX))
            if taken is not None:
                raise OptionError(f"history: the history table of {database}.{table} would be "
                                  f"{namespace}.{name}{HISTORY_SUFFIX}, the mirror of {'.'.join(taken)}: leave "
                                  "one of them out of history, or map it elsewhere ([tables] mapping)")

    def _mirror_of(self, key: tuple[str, str]) -> tuple[str, str] | None:
        """The mirror's (namespace, table) of ``key``; None for a table the naming rule refuses (its
        records went to the dead letters)."""
        try:
            return self.naming.target(*key)
        except RefusedName:
            return None

    def write(self, key: tuple[str, str], known: TableState, segment: int, step: Step, recovering: bool) -> None:
        """Segment ``segment`` of the batch's changes of ``key`` (the table's name as the batch found it),
        now the table ``known``, written to its history table as ``step``."""
        from pyspark.sql import functions as F

        if not self.wanted(known) or self._actions is None:
            return
        target = self._ensure(known)
        if self._done(target, step, recovering):
            return
        actions = self._actions.filter((F.col("database") == key[0]) & (F.col("table") == key[1])
                                       & (F.col("_segment") == segment))
        self._history_sink.write_history(target, known.schema, actions, step, (*key, segment))
        killpoints.reached("table-merged")

    # --- the mirror's DDLs, followed ---------------------------------------------------------------------

    def created(self, known: TableState) -> None:
        if self.wanted(known):
            self._ensure(known)

    def evolved(self, before: TableState, changes: list[SchemaChange]) -> None:
        """The column ``changes`` made to ``before``'s mirror, made to its history table too."""
        if self.wanted(before):
            self.sink.evolve_table(self._ensure(before), before.schema, changes)

    def truncated(self, known: TableState, ddl: Ddl, step: Step, recovering: bool) -> None:
        """A TRUNCATE TABLE ends every open version at its commit ts (or removes them, as deletes)."""
        if not self.wanted(known):
            return
        target = self._ensure(known)
        if not self._done(target, step, recovering):
            assert ddl.commit_ts is not None, "history is refused for streams without commit ts"
            keep_deleted = self.settings.for_table(known.schema.database, known.schema.table).keep_deleted
            self._history_sink.close_history(target, ddl.commit_ts, keep_deleted, step)
            killpoints.reached("table-merged")

    def renamed(self, before: TableState, after: TableState) -> None:
        if self.wanted(before):
            target = self._ensure(before)
            self.sink.rename_table(target, self.target(after))
            self._made.discard(target)
            self._made.add(self.target(after))

    def dropped(self, known: TableState) -> None:
        target = self.target(known)
        if self.wanted(known):
            self.sink.drop_table(target)
        self._made.discard(target)


def version_actions(rows: DataFrame, settings: HistorySettings) -> DataFrame:
    """The version actions (:data:`ACTION_DDL`) of segmented row changes: each change of a key-changing
    update split into a delete of the old key and an insert of the new, each key's changes of a segment
    brought together in commit order, and made into versions on the executors."""
    from pyspark.sql import functions as F

    new_key = F.struct(F.col("key").alias("k"),
                       F.when(F.col("old_key").isNotNull(), F.lit("insert")).otherwise(F.col("op")).alias("op"),
                       F.when(F.col("old_key").isNull(), F.col("before")).alias("before"),
                       F.col("after").alias("after"))
    old_key = F.when(F.col("old_key").isNotNull(),
                     F.struct(F.col("old_key").alias("k"), F.lit("delete").alias("op"), F.col("before").alias("before"),
                              F.lit(None).cast("string").alias("after")))
    exploded = (rows.select("database", "table", "_segment", "key_columns", *_ORDER,
                            F.explode(F.array(new_key, old_key)).alias("c"))
                .filter("c IS NOT NULL")
                .select("database", "table", "_segment", "key_columns", *_ORDER, F.col("c.k").alias("_k"),
                        F.col("c.op").alias("_op"), F.col("c.before").alias("before"), F.col("c.after").alias("after")))
    gathered = exploded.repartition(*_GROUP).sortWithinPartitions(*_GROUP, *_ORDER)
    return gathered.mapInArrow(lambda batches: _actions_of(batches, settings), ACTION_DDL)


def _actions_of(batches: Iterable[pa.RecordBatch], settings: HistorySettings) -> Iterator[pa.RecordBatch]:
    """Each key's changes (consecutive rows, sorted) as version actions, in Arrow batches."""
    import pyarrow as pa

    schema = pa.schema([("database", pa.string()), ("table", pa.string()), ("_segment", pa.int32()),
                        ("_op", pa.string()), ("_image", pa.string()), ("_start_ts", pa.int64()),
                        ("_end_ts", pa.int64()), ("_end_op", pa.string())])
    rows = (row for batch in batches for row in batch.to_pylist())
    out: list[dict[str, Any]] = []
    tables: dict[tuple[str, str], HistorySettings] = {}
    for (database, table, segment, _), group in itertools.groupby(rows, key=itemgetter(*_GROUP)):
        changes = [_key_change(row) for row in group]
        if (database, table) not in tables:
            tables[(database, table)] = settings.for_table(database, table)
        out += [{"database": database, "table": table, "_segment": segment, "_op": action.action,
                 "_image": orjson.dumps(action.image).decode(), "_start_ts": action.start_ts,
                 "_end_ts": action.end_ts, "_end_op": action.end_op}
                for action in versions_of_key(changes, tables[(database, table)])]
        if len(out) >= _BATCH_ROWS:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
            out = []
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def _key_change(row: dict[str, Any]) -> KeyChange:
    before = orjson.loads(row["before"]) if row["before"] is not None else None
    after = orjson.loads(row["after"]) if row["after"] is not None else None
    key_columns = orjson.loads(row["key_columns"])
    # A table without a key is keyed by the whole row: its image is its key.
    key = dict(zip(key_columns, orjson.loads(row["_k"]), strict=True)) if key_columns else before or after or {}
    return KeyChange(row["_op"], row["commit_ts"], key, before, after)
