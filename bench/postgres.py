"""Replication into PostgreSQL, in changes per second, against ``COPY`` of the same net rows.

The workload and the warm-up are bench/_database.py's: the simulator's ten tables (every MySQL type
family, transactions of 1 to 9 rows: inserts, updates, some changing the key, deletes; DDL mid-stream)
in Canal-JSON on eight partitions. A PostgreSQL server of Debian's package runs on loopback for the run
(tests/catalogs.py's ``LocalPostgres``: fsync off, as for the tests). In one Spark session
(``local[2]``), after the warm-up:

1. **cdclake**: ``Replicator.run(once=True)`` with ``--sink jdbc:postgresql://...`` over the captured
   topic, into fresh schemas: reading, decoding, ordering, each batch's net rows copied by the executors
   into staging tables and merged in one transaction with the job's progress. Changes per second:
   the changes the batches applied over the run's wall time.
2. **COPY**, the user's alternative when the final rows are known: the tables run 1 left, read out
   with ``COPY ... TO STDOUT`` beforehand (not timed), loaded with ``COPY ... FROM STDIN`` (psycopg)
   into new tables made ``LIKE`` them (their primary keys included), all in one transaction. Rows per
   second: the net rows over that wall time.

The target: cdclake's changes/s at least half COPY's rows/s. Afterwards (not timed) every table of run 1
is compared with the simulator's oracle, value for value, and the COPY tables' row counts with theirs.
Run from the repository root::

    python3 bench/postgres.py                     # prints and writes BENCHMARKS.md
    python3 bench/postgres.py --events 20000 --no-write

A benchmark, not a test: nothing here asserts on time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import _database

sys.path.insert(0, str(_database.ROOT))  # the PostgreSQL server of the tests

import psycopg

from cdclake.sinks.postgres.connection import parse
from cdclake.sinks.postgres.sink import PostgresSink
from cdclake.sinks.postgres.statements import ident, table_name
from tests.catalogs import LocalPostgres


def _tables_in(conninfo: str, schema_prefix: str) -> list[tuple[str, str]]:
    """The tables of the schemas ``schema_prefix*`` but the job's own."""
    with psycopg.connect(conninfo) as connection:
        rows = connection.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema LIKE %s "
            "AND table_schema NOT LIKE '%%cdclake' AND table_type = 'BASE TABLE' ORDER BY 1, 2",
            (schema_prefix + "%",)).fetchall()
    return [(schema, table) for schema, table in rows]


def copy_baseline(server: LocalPostgres, url: str) -> tuple[int, int, float, int]:
    """The rows of the measured run's tables loaded again with COPY into tables like them in the schemas
    ``copy_<schema>``: (tables, rows, wall seconds of the load, bytes of COPY text)."""
    conninfo = parse(url).conninfo
    tables = _tables_in(conninfo, _database.PREFIX + "_")
    with psycopg.connect(conninfo, autocommit=True) as connection:
        texts = {}
        for schema, table in tables:
            with connection.cursor().copy(f"COPY {table_name(schema, table)} TO STDOUT") as copy:
                texts[(schema, table)] = b"".join(bytes(chunk) for chunk in copy)
        rows = 0
        started = time.perf_counter()
        with connection.transaction():
            for (schema, table), text in texts.items():
                target = table_name("copy_" + schema, table)
                connection.execute(f"CREATE SCHEMA IF NOT EXISTS {ident('copy_' + schema)}")
                connection.execute(f"CREATE TABLE {target} (LIKE {table_name(schema, table)} INCLUDING ALL)")
                with connection.cursor().copy(f"COPY {target} FROM STDIN") as copy:
                    copy.write(text)
                rows += text.count(b"\n")
        seconds = time.perf_counter() - started
        for schema, table in tables:
            (copied,) = connection.execute(f"SELECT count(*) FROM {table_name('copy_' + schema, table)}").fetchone()
            (held,) = connection.execute(f"SELECT count(*) FROM {table_name(schema, table)}").fetchone()
            if copied != held:
                raise RuntimeError(f"COPY loaded {copied} rows into copy_{schema}.{table}, which holds {held}")
    return len(tables), rows, seconds, sum(len(text) for text in texts.values())


def _server() -> str:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    version = found[-1].parts[-3] if found else "(unknown)"
    return f"PostgreSQL {version} of Debian's package on loopback, fsync off (as for the tests), on the same machine."


BENCH = _database.Bench("postgres.py", "Into PostgreSQL: cdclake against COPY of the same net rows", LocalPostgres,
                        PostgresSink,
                        lambda server: f"{server.jdbc_url}?user={server.user}", copy_baseline, _server,
                        ("`COPY ... FROM STDIN` of the final rows", "net rows, one transaction"))


def main(argv: Sequence[str] | None = None) -> None:
    _database.main(BENCH, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    main()
