"""Replication inside a user's own Structured Streaming query: :class:`ChangeApplier`, the
``foreachBatch`` function that applies each batch as ``cdclake replicate`` does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from cdclake.errors import OptionError
from cdclake.formats import get_codec
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.reporting import BatchReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


_SETTINGS = tuple(f.name for f in fields(ReplicateConfig) if f.name not in ("format", "format_options"))


class ChangeApplier:
    """Applies batches of a stream to Iceberg tables as ``cdclake replicate`` does: call it with a
    DataFrame and a batch id, or hand it to ``writeStream.foreachBatch``.

    A batch is raw records (from Spark's Kafka source, a file source,
    :func:`~cdclake.spark.records.read_records`) or the change records
    :func:`~cdclake.spark.records.decode_changes` made of them. Tables, changelog, dead letters and the job's
    state go to ``catalog`` as ``cdclake replicate`` lays them out (``namespace`` holds the job's own
    tables). ``app_id`` names the query: a batch id at or below the newest one applied for it is
    skipped, and one that failed half-way is finished when the query runs it again, so Spark's retries
    apply each change once. A new query (a new checkpoint) on the same state needs a new ``app_id``.

    Settings are :class:`~cdclake.spark.replicate.ReplicateConfig`'s (``catalog``, ``namespace``,
    ``include``, ``exclude``, ``table_mapping``, ``target_namespace``, ``on_bad_message``, ...) and the
    format's options, in ``options`` or as keyword arguments; an unknown name fails at once with the
    valid ones."""

    def __init__(self, spark: SparkSession, format: str, options: Mapping[str, Any] | None = None, *,
                 app_id: str = "cdclake", **settings: Any) -> None:
        codec = get_codec(format)
        config = {name: value for name, value in settings.items() if name in _SETTINGS}
        format_options = {name: value for name, value in settings.items() if name not in _SETTINGS}
        unknown = sorted(name for name in format_options if name.replace("_", "-") not in codec.options)
        if unknown:
            raise OptionError(f"ChangeApplier: unknown setting {', '.join(unknown)}; settings: "
                              f"{', '.join(_SETTINGS)}; {format} options: {', '.join(sorted(codec.options))}")
        resolved = codec.resolve(options, **format_options)
        self.config = ReplicateConfig(format, resolved, **config)
        self.app_id = app_id
        self._replicator = Replicator(spark, None, self.config)

    def __call__(self, batch: DataFrame, batch_id: int) -> BatchReport | None:
        """Apply batch ``batch_id``; None if it was applied before (or holds nothing)."""
        # A streaming query hands each batch in a session of its own (a clone): the batch's temporary
        # views, and so its MERGEs, live there.
        if batch.sparkSession is not self._replicator.spark:
            self._replicator = Replicator(batch.sparkSession, None, self.config)
        return self._replicator.apply_query_batch(batch, batch_id, self.app_id)
