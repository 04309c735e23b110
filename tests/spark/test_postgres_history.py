"""History tables (SCD type 2) in the PostgreSQL sink: replicated from a simulated upstream with DDLs of every
kind and re-delivered copies, they equal the simulator's history of each table, through a batch stopped
between a mirror's write and its history table's and run again; and with history tracked on some columns,
deleted versions left out."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdclake.schema.history import END_OP, HistorySettings
from cdclake.sinks import open_reader
from cdclake.sinks.postgres.connection import parse
from cdclake.status import job_status
from cdclake.workload import Workload, WorkloadSpec
from tests.catalogs import LocalPostgres
from tests.spark.jobs import Job, replicate
from tests.spark.test_history import SPEC, Crash, _crash_at, _stream
from tests.spark.test_postgres_sink import _differences, _url


def test_history_tables_in_postgresql_equal_the_simulators_history_through_ddl_copies_and_a_crash(
        spark: Any, postgres: LocalPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workload = Workload(dataclasses.replace(SPEC, text_nul=False))  # PostgreSQL's text holds no NUL
    captured, stream = _stream(tmp_path, workload)
    job = Job("to_pg_history_all", "simple", max_records=len(stream) // 2 + 1)
    settings = HistorySettings(("*",))

    # The first table-merged comes right after a mirror's merge is kept, before its history's.
    _crash_at(monkeypatch, "table-merged", 1)
    with pytest.raises(Crash):
        replicate(spark, job, captured, history=settings, sink=_url(postgres))
    monkeypatch.undo()
    reports = replicate(spark, job, captured, history=settings, sink=_url(postgres))

    assert len(reports) >= 2  # a key's versions span batches
    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    ends = Counter(row[END_OP] for state in histories.values() for row in state.rows.values())
    assert min(ends[op] for op in ("update", "delete", "truncate", None)) > 0, ends
    assert _differences(postgres, job, histories) == []
    assert _differences(postgres, job, expected.tables) == []
    # cdclake status lists each history table after its mirror, with its rows.
    reader = open_reader(_url(postgres), job.namespace)
    report = job_status(reader.read_state(), reader.table_status, reader.read_with)
    listed = {t["upstream"] + "_history": t["rows"] for t in report["tables"] if t["kind"] == "history"}
    assert listed == {f"{database}.{table}": len(state.rows) for (database, table), state in histories.items()}


def test_history_in_postgresql_tracked_on_some_columns_without_deleted_versions(
        spark: Any, postgres: LocalPostgres, tmp_path: Path) -> None:
    workload = Workload(WorkloadSpec(seed=21, tables=4, transactions=40, text_nul=False))
    captured, stream = _stream(tmp_path, workload)
    job = Job("to_pg_history_some", "simple", max_records=len(stream) // 2 + 1)
    settings = HistorySettings((r"shop\..*",), track_columns=("tier", "email", "quantity", "status"),
                               keep_deleted=False)

    replicate(spark, job, captured, history=settings, include=r"shop\..*|metrics\.numbers", sink=_url(postgres))

    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    everything = expected.history_tables(HistorySettings((r"shop\..*",)))
    assert sum(map(len, (s.rows for s in histories.values()))) < sum(map(len, (s.rows for s in everything.values())))
    assert _differences(postgres, job, histories) == []
    with psycopg.connect(parse(_url(postgres)).conninfo) as connection:
        found = connection.execute("SELECT to_regclass(%s)", (f'"{job.prefix}_metrics"."numbers_history"',)).fetchone()
    assert found == (None,)
