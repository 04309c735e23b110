"""DDLs end to end: DROP TABLE and CREATE TABLE ... LIKE in a simulated stream leave the mirrors equal to
the upstream, and a DDL the job cannot follow stops it (``unsupported-ddl = stop``) with nothing applied,
or goes to the dead letters (``skip``) while the rest of the batch is applied; ``apply-supported``
applies the clauses it can follow of an ALTER and dead-letters the DDL.

Every test has namespaces of its own in the session's shared warehouse.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest

from cdclake.formats import get_codec
from cdclake.model import Ddl, DdlKind, Event, Op, Origin, RowChange, Watermark
from cdclake.schema.following import UnsupportedDdlError
from cdclake.schema.policy import EvolutionPolicy
from cdclake.sinks.iceberg.state import load_state
from cdclake.sinks.iceberg.tables import table_exists
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.replicate import Replicator
from cdclake.types import MySQLType
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured
from tests.spark.jobs import Job, lake_differences

_runs = itertools.count()


def _job(tag: str, format_name: str, options: dict[str, Any], max_records: int = 500_000) -> Job:
    return Job(f"ddl_{tag}_{next(_runs)}", format_name, options, max_records)


def test_drop_table_and_create_table_like_replicate_to_the_upstream_tables(spark: Any, tmp_path: Path) -> None:
    """Open Protocol carries no schema with a DDL: the copy's columns and key are those the job knows of
    ``shop.accounts`` (a table older than the stream, known from its rows), which is then dropped."""
    workload = Workload(WorkloadSpec(seed=5, transactions=60, tables=3, drop_table=True, create_table_like=True))
    ddls = [commit.ddl.sql for commit in workload.commits() if commit.ddl is not None]
    assert "CREATE TABLE `shop`.`accounts_copy` LIKE `shop`.`accounts`" in ddls
    assert ddls[-1] == "DROP TABLE `shop`.`accounts`"
    stream = produce(workload, "open", {})
    write_captured(stream, tmp_path, stream.topic)
    job = _job("like_drop", "open", {}, max_records=len(stream) // 3 + 1)

    reports = Replicator(spark, CapturedTopics(tmp_path), job.config()).run(once=True)

    assert len(reports) >= 3 and sum(report.dead_letters for report in reports) == 0
    expected = workload.oracle().carried("open", stream.codec_options).tables
    assert ("shop", "accounts_copy") in expected and ("shop", "accounts") not in expected
    assert lake_differences(spark, job, expected) == []
    assert not table_exists(spark, job.lake_name("shop", "accounts")), "the dropped table's mirror is dropped"


# --- a DDL the job cannot follow ---------------------------------------------------------------------------


def _stream() -> list[Event]:
    """shop.t created and filled; shop.u created LIKE it and filled; an ALTER TABLE ... TRUNCATE PARTITION
    of shop.t (rows go without row events); an update; shop.t dropped and created again with other
    columns, and filled. A watermark after the first part and at the end."""
    ts = itertools.count(450_000_000_000_000_000, 1 << 18)
    int_type, text_type = MySQLType("int"), MySQLType.parse("varchar(20)")
    first = {"id": int_type, "v": text_type}
    second = {"id": int_type, "w": MySQLType("bigint")}

    def row(table: str, op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None,
            types: dict[str, MySQLType]) -> RowChange:
        return RowChange(op, "shop", table, before, after, types, ("id",), next(ts))

    def ddl(kind: DdlKind, table: str, sql: str) -> Ddl:
        return Ddl(kind, "shop", table, sql, next(ts))

    return [
        ddl(DdlKind.CREATE_TABLE, "t", "CREATE TABLE `shop`.`t` (`id` int NOT NULL, `v` varchar(20), "
            "PRIMARY KEY (`id`))"),
        row("t", Op.INSERT, None, {"id": 1, "v": "a"}, first),
        row("t", Op.INSERT, None, {"id": 2, "v": "b"}, first),
        Watermark(next(ts)),
        ddl(DdlKind.CREATE_TABLE, "u", "CREATE TABLE `shop`.`u` LIKE `shop`.`t`"),
        row("u", Op.INSERT, None, {"id": 10, "v": "x"}, first),
        ddl(DdlKind.ALTER_TABLE, "t", "ALTER TABLE `shop`.`t` TRUNCATE PARTITION `p0`"),
        row("t", Op.UPDATE, {"id": 1, "v": "a"}, {"id": 1, "v": "a2"}, first),
        ddl(DdlKind.DROP_TABLE, "t", "DROP TABLE `shop`.`t`"),
        ddl(DdlKind.CREATE_TABLE, "t", "CREATE TABLE `shop`.`t` (`id` int NOT NULL, `w` bigint, PRIMARY KEY (`id`))"),
        row("t", Op.INSERT, None, {"id": 1, "w": 5}, second),
        Watermark(next(ts)),
    ]


def test_an_unsupported_ddl_stops_the_job_or_goes_to_the_dead_letters(spark: Any, tmp_path: Path) -> None:
    """By default the job stops at the TRUNCATE PARTITION before the batch applies anything, naming it.
    With ``unsupported-ddl = skip`` the same batch is finished: the DDL is one dead letter at its place,
    counted in the report (``cdclake replicate`` exits 3 on it), and every other change is applied:
    ``shop.u`` has ``shop.t``'s columns, and ``shop.t`` is the table created after the drop."""
    options = get_codec("canal-json").resolve({"enable-tidb-extension": True})
    messages = [dataclasses.replace(m, origin=Origin(partition=0))
                for m in get_codec("canal-json").encoder(options).encode(_stream())]
    write_captured(messages, tmp_path, "ddl")
    job = _job("unsupported", "canal-json", dict(options))

    with pytest.raises(UnsupportedDdlError) as stopped:
        Replicator(spark, CapturedTopics(tmp_path), job.config()).run(once=True)

    message = str(stopped.value)
    for named in ("DDL of shop.t", "TRUNCATE PARTITION", "ddl[0]@", "unsupported-ddl = skip or apply-supported"):
        assert named in message, f"{named} is not named in: {message}"
    assert not table_exists(spark, job.lake_name("shop", "t")) and not table_exists(spark, job.lake_name("shop", "u"))
    state, _ = load_state(spark, "lake", job.namespace)
    assert state.batch == 0 and state.plan, "the batch must be left planned and uncommitted"

    skip = job.config(evolution=EvolutionPolicy(unsupported_ddl="skip"))
    reports = Replicator(spark, CapturedTopics(tmp_path), skip).run(once=True)

    assert [report.dead_letters for report in reports] == [1]
    (dead,) = spark.table(job.system_table("dead_letters")).collect()
    truncate_at = next(offset for offset, m in enumerate(messages) if b"TRUNCATE PARTITION" in m.value)
    assert (dead["topic"], dead["partition"], dead["offset"]) == ("ddl", 0, truncate_at)
    assert "TRUNCATE PARTITION" in dead["reason"] and "commit ts" in dead["reason"]
    assert (dead["raw_key"], dead["raw_value"]) == (messages[truncate_at].key, messages[truncate_at].value)
    assert {f.name: f.dataType.simpleString() for f in spark.table(job.lake_name("shop", "u")).schema.fields} == {
        "id": "int", "v": "string"}
    assert [tuple(r) for r in spark.table(job.lake_name("shop", "u")).collect()] == [(10, "x")]
    assert [f.name for f in spark.table(job.lake_name("shop", "t")).schema.fields] == ["id", "w"]
    assert [tuple(r) for r in spark.table(job.lake_name("shop", "t")).collect()] == [(1, 5)]


def test_apply_supported_applies_the_clauses_it_can_follow_and_dead_letters_the_ddl(spark: Any, tmp_path: Path
                                                                                    ) -> None:
    """An ALTER TABLE with a clause the job can follow (ADD COLUMN ... DEFAULT 7, which fills the rows
    already there) and one it cannot (TRUNCATE PARTITION): the column is added and filled, with no row
    after it to bring it, and the DDL is one dead letter saying the rest was applied."""
    ts = itertools.count(450_000_000_000_000_000, 1 << 18)
    types = {"id": MySQLType("int")}
    events: list[Event] = [
        Ddl(DdlKind.CREATE_TABLE, "shop", "t", "CREATE TABLE `shop`.`t` (`id` int NOT NULL, PRIMARY KEY (`id`))",
            next(ts)),
        RowChange(Op.INSERT, "shop", "t", None, {"id": 1}, types, ("id",), next(ts)),
        Ddl(DdlKind.ALTER_TABLE, "shop", "t", "ALTER TABLE `shop`.`t` ADD COLUMN `c` int DEFAULT 7, "
            "TRUNCATE PARTITION `p0`", next(ts)),
        Watermark(next(ts)),
    ]
    options = get_codec("canal-json").resolve({"enable-tidb-extension": True})
    messages = [dataclasses.replace(m, origin=Origin(partition=0))
                for m in get_codec("canal-json").encoder(options).encode(events)]
    write_captured(messages, tmp_path, "ddl")
    job = _job("apply_supported", "canal-json", dict(options))

    config = job.config(evolution=EvolutionPolicy(unsupported_ddl="apply-supported"))
    reports = Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)

    assert [report.dead_letters for report in reports] == [1]
    (dead,) = spark.table(job.system_table("dead_letters")).collect()
    assert dead["offset"] == 2 and "'TRUNCATE PARTITION `p0`'" in dead["reason"]
    assert (dead["raw_key"], dead["raw_value"]) == (messages[2].key, messages[2].value)
    assert "(the rest applied)" in dead["reason"]
    assert [tuple(r) for r in spark.table(job.lake_name("shop", "t")).select("id", "c").collect()] == [(1, 7)]


def test_a_tables_changes_are_written_once_across_the_ddls_its_rows_pass(spark: Any, tmp_path: Path) -> None:
    """ADD COLUMN (no default), DROP COLUMN and an int widened to bigint change no value of the rows there:
    the changes on both sides of them are one MERGE, after them (cdclake.spark.segments). ADD COLUMN with
    a default fills the rows there, and a column dropped and added again must not take its old values
    from older images: each of those cuts. The table ends as the upstream's, in three writes where a cut
    at every DDL made six."""
    ts = itertools.count(450_000_000_000_000_000, 1 << 18)
    columns: dict[str, MySQLType] = {"id": MySQLType("int"), "v": MySQLType.parse("varchar(20)"),
                                     "w": MySQLType("int")}

    def row(op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None) -> RowChange:
        return RowChange(op, "shop", "t", before, after, dict(columns), ("id",), next(ts))

    def alter(clause: str) -> Ddl:
        return Ddl(DdlKind.ALTER_TABLE, "shop", "t", f"ALTER TABLE `shop`.`t` {clause}", next(ts))

    events: list[Event] = [Ddl(DdlKind.CREATE_TABLE, "shop", "t", "CREATE TABLE `shop`.`t` (`id` int NOT NULL, "
                               "`v` varchar(20), `w` int, PRIMARY KEY (`id`))", next(ts))]
    events += [row(Op.INSERT, None, {"id": i, "v": f"v{i}", "w": i}) for i in (1, 2, 3)]
    events.append(alter("ADD COLUMN `c` int"))
    columns["c"] = MySQLType("int")
    events += [row(Op.UPDATE, {"id": 1, "v": "v1", "w": 1, "c": None}, {"id": 1, "v": "v1", "w": 1, "c": 5}),
               row(Op.INSERT, None, {"id": 4, "v": "v4", "w": 4, "c": 6}),
               row(Op.DELETE, {"id": 3, "v": "v3", "w": 3, "c": None}, None)]
    events.append(alter("DROP COLUMN `w`"))
    del columns["w"]
    events.append(row(Op.UPDATE, {"id": 2, "v": "v2", "c": None}, {"id": 2, "v": "b2", "c": None}))
    events.append(alter("MODIFY COLUMN `c` bigint"))
    columns["c"] = MySQLType("bigint")
    events.append(row(Op.INSERT, None, {"id": 5, "v": "v5", "c": 2**40}))
    events.append(alter("ADD COLUMN `d` int NOT NULL DEFAULT 7"))  # cuts: the rows there take 7
    columns["d"] = MySQLType("int")
    events.append(row(Op.UPDATE, {"id": 4, "v": "v4", "c": 6, "d": 7}, {"id": 4, "v": "v4", "c": 6, "d": 8}))
    events.append(alter("DROP COLUMN `v`"))
    del columns["v"]
    events.append(alter("ADD COLUMN `v` int"))  # cuts: the images before the DROP carry the old v
    columns["v"] = MySQLType("int")
    events += [row(Op.UPDATE, {"id": 5, "c": 2**40, "d": 7, "v": None}, {"id": 5, "c": 2**40, "d": 7, "v": 9}),
               Watermark(next(ts))]
    options = get_codec("canal-json").resolve({"enable-tidb-extension": True})
    messages = [dataclasses.replace(m, origin=Origin(partition=0))
                for m in get_codec("canal-json").encoder(options).encode(events)]
    write_captured(messages, tmp_path, "ddl")
    job = _job("passed", "canal-json", dict(options))

    reports = Replicator(spark, CapturedTopics(tmp_path), job.config()).run(once=True)

    assert len(reports) == 1 and reports[0].dead_letters == 0
    mirror = job.lake_name("shop", "t")
    assert [f.name for f in spark.table(mirror).schema.fields] == ["id", "c", "d", "v"]
    assert sorted(tuple(r) for r in spark.table(mirror).collect()) == [
        (1, 5, 7, None), (2, None, 7, None), (4, 6, 8, None), (5, 2**40, 7, 9)]
    steps = spark.sql(f"SELECT summary['cdclake.step'] AS step FROM {mirror}.snapshots "
                      "WHERE summary['cdclake.batch'] IS NOT NULL ORDER BY committed_at").collect()
    assert [int(r["step"]) for r in steps] == [1, 2, 3]
