"""Work spread over Spark's executors one task per item (an offset range to read or decode)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

Item = TypeVar("Item")


def one_task_each(spark: SparkSession, items: Sequence[Item], work: Callable[[list[Item]], Iterator[pa.RecordBatch]],
                  ddl: str) -> DataFrame:
    """The record batches ``work`` makes of ``items`` on the executors, one Spark task per item, as a
    DataFrame of schema ``ddl`` (``mapInArrow``).

    The frame the tasks start from is a range of item numbers, made in the JVM: a DataFrame made from a
    Python RDD of the items would run a Python stage of its own before the work (a Python worker per
    partition, every time the frame is computed). The items travel with the function, which Spark sends
    once per executor for a stage, whatever the number of tasks."""
    payload = pickle.dumps(list(items))

    def run(batches: Iterable[Any]) -> Iterator[pa.RecordBatch]:
        chosen = pickle.loads(payload)
        yield from work([chosen[number] for batch in batches for number in batch.column("id").to_pylist()])

    return spark.range(0, len(items), 1, max(1, len(items))).mapInArrow(run, ddl)
