"""A Structured Streaming job on Spark's own Kafka source: ``spark.readStream.format("kafka")`` feeds
``foreachBatch(ChangeApplier(...))``, which keeps Iceberg tables in step with the upstream. The query
is stopped half-way and started again from its checkpoint, as a job is redeployed; the tables end
equal to the upstream all the same.

The upstream is cdclake's simulator (Canal-JSON with the TiDB extension), produced into a topic::

    python3 examples/kafka_job.py [WORKDIR] [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` the example starts a Kafka broker of its own on 127.0.0.1 (Apache
Kafka's jars from Maven Central, cached) and stops it at the end. Spark's Kafka source is among the
jars ``build_session`` adds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from pyspark.sql import SparkSession

from cdclake.localkafka import LocalKafka
from cdclake.model import RawMessage
from cdclake.sources.kafka import create_topic
from cdclake.spark import ChangeApplier, build_session
from cdclake.spark.verify import compare_tables, lake_name_in
from cdclake.workload import Workload, WorkloadSpec, produce, produce_to_kafka

TOPIC = "tidb-canal"
OPTIONS = {"enable-tidb-extension": "true"}


def halves(partitions: dict[int, list[RawMessage]]) -> tuple[list[RawMessage], list[RawMessage]]:
    """Each partition's first half, then the rest: what the topic holds before and after the restart."""
    first = [m for messages in partitions.values() for m in messages[: len(messages) // 2]]
    rest = [m for messages in partitions.values() for m in messages[len(messages) // 2:]]
    return first, rest


def run_query(spark: SparkSession, bootstrap: str, checkpoint: Path) -> int:
    """One run of the query until it has applied what the topic holds now; its last batch id."""
    records = (spark.readStream.format("kafka")
               .option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
               .option("startingOffsets", "earliest").load())
    applier = ChangeApplier(spark, "canal-json", OPTIONS, app_id="kafka-example")
    query = (records.writeStream.foreachBatch(applier).trigger(availableNow=True)
             .option("checkpointLocation", str(checkpoint)).start())
    query.awaitTermination()
    return int(query.lastProgress["batchId"])


def main(workdir: Path, bootstrap: str | None) -> int:
    workload = Workload(WorkloadSpec(seed=5, transactions=40, tables=3))
    stream = produce(workload, "canal-json", OPTIONS, duplicates=1)
    first, rest = halves(stream.partitions)
    with ExitStack() as stack:
        if bootstrap is None:
            bootstrap = stack.enter_context(LocalKafka()).bootstrap
        config = {"bootstrap.servers": bootstrap}
        create_topic(config, TOPIC, len(stream.partitions))
        spark = build_session(warehouse=workdir / "warehouse")
        stack.callback(spark.stop)
        spark.sparkContext.setLogLevel("ERROR")
        produce_to_kafka(first, config, TOPIC)
        print(f"first run: up to batch {run_query(spark, bootstrap, workdir / 'checkpoint')}")
        produce_to_kafka(rest, config, TOPIC)
        print(f"restarted: up to batch {run_query(spark, bootstrap, workdir / 'checkpoint')}")

        expected = workload.oracle().carried("canal-json", stream.codec_options).tables
        comparisons = compare_tables(spark, expected, lake_name_in("lake"))
        for comparison in comparisons:
            print(f"{comparison.upstream}: {comparison.lake_rows} rows, {'equal' if comparison.equal else 'DIFFERS'}")
        return 0 if all(c.equal for c in comparisons) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", nargs="?", type=Path, default=None)
    parser.add_argument("--bootstrap-servers", default=None)
    arguments = parser.parse_args()
    workdir = arguments.workdir or Path(tempfile.mkdtemp(prefix="cdclake-kafka-"))
    sys.exit(main(workdir, arguments.bootstrap_servers))
