"""Other Iceberg catalogs by configuration alone: ``cdclake replicate --config job.toml`` into a REST
catalog (Iceberg's REST catalog server) and into a JDBC catalog (on PostgreSQL), each run as a user runs
it, in a process of its own, then every table compared with the upstream through the same catalog: the
REST catalog's in this process's session, which registers it under a name of its own, the JDBC
catalog's in another process (its driver's jar is not on this session's classpath, and is kept off it
so that the PostgreSQL sink's tests would see a sink that came to need it).

The services start on loopback for the test and stop after it (tests/catalogs.py). A machine without
PostgreSQL fails the JDBC test, naming ``.ci/services``, which installs it.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from cdclake.schema.policy import SchemaEvolutionError
from cdclake.sinks.iceberg.catalogs import HIVE_COLUMN_CHECK
from cdclake.spark.session import iceberg_conf
from cdclake.workload import Stream, Workload, WorkloadSpec, produce, write_captured
from tests.catalogs import POSTGRES_DRIVER, LocalPostgres, RestCatalogServer
from tests.jvm import short_lived_jvm
from tests.spark.crashing import run_replicate
from tests.spark.jobs import Job, lake_differences, replicate
from tests.spark.status_run import status_without_spark

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"enable-tidb-extension": True}
# Two shuffle partitions for two cores, as the tests' own session has: the batches are small.
SMALL = {"spark.sql.shuffle.partitions": "2", "spark.ui.showConsoleProgress": "false"}


@pytest.fixture
def rest_catalog() -> Iterator[RestCatalogServer]:
    with RestCatalogServer() as server:
        yield server


def _workload(tmp_path: Path) -> tuple[Workload, Stream]:
    """30 transactions and DDLs, a DROP COLUMN of shop.accounts among them, as a captured topic."""
    workload = Workload(WorkloadSpec(seed=23, transactions=30, rename_table=True))
    stream = produce(workload, "canal-json", OPTIONS, duplicates=2)
    write_captured(stream, tmp_path / "stream", stream.topic)
    return workload, stream


def _replicate_and_compare(tmp_path: Path, prefix: str, warehouse: Path, spark: Mapping[str, str],
                           jars: Sequence[str] = (), session: Any = None) -> None:
    """Replicate a small workload with ``spark`` as the job's only catalog settings, and assert that every
    table equals the upstream's: read by ``session`` where given, else by a session of its own in another
    process, built from the job file as ``cdclake replicate`` builds it."""
    workload, stream = _workload(tmp_path)
    job = Job(prefix, "canal-json", OPTIONS, max_records=len(stream) // 3 + 1)
    config = job.write_toml(tmp_path / "job.toml", tmp_path / "stream", warehouse, spark={**SMALL, **spark},
                            jars=jars)
    run = run_replicate(config, tmp_path / "replicate.log", timeout_s=600)
    assert run.returncode == 0, run.log
    tables = workload.oracle().carried("canal-json", stream.codec_options).tables
    if session is not None:
        assert lake_differences(session, job, tables, _registered(session, prefix, warehouse, spark)) == []
    else:
        _compare_in_a_process_of_its_own(tmp_path, config, tables, prefix)
    # cdclake status reads the same catalog with pyiceberg, from the same job file, without Spark.
    found = status_without_spark("--config", str(config))
    assert found["read_with"] == "pyiceberg"
    expected_rows = {f"{database}.{table}": len(state.rows) for (database, table), state in
                     workload.oracle().carried("canal-json", stream.codec_options).tables.items()}
    assert {table["upstream"]: table["rows"] for table in found["tables"]} == expected_rows
    assert {partition["lag_now"] for partition in found["partitions"]} == {0}


def _registered(session: Any, prefix: str, warehouse: Path, catalog: Mapping[str, str]) -> str:
    """The job's catalog ``lake`` (its settings ``catalog``, over cdclake's own for it) registered in
    ``session`` as ``<prefix>_lake``. Spark makes a catalog from the session's settings when a query
    first names it, so reading through it takes no second JVM (that took over a third of this test)."""
    name = f"{prefix}_lake"
    settings = {key: value for key, value in iceberg_conf("lake", warehouse).items()
                if key.startswith("spark.sql.catalog.")}  # not the extensions, fixed when a session starts
    for key, value in {**settings, **catalog}.items():
        session.conf.set(key.replace("spark.sql.catalog.lake", f"spark.sql.catalog.{name}", 1), value)
    return name


def _compare_in_a_process_of_its_own(tmp_path: Path, config: Path, tables: Any, prefix: str) -> None:
    expected = tmp_path / "expected.pickle"
    expected.write_bytes(pickle.dumps(tables))
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = short_lived_jvm({**os.environ, "PYTHONPATH": python_path})
    compared = subprocess.run([sys.executable, "-m", "tests.spark.compare_lake", str(config), str(expected), prefix],
                              capture_output=True, text=True, timeout=600, cwd=ROOT, env=env, check=False)
    assert compared.returncode == 0, compared.stdout[-4000:] + compared.stderr[-4000:]
    assert " 0 differ" in compared.stdout


def test_a_rest_catalog_replicates_by_configuration_alone(spark: Any, tmp_path: Path,
                                                          rest_catalog: RestCatalogServer) -> None:
    _replicate_and_compare(tmp_path, "rest", rest_catalog.warehouse, {
        "spark.sql.catalog.lake.type": "rest",
        "spark.sql.catalog.lake.uri": rest_catalog.uri,
    }, session=spark)
    # The server, not a warehouse directory, knows the job's tables.
    with urllib.request.urlopen(f"{rest_catalog.uri}/v1/namespaces/rest_cdclake/tables", timeout=10) as response:
        listed = {ident["name"] for ident in json.load(response)["identifiers"]}
    assert {"state", "changelog", "dead_letters"} <= listed


def test_a_jdbc_catalog_on_postgresql_replicates_by_configuration_alone(tmp_path: Path,
                                                                         postgres: LocalPostgres) -> None:
    _replicate_and_compare(tmp_path, "jdbc", tmp_path / "warehouse", {
        "spark.sql.catalog.lake.type": "jdbc",
        "spark.sql.catalog.lake.uri": postgres.jdbc_url,
        "spark.sql.catalog.lake.jdbc.user": postgres.user,
        # Spark asks a catalog for views as well as tables (tableExists): without V1's views table,
        # Iceberg's JDBC catalog refuses the question.
        "spark.sql.catalog.lake.jdbc.schema-version": "V1",
    }, jars=[POSTGRES_DRIVER])
    # Iceberg's JDBC catalog keeps each table's metadata pointer in PostgreSQL.
    listed = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(postgres.port), "-U", postgres.user, "-d", postgres.database, "-At",
         "-c", "SELECT table_name FROM iceberg_tables WHERE table_namespace = 'jdbc_cdclake'"],
        capture_output=True, text=True, check=True).stdout.split()
    assert {"state", "changelog", "dead_letters"} <= set(listed)


def test_a_hive_catalog_is_refused_a_drop_column_before_any_of_it_is_made(spark: Any, tmp_path: Path) -> None:
    # No metastore here: the tests' Hadoop catalog, with its type setting saying hive (the catalog, made
    # already, stays what it is), shows the job stops before the statement, and, run again once told,
    # finishes the batch it stopped in (other tables' DDLs of that batch, applied before it stopped, found
    # done).
    workload, stream = _workload(tmp_path)
    type_setting, told = "spark.sql.catalog.lake.type", f"spark.hadoop.{HIVE_COLUMN_CHECK}"
    spark.sql("SHOW NAMESPACES IN lake").collect()
    spark.conf.set(type_setting, "hive")
    job = Job("hive", "canal-json", OPTIONS)
    try:
        with pytest.raises(SchemaEvolutionError, match=rf"dropping column logins on the Hive catalog 'lake'.* "
                                                       rf"hive-site\.xml sets {HIVE_COLUMN_CHECK}=false"):
            replicate(spark, job, tmp_path / "stream")
        assert "logins" in spark.table(job.lake_name("shop", "accounts")).columns
        spark.conf.set(told, "false")
        replicate(spark, job, tmp_path / "stream")
    finally:
        spark.conf.set(type_setting, "hadoop")
        spark.conf.unset(told)
    expected = workload.oracle().carried("canal-json", stream.codec_options).tables
    assert lake_differences(spark, job, expected) == []
