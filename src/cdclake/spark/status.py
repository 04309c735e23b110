"""``cdclake status``: what a replication job has applied, read from its sink."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdclake.sinks import open_sink
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.sources.ranges import Source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def status(spark: SparkSession, catalog: str = "lake", namespace: str = "cdclake",
           source: Source | None = None, sink_url: str | None = None) -> dict[str, Any]:
    """Per table the applied resolved ts, rows and last commit; per partition the committed offset and
    (with ``source``) the lag. ``sink_url`` names the job's sink if not Iceberg tables of ``catalog``."""
    sink = (open_sink(spark, sink_url, namespace, prepare=False) if sink_url is not None
            else IcebergSink(spark, catalog, namespace))
    state, _ = sink.load_state()
    extents = source.extents() if source is not None else {}
    tables = [{"upstream": f"{database}.{table}", "lake_table": known.lake_table, "applied_ts": known.applied_ts,
               **sink.table_status(known.lake_table)}
              for (database, table), known in sorted(state.tables.items())]
    partitions = []
    for (topic, partition), position in sorted(state.positions.items()):
        extent = extents.get((topic, partition))
        partitions.append({"topic": topic, "partition": partition, "offset": position.next_offset,
                           "watermark": position.watermark,
                           "lag": None if extent is None else extent.high - position.next_offset})
    return {"batch": state.batch, "tables": tables, "partitions": partitions}
