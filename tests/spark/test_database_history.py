"""History tables (SCD type 2) in the database sinks, PostgreSQL and MariaDB: replicated from a simulated
upstream with DDLs of every kind and re-delivered copies, they equal the simulator's history of each table,
through a batch stopped between a mirror's write and its history table's and run again, and ``cdclake
status`` lists them; and with history tracked on some columns, deleted versions left out."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cdclake.schema.history import END_OP, HistorySettings
from cdclake.sinks import open_reader
from cdclake.status import job_status
from cdclake.workload import Workload, WorkloadSpec
from tests.spark import test_mariadb_sink, test_postgres_sink
from tests.spark.jobs import Job, replicate
from tests.spark.test_history import SPEC, Crash, _crash_at, _stream

# Each sink's server fixture, its URL and its comparison of a job's tables with upstream ones.
SINKS: dict[str, tuple[Callable[[Any], str], Callable[[Any, Job, Any], list[Any]]]] = {
    "postgres": (test_postgres_sink._url, test_postgres_sink._differences),
    "mariadb": (lambda server: server.jdbc_url, test_mariadb_sink._differences),
}


@pytest.mark.parametrize("sink", SINKS)
def test_history_tables_in_a_database_equal_the_simulators_history_through_ddl_copies_and_a_crash(
        spark: Any, sink: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, (url_of, differences) = request.getfixturevalue(sink), SINKS[sink]
    workload = Workload(dataclasses.replace(SPEC, text_nul=False))  # PostgreSQL's text holds no NUL
    captured, stream = _stream(tmp_path, workload)
    job = Job(f"history_{sink}_all", "simple", max_records=len(stream) // 2 + 1)
    settings = HistorySettings(("*",))

    # The first table-merged comes right after a mirror's merge is kept, before its history's.
    _crash_at(monkeypatch, "table-merged", 1)
    with pytest.raises(Crash):
        replicate(spark, job, captured, history=settings, sink=url_of(server))
    monkeypatch.undo()
    reports = replicate(spark, job, captured, history=settings, sink=url_of(server))

    assert len(reports) >= 2  # a key's versions span batches
    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    ends = Counter(row[END_OP] for state in histories.values() for row in state.rows.values())
    assert min(ends[op] for op in ("update", "delete", "truncate", None)) > 0, ends
    assert differences(server, job, histories) == []
    assert differences(server, job, expected.tables) == []
    # cdclake status lists each history table after its mirror, with its rows.
    reader = open_reader(url_of(server), job.namespace)
    report = job_status(reader.read_state(), reader.table_status, reader.read_with)
    listed = {t["upstream"] + "_history": t["rows"] for t in report["tables"] if t["kind"] == "history"}
    assert listed == {f"{database}.{table}": len(state.rows) for (database, table), state in histories.items()}


@pytest.mark.parametrize("sink", SINKS)
def test_history_in_a_database_tracked_on_some_columns_without_deleted_versions(
        spark: Any, sink: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server, (url_of, differences) = request.getfixturevalue(sink), SINKS[sink]
    workload = Workload(WorkloadSpec(seed=21, tables=4, transactions=40, text_nul=False))
    captured, stream = _stream(tmp_path, workload)
    job = Job(f"history_{sink}_some", "simple", max_records=len(stream) // 2 + 1)
    settings = HistorySettings((r"shop\..*",), track_columns=("tier", "email", "quantity", "status"),
                               keep_deleted=False)

    replicate(spark, job, captured, history=settings, include=r"shop\..*|metrics\.numbers", sink=url_of(server))

    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    everything = expected.history_tables(HistorySettings((r"shop\..*",)))
    assert sum(map(len, (s.rows for s in histories.values()))) < sum(map(len, (s.rows for s in everything.values())))
    assert differences(server, job, histories) == []
    # Only the tables named have one: metrics.numbers is replicated, without history.
    reader = open_reader(url_of(server), job.namespace)
    report = job_status(reader.read_state(), reader.table_status, reader.read_with)["tables"]
    assert "metrics.numbers" in [t["upstream"] for t in report]
    assert [t["upstream"] for t in report if t["kind"] == "history"] == sorted(
        f"{database}.{table}" for database, table in expected.tables if database == "shop")
