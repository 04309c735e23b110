"""A batch's changes to tables the naming rule refuses (:mod:`cdclake.schema.names`), made dead letters.

The rule is decided on the driver, from what the batch's other facts gather (:class:`Facts`): the
tables its rows name, and its DDL records. A row is refused with its table; a DDL when any table it
names is refused: its own, or one it creates or renames a table to (which its SQL may name, not its
record). The refused records become ``error`` records before the batch is ordered, so that they are
neither applied, nor kept pending, nor in the changelog, and go to the dead letters with the batch's
undecodable messages, one per message and reason, with their coordinates. Change records carry no raw
bytes, so before the dead letters are written :func:`with_raw_messages` reads those messages again by
their coordinates: a dead letter holds the message whole, whatever made it one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import CdclakeError
from cdclake.eventjson import event_from_json
from cdclake.model import Ddl, TableSchema
from cdclake.schema.ddl import interpret
from cdclake.schema.ddl.changes import CreateTable, RenameTable
from cdclake.schema.names import Naming, column_problem
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_NAMES
from cdclake.spark.ordering import Facts

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

Wanted = Callable[[tuple[str, str]], bool]
# Ranges -> their raw records (at least topic, partition, offset, key, value), read again.
RawReader = Callable[[Sequence[OffsetRange]], "DataFrame"]


def refuse_tables(decoded: DataFrame, facts: Facts, naming: Naming, wanted: Wanted) -> DataFrame:
    """``decoded`` with the rows and DDLs of ``wanted`` tables (those the job selects) that ``naming``
    refuses made error records, counted in ``facts.errors``; the BOOTSTRAPs of refused tables taken
    out of ``facts`` (a schema, no change: nothing to dead-letter). ``decoded`` itself when nothing
    is refused."""
    from pyspark.sql import functions as F

    facts.bootstraps = [schema for schema in facts.bootstraps if naming.refusal(schema.database, schema.table) is None
                        and column_problem(c.name for c in schema.columns) is None]
    tables = {key: why for key in facts.tables if wanted(key) and (why := naming.refusal(*key)) is not None}
    ddls = [(record, why) for record in facts.ddls if (why := _ddl_refusal(record, naming, wanted)) is not None]
    if not tables and not ddls:
        return decoded
    reason = F.lit(None).cast("string")
    for record, because in ddls:
        at = [F.col(name) == record[name] for name in ("topic", "partition", "offset", "index")]
        reason = F.when((F.col("kind") == "ddl") & at[0] & at[1] & at[2] & at[3], F.lit(because)).otherwise(reason)
    marked = decoded.withColumn("_refused", F.coalesce(reason, _row_refusal(decoded, tables)))
    refusing = F.col("_refused").isNotNull()
    remade = {"kind": F.lit("error"), "reason": F.col("_refused")}
    dead = (marked.filter(refusing).select(*(remade.get(name, F.col(name)).alias(name) for name in CHANGE_NAMES))
            .dropDuplicates(["topic", "partition", "offset", "reason"]))
    facts.add_errors(dead.select("topic", "partition", "offset", "reason").collect())
    return marked.filter(~refusing).select(*CHANGE_NAMES).unionByName(dead)


def _row_refusal(decoded: DataFrame, tables: dict[tuple[str, str], str]) -> Column:
    """Per record, the reason its table is refused if it is a row of one of ``tables``, else null."""
    from pyspark.sql import functions as F

    if not tables:
        return F.lit(None).cast("string")
    # A map lookup by "database.table" would confuse a.b.c's two readings; a map keyed by both does not.
    keys = F.create_map(*(part for (database, table), why in tables.items()
                          for part in (F.struct(F.lit(database), F.lit(table)), F.lit(why))))
    return F.when(F.col("kind") == "row", keys[F.struct(F.coalesce("database", F.lit("")),
                                                          F.coalesce("table", F.lit("")))])


def _ddl_refusal(record: Any, naming: Naming, wanted: Wanted) -> str | None:
    """Why the DDL ``record`` is refused: the first table it names that the job wants and refuses, or a
    table it creates with columns no MySQL table can have (MySQL never sends that CREATE TABLE)."""
    ddl = event_from_json(orjson.loads(record["event"]))
    assert isinstance(ddl, Ddl)
    for key in _tables_named(ddl):
        reason = naming.refusal(*key) if wanted(key) else None
        if reason is not None:
            return reason
    for schema in _created(ddl):
        problem = column_problem(c.name for c in schema.columns)
        if problem is not None and wanted((schema.database, schema.table)):
            return f"{schema.database}.{schema.table}: not applied, it would have {problem}"
    return None


def _created(ddl: Ddl) -> list[TableSchema]:
    """The schemas of the tables ``ddl`` creates."""
    try:
        return [change.schema for change in interpret(ddl, None) if isinstance(change, CreateTable)]
    except CdclakeError:
        return []  # applying it fails as it would have: the statement is at fault


def _tables_named(ddl: Ddl) -> list[tuple[str, str]]:
    """The tables a DDL names: its own (none for CREATE DATABASE and the like), and those it creates
    or renames a table to."""
    named = [(ddl.database, ddl.table)] if ddl.table else []
    try:
        changes = interpret(ddl, None)
    except CdclakeError:
        return named  # applying it fails as it would have: the statement, not its names, is at fault
    for change in changes:
        if isinstance(change, CreateTable):
            named.append((change.schema.database, change.schema.table))
        elif isinstance(change, RenameTable):
            named.append((change.database, change.table))
    return named


def with_raw_messages(dead: DataFrame, read: RawReader | None) -> DataFrame:
    """``dead``'s error records, each with the raw key and value of the message it came from where it
    lacks them (a refused table's row or DDL, a DDL the job does not follow: change records), read again
    with ``read`` (None: nothing to read them from, the records as they are). Only the messages needed
    are read: per partition, from the first such offset to the last."""
    from pyspark.sql import functions as F

    if read is None:
        return dead
    places = dead.filter("raw_value IS NULL AND offset IS NOT NULL").select("topic", "partition", "offset").collect()
    if not places:
        return dead
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    for topic, partition, offset in places:
        low, high = spans.get((topic, partition), (offset, offset))
        spans[(topic, partition)] = (min(low, offset), max(high, offset))
    ranges = [OffsetRange(topic, partition, low, high + 1) for (topic, partition), (low, high) in sorted(spans.items())]
    raw = read(ranges).select("topic", "partition", "offset", F.col("key").alias("_raw_key"),
                              F.col("value").alias("_raw_value"))
    joined = dead.join(raw, ["topic", "partition", "offset"], "left")
    lacking = F.col("raw_value").isNull()
    filled = {"raw_key": F.when(lacking, F.col("_raw_key")).otherwise(F.col("raw_key")),
              "raw_value": F.coalesce("raw_value", "_raw_value")}
    return joined.select(*(filled.get(name, F.col(name)).alias(name) for name in CHANGE_NAMES))
