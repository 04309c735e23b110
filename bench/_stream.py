"""The benchmarks' workload as a captured topic: the simulator's ten tables in one format on eight
partitions, generated once and cached under ``$XDG_CACHE_HOME/cdclake/bench`` (default ``~/.cache``),
keyed by the workload, the format and the source of the code that makes the bytes; and the batches a
replication of it plans.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pyspark import cloudpickle

import cdclake.model
from cdclake.sources.captured import CapturedTopics
from cdclake.sources.ranges import OffsetRange, PartitionExtent, Source, SourceRecord, plan_ranges
from cdclake.workload import Workload, WorkloadSpec, messages, write_captured

# Spark's workers cannot import bench/'s modules: what of this one goes into a task (Prefix) goes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

OPTIONS: dict[str, dict[str, Any]] = {
    "open": {},
    "canal-json": {"enable-tidb-extension": True},  # the only Canal-JSON a consumer can order
    "simple": {},
    "simple-avro": {},
    "dataworks": {},
}
SEED = 3
TABLES = 10
ROWS_PER_TRANSACTION = 9  # each transaction changes 1 to 9 rows: 5 on average
PARTITIONS = 8  # of the captured topic, and of the Kafka topic it is produced to


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cdclake" / "bench"


@dataclass(frozen=True)
class CapturedStream:
    """A captured topic of the workload, on disk."""

    root: Path
    topic: str
    format_name: str
    options: Mapping[str, Any]
    spec: WorkloadSpec
    messages: int
    bytes: int
    generated_in: float  # seconds, when it was generated (not by this run if cached)

    @property
    def source(self) -> CapturedTopics:
        return CapturedTopics(self.root, [self.topic])


class Prefix:
    """The first ``per_partition`` records of each partition of ``source``: a warm-up's source."""

    def __init__(self, source: Source, per_partition: int) -> None:
        self.source, self.per_partition = source, per_partition

    def extents(self) -> dict[tuple[str, int], PartitionExtent]:
        return {tp: PartitionExtent(e.low, min(e.high, e.low + self.per_partition))
                for tp, e in self.source.extents().items()}

    def records(self, offset_range: OffsetRange) -> Iterator[SourceRecord]:
        return self.source.records(offset_range)


def workload_spec(events: int, text_nul: bool = True) -> WorkloadSpec:
    """About ``events`` row changes over ten tables (a transaction has 5 on average); without
    ``text_nul``, no string holds the NUL character (PostgreSQL's text cannot)."""
    transactions = max(1, round(events / ((1 + ROWS_PER_TRANSACTION) / 2)))
    return WorkloadSpec(seed=SEED, tables=TABLES, transactions=transactions, rows_per_transaction=ROWS_PER_TRANSACTION,
                        text_nul=text_nul)


def _code_digest() -> str:
    """The source of what makes the stream's bytes: a change to it must not reuse an old capture."""
    package = Path(cdclake.model.__file__).parent
    files = sorted([*package.glob("workload/*.py"), *package.glob("formats/**/*"), package / "model.py",
                    package / "types.py", package / "sources/captured.py"])
    digest = hashlib.sha256()
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def prepared_stream(format_name: str, events: int, cache: Path, text_nul: bool = True) -> CapturedStream:
    """The captured topic of the workload in ``format_name``, from the cache or generated into it."""
    spec, options = workload_spec(events, text_nul), OPTIONS[format_name]
    key = json.dumps({"format": format_name, "options": options, "spec": asdict(spec), "partitions": PARTITIONS,
                      "code": _code_digest()}, sort_keys=True, default=str)
    directory = cache / f"{format_name}-{spec.transactions}tx-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    description = directory / "stream.json"
    if not description.exists():
        shutil.rmtree(directory, ignore_errors=True)  # an interrupted generation
        topic = "cdclake"
        print(f"generating {format_name} for {spec} into {directory} ...", flush=True)
        started = time.perf_counter()
        written = write_captured(messages(Workload(spec), format_name, options, partitions=PARTITIONS, topic=topic),
                                 directory / "topic", topic)
        size = sum(p.stat().st_size for p in (directory / "topic").rglob("*.jsonl"))
        facts = {"topic": topic, "messages": written, "bytes": size, "seconds": time.perf_counter() - started,
                 "key": json.loads(key)}
        description.write_text(json.dumps(facts, indent=2), encoding="utf-8")  # last: marks it complete
    facts = json.loads(description.read_text(encoding="utf-8"))
    return CapturedStream(directory / "topic", facts["topic"], format_name, options, spec, facts["messages"],
                          facts["bytes"], facts["seconds"])


def batch_plans(extents: Mapping[tuple[str, int], PartitionExtent], max_records: int) -> list[list[OffsetRange]]:
    """The ranges of each batch, as the replication plans them from the start."""
    plans: list[list[OffsetRange]] = []
    positions: dict[tuple[str, int], int] = {}
    while ranges := plan_ranges(extents, positions, max_records):
        plans.append(ranges)
        positions.update({(r.topic, r.partition): r.end for r in ranges})
    return plans
