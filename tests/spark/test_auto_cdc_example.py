"""The half of examples/auto_cdc that runs on cdclake's Spark: the change feed that Spark's Auto CDC
reads (``feed.py``).

Auto CDC itself does not run here (docs/auto-cdc.md says why), so this checks what the pipeline in
``transformations/mirrors.py`` relies on, with the flow's own settings: every table's changes carry the
sequence (``_commit_ts``, ``_partition``, ``_offset``), no two changes of one key share one, and reading
the feed as Spark documents SCD type 1 (per key the change of the greatest sequence; a delete leaves no
row) gives every table as the upstream has it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from cdclake.spark.records import VIEW_COLUMNS
from cdclake.spark.verify import compare_table
from cdclake.workload import Workload, produce, write_captured

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "auto_cdc"
SEQUENCE = ("_commit_ts", "_partition", "_offset")


def _feed_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("auto_cdc_feed", EXAMPLE / "feed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scd1_reading(changes: Any, keys: list[str]) -> Any:
    """Per key, the change of the greatest sequence, unless it is a delete: SCD type 1 as Auto CDC
    defines it, over the whole feed at once."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy(*keys).orderBy(F.struct(*SEQUENCE).desc())
    return (changes.withColumn("_rank", F.row_number().over(newest_first))
            .filter("_rank = 1 AND _op <> 'delete'").drop("_rank", *VIEW_COLUMNS))


def test_the_feed_orders_each_keys_changes_and_reads_as_the_upstream_under_scd1(spark: Any, tmp_path: Path) -> None:
    feed = _feed_module()
    workload = Workload(feed.SPEC)
    stream = produce(workload, "canal-json", feed.OPTIONS, duplicates=1)
    write_captured(stream, tmp_path / "capture", stream.topic)
    tables = feed.write_feed(spark, tmp_path / "capture", tmp_path / "feed")
    expected = workload.oracle().carried("canal-json", stream.codec_options).tables
    assert sorted(tables) == sorted(f"{database}.{table}" for database, table in expected)

    for (database, table), state in sorted(expected.items()):
        described = tables[f"{database}.{table}"]
        changes = spark.read.parquet(described["path"])
        keys = described["keys"]
        assert keys == list(state.schema.key_columns)
        assert changes.filter(" OR ".join(f"{name} IS NULL" for name in SEQUENCE)).count() == 0
        assert changes.groupBy(*keys, *SEQUENCE).count().filter("count > 1").count() == 0

        lake_table = f"lake.auto_cdc_feed.{table}"
        _scd1_reading(changes, keys).writeTo(lake_table).create()
        comparison = compare_table(spark, f"{database}.{table}", lake_table, state.schema, state.rows.values())
        assert comparison.equal, comparison
