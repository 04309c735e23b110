"""``cdclake maintain``'s work, as a function: a job's mirrors compacted and its tables' old snapshots
expired, at once, what ``cdclake replicate`` does on its clocks (``compact-every-s``,
``expire-snapshots-every-s``) between batches.

Run it while the job is stopped, or leave it to the job's own cadence: Iceberg refuses a MERGE whose
deletes point into data files a compaction replaced meanwhile, and a compaction of files a MERGE
meanwhile deleted from; the job then stops, to resume on restart without loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.sinks.base import Compaction
from cdclake.sinks.iceberg.sink import IcebergSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def maintain(spark: SparkSession, catalog: str = "lake", namespace: str = "cdclake", *, compact: bool = True,
             expire: bool = True) -> list[Compaction]:
    """The mirrors of the job whose own tables are in ``namespace`` of the Spark catalog ``catalog``,
    those holding delete files compacted (``compact``); then snapshots expired (``expire``) on them and
    the job's own tables, as each table's ``history.expire.*`` properties say. What each compaction did."""
    sink = IcebergSink(spark, catalog, namespace)
    state, _ = sink.load_state()
    targets = [known.lake_table for known in state.tables.values()]
    compacted = sink.compact(targets) if compact else []
    if expire:
        sink.maintain(targets)
    return compacted
