"""The upstream simulator and its oracle, before any format is involved."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from cdclake.model import DdlKind, Op
from cdclake.types import Family, MySQLType, ZeroTemporal
from cdclake.workload import Workload, WorkloadError, WorkloadSpec, key_of, physical_ms
from cdclake.workload.tables import CATALOG, CREATED_MID_STREAM, qualified
from tests.workload.consumer import apply, changes

EVERY_DDL = WorkloadSpec(seed=11, transactions=400, rename_table=True, drop_table=True, create_table_like=True)


@pytest.fixture(scope="module")
def workload() -> Workload:
    return Workload(EVERY_DDL)


def comparable(tables: Any) -> dict[Any, Any]:
    """The oracle's non-empty tables' rows, as the reference consumer holds them."""
    return {name: dict(state.rows) for name, state in tables.items() if state.rows}


def nonempty(tables: dict[Any, Any]) -> dict[Any, Any]:
    return {name: rows for name, rows in tables.items() if rows}


def test_the_same_seed_gives_the_same_commits_and_another_seed_others() -> None:
    spec = WorkloadSpec(seed=5, transactions=60)
    assert list(Workload(spec).commits()) == list(Workload(spec).commits())
    assert list(Workload(spec).commits()) != list(Workload(WorkloadSpec(seed=6, transactions=60)).commits())


def test_the_tables_cover_every_type_family_and_kind_of_key() -> None:
    schemas = [shape.schema for shape in (*CATALOG, CREATED_MID_STREAM)]
    families = {column.type.family for schema in schemas for column in schema.columns}
    assert families == set(Family) - {Family.VECTOR, Family.GEOMETRY}
    keys = {tuple(i.primary for i in s.indexes if i.columns == s.key_columns) or ("none",) for s in schemas}
    assert keys == {(True,), (False,), ("none",)}  # primary key, unique NOT NULL key only, no key at all
    assert any(len(s.key_columns) == 2 for s in schemas)


def test_edge_values_reach_the_stream() -> None:
    workload = Workload(WorkloadSpec(seed=2, transactions=1500, edge_ratio=0.3))
    values: dict[MySQLType, set[Any]] = {}
    for commit in workload.commits():
        for row in commit.rows:
            for column, value in (row.after or {}).items():
                values.setdefault(row.types[column], set()).add(value)
    assert 18446744073709551615 in values[MySQLType("bigint", unsigned=True)]
    assert -9223372036854775808 in values[MySQLType("bigint")]
    widest = Decimal("9" * 35 + "." + "9" * 30)
    assert {widest, widest.copy_negate()} <= values[MySQLType("decimal", length=65, decimals=30)]
    assert bytes(range(256)) in values[MySQLType("blob")]
    assert ZeroTemporal("0000-00-00") in values[MySQLType("date")]
    assert -dt.timedelta(hours=838, minutes=59, seconds=59) in values[MySQLType("time", decimals=0)]
    assert -dt.timedelta(microseconds=500_000) in values[MySQLType("time", decimals=6)]
    assert (1 << 64) - 1 in values[MySQLType("bit", length=64)]
    assert "" in values[MySQLType("enum", elements=("basic", "gold", "platinum", "it's"))]
    assert {None, "null"} <= values[MySQLType("text")]
    for mtype, seen in values.items():
        if mtype.family is Family.FLOAT:
            assert all(v is None or v == v for v in seen)  # no NaN
        if mtype.family is Family.DECIMAL and mtype.decimals:
            assert all(v is None or -v.as_tuple().exponent == mtype.decimals for v in seen), mtype


def test_commits_have_rising_ts_each_with_a_millisecond_of_its_own(workload: Workload) -> None:
    stamps = [commit.commit_ts for commit in workload.commits()]
    milliseconds = [physical_ms(ts) for ts in stamps]
    assert milliseconds == sorted(set(milliseconds))
    assert physical_ms(stamps[0]) >= int(EVERY_DDL.start.timestamp() * 1000)


def test_a_transaction_changes_each_row_once(workload: Workload) -> None:
    for commit in workload.commits():
        touched = [
            {(row.table, key_of(row.key_columns, image)) for image in (row.before, row.after) if image is not None}
            for row in commit.rows
        ]
        assert sum(map(len, touched)) == len(set().union(*touched))


def test_updates_change_keys_and_deleted_keys_come_back() -> None:
    rows = [row for commit in Workload(WorkloadSpec(seed=3, transactions=800)).commits() for row in commit.rows]
    keyed = [row for row in rows if row.key_columns]
    moved = [r for r in keyed if r.op is Op.UPDATE and key_of(r.key_columns, r.before or {}) !=
             key_of(r.key_columns, r.after or {})]
    assert moved
    deleted: set[Any] = set()
    reinserted = 0
    for row in keyed:
        if row.op is Op.DELETE:
            deleted.add((row.table, key_of(row.key_columns, row.before or {})))
        elif row.op is Op.INSERT and (row.table, key_of(row.key_columns, row.after or {})) in deleted:
            reinserted += 1
    assert reinserted


def test_the_oracle_is_the_upstream_log_applied(workload: Workload) -> None:
    commits = list(workload.commits())
    log = [event for commit in commits for event in ((commit.ddl,) if commit.ddl else commit.rows)]
    oracle = workload.oracle()
    assert comparable(oracle.tables) == nonempty(apply(changes(log)))
    middle = commits[len(commits) // 2].commit_ts
    assert comparable(oracle.at(middle).tables) == nonempty(apply(changes(log, up_to=middle)))
    assert comparable(oracle.at(middle).tables) != comparable(oracle.tables)


def test_state_at_stops_exactly_at_the_ts(workload: Workload) -> None:
    commits = list(workload.commits())
    first = commits[0]
    assert first.rows and all(row.op is Op.INSERT for row in first.rows)
    before = workload.state_at(first.commit_ts - 1)
    at = workload.state_at(first.commit_ts)
    assert sum(len(s.rows) for s in before.values()) == 0
    assert sum(len(s.rows) for s in at.values()) == len(first.rows)
    assert comparable(workload.state_at(commits[-1].commit_ts)) == comparable(workload.oracle().tables)


def test_every_ddl_of_the_plan_is_applied_to_the_oracle(workload: Workload) -> None:
    ddls = [commit.ddl for commit in workload.commits() if commit.ddl is not None]
    labels = [re.search(r"(ADD|DROP|RENAME|MODIFY) COLUMN", ddl.sql)[0] if ddl.kind is DdlKind.ALTER_TABLE  # type: ignore[index]
              else ddl.kind.value for ddl in ddls]
    assert labels == ["create table", "ADD COLUMN", "RENAME COLUMN", "MODIFY COLUMN", "DROP COLUMN",
                      "truncate table", "create table", "rename table", "drop table"]
    tables = workload.oracle().tables
    created, *_, truncated, copied, renamed, dropped = ddls
    assert created.schema_after is not None and ("inventory", "stock") in tables
    assert copied.sql.endswith("_copy` LIKE " + qualified(copied.database, copied.table.removesuffix("_copy")))
    source = workload.state_at((copied.commit_ts or 0) - 1)[(copied.database, copied.table.removesuffix("_copy"))]
    assert copied.schema_after is not None and copied.schema_after.columns == source.schema.columns
    assert any(row.table == copied.table for commit in workload.commits() for row in commit.rows), (
        "the copy gets rows of its own")
    assert truncated.schema_after is not None and truncated.schema_before is not None
    assert truncated.schema_after.table_id != truncated.schema_before.table_id
    assert (renamed.database, renamed.table) not in tables or renamed is dropped
    assert (dropped.database, dropped.table) not in tables
    truncated_state = workload.state_at(truncated.commit_ts or 0)[(truncated.database, truncated.table)]
    assert not truncated_state.rows


def test_ddl_bumps_the_schema_version_except_rename_table(workload: Workload) -> None:
    for commit in workload.commits():
        ddl = commit.ddl
        if ddl is None or ddl.kind is DdlKind.CREATE_TABLE or ddl.kind is DdlKind.DROP_TABLE:
            continue
        assert ddl.schema_before is not None and ddl.schema_after is not None
        if ddl.kind is DdlKind.RENAME_TABLE:
            assert ddl.schema_after.version == ddl.schema_before.version
            assert ddl.schema_after.table != ddl.schema_before.table
        else:
            assert ddl.schema_after.version == ddl.commit_ts > (ddl.schema_before.version or 0)


def test_rows_name_their_schema_version_and_carry_every_column(workload: Workload) -> None:
    versions: dict[tuple[str, str], Any] = {(s.database, s.table): s for s in workload.initial_schemas()}
    for commit in workload.commits():
        if commit.ddl is not None and commit.ddl.schema_after is not None:
            versions[(commit.ddl.database, commit.ddl.table)] = commit.ddl.schema_after
        for row in commit.rows:
            schema = versions[(row.database, row.table)]
            assert (row.schema_version, row.table_id) == (schema.version, schema.table_id)
            names = [c.name for c in schema.columns]
            for image in (row.before, row.after):
                assert image is None or list(image) == names


def test_the_ddl_is_mysql(workload: Workload) -> None:
    for commit in workload.commits():
        if commit.ddl is not None:
            assert sqlglot.parse_one(commit.ddl.sql, read="mysql") is not None, commit.ddl.sql


def test_keyless_rows_are_distinct_and_keyed_by_the_whole_row() -> None:
    workload = Workload(WorkloadSpec(seed=4, transactions=300, ddl=False))
    audit = workload.oracle().tables[("logs", "audit")]
    assert audit.schema.key_columns == ()
    for key, row in audit.rows.items():
        assert key == tuple(sorted(row.items()))
    changes = [row for commit in workload.commits() for row in commit.rows if row.table == "audit"]
    inserted = sum(1 for row in changes if row.op is Op.INSERT)
    deleted = sum(1 for row in changes if row.op is Op.DELETE)
    assert len(audit.rows) == inserted - deleted > 0  # no two rows alike, or the mapping would hold fewer


def test_the_keyless_table_can_be_left_out() -> None:
    names = set(Workload(WorkloadSpec(keyless_table=False, transactions=5)).oracle().tables)
    assert ("logs", "audit") not in names


def test_more_tables_than_the_catalog_are_copies() -> None:
    names = [(s.database, s.table) for s in Workload(WorkloadSpec(tables=9)).initial_schemas()]
    assert names[-2:] == [("shop", "customers_2"), ("shop", "order_items_2")]
    assert len({s.table_id for s in Workload(WorkloadSpec(tables=9)).initial_schemas()}) == 9


def test_summary_counts_what_happened(workload: Workload) -> None:
    summary = workload.summary()
    rows = [row for commit in workload.commits() for row in commit.rows]
    assert sum(summary.row_changes.values()) == len(rows)
    assert summary.row_changes[Op.UPDATE.value] == sum(1 for r in rows if r.op is Op.UPDATE)
    assert len(summary.ddls) == 9
    text = "\n".join(summary.lines())
    assert "inserts" in text and "DDL: TRUNCATE TABLE" in text


def test_impossible_specs_are_refused() -> None:
    with pytest.raises(WorkloadError, match="ratios"):
        WorkloadSpec(update_ratio=0.8, delete_ratio=0.5)
    with pytest.raises(WorkloadError, match="at least 1"):
        WorkloadSpec(tables=0)
    with pytest.raises(WorkloadError, match="aware"):
        WorkloadSpec(start=dt.datetime(2024, 1, 1))
