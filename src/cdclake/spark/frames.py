"""DataFrames of records the driver holds (a batch's plan, the job's state, a database sink's pending
changes), made in the JVM from Arrow where PySpark can.

PySpark makes a DataFrame of Python rows through a Python RDD, which runs a Python stage of its own: a
Python worker per partition, each time the frame is computed (about 0.1 s for a few rows on a warm
session, measured against 0.02-0.03 s from Arrow). PySpark 4 hands an Arrow table to the JVM instead;
3.5 cannot (it reads Arrow only from pandas, and only where the session enables it), and keeps rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cdclake.ordering.records import Fields, arrow_batch, spark_ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def local_frame(spark: SparkSession, records: Sequence[tuple[Any, ...]], fields: Fields) -> DataFrame:
    """``records`` (tuples of values in the order of ``fields``) as a DataFrame of ``fields``."""
    import pyarrow as pa
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        return spark.createDataFrame(list(records), spark_ddl(fields))
    return spark.createDataFrame(pa.Table.from_batches([arrow_batch(records, fields)]))
