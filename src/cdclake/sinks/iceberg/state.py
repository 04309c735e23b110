"""The job's state in one Iceberg table, ``<catalog>.<namespace>.state``: the rows of
:mod:`cdclake.spark.progress`, replaced whole by one overwrite commit at each batch's end, so that the
state after a batch is one atomic commit; a batch's plan is appended before the batch reads anything."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_NAMES
from cdclake.spark.frames import local_frame
from cdclake.spark.progress import STATE_DDL, STATE_FIELDS, JobState, plan_rows, small_rows, state_from_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BATCH_PROPERTY = "cdclake.batch"
# The job reads only the state's newest snapshot; older ones are kept an hour, for a look after trouble.
STATE_SNAPSHOT_AGE_MS = 3_600_000


def state_table(catalog: str, namespace: str) -> str:
    return f"`{catalog}`.`{namespace}`.`state`"


def ensure_state_table(spark: SparkSession, catalog: str, namespace: str) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{catalog}`.`{namespace}`")
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {state_table(catalog, namespace)} ({STATE_DDL}) USING iceberg "
        f"TBLPROPERTIES ('format-version'='2', 'history.expire.max-snapshot-age-ms'='{STATE_SNAPSHOT_AGE_MS}')"
    )


def load_state(spark: SparkSession, catalog: str, namespace: str) -> tuple[JobState, DataFrame]:
    """The job state without its pending changes, and the pending changes as a DataFrame."""
    table = spark.table(state_table(catalog, namespace))
    state = state_from_rows(table.filter("state != 'pending'").collect())
    pending = table.filter("state = 'pending'").select(*CHANGE_NAMES)
    return state, pending


def write_state(spark: SparkSession, catalog: str, namespace: str, state: JobState, batch: int,
                pending: DataFrame | None) -> None:
    """Replace the state with ``state`` after ``batch`` and the ``pending`` change records, in one
    commit (no plan: the batch is over)."""
    from pyspark.sql import functions as F

    small = local_frame(spark, small_rows(state, batch), STATE_FIELDS)
    frame = small
    if pending is not None:
        frame = small.unionByName(
            pending.select(F.lit("pending").alias("state"), F.lit(batch).cast("bigint").alias("batch"),
                           F.lit(None).cast("bigint").alias("end_offset"), *CHANGE_NAMES)
        )
    (frame.writeTo(state_table(catalog, namespace))
     .option(f"snapshot-property.{BATCH_PROPERTY}", str(batch))
     .overwrite(F.lit(True)))


def append_plan(spark: SparkSession, catalog: str, namespace: str, plan: Iterable[OffsetRange], batch: int,
                stream: tuple[str, int] | None = None) -> None:
    """Record the ranges batch ``batch`` is about to apply, before it applies anything; ``stream`` the
    (application id, batch id) of the streaming query's batch it is."""
    rows = plan_rows(plan, batch, stream)
    local_frame(spark, rows, STATE_FIELDS).writeTo(state_table(catalog, namespace)).append()
