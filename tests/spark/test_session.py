"""The session: Iceberg's runtime for the running Spark from Maven Central, MERGE INTO, and commit
properties on MERGE."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyspark
import pytest

from cdclake.errors import OptionError
from cdclake.sinks.iceberg.commit import with_commit_properties
from cdclake.spark.jars import ICEBERG_VERSION, LOCAL_FILE_SYSTEM_CLASS, coordinates, jar_settings
from cdclake.spark.session import (
    SHORT_LIVED_JAVA_OPTIONS,
    SHORT_LIVED_SQL_SETTINGS,
    build_session,
    iceberg_conf,
    session_settings,
    short_lived_settings,
)
from tests.catalogs import POSTGRES_DRIVER


def test_each_spark_line_gets_its_own_iceberg_runtime_and_kafka_source() -> None:
    assert coordinates("4.1.4") == [
        f"org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:{ICEBERG_VERSION}",
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1",
    ]
    assert coordinates("3.5.9", kafka=False) == [f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{ICEBERG_VERSION}"]
    with pytest.raises(OptionError, match=r"Spark 4\.0\.1 has no Iceberg .* runtime; cdclake runs on Spark 3\.5 and"):
        coordinates("4.0.1")


def test_the_session_jars_leave_out_what_spark_ships() -> None:
    spark_home = Path(pyspark.__file__).parent
    jars = [Path(j) for j in jar_settings(pyspark.__version__, spark_home)["spark.jars"].split(",")]
    names = {j.name for j in jars}
    assert all(j.is_file() for j in jars)
    assert any(n.startswith("iceberg-spark-runtime-") for n in names)
    assert any(n.startswith("spark-sql-kafka-0-10_") for n in names)
    # Spark's own Scala and Hadoop client stay the only ones on the class path.
    assert not [n for n in names if n.startswith(("scala-library", "hadoop-client"))]


def test_extra_jars_join_cdclake_own_from_maven_or_by_path(tmp_path: Path) -> None:
    spark_home = Path(pyspark.__file__).parent
    driver = tmp_path / "driver.jar"
    jars = jar_settings(pyspark.__version__, spark_home, extra=[POSTGRES_DRIVER, str(driver)])["spark.jars"]
    names = [Path(j).name for j in jars.split(",")]
    assert any(n.startswith("iceberg-spark-runtime-") for n in names)
    assert any(n.startswith("postgresql-42.") for n in names)
    assert names[-1] == "driver.jar"


def test_without_maven_extra_coordinates_join_spark_packages_and_paths_spark_jars(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    found = jar_settings("4.1.4", Path("/nowhere"), kafka=False, extra=[POSTGRES_DRIVER, "/x/driver.jar"])
    assert found == {"spark.jars.packages": f"{coordinates('4.1.4', kafka=False)[0]},{POSTGRES_DRIVER}",
                     "spark.jars": "/x/driver.jar"}


def test_extra_jars_beside_a_spark_jars_of_your_own_are_refused() -> None:
    with pytest.raises(OptionError, match=r"extra jars \(a:b:1\) are added to cdclake's own jars, which "
                                          r"spark\.jars replaces: name them in spark\.jars too"):
        build_session(conf={"spark.jars": "/x/iceberg.jar"}, extra_jars=["a:b:1"])


def test_the_running_session_uses_the_resolved_runtime(spark: Any) -> None:
    used = spark.sparkContext.getConf().get("spark.jars")
    assert f"iceberg-spark-runtime-{'.'.join(pyspark.__version__.split('.')[:2])}_" in used


def test_local_workers_import_the_installed_pyspark_and_no_zip(spark: Any) -> None:
    def seen(_: Any) -> Any:
        import sys
        import zipimport

        import pyspark as worker_pyspark

        zips = [path for path, finder in sys.path_importer_cache.items() if isinstance(finder, zipimport.zipimporter)]
        yield worker_pyspark.__file__, zips

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(seen).collect() == [(pyspark.__file__, [])]


def test_a_warehouse_uri_stays_a_uri() -> None:
    assert iceberg_conf("lake", "s3a://bucket/lake")["spark.sql.catalog.lake.warehouse"] == "s3a://bucket/lake"
    assert iceberg_conf("lake", "rel/dir")["spark.sql.catalog.lake.warehouse"] == str(Path("rel/dir").absolute())


def test_a_short_lived_driver_compiles_with_c1_beside_the_options_it_has_unless_the_caller_set_them() -> None:
    key, logging = "spark.driver.extraJavaOptions", "-Dlog4j2.configurationFile=file:/tmp/x"
    assert short_lived_settings({key: logging}, {})[key] == f"{logging} {SHORT_LIVED_JAVA_OPTIONS}"
    assert short_lived_settings({"spark.ui.enabled": "false"}, {})[key] == SHORT_LIVED_JAVA_OPTIONS
    assert "-XX:TieredStopAtLevel=1" in SHORT_LIVED_JAVA_OPTIONS
    assert short_lived_settings({key: "-Xss4m"}, {key: "-Xss4m"})[key] == "-Xss4m"


def test_a_short_lived_session_interprets_expressions_unless_the_caller_set_how() -> None:
    assert short_lived_settings({}, {}).items() >= SHORT_LIVED_SQL_SETTINGS.items()
    given = {"spark.sql.codegen.wholeStage": "true"}
    chosen = short_lived_settings(given, given)
    assert chosen["spark.sql.codegen.wholeStage"] == "true"
    assert chosen["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"


def test_merge_commit_carries_properties(spark: Any) -> None:
    spark.sql("CREATE TABLE lake.session_test.t (id bigint, v string) USING iceberg")
    spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, v string").createOrReplaceTempView("changes")
    merge = "MERGE INTO lake.session_test.t t USING changes s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    with_commit_properties(spark, {"cdclake.test": "offsets-1"}, lambda: spark.sql(merge))
    rows = spark.sql("SELECT summary['cdclake.test'] AS p FROM lake.session_test.t.snapshots").collect()
    assert [r.p for r in rows] == ["offsets-1"]
    assert spark.table("lake.session_test.t").count() == 2


def test_failed_statement_raises_its_own_error(spark: Any) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        with_commit_properties(spark, {"k": "v"}, lambda: spark.sql("DELETE FROM lake.session_test.missing"))


# In a JVM of its own, since the tests' shared session started its callback server long ago. Creating the
# server is slowed so that every thread arrives while it does not exist yet.
FIRST_COMMITS_AT_ONCE = """
import sys, threading, time
from cdclake.sinks.iceberg.commit import with_commit_properties
from cdclake.spark.session import build_session

spark = build_session(master="local[1]", warehouse=sys.argv[1])
gateway = spark.sparkContext._gateway
created, failed = [], []
create = gateway._create_callback_server
def slow_create(parameters):
    created.append(parameters)
    time.sleep(0.5)
    return create(parameters)
gateway._create_callback_server = slow_create
together = threading.Barrier(4)
def commits():
    together.wait()
    try:
        for _ in range(50):
            with_commit_properties(spark, {"k": "v"}, lambda: None)
    except Exception as error:
        failed.append(error)
threads = [threading.Thread(target=commits) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("servers created:", len(created), "failed:", failed)
spark.stop()
"""


def test_threads_that_commit_first_at_once_start_one_callback_server(tmp_path: Path) -> None:
    """Tables applied side by side make their first commits together: were the callback server started by
    each, a second start would shut down the JVM's callback client under the first one's calls."""
    run = subprocess.run([sys.executable, "-c", FIRST_COMMITS_AT_ONCE, str(tmp_path)], capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "servers created: 1 failed: []" in run.stdout, run.stdout


def test_local_sessions_write_files_without_starting_a_chmod_process(spark: Any) -> None:
    jvm = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    file_system = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), hadoop_conf)
    assert file_system.getClass().getName() == LOCAL_FILE_SYSTEM_CLASS


def test_a_class_path_of_your_own_keeps_hadoops_local_file_system(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, str] = {}

    class Builder:
        def appName(self, name: str) -> Builder:
            return self

        def master(self, master: str) -> Builder:
            return self

        def config(self, key: str, value: str) -> Builder:
            seen[key] = value
            return self

        def getOrCreate(self) -> None:
            return None

    monkeypatch.setattr(pyspark.sql.SparkSession, "builder", Builder())
    build_session(conf={"spark.driver.extraClassPath": "/x/mine.jar"})
    assert seen["spark.driver.extraClassPath"] == "/x/mine.jar"
    assert "spark.hadoop.fs.file.impl" not in seen and "spark.executor.extraClassPath" not in seen
    build_session()
    assert seen["spark.hadoop.fs.file.impl"] == LOCAL_FILE_SYSTEM_CLASS


def test_session_settings_hold_meanwhile_and_are_put_back_after(spark: Any) -> None:
    adaptive, unset = "spark.sql.adaptive.enabled", "spark.cdclake.test.unset"
    before = spark.conf.get(adaptive)
    with session_settings(spark, {adaptive: "false" if before == "true" else "true", unset: "x"}):
        assert spark.conf.get(adaptive) != before and spark.conf.get(unset) == "x"
    assert spark.conf.get(adaptive) == before and spark.conf.get(unset, None) is None
