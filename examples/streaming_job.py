"""A Structured Streaming job with cdclake's Spark API: a file source feeds raw Kafka records to
``foreachBatch``, where a ``ChangeApplier`` keeps Iceberg tables in step with the upstream; Spark's
retries of a batch id apply nothing twice.

The records come from cdclake's upstream simulator (Open Protocol), written as JSON files of records,
one file per micro-batch, as a Kafka topic would deliver them over time::

    python3 examples/streaming_job.py [WORKDIR]  # default: a new temporary directory

Against Kafka, the source is Spark's own (where its jar is installed) and nothing else changes::

    records = spark.readStream.format("kafka").option("kafka.bootstrap.servers", "broker:9092") \\
        .option("subscribe", "tidb-cdc").load()
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

from pyspark.sql import functions as F

from cdclake.spark import ChangeApplier, build_session
from cdclake.spark.verify import compare_tables, lake_name_in
from cdclake.workload import Stream, Workload, WorkloadSpec, produce

BATCHES = 3


def write_batches(stream: Stream, directory: Path) -> None:
    """Batch i: the i-th third of every partition's records, key and value in base64."""
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(BATCHES):
        lines = []
        for partition, messages in sorted(stream.partitions.items()):
            first, end = len(messages) * index // BATCHES, len(messages) * (index + 1) // BATCHES
            for offset in range(first, end):
                message = messages[offset]
                lines.append(json.dumps({
                    "topic": stream.topic, "partition": partition, "offset": offset,
                    "timestamp": message.timestamp_ms,
                    "key": None if message.key is None else base64.b64encode(message.key).decode(),
                    "value": None if message.value is None else base64.b64encode(message.value).decode(),
                }))
        (directory / f"batch-{index:03d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(workdir: Path) -> int:
    workload = Workload(WorkloadSpec(seed=2, transactions=30, tables=3))
    stream = produce(workload, "open", duplicates=1)
    write_batches(stream, workdir / "incoming")

    spark = build_session(warehouse=workdir / "warehouse")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        records = (spark.readStream
                   .schema("topic string, partition int, offset bigint, timestamp bigint, key string, value string")
                   .option("maxFilesPerTrigger", 1).json(str(workdir / "incoming"))
                   .select("topic", "partition", "offset", "timestamp",
                           F.unbase64("key").alias("key"), F.unbase64("value").alias("value")))
        applier = ChangeApplier(spark, "open", app_id="streaming-example")
        query = (records.writeStream.foreachBatch(applier).trigger(availableNow=True)
                 .option("checkpointLocation", str(workdir / "checkpoint")).start())
        query.awaitTermination()
        print(f"{query.lastProgress['batchId'] + 1} micro-batches applied")

        expected = workload.oracle().carried("open", stream.codec_options).tables
        comparisons = compare_tables(spark, expected, lake_name_in("lake"))
        for comparison in comparisons:
            print(f"{comparison.upstream}: {comparison.lake_rows} rows, {'equal' if comparison.equal else 'DIFFERS'}")
        return 0 if all(c.equal for c in comparisons) else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="cdclake-stream-"))))
