"""A PostgreSQL sink's job read for ``cdclake status``, without Spark, and touching nothing: the job's
state as its last commit left it, and each table's row count (a running job's staging tables are its own)."""

from __future__ import annotations

from typing import Any

from cdclake.sinks.postgres.connection import PostgresAddress, connect
from cdclake.sinks.postgres.sink import read_state
from cdclake.spark.progress import JobState


class PostgresReader:
    read_with = "psycopg"

    def __init__(self, address: PostgresAddress, namespace: str) -> None:
        self.address, self.namespace = address, namespace

    def read_state(self) -> JobState:
        with connect(self.address) as connection:
            return read_state(connection, self.address, self.namespace)

    def table_status(self, target: str) -> dict[str, Any]:
        """``rows`` of ``target``; ``last_commit`` None (PostgreSQL keeps no commit time by table)."""
        with connect(self.address) as connection:
            (rows,) = connection.execute(f"SELECT count(*) FROM {target}").fetchone() or (0,)
        return {"rows": rows, "last_commit": None}
