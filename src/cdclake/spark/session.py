"""A Spark session with Iceberg, on a laptop or on a cluster by configuration alone."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from cdclake.errors import OptionError
from cdclake.spark.jars import LOCAL_FILE_SYSTEM_KEYS, jar_settings, local_file_system_settings

if TYPE_CHECKING:
    # Named here for the layers that must not import Spark themselves (the CLI's type hints).
    from pyspark.sql import SparkSession as SparkSession

DEFAULT_CATALOG = "lake"
# In local mode the executors share the driver's heap, where a batch's decoded records are cached
# while it is applied (up to 1.8 GiB for a batch of 2,000,000 records). In Spark's default 1 GiB such
# batches ran as fast with part of the cache on disk (RELIABILITY.md, section 5; on 2026-11-25's code a
# batch of 1,100,000 records ran out of it): the larger heap is room, so that the cache stays in memory.
LOCAL_DRIVER_MEMORY = "4g"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
_JAR_SETTINGS = ("spark.jars", "spark.jars.packages")

log = logging.getLogger(__name__)

_LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""

# A JVM that lives a minute or two compiles with HotSpot's quick compiler (C1) alone: the optimizing
# compiler's threads take much of two cores for code such a run ends before it gains from (the demo's
# replication, runs side by side on 2026-11-28: 39.8 and 40.4 s with both, 29.2 and 34.1 s with C1 alone).
# C1 alone gets a code cache for one compiler, 48 MiB, which a run of many batches fills with Spark's
# generated code ("CodeCache is full. Compiler has been disabled.", then a failure to link a method handle
# that stopped the SparkContext): the tiered default, 240 MiB, is given back.
SHORT_LIVED_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# Such a run also evaluates its queries' expressions interpreted, compiling no Java for them: a few small
# batches run many distinct queries over few rows, and compiling each query's generated code (Janino, then
# the JIT) costs more than running it. The demo's replication, one process, alternated, two rounds each:
# 19.7 and 21.0 s compiled, 17.2 and 17.8 s interpreted (2026-11-29). Interpreted evaluation is the path
# Spark itself falls back to when generated code does not compile; `factoryMode` is an internal setting
# of Spark's that says to take it at once.
SHORT_LIVED_SQL_SETTINGS = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def short_lived_settings(settings: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """``settings`` with :data:`SHORT_LIVED_JAVA_OPTIONS` added to the driver JVM's options and
    :data:`SHORT_LIVED_SQL_SETTINGS`, each unless the caller's own ``given`` settings name it (theirs are
    what they asked for)."""
    key = "spark.driver.extraJavaOptions"
    short = {name: value for name, value in SHORT_LIVED_SQL_SETTINGS.items() if name not in given}
    if key not in given:
        short[key] = f"{settings.get(key, '')} {SHORT_LIVED_JAVA_OPTIONS}".strip()
    return {**settings, **short}


def new_log_file() -> Path:
    """A new file for one run's Spark log, under the temporary directory's ``cdclake-logs``."""
    directory = Path(tempfile.gettempdir()) / "cdclake-logs"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"spark-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _logging_into(log_file: Path) -> dict[str, str]:
    settings = log_file.with_suffix(".log4j2.properties")
    settings.write_text(_LOG4J2.format(path=log_file))
    return {
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={settings.as_uri()}",
    }


@contextmanager
def _stderr_into(log_file: Path) -> Iterator[None]:
    """File descriptor 2 pointed at ``log_file`` meanwhile: a JVM started now keeps it as its stderr
    for good (the JVM's own warnings, what Spark prints before its log is set up), while this
    process gets its own stderr back."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


@contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` in ``spark``'s SQL configuration meanwhile, each put back after (unset if it was). The
    configuration is the session's: a query the caller runs on the same session meanwhile gets them too."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def warehouse_location(warehouse: str | Path) -> str:
    """A URI (``s3a://bucket/lake``) as it is; a local directory made absolute."""
    text = str(warehouse)
    return text if "://" in text else str(Path(text).absolute())


def iceberg_conf(catalog: str = DEFAULT_CATALOG, warehouse: str | Path = "warehouse") -> dict[str, str]:
    """Spark settings for an Iceberg Hadoop catalog named ``catalog`` with its tables in ``warehouse``."""
    return {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{catalog}.type": "hadoop",
        f"spark.sql.catalog.{catalog}.warehouse": warehouse_location(warehouse),
    }


def build_session(
    master: str | None = "local[2]",
    app_name: str = "cdclake",
    catalog: str = DEFAULT_CATALOG,
    warehouse: str | Path = "warehouse",
    conf: Mapping[str, str] | None = None,
    log_file: Path | None = None,
    extra_jars: Sequence[str] = (),
    short_lived: bool = False,
) -> SparkSession:
    """The active Spark session, or a new one with an Iceberg catalog; ``conf`` overrides any setting,
    so any other Spark catalog (REST, JDBC, Hive, Glue) is a matter of configuration.

    Iceberg's runtime for the running Spark and Spark's Kafka source come from Maven Central
    (:mod:`cdclake.spark.jars`); a ``spark.jars`` or ``spark.jars.packages`` in ``conf`` replaces
    them, so such a setting must name Iceberg's runtime too. ``extra_jars`` are added to cdclake's own,
    each Maven coordinates or a jar's path: a JDBC catalog's driver (``org.postgresql:postgresql:42.7.7``),
    say; with a ``spark.jars`` of your own, name them there instead. ``master=None`` leaves the master to
    spark-submit. A local master's Python workers run this interpreter unless ``PYSPARK_PYTHON``
    says otherwise, so a virtual environment's packages (pyarrow, cdclake) are there on the executors
    even when it is not activated, and are forked from :mod:`cdclake.spark.worker_daemon`; its driver,
    which runs the executors too, gets a heap of ``LOCAL_DRIVER_MEMORY`` rather than Spark's 1 GiB, and
    its ``file:`` paths a file system that starts no ``chmod`` process per file
    (:func:`~cdclake.spark.jars.local_file_system_settings`) unless ``conf`` sets a class path or
    ``spark.hadoop.fs.file.impl`` itself. These take effect only in a process that has not started
    Spark's JVM yet. With ``log_file`` (see :func:`new_log_file`) a new JVM's log and its stderr go to
    that file, and no progress bars are drawn: the terminal keeps what the caller prints. A
    ``short_lived`` local session (a few small batches, as the demo's) runs its JVM with
    :data:`SHORT_LIVED_JAVA_OPTIONS`.
    """
    given = dict(conf or {})
    own_jars = [key for key in _JAR_SETTINGS if key in given]
    if extra_jars and own_jars:
        # Silently dropping either list would leave a class missing at the first query that needs it.
        raise OptionError(f"extra jars ({', '.join(extra_jars)}) are added to cdclake's own jars, which "
                          f"{own_jars[0]} replaces: name them in {own_jars[0]} too, and leave out extra jars")
    import pyspark
    from pyspark.sql import SparkSession

    local = master is not None and master.startswith("local")
    if local and "spark.pyspark.python" not in given:
        # PySpark starts its workers with PYSPARK_PYTHON, read when the context is made (spark-submit
        # alone reads spark.pyspark.python): unset, the workers run whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark_home = Path(pyspark.__file__).parent
    jars = {} if own_jars else jar_settings(pyspark.__version__, spark_home, extra=extra_jars)
    # A class path or local file system of the caller's own is left alone: ours would replace theirs.
    fork_free_file_system = local and not any(key in given for key in LOCAL_FILE_SYSTEM_KEYS)
    settings = {
        **({"spark.driver.memory": LOCAL_DRIVER_MEMORY} if local else {}),
        # Workers forked from a daemon that imports the installed PySpark, not Spark's zip of it, whose
        # importers cost each Python task ~150 ms of CPU (spark/worker_daemon.py). Only where the workers
        # run this interpreter, which has cdclake installed: on a cluster the daemon starts before the
        # job's files (--py-files) reach the executors.
        **({"spark.python.daemon.module": "cdclake.spark.worker_daemon"} if local else {}),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        # Without a UI, Spark's status store still keeps the last 1,000 SQL executions with their plan
        # texts (a replication batch runs dozens): 40 MB of plan text was seen at 720 of them, in a
        # driver heap of 1 GiB that a backlog's batches need. A long-running job needs only the latest.
        "spark.sql.ui.retainedExecutions": "100",
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.sql.shuffle.partitions": "4",
        # Spark keeps 100 compiled classes of generated code by default; a batch's queries over ten
        # tables make more, so every batch compiled them all again (Janino was a quarter of the JVM's
        # CPU). Each query's code is the same from batch to batch: kept, a batch's CPU fell by a
        # quarter (BENCHMARKS.md, "fixed cost"). A static setting: it counts when the JVM starts.
        "spark.sql.codegen.cache.maxEntries": "4000",
        **iceberg_conf(catalog, warehouse),
        **jars,
        **(local_file_system_settings() if fork_free_file_system else {}),
        **(_logging_into(log_file) if log_file is not None else {}),
        **given,
    }
    if short_lived and local:
        settings = short_lived_settings(settings, given)
    log.info("Spark %s with %s", pyspark.__version__, {k: settings[k] for k in _JAR_SETTINGS if k in settings})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _stderr_into(log_file) if log_file is not None else nullcontext():
        return builder.getOrCreate()
