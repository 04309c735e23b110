"""The PostgreSQL sink (cdclake.sinks.postgres) on a PostgreSQL server of Debian's package, started on
loopback for these tests: a replicated workload equals the upstream table for table, each batch lands
in one transaction with the job's progress, and the values PostgreSQL can hold exactly are exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdclake.sinks.postgres.connection import parse
from cdclake.sinks.postgres.verify import compare_tables
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.replicate import Replicator
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured
from tests.catalogs import LocalPostgres
from tests.spark.crashing import run_replicate
from tests.spark.jobs import Job, row_changes
from tests.spark.test_replicate import FORMATS, _format

OPTIONS = {"enable-tidb-extension": True}


def _url(postgres: LocalPostgres) -> str:
    return f"{postgres.jdbc_url}?user={postgres.user}"


def _differences(postgres: LocalPostgres, job: Job, tables: Any) -> list[Any]:
    assert tables, "no upstream tables to compare with"
    compared = compare_tables(parse(_url(postgres)), tables,
                              lambda database, table: f'"{job.prefix}_{database}"."{table}"')
    return [(c.upstream, c.missing, c.unexpected, c.column_differences, c.examples) for c in compared if not c.equal]


def _replicate(spark: Any, postgres: LocalPostgres, tmp_path: Path, prefix: str, format_name: str,
               options: dict[str, Any], spec: WorkloadSpec) -> tuple[Workload, Any, Job, list[Any]]:
    workload = Workload(spec)
    stream = produce(workload, format_name, options, duplicates=2)
    write_captured(stream, tmp_path / "stream", stream.topic)
    job = Job(prefix, format_name, options, max_records=len(stream) // 3 + 1)
    reports = Replicator(spark, CapturedTopics(tmp_path / "stream"), job.config(sink=_url(postgres))).run(once=True)
    return workload, stream, job, reports


@pytest.mark.parametrize("case", FORMATS)
def test_a_replicated_workload_equals_the_upstream_in_postgresql(spark: Any, postgres: LocalPostgres, tmp_path: Path,
                                                                 case: str) -> None:
    # DDLs of every kind the simulator makes (ADD/DROP/RENAME/MODIFY COLUMN, TRUNCATE, CREATE TABLE ... LIKE,
    # RENAME and DROP TABLE), in three batches, each delivered twice; every format.
    format_name, options = _format(case), FORMATS[case]
    prefix = f"to_pg_{case.replace('-', '_')}"
    workload, stream, job, reports = _replicate(spark, postgres, tmp_path, prefix, format_name, options,
                                                WorkloadSpec(seed=23, transactions=30, rename_table=True,
                                                             drop_table=True, create_table_like=True,
                                                             text_nul=False))
    assert len(reports) >= 3
    expected = workload.oracle().carried(format_name, stream.codec_options).tables
    assert _differences(postgres, job, expected) == []
    with psycopg.connect(parse(_url(postgres)).conninfo) as connection:
        # The progress, the changelog, and no staging table left behind.
        states = connection.execute(f'SELECT DISTINCT batch FROM "{job.namespace}".cdclake_state '
                                    "WHERE state = 'position'").fetchall()
        assert states == [(len(reports),)]
        (logged,) = connection.execute(f'SELECT count(*) FROM "{job.namespace}".cdclake_changelog').fetchone()
        assert logged == sum(report.changes_applied for report in reports)
        stages = connection.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'cdclake_stage_%'").fetchone()
        assert stages == (0,)


def test_a_batch_that_fails_leaves_the_database_as_the_batch_before_left_it(spark: Any, postgres: LocalPostgres,
                                                                          tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from cdclake.sinks.postgres import sink as sink_module

    workload = Workload(WorkloadSpec(seed=5, transactions=12, text_nul=False))
    stream = produce(workload, "canal-json", OPTIONS, duplicates=0)
    write_captured(stream, tmp_path / "stream", stream.topic)
    job = Job("to_pg_atomic", "canal-json", OPTIONS, max_records=len(stream) // 2 + 1)
    config = job.config(sink=_url(postgres))
    first = Replicator(spark, CapturedTopics(tmp_path / "stream"), config)
    assert first.step() is not None
    with psycopg.connect(parse(_url(postgres)).conninfo) as connection:
        before = _snapshot(connection, job)

    real_copy = sink_module._copy_rows

    def copy_then_fail(cursor: Any, table: str, names: Any, rows: Any) -> int:
        copied = real_copy(cursor, table, names, rows)
        if "cdclake_state" in table and cursor.connection.info.transaction_status != 0:
            raise RuntimeError("killed inside the batch's transaction")
        return copied

    monkeypatch.setattr(sink_module, "_copy_rows", copy_then_fail)
    with pytest.raises(RuntimeError, match="killed inside"):
        Replicator(spark, CapturedTopics(tmp_path / "stream"), config).step()
    with psycopg.connect(parse(_url(postgres)).conninfo) as connection:
        assert _snapshot(connection, job) == before
    monkeypatch.undo()
    # Run again, the batch (re-planned from its recorded plan) finishes, and the tables are whole.
    Replicator(spark, CapturedTopics(tmp_path / "stream"), config).run(once=True)
    assert _differences(postgres, job, workload.oracle().carried("canal-json", stream.codec_options).tables) == []


def _snapshot(connection: Any, job: Job) -> dict[str, Any]:
    """Every table of the job's schemas and what it holds, as text; of the state, all but a recorded plan
    (which a batch writes, committed, before it reads anything)."""
    tables = connection.execute("SELECT schemaname, tablename FROM pg_tables WHERE schemaname LIKE %s "
                                "AND tablename NOT LIKE 'cdclake_stage_%%' ORDER BY 1, 2",
                                (f"{job.prefix}_%",)).fetchall()
    held = {}
    for schema, table in tables:
        kept = " WHERE state <> 'plan'" if table == "cdclake_state" else ""
        held[f"{schema}.{table}"] = sorted(map(str, connection.execute(f'SELECT * FROM "{schema}"."{table}"{kept}')))
    return held


# Every point of a batch before its commit leaves the database untouched (the batch is one transaction, and
# test_a_batch_that_fails_... kills one inside it), so one stands for all of them: staging tables written,
# a DDL kept, nothing committed. The other is right after the commit.
CHAIN = ("table-merged:3", "committed:1")


def test_sigkill_at_kill_points_loses_nothing_and_repeats_nothing_in_postgresql(
        spark: Any, postgres: LocalPostgres, tmp_path: Path) -> None:
    warehouse = Path(spark.conf.get("spark.sql.catalog.lake.warehouse"))
    workload = Workload(WorkloadSpec(seed=11, transactions=40, rename_table=True, text_nul=False))
    stream = produce(workload, "simple", duplicates=2, watermark_interval_ms=50)
    write_captured(stream, tmp_path / "stream", stream.topic)
    job = Job("to_pg_crash", "simple", max_records=len(stream) // 8 + 1)
    config = job.write_toml(tmp_path / "job.toml", tmp_path / "stream", warehouse, sink=_url(postgres))
    log = tmp_path / "replicate.log"

    runs = [run_replicate(config, log, kill_at=point) for point in CHAIN]
    last = run_replicate(config, log)

    assert [run.kill for run in runs if not run.killed] == [], last.log
    assert last.returncode == 0, last.log
    assert _differences(postgres, job, workload.oracle().carried("simple", stream.codec_options).tables) == []
    with psycopg.connect(parse(_url(postgres)).conninfo) as connection:
        (logged,) = connection.execute(f'SELECT count(*) FROM "{job.namespace}".cdclake_changelog').fetchone()
    assert logged == row_changes(produce(workload, "simple", watermark_interval_ms=50))


def test_reading_a_database_no_job_wrote_to_is_an_error_that_makes_nothing(postgres: LocalPostgres) -> None:
    from cdclake.sinks import open_reader
    from cdclake.sinks.postgres.connection import SinkError

    reader = open_reader(_url(postgres), "to_pg_nobody")
    with pytest.raises(SinkError, match=r"no job state there \(\"to_pg_nobody\".\"cdclake_state\"\)"):
        reader.read_state()
    with psycopg.connect(parse(_url(postgres)).conninfo) as connection:
        made = connection.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'to_pg_nobody'").fetchone()
    assert made == (0,)


def test_a_keyless_merge_matches_whole_rows_nulls_included_by_a_hash_join(postgres: LocalPostgres) -> None:
    from cdclake.model import ColumnSchema, TableSchema
    from cdclake.sinks.postgres.statements import create_table, merge
    from cdclake.types import MySQLType

    columns = (ColumnSchema("at", MySQLType.parse("datetime")), ColumnSchema("who", MySQLType.parse("varchar(9)")),
               ColumnSchema("amount", MySQLType.parse("decimal(6,2)")))
    schema, target = TableSchema("keyless_merge", "log", columns), '"keyless_merge"."log"'
    kept = [("2024-05-01 09:00:00", "ann", "1.50"), ("2024-05-01 09:00:00", None, "2.00")]
    deleted = [("2024-05-01 09:00:01", None, None), ("2024-05-01 09:00:02", "bo", "3.00")]
    images = [{"at": "2024-05-01 09:00:01", "who": None, "amount": None},
              {"at": "2024-05-01 09:00:02", "who": "bo", "amount": "3.0"},  # 3.0 is 3.00: the same value
              {"at": "2024-05-01 09:00:03", "who": "cy", "amount": "4.00"}]
    with psycopg.connect(parse(_url(postgres)).conninfo, autocommit=True) as connection:
        connection.execute("DROP SCHEMA IF EXISTS keyless_merge CASCADE")
        connection.execute("CREATE SCHEMA keyless_merge")
        for statement in create_table(target, schema):
            connection.execute(statement)
        with connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {target} VALUES (%s::timestamp, %s, %s::numeric)", kept + deleted)
        connection.execute('CREATE TABLE keyless_merge.stage (_key text, _op text, _image jsonb)')
        with connection.cursor() as cursor:
            cursor.executemany("INSERT INTO keyless_merge.stage VALUES ('', %s, %s::jsonb)",
                               [("delete", psycopg.types.json.Jsonb(images[0])),
                                ("delete", psycopg.types.json.Jsonb(images[1])),
                                ("insert", psycopg.types.json.Jsonb(images[2]))])
        connection.execute("ANALYZE keyless_merge.stage")
        delete, update, insert = merge(target, "keyless_merge.stage", schema, whole_images=True)
        plan = "\n".join(row[0] for row in connection.execute("EXPLAIN " + delete).fetchall())
        for statement in (delete, update, insert):
            connection.execute(statement)
        rows = connection.execute(f"SELECT at::text, who, amount::text FROM {target} ORDER BY 1, 2").fetchall()
    assert "Hash" in plan, plan
    assert rows == [*kept, ("2024-05-01 09:00:03", "cy", "4.00")]
