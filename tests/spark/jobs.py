"""A replication job with namespaces of its own in a shared warehouse, and what the proofs check of it
afterwards: the lake against the upstream simulator's oracle, the changelog holding each change once,
the dead letters holding exactly the malformed messages.

The same :class:`Job` runs in the test's own Spark session (:meth:`Job.config`) or as ``cdclake
replicate`` in a process of its own (:meth:`Job.write_toml`), on one warehouse: Hadoop catalogs are
plain directories, so a session sees what another process committed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.model import RowChange
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.config import DEFAULT_MAX_BATCH_RECORDS
from cdclake.spark.replicate import BatchReport, ReplicateConfig, Replicator
from cdclake.spark.verify import compare_tables
from cdclake.workload import Stream, TableState
from tests.spark.streams import Malformed, Partitions, decoded_in_order

# Test cases by name: the format and the options its stream is produced and read with.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "open": ("open", {}),
    "canal-json": ("canal-json", {"enable-tidb-extension": True}),
    "canal-json-plain": ("canal-json", {}),
    "simple": ("simple", {}),
    "simple-avro": ("simple-avro", {}),
}


@dataclass(frozen=True)
class Job:
    """``prefix`` names its namespaces: ``<prefix>_cdclake`` for the job's own tables, and
    ``<prefix>_<database>`` for each upstream database's tables."""

    prefix: str
    format_name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    max_records: int = DEFAULT_MAX_BATCH_RECORDS
    on_bad_message: str = "dead-letter"

    @property
    def namespace(self) -> str:
        return f"{self.prefix}_cdclake"

    @property
    def target_namespace(self) -> str:
        return f"{self.prefix}_{{database}}"

    def lake_name(self, database: str, table: str, catalog: str = "lake") -> str:
        return f"`{catalog}`.`{self.prefix}_{database}`.`{table}`"

    def system_table(self, name: str) -> str:
        """One of the job's own tables: ``state``, ``changelog``, ``dead_letters``."""
        return f"`lake`.`{self.namespace}`.`{name}`"

    def config(self, **settings: Any) -> ReplicateConfig:
        return ReplicateConfig(self.format_name, self.options, namespace=self.namespace,
                               target_namespace=self.target_namespace, max_batch_records=self.max_records,
                               on_bad_message=self.on_bad_message, **settings)

    def write_toml(self, path: Path, captured: Path, warehouse: Path, master: str = "local[2]",
                   spark: Mapping[str, str] | None = None, jars: Iterable[str] = (), sink: str | None = None) -> Path:
        """The job as a ``cdclake replicate --config`` file; ``spark``: Spark settings of its session;
        ``jars``: jars added to cdclake's own; ``sink``: a database's URL, for its tables."""
        def value(item: Any) -> str:
            return json.dumps(item)  # TOML's basic strings, integers and booleans are spelled as in JSON

        def table(items: Mapping[str, Any]) -> str:
            return "{ " + ", ".join(f"{value(name)} = {value(item)}" for name, item in items.items()) + " }"

        path.write_text("\n".join([
            "[source]", f"captured = {value(str(captured))}",
            "[format]", f"name = {value(self.format_name)}", f"options = {table(self.options)}",
            "[lake]", f"warehouse = {value(str(warehouse))}", f"namespace = {value(self.namespace)}",
            f"master = {value(master)}", f"spark = {table(spark or {})}", f"jars = {value(list(jars))}",
            "[tables]", f"target-namespace = {value(self.target_namespace)}",
            "[batch]", f"max-records = {self.max_records}", f"on-bad-message = {value(self.on_bad_message)}",
            *(["[sink]", f"url = {value(sink)}"] if sink is not None else []),
            "",
        ]), encoding="utf-8")
        return path


def replicate(spark: Any, job: Job, captured: Path, **settings: Any) -> list[BatchReport]:
    """Run the job in this session over the captured topic under ``captured`` until caught up."""
    return Replicator(spark, CapturedTopics(captured), job.config(**settings)).run(once=True)


def lake_differences(spark: Any, job: Job, tables: Mapping[tuple[str, str], TableState],
                     catalog: str = "lake") -> list[tuple[Any, ...]]:
    """How the job's lake tables (in the session's catalog ``catalog``) differ from ``tables``: nothing
    when every one holds the same rows and columns. ``tables`` must not be empty: an empty comparison
    proves nothing."""
    assert tables, "no upstream tables to compare with"
    return [(c.upstream, f"{c.missing} missing", f"{c.unexpected} unexpected", c.column_differences, c.examples)
            for c in compare_tables(spark, tables, lambda database, table: job.lake_name(database, table, catalog))
            if not c.equal]


def rows_compared(tables: Mapping[tuple[str, str], TableState]) -> int:
    return sum(len(state.rows) for state in tables.values())


def row_changes(stream: Stream, partitions: Partitions | None = None) -> int:
    """The row changes a consumer decodes from ``partitions`` (default: the stream's own), each
    partition in order: for a stream without re-sent copies, every upstream change once."""
    return sum(isinstance(event, RowChange)
               for _, _, events in decoded_in_order(stream.spec.format_name, stream.codec_options,
                                                    partitions if partitions is not None else stream.partitions)
               for event in events)


def changelog_count(spark: Any, job: Job) -> int:
    return int(spark.table(job.system_table("changelog")).count())


def dead_letter_mismatches(spark: Any, job: Job, malformed: Iterable[Malformed]) -> list[str]:
    """How the dead-letter table differs from ``malformed``: each must be there once, at its
    coordinates, raw and whole, with the reason its decoder gives; nothing else may be."""
    expected = {m.coordinates: m for m in malformed}
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    for row in spark.table(job.system_table("dead_letters")).collect():
        where = (row["partition"], row["offset"])
        bad = expected.get(where)
        if bad is None or where in seen:
            found.append(f"unexpected dead letter at {where}: {row['reason']}")
            continue
        seen.add(where)
        if (row["raw_key"], row["raw_value"]) != (bad.message.key, bad.message.value):
            found.append(f"{where}: the dead letter's bytes are not the message's")
        if row["reason"] not in bad.reasons or row["topic"] != bad.message.origin.topic:
            found.append(f"{where}: topic {row['topic']}, reason {row['reason']!r}; expected one of {set(bad.reasons)}")
    found += [f"no dead letter for the {expected[w].kind} mutant at {w}" for w in sorted(expected.keys() - seen)]
    return found
