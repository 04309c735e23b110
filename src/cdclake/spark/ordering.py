"""The ordering core of replication: which of a batch's changes apply, in which order, and once.

With a watermark-bearing format the resolved ts R is the minimum over partitions of the newest watermark
each announced (and below any row still waiting for its schema); changes at or below R apply, those
above wait. Without watermarks (Canal-JSON without the TiDB extension, DataWorks) a *resolved sequence*
plays that part: changes below the sequence every partition not read to its end has reached apply.
Changes a table applied already (TiCDC re-sends after a restart) and re-delivered copies within the batch
are dropped; the rest reduce to the net change per key (:func:`net_changes`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import CdclakeError
from cdclake.eventjson.schemas import schema_from_json
from cdclake.model import TableSchema
from cdclake.ordering.resolution import lowest_behind, resolved_ts
from cdclake.sources.ranges import OffsetRange, PartitionExtent
from cdclake.spark.changes import CarriedMessage
from cdclake.spark.progress import JobState, Position, carried_from_record

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark.sql import Column, DataFrame, SparkSession


class SchemaWaitError(CdclakeError):
    """A row has waited for its table's schema longer than ``schema_wait_s`` allows."""


@dataclass
class Facts:
    """What the driver needs of a batch's decoded records beyond the rows, gathered in one pass: the
    newest watermark and heartbeat per partition, schemas bootstrapped, messages to carry, where each
    undecodable message is, the tables and DDLs the naming rule judges (:mod:`.refusals`), and how many
    row changes were decoded (for the batch's progress)."""

    watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    heartbeats: dict[tuple[str, int], int] = field(default_factory=dict)
    bootstraps: list[TableSchema] = field(default_factory=list)
    carried: dict[tuple[str, int], list[tuple[CarriedMessage, str | None, str | None, int | None]]] = field(
        default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sequences: dict[tuple[str, int], int] = field(default_factory=dict)  # the newest read, per partition
    # The offset and mark (watermark, or change sequence without watermarks) of the first mark each
    # partition's records carry: with where the batch ended, a partition's pace after its first batch.
    first_marks: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    tables: set[tuple[str, str]] = field(default_factory=set)  # named by a row
    rows: int = 0  # row changes decoded
    ddls: list[Any] = field(default_factory=list)  # the DDL records: coordinates and event
    # The kinds of record ("row", "ddl") among the changes that may apply whose identities hash alike
    # (None where not counted): a record of another kind is no copy, and dedupe compares only these
    # kinds (Ordering.deduplicated). A format that sends each DDL to every partition shares only "ddl".
    shared_kinds: frozenset[str] | None = None
    _error_places: list[tuple[str, int, int, str]] = field(default_factory=list)

    @classmethod
    def of(cls, decoded: DataFrame, sequences: bool = False, candidates: DataFrame | None = None) -> Facts:
        """The facts of ``decoded``; with ``sequences``, the newest change sequence per partition too; with
        ``candidates`` (the changes that may apply: the batch's and those pending), the kinds of those that
        may be copies, counted here rather than by a query of dedupe's own."""
        from pyspark.sql import functions as F

        facts = cls()
        errors = []
        fields = ("kind", "topic", "partition", "offset", "index", "commit_ts", "database", "table", "sequence",
                  "event", "timestamp_ms", "reason")
        wanted = decoded.filter("kind != 'row'").select(
            *fields,
            F.when(F.col("kind") == "carry", F.col("raw_key")).alias("raw_key"),
            F.when(F.col("kind") == "carry", F.col("raw_value")).alias("raw_value"))
        if sequences:
            sequence = F.col("sequence").cast("decimal(38,0)")
            newest = (change_records(decoded).filter("sequence IS NOT NULL").groupBy("topic", "partition")
                      .agg(F.max(sequence).cast("string").alias("sequence"),
                           F.min(F.struct(F.col("offset"), sequence.alias("sequence"))).alias("first"))
                      .select(F.lit("sequence").alias("kind"), "topic", "partition", "sequence", "first.offset",
                              F.col("first.sequence").cast("string").alias("first_sequence")))
            wanted = wanted.unionByName(newest, allowMissingColumns=True)
        named = (decoded.filter("kind = 'row'").groupBy("database", "table").agg(F.count("*").alias("rows"))
                 .select(F.lit("table").alias("kind"), "database", "table", "rows"))
        wanted = wanted.unionByName(named, allowMissingColumns=True)
        if candidates is not None:
            facts.shared_kinds = frozenset()
            # Whether each kind is among an identity's records, not its first kind: a copied row whose hash
            # a DDL's shares is still a copy. Booleans, cheaper to aggregate than a set of kinds.
            kinds = {kind: F.max(F.col("kind") == kind).alias(f"shares_{kind}") for kind in CHANGE_KINDS}
            shared = (with_identity(candidates).groupBy("_identity").agg(F.count("*").alias("records"), *kinds.values())
                      .filter("records > 1").agg(*(F.max(f"shares_{kind}").alias(f"shares_{kind}") for kind in kinds))
                      .select(F.lit("shared").alias("kind"), *(f"shares_{kind}" for kind in kinds)))
            wanted = wanted.unionByName(shared, allowMissingColumns=True)
        for row in wanted.collect():
            kind, tp = row["kind"], (row["topic"], row["partition"])
            if kind == "sequence":
                facts.sequences[tp] = int(row["sequence"])
                facts.first_marks[tp] = (row["offset"], int(row["first_sequence"]))
            elif kind == "watermark":
                facts.watermarks[tp] = max(facts.watermarks.get(tp, 0), row["commit_ts"])
                if tp not in facts.first_marks or row["offset"] < facts.first_marks[tp][0]:
                    facts.first_marks[tp] = (row["offset"], row["commit_ts"])
            elif kind == "heartbeat":
                facts.heartbeats[tp] = max(facts.heartbeats.get(tp, 0), row["commit_ts"])
            elif kind == "bootstrap":
                facts.bootstraps.append(schema_from_json(orjson.loads(row["event"])))
            elif kind == "carry":
                facts.carried.setdefault(tp, []).append(carried_from_record(row))
            elif kind == "ddl":
                facts.ddls.append(row)
            elif kind == "table":
                facts.tables.add((row["database"] or "", row["table"] or ""))
                facts.rows += row["rows"]
            elif kind == "error":
                errors.append(row)
            elif kind == "shared":
                facts.shared_kinds = frozenset(kind for kind in CHANGE_KINDS if row[f"shares_{kind}"])
        facts.add_errors(errors)
        return facts

    def add_errors(self, rows: Sequence[Any]) -> None:
        """Count error records (topic, partition, offset, reason) among the batch's, in stream order: the
        first of :attr:`errors` is the first read."""
        self._error_places.extend((row["topic"], row["partition"], row["offset"],
                                   f"{row['topic']}[{row['partition']}]@{row['offset']}: {row['reason']}")
                                  for row in rows)
        self._error_places.sort()
        self.errors = [text for *_, text in self._error_places]



class Ordering:
    """The order of one job's changes: ``watermarks`` whether its format announces resolved ts,
    ``unique_sequences`` whether no two changes of a partition share a sequence; ``include`` and
    ``exclude`` the tables it selects (regular expressions over ``database.table``, exclude wins);
    ``schema_wait_s`` how long a row may wait for its schema."""

    def __init__(self, spark: SparkSession, watermarks: bool, unique_sequences: bool, include: str | None,
                 exclude: str | None, schema_wait_s: float) -> None:
        self.spark, self.watermarks, self.unique_sequences = spark, watermarks, unique_sequences
        self.include, self.exclude, self.schema_wait_s = include, exclude, schema_wait_s
        self._include = re.compile(include) if include else None
        self._exclude = re.compile(exclude) if exclude else None

    def wanted(self, key: tuple[str, str]) -> bool:
        name = ".".join(key)
        if self._include is not None and not self._include.fullmatch(name):
            return False
        return self._exclude is None or not self._exclude.fullmatch(name)

    def position_of(self, change: Any) -> int:
        """Where a change stands in the upstream's order: its commit ts; for a format without
        watermarks the order it carries (Canal's ``es``, DataWorks' ``sequenceId``), else the Kafka
        timestamp (TiCDC and DataWorks send every change before a DDL ahead of it)."""
        if self.watermarks:
            return int(change["commit_ts"] or 0)
        sequence = change["sequence"]
        return int(sequence) if sequence is not None else int(change["timestamp_ms"] or 0)

    def position_column(self) -> Column:
        """:meth:`position_of` as a column of change records."""
        from pyspark.sql import functions as F

        if self.watermarks:
            return F.col("commit_ts")
        return F.coalesce(F.col("sequence").cast("decimal(38,0)"), F.col("timestamp_ms").cast("decimal(38,0)"))

    def advance_positions(self, state: JobState, facts: Facts, ranges: list[OffsetRange],
                           extents: Mapping[tuple[str, int], PartitionExtent]) -> None:
        for tp, extent in extents.items():
            state.positions.setdefault(tp, Position(extent.low)).end = extent.high
        for planned in ranges:
            state.positions[(planned.topic, planned.partition)].next_offset = planned.end
        for tp, newest in facts.watermarks.items():
            position = state.positions[tp]
            position.watermark = max(position.watermark or 0, newest)
        for tp, newest in facts.heartbeats.items():
            position = state.positions[tp]
            position.heartbeat_ms = max(position.heartbeat_ms or 0, newest)
        for tp, newest in facts.sequences.items():
            position = state.positions[tp]
            position.read_sequence = max(position.read_sequence or 0, newest)

    def resolved_ts(self, state: JobState, facts: Facts) -> int | None:
        """The ts every partition has announced, and below every row still waiting for its schema;
        None for a format without watermarks (every change read applies).

        A waiting row's transaction is not complete in the lake until the row is applied, and a table's
        applied ts must not pass a row it has not applied: a replay drops what is at or below it."""
        if not self.watermarks:
            return None
        waiting = [entry for entries in facts.carried.values() for entry in entries
                   if entry[0].role == "held" and entry[0].commit_ts is not None]
        marks = [position.watermark for position in state.positions.values()]
        self._check_schema_wait(waiting, resolved_ts(marks))
        return resolved_ts(marks, [entry[0].commit_ts for entry in waiting])

    def _check_schema_wait(self, waiting: list[tuple[CarriedMessage, str | None, str | None, int | None]],
                           resolved: int) -> None:
        """Stop, before anything of the batch is applied, when a row has waited for its schema longer
        than ``schema_wait_s`` of the upstream's time: every partition has announced a ts that far past
        the row's commit, and no BOOTSTRAP or DDL has brought the schema version it needs. TiCDC sends
        BOOTSTRAPs every ``send-bootstrap-interval-in-sec`` (120 s by default): a schema that does not
        come in much longer will not come, and the tables would stay behind the row for good."""
        overdue = [(((resolved >> 18) - ((carried.commit_ts or 0) >> 18)) / 1000, carried, database, table, version)
                   for carried, database, table, version in waiting]
        overdue = [entry for entry in overdue if entry[0] > self.schema_wait_s]
        if overdue:
            waited, carried, database, table, version = max(overdue, key=lambda entry: entry[0])
            origin = carried.message.origin
            raise SchemaWaitError(
                f"{origin.topic}[{origin.partition}]@{origin.offset}: a row of {database}.{table} has waited "
                f"{waited:.0f} s of upstream time for its schema version {version}, which no BOOTSTRAP or DDL "
                f"has brought ({len(overdue)} rows wait so); nothing of this batch was applied. Check that the "
                "producer sends BOOTSTRAPs (send-bootstrap-interval-in-sec, send-bootstrap-in-msg-count), or "
                f"set schema-wait-s above {self.schema_wait_s:g} to wait longer")

    def resolved_sequence(self, state: JobState, extents: Mapping[tuple[str, int], PartitionExtent]) -> int | None:
        """For a format without watermarks, the sequence below which every partition has been read: the
        lowest of the newest sequences read on the partitions not read to their end (one read to its
        end has nothing older to come); None when every partition is read to its end, and for a format
        with watermarks (its resolved ts orders instead).

        A partition's changes come in sequence order, so one that is read up to sequence s can send
        nothing below s any more; a DDL applied above that bound could overtake a row of an older
        schema still unread on a slower partition."""
        if self.watermarks:
            return None
        behind = {tp for tp, position in state.positions.items()
                  if tp in extents and position.next_offset < extents[tp].high}
        return lowest_behind({tp: position.read_sequence for tp, position in state.positions.items()}, behind)

    def ready(self, resolved: int | None, resolved_sequence: int | None) -> Column | None:
        """Which changes apply in this batch, or None for all of them: at or below the resolved ts, or
        (formats without watermarks) below the resolved sequence, strictly: changes may share one
        (Canal's ``es``), and the rest of its changes may be unread yet. A change without the value to
        compare applies."""
        from pyspark.sql import functions as F

        if resolved is not None:
            return F.coalesce(F.col("commit_ts") <= resolved, F.lit(True))
        if resolved_sequence is not None:
            below = F.col("sequence").cast("decimal(38,0)") < F.lit(Decimal(resolved_sequence)).cast("decimal(38,0)")
            return F.coalesce(below, F.lit(True))
        return None

    def selected(self, changes: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        name = F.concat_ws(".", "database", "table")
        if self._include is not None:
            changes = changes.filter(name.rlike(f"^(?:{self.include})$"))
        if self._exclude is not None:
            changes = changes.filter(~name.rlike(f"^(?:{self.exclude})$"))
        return changes

    def not_yet_applied(self, changes: DataFrame, state: JobState) -> DataFrame:
        """Without the changes applied already: at or below the resolved ts their table applied (or had
        applied when it was renamed or dropped), or, for a format without watermarks, at or below the
        newest sequence applied from their partition (a re-delivered range after the producer
        restarted)."""
        from pyspark.sql import functions as F

        if not self.watermarks:
            return self._past_sequences(changes, state)
        applied_ts = {**state.gone, **{key: known.applied_ts for key, known in state.tables.items()}}
        applied = {key: ts for key, ts in applied_ts.items() if ts is not None}
        if not applied:
            return changes
        mark = looked_up(applied, ("database", "table"), "bigint")
        return changes.filter(mark.isNull() | F.col("commit_ts").isNull() | (F.col("commit_ts") > mark))

    def _past_sequences(self, changes: DataFrame, state: JobState) -> DataFrame:
        from pyspark.sql import functions as F

        applied = {tp: Decimal(position.sequence) for tp, position in state.positions.items()
                   if position.sequence is not None}
        if not applied:
            return changes
        mark = looked_up(applied, ("topic", "partition"), "decimal(38,0)")
        sequence = F.col("sequence").cast("decimal(38,0)")
        # Where changes share a sequence (Canal-JSON's ``es``: a millisecond), at or above, not above: the
        # rest of a partition's newest millisecond may arrive after the batch that applied part of it.
        # Re-applying the newest change of a partition again is harmless to the tables: no later change
        # of its key was applied (a key stays in one partition); the changelog may show it twice.
        newer = sequence > mark if self.unique_sequences else sequence >= mark
        return changes.filter(mark.isNull() | sequence.isNull() | newer)

    def remember_sequences(self, state: JobState, applicable: DataFrame) -> None:
        from pyspark.sql import functions as F

        newest = (applicable.groupBy("topic", "partition")
                  .agg(F.max(F.col("sequence").cast("decimal(38,0)")).alias("newest")).collect())
        for row in newest:
            position = state.positions.get((row["topic"], row["partition"]))
            if position is not None and row["newest"] is not None:
                position.sequence = max(position.sequence or 0, int(row["newest"]))

    def deduplicated(self, changes: DataFrame, shared_kinds: frozenset[str] | None = None
                     ) -> tuple[DataFrame, DataFrame | None]:
        """Each change once: re-delivered copies (same table, op, commit ts or sequence, images) dropped,
        the first delivery kept; only records of ``shared_kinds`` compared, where it is known (see
        :attr:`Facts.shared_kinds`): none, and ``changes`` are as they are. Also the copies found,
        persisted, for the caller to unpersist once done with the changes (None where none were looked
        for or found).

        Rows are many: only those whose identity hashes like another's can be copies, so a count of the
        hashes finds them, and only those go through the exact comparison (a window over whole images,
        which costs a shuffle and sort of every column). DDLs are few (one per partition each, in a
        format that sends them to every partition): where only they may be copies, all of them are
        compared, and no row is hashed. The copies are kept as their places (topic, partition, offset,
        index: one record each), few beside the batch, and joined away at each use of the changes:
        persisting the batch's changes again cost more (a stream that sends each DDL to every partition
        has copies in every batch with a DDL)."""
        from pyspark.sql import functions as F

        if shared_kinds is not None and not shared_kinds:
            return changes, None
        if shared_kinds is not None and "row" not in shared_kinds:
            copies = _copies(with_identity(changes.filter(F.col("kind").isin(*sorted(shared_kinds)))))
        else:
            hashed = with_identity(changes)
            # The shared hashes stay a Spark aggregate, not rows collected and made into a DataFrame again:
            # such a DataFrame is made anew by a Python worker at each use of the query. Persisted, so that
            # the join below reads the aggregate the check computed rather than counting the batch again.
            shared = hashed.groupBy("_identity").count().filter("count > 1").select("_identity").persist()
            try:
                if not shared.take(1):
                    return changes, None
                copies = _copies(hashed.join(F.broadcast(shared), "_identity"))
            finally:
                shared.unpersist()
        # Null-safe: a record decoded from no message of a partition has no place there.
        same_place = [F.col(c).eqNullSafe(F.col(f"_copy_{c}")) for c in PLACE]
        return changes.join(F.broadcast(copies), same_place, "left_anti"), copies


def _copies(compared: DataFrame) -> DataFrame:
    """The places of the records of ``compared`` (with their identity) that repeat an earlier one of the
    same identity, persisted and counted."""
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first = Window.partitionBy(*IDENTITY).orderBy("partition", "offset", "index")
    copies = (compared.withColumn("_copy", F.row_number().over(first)).filter("_copy > 1")
              .select(*(F.col(c).alias(f"_copy_{c}") for c in PLACE)).persist(StorageLevel.MEMORY_AND_DISK_DESER))
    copies.count()
    return copies


# The kinds of change record: the changes that may apply, and that may be copies.
CHANGE_KINDS = ("row", "ddl")
# Where a change record was decoded: one record each.
PLACE = ("topic", "partition", "offset", "index")
# What makes two change records the same change, whatever their place in Kafka.
IDENTITY = ("kind", "database", "table", "op", "commit_ts", "sequence", "before", "after", "event_id")


def change_records(records: DataFrame) -> DataFrame:
    """The records of :data:`CHANGE_KINDS` among ``records``."""
    from pyspark.sql import functions as F

    return records.filter(F.col("kind").isin(*CHANGE_KINDS))


def with_identity(changes: DataFrame) -> DataFrame:
    """``changes`` with ``event_id`` (a DDL's statement) and ``_identity``, a hash of :data:`IDENTITY`:
    records that hash unlike are not copies of one another."""
    from pyspark.sql import functions as F

    # A DDL is sent to every partition: its copies differ only in their origin.
    event_id = F.when(F.col("kind") == "ddl", F.get_json_object("event", "$.sql"))
    return changes.withColumn("event_id", event_id).withColumn("_identity", F.xxhash64(*IDENTITY))


def looked_up(marks: Mapping[tuple[Any, ...], Any], columns: Sequence[str], value_type: str) -> Column:
    """What ``marks`` holds for a record's ``columns`` (its key: a table's database and name, a topic and
    partition), as ``value_type``; null where it holds nothing. A map in the query rather than a DataFrame
    of the marks joined: a DataFrame made from Python rows is made again, by a Python worker, at every
    use of a query that reads it, and a batch's changes are read several times."""
    from pyspark.sql import functions as F

    def key(parts: Sequence[Column]) -> Column:
        return F.struct(*(part.alias(f"k{index}") for index, part in enumerate(parts)))

    entries = [part for found, value in marks.items()
               for part in (key([F.lit(value_part) for value_part in found]), F.lit(value).cast(value_type))]
    return F.element_at(F.create_map(*entries), key([F.col(name) for name in columns]))


def net_changes(changes: DataFrame, groups: Sequence[str] = ()) -> DataFrame:
    """One record per key and group (the ``groups`` columns kept, say a batch's table and segment): the
    last change of it, as (``_key``, ``_op``, ``_image``). Copies of a change need not be dropped first:
    whichever copy comes last, its image is the same.

    Last by commit ts, then, for a format without one, by the order it carries (``sequence``: Canal's
    ``es``, DataWorks' ``sequenceId``), and only then by place in Kafka: a range TiCDC re-sends puts a
    change's copy after the later changes of its key, and a copy whose first delivery an earlier batch
    applied is not dropped as a copy (it is at the newest sequence that batch applied, which may be
    shared)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = {"commit_ts": F.col("commit_ts"), "_sequence": F.col("sequence").cast("decimal(38,0)"),
             "partition": F.col("partition"), "offset": F.col("offset"), "index": F.col("index")}
    new_key = F.struct(F.col("key").alias("k"), F.col("op").alias("op"),
                       F.coalesce(F.col("after"), F.col("before")).alias("image"))
    old_key = F.when(F.col("old_key").isNotNull(),
                     F.struct(F.col("old_key").alias("k"), F.lit("delete").alias("op"), F.col("before").alias("image")))
    exploded = (changes.select(*groups, F.explode(F.array(new_key, old_key)).alias("c"),
                               *(column.alias(name) for name, column in order.items()))
                .filter("c IS NOT NULL"))
    newest_first = Window.partitionBy(*groups, "c.k").orderBy(*(F.col(name).desc_nulls_last() for name in order))
    return (exploded.withColumn("_rank", F.row_number().over(newest_first)).filter("_rank = 1")
            .select(*groups, F.col("c.k").alias("_key"), F.col("c.op").alias("_op"), F.col("c.image").alias("_image")))


