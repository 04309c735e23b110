"""Compare a job's lake tables with the upstream, in a process of its own: ``python3 -m
tests.spark.compare_lake JOB_TOML EXPECTED_PICKLE PREFIX``.

For a catalog the test process's Spark session does not have (a REST or JDBC catalog): the session is
built from the job file alone, as ``cdclake replicate`` builds it, so the comparison reads the tables
through the same catalog the job wrote them to. ``EXPECTED_PICKLE`` holds the oracle's tables; the
differences go to standard output, one per line, and the exit status says whether there were any.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from cdclake.jobconfig import job_settings, merged, read_toml
from cdclake.spark.session import build_session
from tests.spark.jobs import Job, lake_differences, rows_compared


def main(argv: list[str]) -> int:
    config, expected_file, prefix = Path(argv[0]), Path(argv[1]), argv[2]
    settings = job_settings(merged(read_toml(config), {}))
    expected = pickle.loads(expected_file.read_bytes())  # written by the test that runs this script
    spark = build_session(settings.master, catalog=settings.replicate.catalog, warehouse=settings.warehouse,
                          conf=settings.spark_conf, extra_jars=settings.jars)
    try:
        spark.sparkContext.setLogLevel("ERROR")
        differences = lake_differences(spark, Job(prefix, settings.replicate.format), expected)
    finally:
        spark.stop()
    for difference in differences:
        print(difference)
    print(f"compared {len(expected)} tables, {rows_compared(expected)} rows: {len(differences)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
