"""A Spark session with Iceberg, offline on a laptop or on a cluster by configuration alone."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cdclake.spark.jars import ICEBERG_PACKAGE, packaged_iceberg_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_CATALOG = "lake"
# In local mode the executors share the driver's heap, where a batch's decoded records are cached
# while it is applied: a batch of 1,100,000 records ran out of Spark's default 1 GiB.
LOCAL_DRIVER_MEMORY = "4g"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def iceberg_conf(catalog: str = DEFAULT_CATALOG, warehouse: str | Path = "warehouse") -> dict[str, str]:
    """Spark settings for an Iceberg Hadoop catalog named ``catalog`` in the directory ``warehouse``.

    The runtime jar comes from the installed ``snowpark-connect-deps-iceberg`` wheel where present
    (nothing is downloaded), else from Maven coordinates.
    """
    conf = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{catalog}.type": "hadoop",
        f"spark.sql.catalog.{catalog}.warehouse": str(Path(warehouse).absolute()),
    }
    jars = packaged_iceberg_jars()
    if jars is None:
        conf["spark.jars.packages"] = ICEBERG_PACKAGE
    else:
        conf["spark.jars"] = ",".join(jars)
    return conf


def build_session(
    master: str | None = "local[2]",
    app_name: str = "cdclake",
    catalog: str = DEFAULT_CATALOG,
    warehouse: str | Path = "warehouse",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """The active Spark session, or a new one with an Iceberg catalog; ``conf`` overrides any setting,
    so any other Spark catalog (REST, Hive, Glue) is a matter of configuration.

    ``master=None`` leaves the master to spark-submit. Python workers run this interpreter, so a
    virtual environment's packages (pyarrow, cdclake) are there on the executors of a local run.
    A local master's driver, which runs the executors too, gets a heap of
    ``LOCAL_DRIVER_MEMORY`` rather than Spark's 1 GiB (a setting in ``conf`` wins; it takes effect
    only in a process that has not started Spark's JVM yet).
    """
    from pyspark.sql import SparkSession

    local = {"spark.driver.memory": LOCAL_DRIVER_MEMORY} if master is not None and master.startswith("local") else {}
    settings = {
        **local,
        "spark.pyspark.python": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        # Without a UI, Spark's status store still keeps the last 1,000 SQL executions with their plan
        # texts (a replication batch runs dozens): 40 MB of plan text was seen at 720 of them, in a
        # driver heap of 1 GiB that a backlog's batches need. A long-running job needs only the latest.
        "spark.sql.ui.retainedExecutions": "100",
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.sql.shuffle.partitions": "4",
        **iceberg_conf(catalog, warehouse),
        **(conf or {}),
    }
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
