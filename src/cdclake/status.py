"""What ``cdclake status`` reports of a replication job, from its state and its tables, and the JSON
form it prints with ``--json``, a stable shape (fields may be added, none renamed or removed)::

    {
      "batch": 12,                       # batches the job has committed
      "read_with": "pyiceberg",          # or "spark" (a catalog pyiceberg does not read), "postgresql"
      "tables": [
        {"upstream": "shop.orders",      # database.table upstream
         "kind": "mirror",               # or "history": its history table (SCD type 2), after its mirror
         "lake_table": "`lake`.`shop`.`orders`",
         "rows": 1042,
         "applied_ts": 449460044621414422,   # the resolved ts applied to it (a TiDB TSO), or null
         "applied_time": "2026-11-26T10:55:01.123000+00:00",   # that TSO's physical time, or null
         "last_commit": "2026-11-26T10:55:03.456000+00:00"}    # its newest snapshot (Iceberg), or null
      ],
      "partitions": [
        {"topic": "tidb-cdc", "partition": 0,
         "offset": 334,                  # the next offset the job reads
         "watermark": 449460044621414422, "watermark_time": "2026-...+00:00",   # newest, or null
         "end_offset": 340,              # the partition's end when the last batch was planned, or null
         "lag_at_last_batch": 6,         # end_offset - offset, or null
         "lag_now": 9}                   # the source's end now - offset: null unless the source was given
      ]
    }

A TiDB TSO holds its physical time in the bits above the low 18 (a logical counter): ``tso >> 18`` is
milliseconds since the epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from cdclake.sources.ranges import Source
from cdclake.spark.progress import JobState

TSO_LOGICAL_BITS = 18


def tso_time(tso: int | None) -> str | None:
    """The physical time (ISO 8601, UTC) of the TiDB TSO ``tso``; None for None."""
    if tso is None:
        return None
    return datetime.fromtimestamp((tso >> TSO_LOGICAL_BITS) / 1000, UTC).isoformat()


def job_status(state: JobState, table_status: Callable[[str], dict[str, Any]], read_with: str,
               source: Source | None = None) -> dict[str, Any]:
    """The report (the shape above) of a job whose state is ``state``; ``table_status`` gives a lake
    table's (a mirror's or a history table's) ``rows`` and ``last_commit``; ``source``, if given, is asked
    for each partition's end now."""
    tables = []
    for key, known in sorted(state.tables.items()):
        kept = [("mirror", known.lake_table), *([("history", state.histories[key])] if key in state.histories else [])]
        tables += [{"upstream": ".".join(key), "kind": kind, "lake_table": target, **table_status(target),
                    "applied_ts": known.applied_ts, "applied_time": tso_time(known.applied_ts)}
                   for kind, target in kept]
    extents = source.extents() if source is not None else {}
    partitions = []
    for (topic, partition), position in sorted(state.positions.items()):
        extent = extents.get((topic, partition))
        partitions.append({
            "topic": topic, "partition": partition, "offset": position.next_offset,
            "watermark": position.watermark, "watermark_time": tso_time(position.watermark),
            "end_offset": position.end,
            "lag_at_last_batch": None if position.end is None else position.end - position.next_offset,
            "lag_now": None if extent is None else extent.high - position.next_offset,
        })
    return {"batch": state.batch, "read_with": read_with, "tables": tables, "partitions": partitions}
