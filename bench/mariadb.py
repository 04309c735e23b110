"""Replication into MariaDB, in changes per second, against ``LOAD DATA`` of the same net rows.

The workload and the warm-up are bench/_database.py's, as for bench/postgres.py. A MariaDB server of
Debian's package runs on loopback for the run (tests/catalogs.py's ``LocalMariaDB``: no flush at each
commit, a 64 MiB buffer pool, as for the tests). In one Spark session (``local[2]``), after the warm-up:

1. **cdclake**: ``Replicator.run(once=True)`` with ``--sink jdbc:mariadb://...`` over the captured topic,
   into fresh databases: reading, decoding, ordering, each batch's net rows loaded by the executors into
   staging tables with ``LOAD DATA LOCAL INFILE`` and merged with ``INSERT ... ON DUPLICATE KEY UPDATE``
   and deletes. Changes per second: the changes the batches applied over the run's wall time.
2. **LOAD DATA**, the user's alternative when the final rows are known: the tables run 1 left, written
   out with ``SELECT ... INTO OUTFILE`` beforehand (not timed), loaded with ``LOAD DATA LOCAL INFILE``
   into new tables made ``LIKE`` them (their keys included). Rows per second: the net rows over that
   wall time.

The target: cdclake's changes/s at least half LOAD DATA's rows/s. Afterwards (not timed) every table of
run 1 is compared with the simulator's oracle, value for value, and the loaded tables' row counts with
theirs. Run from the repository root::

    python3 bench/mariadb.py                      # prints and writes BENCHMARKS.md
    python3 bench/mariadb.py --events 20000 --no-write

A benchmark, not a test: nothing here asserts on time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import _database

sys.path.insert(0, str(_database.ROOT))  # the MariaDB server of the tests

from cdclake.sinks.mariadb.connection import connect, parse
from cdclake.sinks.mariadb.sink import MariaDBSink
from cdclake.sinks.mariadb.statements import ident, table_name
from tests.catalogs import LocalMariaDB, mariadb_programs


def _tables_in(cursor: Any, database_prefix: str) -> list[tuple[str, str]]:
    """The tables of the databases ``database_prefix*`` but the job's own."""
    cursor.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema LIKE %s "
                   "AND table_schema NOT LIKE '%%cdclake' AND table_type = 'BASE TABLE' ORDER BY 1, 2",
                   (database_prefix + "%",))
    return [(database, table) for database, table in cursor.fetchall()]


def _count(cursor: Any, table: str) -> int:
    cursor.execute(f"SELECT count(*) FROM {table}")
    return int(cursor.fetchone()[0])


def load_baseline(server: LocalMariaDB, url: str) -> tuple[int, int, float, int]:
    """The rows of the measured run's tables loaded again with LOAD DATA LOCAL into tables like them in the
    databases ``copy_<database>``: (tables, rows, wall seconds of the load, bytes of LOAD DATA text)."""
    files = server.directory / "load"  # the server writes the files: a folder of its user's
    files.mkdir()
    shutil.chown(files, server.directory.owner(), server.directory.group())
    with connect(parse(url).arguments) as connection:
        cursor = connection.cursor()
        tables = _tables_in(cursor, _database.PREFIX + "_")
        paths = {(database, table): files / f"{database}.{table}.tsv" for database, table in tables}
        for (database, table), path in paths.items():
            cursor.execute(f"SELECT * FROM {table_name(database, table)} INTO OUTFILE %s CHARACTER SET binary",
                           (str(path),))
        rows = 0
        started = time.perf_counter()
        for (database, table), path in paths.items():
            target = table_name("copy_" + database, table)
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS {ident('copy_' + database)}")
            cursor.execute(f"CREATE TABLE {target} LIKE {table_name(database, table)}")
            rows += cursor.execute(f"LOAD DATA LOCAL INFILE %s INTO TABLE {target} CHARACTER SET binary", (str(path),))
            cursor.execute("SHOW WARNINGS")
            if warnings := cursor.fetchall():
                raise RuntimeError(f"LOAD DATA into {target}: {warnings[:3]}")
        seconds = time.perf_counter() - started
        for database, table in tables:
            copied = _count(cursor, table_name("copy_" + database, table))
            held = _count(cursor, table_name(database, table))
            if copied != held:
                raise RuntimeError(f"LOAD DATA loaded {copied} rows into copy_{database}.{table}, which holds {held}")
    return len(tables), rows, seconds, sum(path.stat().st_size for path in paths.values())


def _server() -> str:
    server, _ = mariadb_programs()
    version = subprocess.run([str(server), "--version"], capture_output=True, text=True, check=False).stdout.split()
    shown = next((word for word in version if word[:1].isdigit()), "(unknown)")
    return (f"MariaDB {shown} of Debian's package on loopback, no flush at each commit and a 64 MiB buffer pool "
            "(as for the tests), on the same machine.")


BENCH = _database.Bench("mariadb.py", "Into MariaDB: cdclake against LOAD DATA of the same net rows", LocalMariaDB,
                        MariaDBSink,
                        lambda server: server.jdbc_url, load_baseline, _server,
                        ("`LOAD DATA LOCAL INFILE` of the final rows", "net rows"))


def main(argv: Sequence[str] | None = None) -> None:
    _database.main(BENCH, __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    main()
