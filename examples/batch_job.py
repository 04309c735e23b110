"""A batch job with cdclake's Spark API: read a captured Canal-JSON topic, decode it, look at each
table's changes with their real column types, then apply them to Iceberg tables exactly as
``cdclake replicate`` would, and check the tables against the upstream.

The stream comes from cdclake's upstream simulator, so the example runs anywhere::

    python3 examples/batch_job.py [WORKDIR]      # default: a new temporary directory

With a real stream, point ``read_records`` at ``kafka={"bootstrap.servers": ...}, topics=[...]`` or at a
directory ``cdclake capture`` wrote.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from cdclake.spark import ChangeApplier, build_session, decode_changes, read_records, table_views
from cdclake.spark.verify import compare_tables, lake_name_in
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured

OPTIONS = {"enable-tidb-extension": "true"}


def main(workdir: Path) -> int:
    workload = Workload(WorkloadSpec(seed=1, transactions=30, tables=3))
    stream = produce(workload, "canal-json", OPTIONS, duplicates=1)
    write_captured(stream, workdir / "capture", stream.topic)

    spark = build_session(warehouse=workdir / "warehouse")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        records = read_records(spark, captured=workdir / "capture")
        changes = decode_changes(records, "canal-json", OPTIONS)
        changes.groupBy("kind").count().orderBy("kind").show()
        for name, view in sorted(table_views(changes).items()):
            columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in view.schema.fields)
            print(f"{name}: {view.count()} changes; columns {columns}")

        report = ChangeApplier(spark, "canal-json", OPTIONS)(records, batch_id=0)
        print(report)
        expected = workload.oracle().carried("canal-json", stream.codec_options).tables
        comparisons = compare_tables(spark, expected, lake_name_in("lake"))
        for comparison in comparisons:
            print(f"{comparison.upstream}: {comparison.lake_rows} rows, {'equal' if comparison.equal else 'DIFFERS'}")
        return 0 if all(c.equal for c in comparisons) else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="cdclake-batch-"))))
