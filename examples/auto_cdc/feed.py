"""cdclake's per-table views of a change stream, written as the change feed that Spark's Auto CDC
(``pyspark.pipelines.create_auto_cdc_flow``) reads: one Parquet directory per upstream table, and
``tables.json`` naming each table's directory, key columns and schema for the pipeline in
``transformations/mirrors.py``.

This half runs on the Spark cdclake supports (3.5, 4.1)::

    python3 examples/auto_cdc/feed.py WORKDIR

The pipeline half needs Spark 4.2 (SCD type 1) or 4.3 (type 2) and a catalog whose tables support
row-level operations; docs/auto-cdc.md says why it does not run on this project's stack yet and how
to run it where it does.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from cdclake.spark import build_session, decode_changes, read_records, table_views
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OPTIONS = {"enable-tidb-extension": "true"}
# Auto CDC keeps no DDL and needs a key per table: a workload without DDL and without keyless tables.
SPEC = WorkloadSpec(seed=5, transactions=40, tables=3, ddl=False, keyless_table=False)


def key_columns(changes: DataFrame) -> dict[str, list[str]]:
    """Each table's key columns, as its change records name them (``shop.orders`` -> ``["id"]``)."""
    rows = changes.filter("kind = 'row'").select("database", "table", "key_columns").distinct().collect()
    return {f"{row['database']}.{row['table']}": json.loads(row["key_columns"]) for row in rows}


def write_feed(spark: SparkSession, captured: Path, feed: Path) -> dict[str, dict[str, object]]:
    """The captured stream's table views as Parquet under ``feed``, with ``feed/tables.json``."""
    changes = decode_changes(read_records(spark, captured=captured), "canal-json", OPTIONS)
    keys = key_columns(changes)
    tables = {}
    for name, view in sorted(table_views(changes).items()):
        path = feed / name
        view.write.mode("overwrite").parquet(str(path))
        tables[name] = {"path": str(path.absolute()), "keys": keys[name], "schema": view.schema.jsonValue()}
    (feed / "tables.json").write_text(json.dumps(tables, indent=1))
    return tables


def main(workdir: Path) -> int:
    workload = Workload(SPEC)
    stream = produce(workload, "canal-json", OPTIONS, duplicates=1)
    write_captured(stream, workdir / "capture", stream.topic)
    spark = build_session(warehouse=workdir / "warehouse")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        tables = write_feed(spark, workdir / "capture", workdir / "feed")
    finally:
        spark.stop()
    for name, table in tables.items():
        print(f"{name}: keys {', '.join(table['keys'])} -> {table['path']}")
    print(f"then, on Spark 4.3 (docs/auto-cdc.md): spark-pipelines --conf spark.cdclake.feed={workdir / 'feed'} "
          "run --spec examples/auto_cdc/pipeline.yml")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="cdclake-autocdc-"))))
