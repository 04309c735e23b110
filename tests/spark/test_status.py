"""``cdclake status`` on what a real job wrote, read without Spark: the numbers read through Spark (the
way status read before) equal those pyiceberg reads from a Hadoop warehouse, the PostgreSQL sink's
are its tables' own, and the status process never loads PySpark."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from cdclake.sinks.postgres.connection import parse
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.replicate import Replicator
from cdclake.spark.status import status as status_through_spark
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured
from tests.catalogs import LocalPostgres
from tests.spark.jobs import Job
from tests.spark.status_run import status_without_spark

OPTIONS = {"enable-tidb-extension": True}
def _stream(tmp_path: Path, format_name: str, options: dict[str, Any]) -> tuple[Any, Path]:
    stream = produce(Workload(WorkloadSpec(seed=29, transactions=30, rename_table=True, text_nul=False)),
                     format_name, options, duplicates=2)
    write_captured(stream, tmp_path / "stream", stream.topic)
    return stream, tmp_path / "stream"


def _instant(iso: str) -> datetime:
    """An ISO time as an aware instant; a naive one (Spark's, in this process's zone) made aware."""
    moment = datetime.fromisoformat(iso)
    return moment.astimezone(UTC)


def test_status_of_a_hadoop_warehouse_reads_without_spark_what_spark_reads(spark: Any, tmp_path: Path) -> None:
    stream, captured = _stream(tmp_path, "canal-json", OPTIONS)
    job = Job("status_hadoop", "canal-json", OPTIONS, max_records=len(stream) // 4 + 1)
    replicator = Replicator(spark, CapturedTopics(captured), job.config())
    # Two batches of a backlog of four or more: some partitions are left behind, so there is a lag.
    reports = [replicator.step(), replicator.step()]
    assert all(reports)

    before = status_through_spark(spark, "lake", job.namespace)
    warehouse = spark.conf.get("spark.sql.catalog.lake.warehouse")
    after = status_without_spark("--warehouse", warehouse, "--namespace", job.namespace)

    assert (after["read_with"], after["batch"]) == ("pyiceberg", 2)
    assert before["batch"] == after["batch"]
    assert [(t["upstream"], t["lake_table"], t["rows"], t["applied_ts"]) for t in after["tables"]] == \
        [(t["upstream"], t["lake_table"], t["rows"], t["applied_ts"]) for t in before["tables"]]
    assert [_instant(t["last_commit"]) for t in after["tables"]] == \
        [_instant(t["last_commit"]) for t in before["tables"]]
    assert after["partitions"] == before["partitions"]
    assert all(t["rows"] > 0 for t in after["tables"])
    assert all(t["applied_time"] == datetime.fromtimestamp((t["applied_ts"] >> 18) / 1000, UTC).isoformat()
               for t in after["tables"])
    ends = CapturedTopics(captured).extents()
    lags = {(p["topic"], p["partition"]): p["lag_at_last_batch"] for p in after["partitions"]}
    assert lags == {tp: extent.high - replicator.sink.load_state()[0].positions[tp].next_offset
                    for tp, extent in ends.items()}
    assert sum(lags.values()) > 0


def test_status_of_a_postgresql_sink_reads_its_tables_without_spark(spark: Any, postgres: LocalPostgres,
                                                                  tmp_path: Path) -> None:
    url = f"{postgres.jdbc_url}?user={postgres.user}"
    stream, captured = _stream(tmp_path, "dataworks", {})
    job = Job("status_pg", "dataworks", {}, max_records=len(stream) // 3 + 1)
    reports = Replicator(spark, CapturedTopics(captured), job.config(sink=url)).run(once=True)

    found = status_without_spark("--sink", url, "--namespace", job.namespace)

    assert (found["read_with"], found["batch"]) == ("psycopg", len(reports))
    with psycopg.connect(parse(url).conninfo) as connection:
        counted = {t["lake_table"]: connection.execute(f"SELECT count(*) FROM {t['lake_table']}").fetchone()[0]
                   for t in found["tables"]}
    assert {t["lake_table"]: t["rows"] for t in found["tables"]} == counted
    assert sum(counted.values()) > 0
    # Caught up: every partition read to the end the last batch saw.
    assert {p["lag_at_last_batch"] for p in found["partitions"]} == {0}
