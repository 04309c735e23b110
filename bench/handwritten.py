"""The baseline of bench/replicate.py: the job a Spark user would write by hand to mirror a Canal-JSON
stream (with the TiDB extension) into Iceberg, over the same messages cdclake replicates; and the same
job's idea for the Simple protocol (JSON), which differs only in its envelope (below).

It reads the messages with Spark alone: a captured topic (docs/captured-topics.md: JSON lines whose
``value`` is base64 text) with Spark's JSON reader, ``unbase64`` and a cast to string; a Kafka topic with
Spark's Kafka source (``spark.read.format("kafka")``, earliest to latest). Each value is parsed with
``from_json`` and a schema of Canal-JSON's envelope, ``posexplode(data)`` gives one change per row
image, and then, as such a job does:

* every change is appended to a changelog table (before and after images as JSON);
* the newest image per primary key (Canal-JSON's ``pkNames``; a table without one is keyed by its whole
  row) is kept, by commit ts (``_tidb.commitTs``), then partition, offset and place in the message, with
  a window's ``row_number``;
* one MERGE per table applies them (a delete deletes, an insert or update replaces the row or inserts
  it), the images typed by the tables' final schema, which the job is given: ``try_cast`` of each text
  to its column's type, binary columns as the ISO-8859-1 text Canal-JSON carries bytes in.

It ignores DDL (a column renamed or dropped on the way is simply absent from the final schema), the
resolved ts and exactly once: it is the job cdclake's correctness is weighed against, not a replacement.

The Simple protocol's row messages carry one image each, ``data`` and ``old`` as objects, ``commitTs``
beside them, bytes in base64 and no key: the job takes the key columns from the final schema it is given.
Open Protocol packs events into binary batches that Spark's readers cannot take apart: a user would need
a UDF there, so it has no hand-written job here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The envelopes, as much of them as the job reads; the commit ts orders the changes (Canal-JSON: the
# TiDB extension's).
CANAL_JSON = ("`database` string, `table` string, `pkNames` array<string>, `isDdl` boolean, `type` string, "
              "`data` array<map<string,string>>, `old` array<map<string,string>>, `_tidb` struct<`commitTs`: bigint>")
SIMPLE = ("`database` string, `table` string, `type` string, `commitTs` bigint, `data` map<string,string>, "
          "`old` map<string,string>")
# How each format carries a binary column's bytes in its text, as a Spark SQL expression of the text.
BINARY = {"canal-json": "encode({}, 'ISO-8859-1')", "simple": "unbase64({})"}
FORMATS = tuple(BINARY)  # what the job reads; cdclake.formats' names
# What the job does with each format's messages, and what it keys them by, for a report.
PARSING = {
    "canal-json": ("Canal-JSON's envelope parsed with `from_json`, `posexplode(data)`", "`pkNames`"),
    "simple": ("the Simple protocol's envelope parsed with `from_json` (one image pair a message)",
               "the key columns of the final schema"),
}
CHANGELOG = ("`database` string, `table` string, `op` string, `commit_ts` bigint, `before` string, "
             "`after` string, `partition` int, `offset` bigint, `index` int")


@dataclass(frozen=True)
class FinalTable:
    """A mirror's final schema as the job is given it: its columns with their Spark types, its key columns
    (none for a table without a key), and the Iceberg table properties to create it with."""

    database: str
    table: str
    columns: tuple[tuple[str, str], ...]  # (name, Spark SQL type)
    keys: tuple[str, ...]
    properties: Mapping[str, str]


@dataclass
class HandwrittenResult:
    name: str
    label: str
    seconds: float  # reading to the last MERGE, tables created beforehand not counted
    setup_seconds: float  # creating the tables
    changes: int  # rows of its changelog
    merges: int
    parallel: int  # MERGEs at a time


def final_tables(spark: Any, lake_tables: Mapping[str, str], key_property: str) -> list[FinalTable]:
    """The final schema of each mirror a cdclake run made (``upstream database.table`` -> lake table): the
    columns and types, the key columns cdclake recorded in ``key_property`` and the row-level write
    settings (``write.*``, ``format-version``), so that both jobs write tables alike."""
    found = []
    for upstream, lake_table in sorted(lake_tables.items()):
        database, table = upstream.split(".", 1)
        columns = tuple((f.name, f.dataType.simpleString()) for f in spark.table(lake_table).schema.fields)
        properties = {row["key"]: row["value"] for row in spark.sql(f"SHOW TBLPROPERTIES {lake_table}").collect()}
        keys = tuple(k for k in properties.get(key_property, "").split(",") if k)
        settings = {k: v for k, v in properties.items() if k.startswith("write.") or k == "format-version"}
        found.append(FinalTable(database, table, columns, keys, settings))
    return found


def captured_messages(spark: Any, root: Path, topic: str) -> Any:
    """The messages of a captured topic: partition, offset and value as text."""
    from pyspark.sql import functions as F

    lines = spark.read.schema("`offset` bigint, `value` string").json(str(root / topic / "*" / "*.jsonl"))
    partition = F.regexp_extract("_metadata.file_path", r"/(\d+)/\d+\.jsonl$", 1).cast("int")
    return lines.select(partition.alias("partition"), "offset", F.unbase64("value").cast("string").alias("value"))


def kafka_messages(spark: Any, bootstrap_servers: str, topic: str) -> Any:
    """The messages of a Kafka topic, all of them, with Spark's Kafka source."""
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
            .option("subscribe", topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
            .load().selectExpr("partition", "offset", "CAST(value AS string) AS value"))


def row_changes(messages: Any, format_name: str, tables: Sequence[FinalTable]) -> Any:
    """One row per row image of the messages' INSERTs, UPDATEs and DELETEs: its table, op, commit ts,
    key columns (``pkNames``) and place, ``before`` (an update's old image, a delete's row) and ``after``
    (none for a delete)."""
    from pyspark.sql import functions as F

    if format_name == "simple":
        return _simple_changes(messages, tables)
    parsed = messages.select("partition", "offset", F.from_json("value", CANAL_JSON).alias("m")).select(
        "partition", "offset", "m.*")
    rows = parsed.filter("NOT isDdl AND type IN ('INSERT', 'UPDATE', 'DELETE')")
    exploded = rows.select("database", "table", "type", F.col("_tidb.commitTs").alias("commit_ts"), "pkNames",
                           "partition", "offset", "old", F.posexplode("data").alias("index", "image"))
    return exploded.selectExpr(
        "database", "table", "type AS op", "commit_ts", "pkNames", "partition", "offset", "index",
        "CASE type WHEN 'DELETE' THEN image WHEN 'UPDATE' THEN get(old, index) END AS before",
        "CASE WHEN type != 'DELETE' THEN image END AS after")


def _simple_changes(messages: Any, tables: Sequence[FinalTable]) -> Any:
    """:func:`row_changes` of Simple protocol messages: one image pair each, the keys from ``tables``."""
    from pyspark.sql import functions as F

    keys = ", ".join(f"{_literal(f'{t.database}.{t.table}')}, CAST(array({', '.join(map(_literal, t.keys))}) "
                     "AS array<string>)" for t in tables)
    parsed = messages.select("partition", "offset", F.from_json("value", SIMPLE).alias("m")).select(
        "partition", "offset", "m.*")
    return parsed.filter("type IN ('INSERT', 'UPDATE', 'DELETE')").selectExpr(
        "database", "table", "type AS op", "commitTs AS commit_ts",
        f"try_element_at(map({keys}), concat(database, '.', table)) AS pkNames", "partition", "offset",
        "0 AS index", "CASE WHEN type != 'INSERT' THEN old END AS before",
        "CASE WHEN type != 'DELETE' THEN data END AS after")


def net_changes(changes: Any) -> Any:
    """The newest change per key: ``key`` (the ``pkNames`` values, or for a table without a key its row's
    values that are not null, so that a column added on the way does not change it), ``op`` (``DELETE``
    or ``UPSERT``) and ``image``. Without a key an update is the old row deleted and the new one
    inserted, since its identity is its values."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keyed = "coalesce(size(pkNames), 0) > 0"

    def whole(image: str) -> str:
        return f"array(to_json(map_filter({image}, (k, v) -> v IS NOT NULL)))"

    identities = F.expr(f"""
        CASE WHEN {keyed} THEN array(named_struct('seq', 0, 'op', IF(op = 'DELETE', 'DELETE', 'UPSERT'),
                                                 'key', transform(pkNames, k -> coalesce(after, before)[k]),
                                                 'image', coalesce(after, before)))
             WHEN op = 'INSERT' THEN array(named_struct('seq', 0, 'op', 'UPSERT', 'key', {whole('after')},
                                                        'image', after))
             WHEN op = 'DELETE' THEN array(named_struct('seq', 0, 'op', 'DELETE', 'key', {whole('before')},
                                                        'image', before))
             ELSE array(named_struct('seq', 0, 'op', 'DELETE', 'key', {whole('before')}, 'image', before),
                        named_struct('seq', 1, 'op', 'UPSERT', 'key', {whole('after')}, 'image', after))
        END""")
    each = changes.select("database", "table", "commit_ts", "partition", "offset", "index",
                          F.explode(identities).alias("c")).select("*", "c.*").drop("c")
    newest_first = Window.partitionBy("database", "table", "key").orderBy(
        *(F.col(c).desc() for c in ("commit_ts", "partition", "offset", "index", "seq")))
    return (each.withColumn("n", F.row_number().over(newest_first)).filter("n = 1")
            .select("database", "table", "key", "op", "image"))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _typed(column: str, spark_type: str, format_name: str) -> str:
    text = f"image[{_literal(column)}]"
    if spark_type == "string":
        return text
    if spark_type == "binary":
        return BINARY[format_name].format(text)
    return f"try_cast({text} AS {spark_type})"


def merge_statement(target: str, source: str, table: FinalTable) -> str:
    keys = table.keys or tuple(name for name, _ in table.columns)
    on = " AND ".join(f"t.{_quote(k)} <=> s.{_quote(k)}" for k in keys)
    names = [_quote(name) for name, _ in table.columns]
    return (f"MERGE INTO {target} t USING {source} s ON {on} "
            "WHEN MATCHED AND s._op = 'DELETE' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{n} = s.{n}' for n in names)} "
            f"WHEN NOT MATCHED AND s._op != 'DELETE' THEN INSERT ({', '.join(names)}) "
            f"VALUES ({', '.join(f's.{n}' for n in names)})")


def create_tables(spark: Any, catalog: str, name: str, tables: Sequence[FinalTable]) -> tuple[str, list[str]]:
    """The changelog and each table, made anew in namespaces of ``name``."""
    changelog = f"`{catalog}`.`{name}`.`changelog`"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{catalog}`.`{name}`")
    spark.sql(f"CREATE TABLE {changelog} ({CHANGELOG}) USING iceberg TBLPROPERTIES ('format-version'='2')")
    made = []
    for table in tables:
        namespace = f"`{catalog}`.{_quote(f'{name}_{table.database}')}"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
        columns = ", ".join(f"{_quote(c)} {t}" for c, t in table.columns)
        properties = ", ".join(f"{_literal(k)}={_literal(v)}" for k, v in table.properties.items())
        ident = f"{namespace}.{_quote(table.table)}"
        spark.sql(f"CREATE TABLE {ident} ({columns}) USING iceberg TBLPROPERTIES ({properties})")
        made.append(ident)
    return changelog, made


def run(spark: Any, messages: Any, format_name: str, tables: Sequence[FinalTable], catalog: str, name: str,
        label: str, parallel: int = 1) -> HandwrittenResult:
    """The whole stream in one pass: changelog, net change per key, one MERGE per table (``parallel`` at a
    time), timed from reading the first message to the last MERGE's commit."""
    start = time.perf_counter()
    changelog, targets = create_tables(spark, catalog, name, tables)
    setup = time.perf_counter() - start
    start = time.perf_counter()
    changes = row_changes(messages, format_name, tables).persist()
    changes.selectExpr("database", "table", "op", "commit_ts", "to_json(before) AS before",
                       "to_json(after) AS after", "partition", "offset", "index").writeTo(changelog).append()
    net = net_changes(changes).persist()

    def merge(index: int) -> None:
        table = tables[index]
        of_table = net.filter((net.database == table.database) & (net.table == table.table))
        typed = (f"{_typed(column, kind, format_name)} AS {_quote(column)}" for column, kind in table.columns)
        source = of_table.selectExpr("op AS _op", *typed)
        view = f"handwritten_{name}_{index}"
        source.createOrReplaceTempView(view)
        try:
            spark.sql(merge_statement(targets[index], view, table))
        finally:
            spark.catalog.dropTempView(view)

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        for future in [pool.submit(merge, index) for index in range(len(tables))]:
            future.result()
    seconds = time.perf_counter() - start
    net.unpersist()
    changes.unpersist()
    logged = spark.table(changelog).count()
    return HandwrittenResult(name, label, seconds, setup, logged, len(tables), parallel)


def parse_only(messages: Any, format_name: str, tables: Sequence[FinalTable]) -> tuple[float, int]:
    """Spark's own parsing of the messages into row changes (``from_json``, ``posexplode``), counted by op
    with each image's size, so that every image is parsed and nothing is kept: the seconds and the row
    changes. Issue 20's fifth target weighs cdclake's decoding against this, per core (both use every core)."""
    from pyspark.sql import functions as F

    start = time.perf_counter()
    counted = row_changes(messages, format_name, tables).groupBy("op").agg(
        F.count("*").alias("changes"), F.sum(F.size(F.coalesce("after", "before"))).alias("values")).collect()
    return time.perf_counter() - start, sum(row["changes"] for row in counted)
