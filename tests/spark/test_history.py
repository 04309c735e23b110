"""History tables (SCD type 2) replicated from a simulated upstream equal the simulator's history of each
table, version for version: over several batches of a stream with re-sent copies, partitions that
interleave out of commit order, a resolved ts that holds changes back, and DDL (ADD/DROP/RENAME/MODIFY
COLUMN, TRUNCATE, CREATE TABLE ... LIKE, RENAME and DROP TABLE); with batches that stop between a
mirror's write and its history table's and run again, doubling no version; and with history tracked on
some columns only and deleted versions removed."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cdclake.schema.history import END_OP, HistoryRule, HistorySettings
from cdclake.spark import killpoints
from cdclake.spark.maintain import maintain
from cdclake.spark.status import status
from cdclake.workload import Workload, WorkloadSpec, produce
from tests.spark.jobs import Job, lake_differences, replicate
from tests.spark.streams import write

SPEC = WorkloadSpec(seed=21, transactions=30, rename_table=True, drop_table=True, create_table_like=True)


class Crash(Exception):
    """The batch stops here, as the process would die at this kill point: nothing after it runs."""


def _crash_at(monkeypatch: pytest.MonkeyPatch, point: str, occurrence: int) -> None:
    reached: Counter[str] = Counter()

    def crash(name: str) -> None:
        reached[name] += 1
        if name == point and reached[name] == occurrence:
            raise Crash(f"{point}:{occurrence}")

    monkeypatch.setattr(killpoints, "reached", crash)


def _stream(tmp_path: Path, workload: Workload) -> tuple[Path, Any]:
    stream = produce(workload, "simple", duplicates=2, watermark_interval_ms=40, partitions=3)
    write(tmp_path / "stream", stream.topic, stream.partitions)
    return tmp_path / "stream", stream


def test_history_tables_equal_the_simulators_history_through_ddl_copies_and_crashes(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workload = Workload(SPEC)
    captured, stream = _stream(tmp_path, workload)
    job = Job("history_all", "simple", max_records=len(stream) // 3 + 1)
    settings = HistorySettings(("*",))

    # The first table-merged of a batch comes right after a mirror's MERGE, before its history's; the
    # second crash falls in the batch re-run after the first, or in the next one.
    for point, occurrence in (("table-merged", 1), ("table-merged", 7)):
        _crash_at(monkeypatch, point, occurrence)
        with pytest.raises(Crash):
            replicate(spark, job, captured, history=settings)
    monkeypatch.undo()
    reports = replicate(spark, job, captured, history=settings)

    assert reports
    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    ends = Counter(row[END_OP] for state in histories.values() for row in state.rows.values())
    assert min(ends[op] for op in ("update", "delete", "truncate", None)) > 0, ends
    # The mirrors are compared by the other replication tests; here only what history adds.
    assert lake_differences(spark, job, histories) == []
    # cdclake status lists each history table after its mirror, with its rows.
    report = status(spark, namespace=job.namespace)
    listed = {t["upstream"] + "_history": t["rows"] for t in report["tables"] if t["kind"] == "history"}
    assert listed == {f"{database}.{table}": len(state.rows) for (database, table), state in histories.items()}


def test_history_tracked_on_some_columns_without_deleted_versions(spark: Any, tmp_path: Path) -> None:
    workload = Workload(WorkloadSpec(seed=21, tables=4, transactions=40))
    captured, stream = _stream(tmp_path, workload)
    job = Job("history_some", "simple", max_records=len(stream) // 2 + 1)
    # One table kept otherwise than the job says: every column tracked, deleted versions kept.
    customers = HistoryRule(r"shop\.customers", track_except=(), keep_deleted=True)
    settings = HistorySettings((r"shop\..*",), track_columns=("tier", "email", "quantity", "status"),
                               keep_deleted=False, rules=(customers,))

    replicate(spark, job, captured, history=settings, include=r"shop\..*|metrics\.numbers")

    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    everything = expected.history_tables(HistorySettings((r"shop\..*",)))
    without_rule = expected.history_tables(replace(settings, rules=()))
    assert sum(map(len, (s.rows for s in histories.values()))) < sum(map(len, (s.rows for s in everything.values())))
    customers_history = ("shop", "customers_history")
    assert len(histories[customers_history].rows) > len(without_rule[customers_history].rows)
    assert lake_differences(spark, job, histories) == []
    assert not spark.catalog.tableExists(job.lake_name("metrics", "numbers_history"))
    # cdclake maintain compacts the history tables too: their MERGEs leave delete files as the mirrors' do.
    compacted = {c.table: c for c in maintain(spark, namespace=job.namespace)}
    history = job.lake_name("shop", "customers_history")
    assert compacted[history].delete_files_before > compacted[history].delete_files_after == 0
    assert lake_differences(spark, job, histories) == []
