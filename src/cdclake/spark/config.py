"""What a replication job is asked to do (:class:`ReplicateConfig`), checked before a Spark session or a
table is touched: the job file, the CLI's options and the Python API all end here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdclake.errors import OptionError
from cdclake.formats import get_codec
from cdclake.ordering.bad_messages import DEAD_LETTER, check_bad_message_policy
from cdclake.schema.history import HistorySettings
from cdclake.schema.layout import LayoutRule, TableLayout, layout_for
from cdclake.schema.names import Naming
from cdclake.schema.policy import EvolutionPolicy
from cdclake.sinks import check_url as check_sink_url
from cdclake.sinks.base import refuse_layout
from cdclake.spark.history import check_history

TAIL_CHOICES = ("keep", "apply")



# Each batch pays seconds of fixed costs (Spark jobs, commits, a MERGE per table and DDL) whatever its
# size, and a job's first batch applies only what every partition has reached (its paces are not known
# yet), so a backlog replicates faster in larger batches: a backlog of 1,048,520 records took 102 s in
# one batch and 142 s in batches of 500,000 (BENCHMARKS.md). A task streams its records; what grows with
# the batch is Spark's cache of its decoded records (the JVM's live heap held up to 1.8 GiB in a batch of
# 2,000,000, 0.6 GiB in one of 1,048,520), which Spark spills to disk where memory is short (3,145,740
# records in batches of this size with a 1 GiB heap ran as fast, 6 cached blocks on disk). What the cap
# bounds is a batch's time: how long a backlog's first changes wait to be seen, and how much a restart
# after a crash reads again.
DEFAULT_MAX_BATCH_RECORDS = 2_000_000


@dataclass(frozen=True)
class ReplicateConfig:
    """What ``cdclake replicate`` does, whatever the source.

    ``include``/``exclude`` are regular expressions matched against ``database.table`` (exclude
    wins); ``table_mapping`` maps ``database.table`` to a lake ``namespace.table``; other tables go to
    ``target_namespace`` (``{database}`` stands for the upstream database) under their own name.
    ``unresolved_tail`` says what ``--once`` does with changes above the resolved ts once the source
    has nothing more: ``keep`` them for a later run (transactionally consistent), or ``apply`` them.
    ``sink`` is a database's URL (:data:`cdclake.sinks.SINKS`), where the tables and the job's own go
    instead of Iceberg tables of ``catalog``; ``namespace`` is then the database schema of the job's own.
    ``layouts`` partition the Iceberg mirrors and set their properties (:mod:`cdclake.schema.layout`).
    ``history``: the tables that keep a history table beside their mirror (:mod:`cdclake.schema.history`).
    """

    format: str
    format_options: Mapping[str, Any] = field(default_factory=dict)
    catalog: str = "lake"
    namespace: str = "cdclake"
    include: str | None = None
    exclude: str | None = None
    table_mapping: Mapping[str, str] = field(default_factory=dict)
    target_namespace: str = "{database}"
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS
    unresolved_tail: str = "keep"
    on_bad_message: str = DEAD_LETTER
    evolution: EvolutionPolicy = field(default_factory=EvolutionPolicy)
    write_mode: str = "merge-on-read"
    parallel_tables: int = 4
    schema_wait_s: float = 600.0
    expire_snapshots_every_s: float = 3600.0
    compact_every_s: float = 3600.0
    sink: str | None = None
    layouts: tuple[LayoutRule, ...] = ()
    history: HistorySettings = field(default_factory=HistorySettings)

    def __post_init__(self) -> None:
        # A wrong format or option name is refused here, before a session or a table is touched.
        codec = get_codec(self.format)
        check_history(self.history, codec.has_watermarks(codec.resolve(self.format_options)))
        if self.sink is not None:
            check_sink_url(self.sink)
            for rule in self.layouts:
                refuse_layout(rule.layout)
        if self.unresolved_tail not in TAIL_CHOICES:
            raise OptionError(f"unresolved-tail={self.unresolved_tail!r}: one of {', '.join(TAIL_CHOICES)}")
        check_bad_message_policy(self.on_bad_message)
        if self.max_batch_records < 1:
            raise OptionError(f"max-batch-records={self.max_batch_records}: must be at least 1")
        if self.schema_wait_s < 0:
            raise OptionError(f"schema-wait-s={self.schema_wait_s}: must not be negative")
        for name, every in (("expire-snapshots-every-s", self.expire_snapshots_every_s),
                            ("compact-every-s", self.compact_every_s)):
            if every < 0:
                raise OptionError(f"{name}={every}: must not be negative (0: never)")
        for name, pattern in (("include", self.include), ("exclude", self.exclude)):
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise OptionError(f"{name}={pattern!r}: not a regular expression: {exc}") from None
        self.naming().check()

    def layout_for(self, database: str, table: str) -> TableLayout | None:
        return layout_for(self.layouts, database, table)

    def naming(self) -> Naming:
        """Where the job puts each upstream table, and which it refuses (:mod:`cdclake.schema.names`)."""
        return Naming(self.namespace, self.target_namespace, self.table_mapping)
