"""``cdclake maintain``'s work, as a function: a job's mirrors (and history tables) compacted and its
tables' old snapshots expired, at once, what ``cdclake replicate`` does on its clocks (``compact-every-s``,
``expire-snapshots-every-s``) between batches.

Run it while the job is stopped, or leave it to the job's own cadence: Iceberg refuses a MERGE whose
deletes point into data files a compaction replaced meanwhile, and a compaction of files a MERGE
meanwhile deleted from; the job then stops, to resume on restart without loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.schema.history import HISTORY_SUFFIX
from cdclake.schema.lake import unquote_parts
from cdclake.sinks.base import Compaction
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.sinks.iceberg.tables import table_exists

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def maintain(spark: SparkSession, catalog: str = "lake", namespace: str = "cdclake", *, compact: bool = True,
             expire: bool = True) -> list[Compaction]:
    """The mirrors of the job whose own tables are in ``namespace`` of the Spark catalog ``catalog``, and
    the history tables beside them, those holding delete files compacted (``compact``); then snapshots
    expired (``expire``) on them and the job's own tables, as each table's ``history.expire.*`` properties
    say. What each compaction did."""
    sink = IcebergSink(spark, catalog, namespace)
    state, _ = sink.load_state()
    mirrors = [known.lake_table for known in state.tables.values()]
    histories = (_history_beside(sink, mirror) for mirror in mirrors)
    targets = mirrors + [history for history in histories if table_exists(spark, history)]
    compacted = sink.compact(targets) if compact else []
    if expire:
        sink.maintain(targets)
    return compacted


def _history_beside(sink: IcebergSink, mirror: str) -> str:
    *_, namespace, table = unquote_parts(mirror)
    return sink.target(namespace, table + HISTORY_SUFFIX)
