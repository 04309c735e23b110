"""The jars a Spark session needs from Maven Central, chosen for the running Spark.

Iceberg publishes one Spark runtime per Spark minor line and Scala version
(``iceberg-spark-runtime-4.1_2.13``); Spark's own Kafka source is published per Spark release
(``spark-sql-kafka-0-10_2.13:4.1.1``), and reaches Maven Central some time after PyPI has the same
PySpark, so the source is pinned per line to a release found there. Both are resolved by
:mod:`cdclake.maven` through the machine's Maven client and cached; where no Maven client is
installed the session asks Spark to fetch the same coordinates itself (``spark.jars.packages``).

A job may need more jars than these, such as the JDBC driver of a JDBC catalog: ``extra`` names them,
each either Maven coordinates (resolved with cdclake's own, through the same cache) or a jar's path.

A local session also gets a local file system that sets file permissions without starting a process
(:func:`local_file_system_settings`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from cdclake.errors import OptionError
from cdclake.maven import resolve

ICEBERG_VERSION = "1.12.0"
# The Spark lines Iceberg ICEBERG_VERSION has a runtime for, with the Scala version PySpark's jars use.
SCALA_BY_SPARK_LINE = {"3.5": "2.12", "4.1": "2.13"}
# Spark's Kafka source per line: the newest release Maven Central had whole (no 4.1.2-4.1.4 token
# provider, no 3.5.8/3.5.9 source when checked), run by the tests on PySpark 4.1.4 and 3.5.9; a patch
# release keeps the API the source is built on.
KAFKA_SOURCE_BY_SPARK_LINE = {"3.5": "3.5.7", "4.1": "4.1.1"}
# Hadoop's local file system gives each file it creates its permissions by running `chmod`, a process of
# its own, where Hadoop's native library is missing, as it is from pip's PySpark: a small replication
# batch creates ~250 files (data, delete and metadata files, their checksums), and the forks were about a
# tenth of its CPU (BENCHMARKS.md, "fixed cost"). GlobalMentor's is Hadoop's local file system with
# permissions and file status read and set through Java's own file API instead.
LOCAL_FILE_SYSTEM = "com.globalmentor:hadoop-bare-naked-local-fs:0.1.0"
LOCAL_FILE_SYSTEM_CLASS = "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"
LOCAL_FILE_SYSTEM_KEYS = ("spark.driver.extraClassPath", "spark.executor.extraClassPath", "spark.hadoop.fs.file.impl")


def spark_line(spark_version: str) -> str:
    """``4.1`` for Spark ``4.1.4``; an error naming the supported lines for a Spark without a runtime."""
    line = ".".join(spark_version.split(".")[:2])
    if line not in SCALA_BY_SPARK_LINE:
        raise OptionError(
            f"Spark {spark_version} has no Iceberg {ICEBERG_VERSION} runtime; cdclake runs on Spark "
            f"{' and '.join(SCALA_BY_SPARK_LINE)} (pip install 'pyspark>=4.1,<4.2' or 'pyspark>=3.5,<3.6')"
        )
    return line


def coordinates(spark_version: str, kafka: bool = True) -> list[str]:
    """Maven coordinates of Iceberg's Spark runtime and, with ``kafka``, Spark's Kafka source."""
    line = spark_line(spark_version)
    scala = SCALA_BY_SPARK_LINE[line]
    found = [f"org.apache.iceberg:iceberg-spark-runtime-{line}_{scala}:{ICEBERG_VERSION}"]
    if kafka:
        found.append(f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{KAFKA_SOURCE_BY_SPARK_LINE[line]}")
    return found


def jar_settings(spark_version: str, spark_home: Path, kafka: bool = True, extra: Sequence[str] = ()
                 ) -> dict[str, str]:
    """``spark.jars`` with the resolved jars that Spark in ``spark_home`` lacks, or
    ``spark.jars.packages`` where Maven is not installed; ``extra``: more jars, as Maven coordinates
    (``org.postgresql:postgresql:42.7.7``) or paths."""
    paths = [item for item in extra if not is_coordinate(item)]
    wanted = coordinates(spark_version, kafka) + [item for item in extra if is_coordinate(item)]
    if shutil.which("mvn") is None:
        return {"spark.jars.packages": ",".join(wanted), **({"spark.jars": ",".join(paths)} if paths else {})}
    shipped = _artifacts((spark_home / "jars").glob("*.jar"))
    resolved = [str(jar) for jar in resolve(wanted) if _artifact(jar) not in shipped]
    return {"spark.jars": ",".join(resolved + [str(Path(path).absolute()) for path in paths])}


def local_file_system_settings() -> dict[str, str]:
    """Settings that make ``file:`` paths :data:`LOCAL_FILE_SYSTEM_CLASS`'s, for a local master (whose
    executors run on this machine); none where Maven is not installed. Its jar goes on the JVMs' class
    path rather than in ``spark.jars``: Spark reads those jars through the file system it names."""
    if shutil.which("mvn") is None:
        return {}
    class_path = os.pathsep.join(str(jar) for jar in resolve([LOCAL_FILE_SYSTEM]))
    return dict(zip(LOCAL_FILE_SYSTEM_KEYS, (class_path, class_path, LOCAL_FILE_SYSTEM_CLASS), strict=True))


def is_coordinate(item: str) -> bool:
    """``group:artifact:version`` rather than a jar's path."""
    return not item.endswith(".jar") and len(item.split(":")) in (3, 4) and "/" not in item


def _artifact(jar: Path) -> str:
    """``hadoop-client-api`` for ``hadoop-client-api-3.4.2.jar``."""
    return re.sub(r"-\d+(\.\d+)+(-[\w.]+)?\.jar$", "", jar.name)


def _artifacts(jars: Iterable[Path]) -> set[str]:
    # Spark's own copy of a library (Scala, Hadoop's client, Kafka's dependencies) is the one its
    # classes were built with; a second version beside it on the class path is a conflict.
    return {_artifact(jar) for jar in jars}
