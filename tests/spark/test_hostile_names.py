"""Names from the stream that would steer the job (issue 23, points 2, 4 and 5): tables whose names leave
or nest in the warehouse, a name with ".", empty names, the job's own namespace and tables named by a
row or a DDL, columns named like the job's internal ones or differing only in case. Mixed among good
changes, each bad one is a dead letter with its reason and coordinates, every good change is applied,
the job's own tables are intact, and nothing is written outside the warehouse (docs/names.md's rule).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from cdclake.model import Origin, RawMessage
from cdclake.sinks.iceberg.state import load_state
from tests.spark.jobs import Job, replicate
from tests.spark.streams import write

TOPIC = "hostile"
JOB = Job("names", "canal-json", max_records=4)
# Where a table would escape to, named afresh for each run: an escape of an earlier run proves nothing.
ESCAPE = f"../../../../elsewhere_{uuid.uuid4().hex}/x"


def _row(database: str, table: str, kind: str, values: dict[str, Any], types: dict[str, str],
         old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": 0, "database": database, "table": table, "pkNames": ["id"], "isDdl": False, "type": kind,
            "es": 0, "ts": 0, "sql": "", "mysqlType": types, "data": [values], "old": [old] if old else None}


def _ddl(database: str, table: str, kind: str, sql: str) -> dict[str, Any]:
    return {"id": 0, "database": database, "table": table, "pkNames": None, "isDdl": True, "type": kind,
            "es": 0, "ts": 0, "sql": sql, "mysqlType": None, "data": None, "old": None}


INTERNAL = {"id": "int", "_op": "varchar", "_absent": "varchar", "_row": "varchar", "_key": "varchar",
            "_image": "varchar", "_s": "varchar", "_m": "varchar", "_segment": "varchar", "database": "varchar"}
INT = {"id": "int", "v": "varchar"}
FORGED = {"id": "int", "topic": "varchar", "partition": "int", "offset": "bigint", "reason": "varchar"}

# (message, the table a dead letter names; None for a good change)
STREAM: list[tuple[dict[str, Any], str | None]] = [
    (_row("shop", "internal", "INSERT", {n: "1" if n == "id" else f"{n}-1" for n in INTERNAL}, INTERNAL), None),
    (_row("shop", "a.b", "INSERT", {"id": "1", "v": "dotted"}, INT), None),
    (_row(ESCAPE, "t", "INSERT", {"id": "1", "v": "escaped"}, INT), f"{ESCAPE}.t"),
    (_row("shop", "sub/dir", "INSERT", {"id": "1", "v": "nested"}, INT), "shop.sub/dir"),
    # Kept: the lake name is judged, and this job's namespaces have a prefix ("names_" is a name).
    (_row("", "t", "INSERT", {"id": "1", "v": "no database"}, INT), None),
    (_row("shop", "", "INSERT", {"id": "1", "v": "no table"}, INT), "shop."),
    (_row("shop", "t2", "INSERT", {"id": "1", "v": "kept"}, INT), None),
    (_row("cdclake", "dead_letters", "INSERT", {"id": "1", "topic": "forged", "partition": "0", "offset": "0",
                                                 "reason": "forged"}, FORGED), "cdclake.dead_letters"),
    (_ddl("cdclake", "dead_letters", "ERASE", "DROP TABLE `cdclake`.`dead_letters`"), "cdclake.dead_letters"),
    (_ddl("shop", "t2", "ALTER", "ALTER TABLE `shop`.`t2` RENAME TO `cdclake`.`changelog`"), "cdclake.changelog"),
    (_ddl("shop", "..", "CREATE", "CREATE TABLE `shop`.`..` (id int primary key)"), "shop..."),
    (_ddl("shop", "twins", "CREATE", "CREATE TABLE `shop`.`twins` (id int primary key, ID int)"), "shop.twins"),
    (_row("shop", "cased", "INSERT", {"id": "1", "ID": "2"}, {"id": "int", "ID": "int"}), "shop.cased"),
    (_row("shop", "internal", "UPDATE", {**{n: "1" if n == "id" else f"{n}-2" for n in INTERNAL}},
          INTERNAL, old={"_op": "_op-1"}), None),
    (_row("shop", "t2", "INSERT", {"id": "2", "v": "after"}, INT), None),
    (_row("shop", "a.b", "DELETE", {"id": "1", "v": "dotted"}, INT), None),
    (_row("shop", "a.b", "INSERT", {"id": "2", "v": "dotted again"}, INT), None),
]


def _messages() -> list[RawMessage]:
    messages = []
    for offset, (message, _) in enumerate(STREAM):
        stamped = {**message, "es": 1_714_554_001_000 + offset}
        messages.append(RawMessage(None, json.dumps(stamped).encode(), Origin(topic=TOPIC, partition=0, offset=offset),
                                   1_714_554_001_000 + offset))
    return messages


def _rows(spark: Any, table: str) -> list[dict[str, Any]]:
    return sorted((row.asDict() for row in spark.table(table).collect()), key=lambda row: row["id"])


def test_hostile_names_are_dead_letters_and_every_good_change_is_applied(spark: Any, tmp_path: Path) -> None:
    messages = _messages()
    write(tmp_path, TOPIC, {0: messages})
    warehouse = Path(spark.conf.get("spark.sql.catalog.lake.warehouse").removeprefix("file:"))

    reports = replicate(spark, JOB, tmp_path)

    bad = {offset: table for offset, (_, table) in enumerate(STREAM) if table is not None}
    assert sum(report.dead_letters for report in reports) == len(bad)
    letters = spark.table(JOB.system_table("dead_letters")).orderBy("offset").collect()
    assert [(row["topic"], row["partition"], row["offset"]) for row in letters] == [(TOPIC, 0, o) for o in sorted(bad)]
    for row in letters:
        table = bad[row["offset"]]
        assert row["reason"].startswith(f"{table}: not applied") or f"a row of {table} with" in row["reason"]
        # Every dead letter holds its message whole, refused rows too (read again by their coordinates).
        assert (row["raw_key"], row["raw_value"]) == (None, messages[row["offset"]].value)
    assert "columns that differ only in case, which MySQL cannot have in one table: 'id' and 'ID'" in (
        letters[-1]["reason"])
    assert "the namespace is the job's own (names_cdclake" in letters[3]["reason"]

    internal = _rows(spark, JOB.lake_name("shop", "internal"))
    assert internal == [{n: 1 if n == "id" else f"{n}-2" for n in INTERNAL}]
    assert _rows(spark, JOB.lake_name("shop", "a.b")) == [{"id": 2, "v": "dotted again"}]
    assert _rows(spark, JOB.lake_name("shop", "t2")) == [{"id": 1, "v": "kept"}, {"id": 2, "v": "after"}]

    state, _ = load_state(spark, "lake", JOB.namespace)
    assert _rows(spark, JOB.lake_name("", "t")) == [{"id": 1, "v": "no database"}]
    assert set(state.tables) == {("shop", "internal"), ("shop", "a.b"), ("shop", "t2"), ("", "t")}
    assert spark.table(JOB.system_table("changelog")).count() == 8
    assert not Path(os.path.normpath(warehouse / f"names_{ESCAPE}")).exists()
    assert sorted(p.name for p in (warehouse / "names_shop").iterdir()) == ["a.b", "internal", "t2"]
    assert not [p for p in warehouse.rglob("*") if p.name in ("sub", "dir", "cased") or p.name.startswith("elsewhere")]
