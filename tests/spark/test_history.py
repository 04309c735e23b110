"""History tables (SCD type 2) replicated from a simulated upstream equal the simulator's history of each
table, version for version: over several batches of a stream with re-sent copies, partitions that
interleave out of commit order, a resolved ts that holds changes back, and DDL (ADD/DROP/RENAME/MODIFY
COLUMN, TRUNCATE, CREATE TABLE ... LIKE, RENAME and DROP TABLE); with history tracked on some columns only
and deleted versions removed; and after SIGKILLs between a mirror's write and its history table's, with
no version lost or doubled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdclake.schema.history import HistorySettings
from cdclake.workload import Workload, WorkloadSpec, produce
from tests.spark.crashing import run_replicate
from tests.spark.jobs import Job, lake_differences, replicate
from tests.spark.streams import write

SPEC = WorkloadSpec(seed=21, transactions=60, rename_table=True, drop_table=True, create_table_like=True)


def _stream(tmp_path: Path, workload: Workload) -> tuple[Path, Any]:
    stream = produce(workload, "simple", duplicates=2, watermark_interval_ms=40, partitions=3)
    write(tmp_path / "stream", stream.topic, stream.partitions)
    return tmp_path / "stream", stream


def test_history_tables_equal_the_simulators_history_through_ddl_and_copies(spark: Any, tmp_path: Path) -> None:
    workload = Workload(SPEC)
    captured, stream = _stream(tmp_path, workload)
    job = Job("history_all", "simple", max_records=len(stream) // 6 + 1)
    settings = HistorySettings(("*",))

    reports = replicate(spark, job, captured, history=settings)

    assert len(reports) >= 6
    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    assert sum(len(state.rows) for state in histories.values()) > 2 * sum(len(s.rows) for s in expected.tables.values())
    assert lake_differences(spark, job, expected.tables) == []
    assert lake_differences(spark, job, histories) == []


def test_history_tracked_on_some_columns_without_deleted_versions(spark: Any, tmp_path: Path) -> None:
    workload = Workload(SPEC)
    captured, stream = _stream(tmp_path, workload)
    job = Job("history_some", "simple", max_records=len(stream) // 4 + 1)
    settings = HistorySettings((r"shop\..*",), track_columns=("tier", "email", "quantity", "status"),
                               keep_deleted=False)

    replicate(spark, job, captured, history=settings)

    expected = workload.oracle().carried("simple", stream.codec_options)
    histories = expected.history_tables(settings)
    everything = expected.history_tables(HistorySettings((r"shop\..*",)))
    assert sum(map(len, (s.rows for s in histories.values()))) < sum(map(len, (s.rows for s in everything.values())))
    assert lake_differences(spark, job, histories) == []
    assert not spark.catalog.tableExists(job.lake_name("metrics", "numbers_history"))


def test_a_rerun_after_a_crash_between_a_mirror_and_its_history_doubles_no_version(spark: Any,
                                                                                     tmp_path: Path) -> None:
    warehouse = Path(spark.conf.get("spark.sql.catalog.lake.warehouse"))
    workload = Workload(SPEC)
    captured, stream = _stream(tmp_path, workload)
    job = Job("history_crash", "simple", max_records=len(stream) // 3 + 1)
    config = job.write_toml(tmp_path / "job.toml", captured, warehouse, tables={"history": ["*"]})
    log = tmp_path / "replicate.log"

    # The first table-merged comes right after a mirror's MERGE, before its history's; the later ones
    # fall between tables, or after a TRUNCATE.
    runs = [run_replicate(config, log, kill_at=point) for point in ("table-merged:1", "table-merged:9")]
    last = run_replicate(config, log)

    assert [run.killed for run in runs] == [True, True], last.log
    assert last.returncode == 0, last.log
    expected = workload.oracle().carried("simple", stream.codec_options)
    assert lake_differences(spark, job, expected.history_tables(HistorySettings(("*",)))) == []
