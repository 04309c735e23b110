"""Crash anywhere: ``cdclake replicate`` killed with SIGKILL at every named point of a batch and at a
random moment, and restarted each time, over one stream, ends with every table equal to the upstream
and each change in the changelog once.

Each run is a process of its own (its own JVM), as in production; the kills chain through the stream,
each run recovering from the death of the one before. The points, with the occurrence that kills (a
later one lets the run commit batches first, so the chain moves through the stream):

* ``planned:2``        batch 2's ranges recorded, nothing read;
* ``decoded:1``        while recovering it: decoded, nothing written;
* ``changelog:1``      its changelog committed, no table yet;
* ``table-merged:3``   between two tables' MERGEs (tables are applied four at a time);
* ``ddl-applied:1``    right after a DDL, before the rest of its table's batch;
* ``tables-applied:1`` every table applied, the offsets not committed;
* ``committed:1``      right after the offsets' commit;
* then a SIGKILL of the whole process group at a random moment after a run starts a batch (reading,
  decoding or applying), and a last run to the end.

The soak (bench/soak.py) does the same hundreds of times, at random points of longer streams.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from cdclake.workload import Workload, WorkloadSpec, produce
from tests.spark.crashing import KillAfter, left_behind, run_replicate, state_version
from tests.spark.jobs import Job, changelog_count, lake_differences, row_changes
from tests.spark.streams import write

CHAIN = ("planned:2", "decoded:1", "changelog:1", "table-merged:3", "ddl-applied:1", "tables-applied:1",
         "committed:1")


def test_sigkill_at_every_kill_point_and_at_a_random_moment_loses_nothing_and_repeats_nothing(
        spark: Any, tmp_path: Path) -> None:
    warehouse = Path(spark.conf.get("spark.sql.catalog.lake.warehouse"))
    workload = Workload(WorkloadSpec(seed=11, transactions=40, rename_table=True))
    stream = produce(workload, "simple", duplicates=2, watermark_interval_ms=50)
    write(tmp_path / "stream", stream.topic, stream.partitions)
    job = Job("crash_chain", "simple", max_records=len(stream) // 8 + 1)
    config = job.write_toml(tmp_path / "job.toml", tmp_path / "stream", warehouse)
    log = tmp_path / "replicate.log"

    runs = [run_replicate(config, log, kill_at=point) for point in CHAIN]
    planned_before = state_version(warehouse, job.namespace)
    runs.append(run_replicate(config, log, kill_after=KillAfter(
        random.Random(5).uniform(0.5, 4.0), lambda: state_version(warehouse, job.namespace) > planned_before)))
    random_kill_left = left_behind(warehouse, job.namespace, job.prefix)
    last = run_replicate(config, log)

    assert [run.kill for run in runs if not run.killed] == [], last.log
    assert last.returncode == 0, last.log
    assert [run.survivors for run in [*runs, last] if run.survivors] == []
    expected = workload.oracle().carried("simple", stream.codec_options).tables
    assert lake_differences(spark, job, expected) == [], f"the random kill left the job {random_kill_left}"
    clean = produce(workload, "simple", watermark_interval_ms=50)
    assert changelog_count(spark, job) == row_changes(clean)
    assert spark.table(job.system_table("dead_letters")).count() == 0
