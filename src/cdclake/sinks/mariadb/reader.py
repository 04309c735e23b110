"""A MariaDB sink's job read for ``cdclake status``, without Spark, and touching nothing: the job's state
as its last commit left it, and each table's row count (a running job's staging tables are its own)."""

from __future__ import annotations

from typing import Any

from cdclake.sinks.mariadb.connection import MariaDBAddress
from cdclake.sinks.mariadb.sink import cursor_of, read_state
from cdclake.spark.progress import JobState


class MariaDBReader:
    read_with = "PyMySQL"

    def __init__(self, address: MariaDBAddress, namespace: str) -> None:
        self.address, self.namespace = address, namespace

    def read_state(self) -> JobState:
        with cursor_of(self.address) as cursor:
            return read_state(cursor, self.address, self.namespace)

    def table_status(self, target: str) -> dict[str, Any]:
        """``rows`` of ``target``; ``last_commit`` None (InnoDB keeps no commit time by table)."""
        with cursor_of(self.address) as cursor:
            cursor.execute(f"SELECT count(*) FROM {target}")
            (rows,) = cursor.fetchone()
        return {"rows": rows, "last_commit": None}
