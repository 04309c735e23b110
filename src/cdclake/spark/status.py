"""``cdclake status`` through Spark, for an Iceberg catalog pyiceberg does not read
(:mod:`cdclake.sinks.iceberg.reader`): the same report (:mod:`cdclake.status`), a minute slower."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.sources.ranges import Source
from cdclake.status import job_status

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def status(spark: SparkSession, catalog: str = "lake", namespace: str = "cdclake",
           source: Source | None = None) -> dict[str, Any]:
    """The report of the job whose own tables are in ``namespace`` of the Spark catalog ``catalog``;
    with ``source``, each partition's lag now."""
    sink = IcebergSink(spark, catalog, namespace)
    state, _ = sink.load_state()
    return job_status(state, sink.table_status, "spark", source)
