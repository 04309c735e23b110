"""Raw records and change records as DataFrames: read, decode, and view per table.

* :func:`read_records`: a Kafka topic or a captured topic as a DataFrame of raw records, bounded by
  offsets, read on the executors.
* :func:`decode_changes`: a DataFrame of raw records (``read_records``', or Spark's own Kafka source's)
  decoded on the executors into *change records* (:data:`cdclake.spark.changes.CHANGE_FIELDS`).
* :func:`table_views`: change records as one DataFrame per upstream table, with its real column types.

:class:`cdclake.spark.replicate.ChangeApplier` applies either kind of records to Iceberg tables.

Raw records have the columns Spark's Kafka source gives them: ``value`` (binary or string) and
``offset`` are required; ``key``, ``topic`` (default ``""``), ``partition`` (default 0) and
``timestamp`` (a timestamp, or epoch milliseconds as a number) are read where present; other columns
are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import OptionError
from cdclake.formats import get_codec
from cdclake.ordering.records import spark_ddl
from cdclake.schema.lake import IMAGE_JSON_OPTIONS, lake_cast, sql_string
from cdclake.sources import open_source
from cdclake.sources.ranges import OffsetRange, Source
from cdclake.spark.changes import (
    CHANGE_DDL,
    RECORD_FIELDS,
    RECORD_NAMES,
    CarriedMessage,
    decode_records,
)
from cdclake.spark.frames import local_frame
from cdclake.spark.tasks import one_task_each
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RECORD_DDL = spark_ddl(RECORD_FIELDS)
# Per-table views: the change's own columns, ahead of the table's.
VIEW_COLUMNS = ("_op", "_commit_ts", "_topic", "_partition", "_offset")

Carried = Mapping[tuple[str, int], Sequence[tuple[CarriedMessage, str | None, str | None, int | None]]]


def read_records(
    spark: SparkSession,
    *,
    captured: str | Path | None = None,
    kafka: Mapping[str, Any] | None = None,
    topics: Sequence[str] | None = None,
    topic_pattern: str | None = None,
    starting_offsets: Mapping[tuple[str, int], int] | None = None,
    ending_offsets: Mapping[tuple[str, int], int] | None = None,
) -> DataFrame:
    """The raw records of a captured topic directory (``captured``) or of Kafka topics (``kafka``: the
    librdkafka settings, ``bootstrap.servers`` at least; with ``topics`` or ``topic_pattern``), from
    ``starting_offsets`` (default: each partition's first) up to ``ending_offsets`` (exclusive; default:
    its end now), keyed by (topic, partition). One Spark task reads each partition's range; columns:
    ``topic, partition, offset, timestamp, key, value``."""
    from pyspark.sql import functions as F

    source = open_source(captured=captured, kafka=kafka, topics=topics, topic_pattern=topic_pattern)
    starting, ending = starting_offsets or {}, ending_offsets or {}
    ranges = []
    for (topic, partition), extent in sorted(source.extents().items()):
        start = max(starting.get((topic, partition), extent.low), extent.low)
        end = min(ending.get((topic, partition), extent.high), extent.high)
        if end > start:
            ranges.append(OffsetRange(topic, partition, start, end))
    records = read_ranges(spark, source, ranges)
    return records.select("topic", "partition", "offset", F.timestamp_millis("timestamp_ms").alias("timestamp"),
                          "key", "value")


def read_ranges(spark: SparkSession, source: Source, ranges: Sequence[OffsetRange]) -> DataFrame:
    """The records of ``ranges`` (:data:`RECORD_FIELDS`), one task per range."""

    def read(mine: list[OffsetRange]) -> Iterator[Any]:
        import pyarrow as pa

        from cdclake.spark.changes import record_arrow_schema

        for offset_range in mine:
            columns: dict[str, list[Any]] = {name: [] for name in RECORD_NAMES}
            topic, partition = offset_range.topic, offset_range.partition
            for offset, timestamp_ms, key, value, _headers in source.records(offset_range):
                for name, field in zip(RECORD_NAMES, (topic, partition, offset, timestamp_ms, key, value, None),
                                       strict=True):
                    columns[name].append(field)
            yield pa.RecordBatch.from_pydict(columns, schema=record_arrow_schema())

    return one_task_each(spark, list(ranges), read, RECORD_DDL)


def raw_records(frame: DataFrame) -> DataFrame:
    """``frame``'s raw records in the columns :func:`decode_records` reads (see the module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, TimestampType

    types = {f.name: f.dataType for f in frame.schema.fields}
    missing = [name for name in ("value", "offset") if name not in types]
    if missing:
        raise OptionError(f"raw records need the columns value and offset; this DataFrame has no {', '.join(missing)}"
                          f" (its columns: {', '.join(frame.columns)})")
    timestamp = F.lit(None).cast("bigint")
    if isinstance(types.get("timestamp"), TimestampType):
        timestamp = F.unix_millis("timestamp")
    elif isinstance(types.get("timestamp"), NumericType):
        timestamp = F.col("timestamp").cast("bigint")
    return frame.select(
        (F.col("topic").cast("string") if "topic" in types else F.lit("")).alias("topic"),
        (F.col("partition").cast("int") if "partition" in types else F.lit(0)).alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        timestamp.alias("timestamp_ms"),
        (F.col("key").cast("binary") if "key" in types else F.lit(None).cast("binary")).alias("key"),
        F.col("value").cast("binary").alias("value"),
        (F.col("role") if "role" in types else F.lit(None).cast("string")).alias("role"),
    )


def decode_changes(records: DataFrame, format: str, options: Mapping[str, Any] | None = None,
                   **format_options: Any) -> DataFrame:
    """``records`` decoded in ``format`` into change records, one per event (see
    :mod:`cdclake.spark.changes` for what each kind holds), on the executors.

    The format's options go by their upstream names, in ``options`` or as keyword arguments
    (``enable_tidb_extension=True`` stands for ``enable-tidb-extension``); an unknown one fails at once
    with the list of valid ones. Each partition's records are decoded in offset order, apart from any
    other call: what a message needs from an earlier call (a Simple protocol row whose BOOTSTRAP came
    before) comes out as a ``carry`` record, which :class:`~cdclake.spark.replicate.ChangeApplier`
    decodes again with what it kept of earlier batches. ``records`` must be a batch DataFrame: in a
    streaming query, call this inside ``foreachBatch``."""
    resolved = get_codec(format).resolve(options, **format_options)
    return decode_frame(raw_records(records), format, resolved, {})


def decode_frame(records: DataFrame, format_name: str, options: Mapping[str, Any], carried: Carried) -> DataFrame:
    """Change records of ``records`` (in :data:`RECORD_FIELDS`), each partition's in offset order after
    the messages ``carried`` into it."""
    carried_messages = {tp: [entry[0] for entry in entries] for tp, entries in carried.items()}

    def decode(batches: Iterable[Any]) -> Iterator[Any]:
        yield from decode_records(batches, format_name, options, carried_messages)

    ordered = records.repartition("topic", "partition").sortWithinPartitions("topic", "partition", "offset")
    return ordered.mapInArrow(decode, CHANGE_DDL)


def with_carried_decoded(changes: DataFrame, format_name: str, options: Mapping[str, Any],
                         carried: Carried, ranges: Iterable[OffsetRange]) -> DataFrame:
    """Change records that :func:`decode_changes` made of ``ranges`` without the messages a job carries
    from earlier batches, completed: the messages held in them (rows waiting for a schema) and those the
    job holds for their partitions decoded again, per partition in offset order after every schema
    message, the job's and theirs."""
    from pyspark.sql import functions as F

    spark = changes.sparkSession
    read = {(r.topic, r.partition) for r in ranges}
    kept = [(origin.topic, origin.partition, origin.offset, entry.message.timestamp_ms, entry.message.key,
             entry.message.value, entry.role)
            for tp, entries in carried.items() if tp in read
            for entry, *_ in entries
            for origin in (entry.message.origin,)]
    theirs = changes.filter("kind = 'carry'").select(
        "topic", "partition", "offset", "timestamp_ms", F.col("raw_key").alias("key"),
        F.col("raw_value").alias("value"), F.col("reason").alias("role"))
    again = theirs.unionByName(local_frame(spark, kept, RECORD_FIELDS))
    decoded = decode_frame(again, format_name, options, {})
    return changes.filter("NOT (kind = 'carry' AND reason = 'held')").unionByName(decoded)


def ranges_of(frame: DataFrame) -> list[OffsetRange]:
    """The offsets ``frame``'s records span, per partition (one small aggregate collected)."""
    from pyspark.sql import functions as F

    spans = (frame.filter("offset IS NOT NULL").groupBy("topic", "partition")
             .agg(F.min("offset").alias("low"), F.max("offset").alias("high")).collect())
    return sorted(OffsetRange(row["topic"], row["partition"], row["low"], row["high"] + 1) for row in spans)


def table_views(changes: DataFrame) -> dict[str, DataFrame]:
    """The row changes of ``changes``, one DataFrame per upstream table (keyed ``database.table``):
    :data:`VIEW_COLUMNS` (``_op``, ``_commit_ts`` and where the change was read), then the table's
    columns with their lake types (:mod:`cdclake.schema.lake`) holding the row after the change, or
    before it for a delete. A column the batch's rows carry with several types has its newest."""
    from pyspark.sql import functions as F

    rows = changes.filter("kind = 'row'")
    shapes = (rows.groupBy("database", "table", "columns")
              .agg(F.min(F.struct("commit_ts", "partition", "offset")).alias("first"))
              .orderBy("first").collect())
    columns: dict[tuple[str, str], dict[str, MySQLType]] = {}
    for shape in shapes:
        typed = columns.setdefault((shape["database"], shape["table"]), {})
        typed.update({name: MySQLType.parse(text) for name, text in orjson.loads(shape["columns"]).items()})
    views = {}
    for (database, table), typed in columns.items():
        image = F.from_json(F.coalesce("after", "before"), "map<string,string>", IMAGE_JSON_OPTIONS).alias("_m")
        mine = rows.filter((F.col("database") == database) & (F.col("table") == table))
        views[f"{database}.{table}"] = mine.select(
            F.col("op").alias("_op"), F.col("commit_ts").alias("_commit_ts"), F.col("topic").alias("_topic"),
            F.col("partition").alias("_partition"), F.col("offset").alias("_offset"), image,
        ).select(*VIEW_COLUMNS, *[F.expr(lake_cast(f"_m[{sql_string(name)}]", mtype)).alias(name)
                                  for name, mtype in typed.items()])
    return views
