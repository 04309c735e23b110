"""The MariaDB sink (cdclake.sinks.mariadb) on a MariaDB server of Debian's package, started on loopback
for these tests: a replicated workload equals the upstream table for table in every format, a SIGKILL
anywhere in a batch (between a DDL and the state's commit too) loses and doubles nothing, and the values
MySQL's own types hold are exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdclake.sinks.mariadb.connection import connect, parse
from cdclake.sinks.mariadb.verify import compare_tables
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.replicate import Replicator
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured
from tests.catalogs import LocalMariaDB
from tests.spark.crashing import run_replicate
from tests.spark.jobs import Job, row_changes
from tests.spark.test_replicate import FORMATS, _format


def _query(mariadb: LocalMariaDB, statement: str, *parameters: Any) -> list[tuple[Any, ...]]:
    with connect(parse(mariadb.jdbc_url).arguments) as connection, connection.cursor() as cursor:
        cursor.execute(statement, parameters or None)
        return list(cursor.fetchall())


def _differences(mariadb: LocalMariaDB, job: Job, tables: Any) -> list[Any]:
    assert tables, "no upstream tables to compare with"
    compared = compare_tables(parse(mariadb.jdbc_url), tables,
                              lambda database, table: f"`{job.prefix}_{database}`.`{table}`")
    return [(c.upstream, c.missing, c.unexpected, c.column_differences, c.examples) for c in compared if not c.equal]


@pytest.mark.parametrize("case", FORMATS)
def test_a_replicated_workload_equals_the_upstream_in_mariadb(spark: Any, mariadb: LocalMariaDB,
                                                              tmp_path: Path, case: str) -> None:
    # DDLs of every kind the simulator makes (ADD/DROP/RENAME/MODIFY COLUMN, TRUNCATE, RENAME and DROP
    # TABLE), strings with NUL characters, edge values of every type, in three batches, each delivered twice.
    format_name, options = _format(case), FORMATS[case]
    workload = Workload(WorkloadSpec(seed=23, transactions=30, rename_table=True, drop_table=True))
    stream = produce(workload, format_name, options, duplicates=2)
    write_captured(stream, tmp_path / "stream", stream.topic)
    job = Job(f"to_my_{case.replace('-', '_')}", format_name, options, max_records=len(stream) // 3 + 1)
    reports = Replicator(spark, CapturedTopics(tmp_path / "stream"), job.config(sink=mariadb.jdbc_url)).run(once=True)

    assert len(reports) >= 3
    assert _differences(mariadb, job, workload.oracle().carried(format_name, stream.codec_options).tables) == []
    # The progress, the changelog, and no staging table left behind.
    assert _query(mariadb, f"SELECT DISTINCT batch FROM `{job.namespace}`.cdclake_state WHERE state = 'position'") \
        == [(len(reports),)]
    assert _query(mariadb, f"SELECT count(*) FROM `{job.namespace}`.cdclake_changelog") \
        == [(sum(report.changes_applied for report in reports),)]
    stages = "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'cdclake\\_stage\\_%'"
    assert _query(mariadb, stages) == [(0,)]


# Every point of a batch the job can die at. MariaDB's DDL commits by itself, so unlike PostgreSQL a
# batch is not one transaction: the changelog append, a merge or TRUNCATE of one table, a DDL (before the
# state's commit), all tables done, and the commit are each a different place to restart from.
CHAIN = ("changelog:1", "table-merged:3", "ddl-applied:4", "tables-applied:2", "committed:1")


def test_sigkill_at_kill_points_loses_nothing_and_repeats_nothing_in_mariadb(
        spark: Any, mariadb: LocalMariaDB, tmp_path: Path) -> None:
    warehouse = Path(spark.conf.get("spark.sql.catalog.lake.warehouse"))
    workload = Workload(WorkloadSpec(seed=11, transactions=40, rename_table=True))
    stream = produce(workload, "simple", duplicates=2, watermark_interval_ms=50)
    write_captured(stream, tmp_path / "stream", stream.topic)
    job = Job("to_my_crash", "simple", max_records=len(stream) // 8 + 1)
    config = job.write_toml(tmp_path / "job.toml", tmp_path / "stream", warehouse, sink=mariadb.jdbc_url)
    log = tmp_path / "replicate.log"

    runs = [run_replicate(config, log, kill_at=point) for point in CHAIN]
    last = run_replicate(config, log)

    assert [run.kill for run in runs if not run.killed] == [], last.log
    assert last.returncode == 0, last.log
    assert _differences(mariadb, job, workload.oracle().carried("simple", stream.codec_options).tables) == []
    logged = _query(mariadb, f"SELECT count(*) FROM `{job.namespace}`.cdclake_changelog")
    assert logged == [(row_changes(produce(workload, "simple", watermark_interval_ms=50)),)]


def test_reading_a_database_no_job_wrote_to_is_an_error_that_makes_nothing(mariadb: LocalMariaDB) -> None:
    from cdclake.sinks import open_reader
    from cdclake.sinks.mariadb.loading import SinkError

    reader = open_reader(mariadb.jdbc_url, "to_my_nobody")
    assert reader.read_with == "PyMySQL"
    with pytest.raises(SinkError, match=r"no job state there \(`to_my_nobody`.`cdclake_state`\)"):
        reader.read_state()
    assert _query(mariadb, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'to_my_nobody'") \
        == [(0,)]


def test_mysql_values_are_exact_and_keys_apart_as_upstream_and_each_write_stores_its_step(
        spark: Any, mariadb: LocalMariaDB) -> None:
    import base64
    import datetime as dt
    import json
    from decimal import Decimal

    from cdclake.model import ColumnSchema, IndexSchema, TableSchema
    from cdclake.sinks import open_sink
    from cdclake.sinks.base import Step
    from cdclake.types import MySQLType

    columns = {"k": "varchar(10)", "u": "bigint unsigned", "d": "decimal(65,30)", "b": "varbinary(256)",
               "t": "time(6)", "s": "text", "ts": "timestamp(6)"}
    schema = TableSchema("exact", "values", tuple(ColumnSchema(n, MySQLType.parse(t)) for n, t in columns.items()),
                         (IndexSchema("PRIMARY", ("k",), unique=True, primary=True),))
    every_byte = bytes(range(256))
    widest = "-" + "9" * 35 + "." + "9" * 30
    images = [{"k": "a", "u": "18446744073709551615", "d": widest, "b": base64.b64encode(every_byte).decode(),
               "t": "-838:59:59.000000", "s": "nul\0 and 😀", "ts": "2038-01-19 03:14:07.999999"},
              {"k": "a ", "u": "0", "d": "0.000000000000000000000000000001", "b": "", "t": "838:59:59.000000",
               "s": "", "ts": None},
              {"k": "A", "u": None, "d": None, "b": None, "t": "100:00:00.500000", "s": None, "ts": None}]
    sink = open_sink(spark, mariadb.jdbc_url, "to_my_exact")
    sink.load_state()
    target = sink.target("to_my_exact_db", "values")
    sink.create_table(target, schema)

    def write(rows: list[tuple[str, dict[str, Any]]], step: Step, whole_images: bool = True,
              into: str = target) -> None:
        frame = spark.createDataFrame([(image["k"], op, json.dumps(image)) for op, image in rows],
                                      "_key string, _op string, _image string")
        sink.write_changes(into, schema, frame, step, whole_images=whole_images, maybe_empty=False,
                           part=("db", "values", 0))

    write([("insert", image) for image in images], Step(1, 1))
    # A partial update keeps the columns its image lacks; a delete takes only its own key.
    write([("update", {"k": "A", "s": "changed"}), ("delete", {"k": "a "})], Step(1, 2), whole_images=False)

    held = {row[0]: row[1:] for row in _query(mariadb, f"SELECT k, u, d, b, t, s, ts FROM {target}")}
    assert held == {
        "a": (2**64 - 1, Decimal(widest), every_byte, -dt.timedelta(hours=838, minutes=59, seconds=59),
              "nul\0 and 😀", dt.datetime(2038, 1, 19, 3, 14, 7, 999999)),
        "A": (None, None, None, dt.timedelta(hours=100, microseconds=500000), "changed", None),
    }
    assert sink.last_step(target) == (1, 2)
    # Renamed in the batch under way, a table's steps stay known under its old name (the state's).
    renamed = sink.target("to_my_exact_db", "renamed")
    sink.rename_table(target, renamed)
    write([("insert", {"k": "b"})], Step(1, 3), into=renamed)
    assert sink.last_step(target) == (1, 3)
    assert _query(mariadb, f"SELECT count(*) FROM {renamed}") == [(3,)]


@pytest.mark.parametrize("local_infile", [True, False])
def test_both_bulk_loads_keep_every_byte_and_refuse_a_value_the_column_cannot_hold(
        mariadb: LocalMariaDB, local_infile: bool) -> None:
    from cdclake.sinks.mariadb.loading import SinkError, load_rows

    rows = [("tab\there\nnewline\\ and nul\0", bytes(range(256)), "18446744073709551615"), (None, b"", "0")]
    with connect(parse(mariadb.jdbc_url).arguments) as connection, connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE loaded (s longtext, b longblob, u bigint unsigned)")
        assert load_rows(cursor, "loaded", ["s", "b", "u"], rows, local_infile) == 2
        cursor.execute("SELECT s, b, u FROM loaded ORDER BY u DESC")
        assert cursor.fetchall() == tuple((s, b, int(u)) for s, b, u in rows)
        # LOAD DATA LOCAL makes such a value a warning, which the load turns into an error; an INSERT
        # in strict mode refuses it itself. Either names the column as the caller knows it.
        with pytest.raises(SinkError, match="Out of range value for column 'count'"):
            load_rows(cursor, "loaded", ["s", "b", "u"], [("x", b"", "-1")], local_infile, ["s", "b", "count"])


def test_a_keyless_merge_matches_whole_rows_nulls_included_and_reads_the_table_once(mariadb: LocalMariaDB) -> None:
    from cdclake.model import ColumnSchema, TableSchema
    from cdclake.sinks.mariadb.statements import create_table, merge, stage_table
    from cdclake.types import MySQLType

    columns = (ColumnSchema("at", MySQLType.parse("datetime")), ColumnSchema("who", MySQLType.parse("text")),
               ColumnSchema("amount", MySQLType.parse("decimal(6,2)")))
    schema, target = TableSchema("keyless_merge", "log", columns), "`keyless_merge`.`log`"
    kept = [("2024-05-01 09:00:00.000000", "ann", "1.50"), ("2024-05-01 09:00:00.000000", None, "2.00"),
            (None, None, None)]
    staged = [("delete", "2024-05-01 09:00:01.000000", None, None),
              ("insert", None, None, None),  # the table has it: still there once
              ("insert", "2024-05-01 09:00:03.000000", "cy", "4.0")]  # 4.0 is 4.00
    with connect(parse(mariadb.jdbc_url).arguments) as connection, connection.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS keyless_merge")
        cursor.execute("CREATE DATABASE keyless_merge")
        cursor.execute(create_table(target, schema, "utf8mb4_bin"))
        cursor.executemany(f"INSERT INTO {target} VALUES (%s, %s, %s)", [*kept, staged[0][1:]])
        cursor.execute(stage_table("keyless_merge.stage", schema, "utf8mb4_bin"))
        cursor.executemany("INSERT INTO keyless_merge.stage (cdclake_op, cdclake_given, c0, c1, c2) "
                           "VALUES (%s, '111', %s, %s, %s)", staged)
        plans = []
        for statement in merge(target, "keyless_merge.stage", schema, whole_images=True):
            cursor.execute("EXPLAIN " + statement)
            plans.append(cursor.fetchall())
            cursor.execute(statement)
        cursor.execute(f"SELECT CAST(at AS CHAR), who, CAST(amount AS CHAR) FROM {target}")
        rows = sorted(cursor.fetchall(), key=repr)
    # A plan's rows are (id, select_type, table, ...): no subquery run per staged row; the insert reads
    # only the staging table.
    assert all(step[1] == "SIMPLE" for plan in plans for step in plan), plans
    assert [step[2] for step in plans[1]] == ["s"], plans
    assert rows == sorted([*kept, ("2024-05-01 09:00:03.000000", "cy", "4.00")], key=repr)
