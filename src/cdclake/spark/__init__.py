"""cdclake on Apache Spark: the session, Iceberg's runtime, and the calls a Spark job of one's own uses.

Read a source, decode it, look at it per table, and apply it exactly as ``cdclake replicate`` does::

    from cdclake.spark import ChangeApplier, build_session, decode_changes, read_records, table_views

    spark = build_session(warehouse="warehouse")               # or any session with an Iceberg catalog
    records = read_records(spark, captured="capture/")          # or kafka={"bootstrap.servers": ...}, topics=[...]
    changes = decode_changes(records, "canal-json", enable_tidb_extension=True)
    for name, view in table_views(changes).items():             # "shop.orders" -> typed DataFrame
        view.show()
    ChangeApplier(spark, "canal-json", enable_tidb_extension=True)(records, 0)

In a Structured Streaming query, the applier is the ``foreachBatch`` function; Spark's retries of a
batch id apply nothing twice::

    stream = spark.readStream.format("kafka").option("kafka.bootstrap.servers", "broker:9092") \\
        .option("subscribe", "tidb-cdc").load()
    applier = ChangeApplier(spark, "open", app_id="orders-lake")
    stream.writeStream.foreachBatch(applier).option("checkpointLocation", "ckpt/").start()

``cdclake replicate`` is :class:`Replicator`, which plans its batches from a source itself and applies
them with the same engine. The change records' schema is :data:`CHANGE_FIELDS`; what each kind of
record holds is in :mod:`cdclake.spark.changes`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdclake.spark.applier import ChangeApplier
    from cdclake.spark.changes import CHANGE_FIELDS
    from cdclake.spark.records import decode_changes, read_records, table_views
    from cdclake.spark.replicate import ReplicateConfig, Replicator
    from cdclake.spark.reporting import BatchProgress, BatchReport
    from cdclake.spark.session import build_session

# Loaded when first asked for, not with the package: the sinks use cdclake.spark.progress and
# cdclake.spark.changes, and the Replicator uses the sinks, so importing any module of this package must
# not load the Replicator.
_EXPORTS = {
    "CHANGE_FIELDS": "cdclake.spark.changes",
    "BatchProgress": "cdclake.spark.reporting",
    "BatchReport": "cdclake.spark.reporting",
    "ChangeApplier": "cdclake.spark.applier",
    "ReplicateConfig": "cdclake.spark.replicate",
    "Replicator": "cdclake.spark.replicate",
    "build_session": "cdclake.spark.session",
    "decode_changes": "cdclake.spark.records",
    "read_records": "cdclake.spark.records",
    "table_views": "cdclake.spark.records",
}

__all__ = [
    "CHANGE_FIELDS",
    "BatchProgress",
    "BatchReport",
    "ChangeApplier",
    "ReplicateConfig",
    "Replicator",
    "build_session",
    "decode_changes",
    "read_records",
    "table_views",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cdclake.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
