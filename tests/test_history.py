"""History tables without Spark: the settings and how a job file gives them, one key's changes made into
version actions, and the simulator's history of its tables (cdclake.schema.history,
cdclake.workload.history)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from cdclake.errors import OptionError
from cdclake.jobconfig import job_settings, merged, read_toml
from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.history import (
    END_OP,
    END_TS,
    IS_CURRENT,
    START_AT,
    START_TS,
    HistoryRule,
    HistorySettings,
    KeyChange,
    VersionAction,
    history_schema,
    versions_of_key,
)
from cdclake.schema.names import Naming
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.spark.history import HistoryKeeper
from cdclake.spark.replicate import ReplicateConfig
from cdclake.types import MySQLType
from cdclake.workload import Workload, WorkloadSpec
from cdclake.workload.history import Version, kept_versions, wall_clock
from cdclake.workload.oracle import key_of

ALL = HistorySettings(("*",))
KEY = {"id": "1"}


# --- settings ----------------------------------------------------------------------------------------------


def test_tables_are_named_by_whole_match_or_all() -> None:
    some = HistorySettings((r"shop\.orders", r"logs\..*"))
    assert [some.wanted(*t) for t in (("shop", "orders"), ("shop", "orders_old"), ("logs", "audit"))] == [
        True, False, True]
    assert ALL.wanted("any", "thing") and not HistorySettings().wanted("shop", "orders")
    assert not HistorySettings() and ALL


@pytest.mark.parametrize(("settings", "tracked"), [
    (HistorySettings(("*",)), {"a", "B", "c"}),
    (HistorySettings(("*",), track_columns=("a", "b")), {"a", "B"}),
    (HistorySettings(("*",), track_except=("A",)), {"B", "c"}),
])
def test_tracked_columns_ignore_case(settings: HistorySettings, tracked: set[str]) -> None:
    assert {c for c in ("a", "B", "c") if settings.tracks(c)} == tracked


def test_settings_that_contradict_or_do_not_parse_are_refused() -> None:
    with pytest.raises(OptionError, match="give one of them, not both"):
        HistorySettings(("*",), track_columns=("a",), track_except=("b",))
    with pytest.raises(OptionError, match="name the tables that keep one with history"):
        HistorySettings(track_except=("b",))
    with pytest.raises(OptionError, match=r"history = 'shop\.\(': not a regular expression"):
        HistorySettings(("shop.(",))


def test_a_job_file_gives_history_and_its_options(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text('[source]\ncaptured = "."\n[format]\nname = "simple"\n[tables]\nhistory = ["shop\\\\..*"]\n'
                    'track-history-except = ["updated_at"]\nhistory-keep-deleted = false\n')
    history = job_settings(merged(read_toml(path), {})).replicate.history
    assert history == HistorySettings((r"shop\..*",), track_except=("updated_at",), keep_deleted=False)
    path.write_text('[source]\ncaptured = "."\n[format]\nname = "simple"\n[tables]\nhistory = "*"\n')
    with pytest.raises(OptionError, match=r'\[tables\] history = "\*" is not a list of strings'):
        read_toml(path)
    flagged = job_settings(merged({"source": {"captured": "."}, "format": {"name": "open"}},
                                  {"tables": {"history": ["*"]}}))
    assert flagged.replicate.history == ALL


def test_rules_keep_the_tables_they_match_otherwise_in_order() -> None:
    settings = HistorySettings(("*",), track_columns=("a",), keep_deleted=False, rules=(
        HistoryRule(r"shop\..*", track_except=("b",)),
        HistoryRule(r"shop\.orders", keep_deleted=True),
        HistoryRule(r"logs\.audit", track_columns=("c",))))
    orders, customers, audit = (settings.for_table(*t) for t in (("shop", "orders"), ("shop", "customers"),
                                                               ("logs", "audit")))
    # A rule's tracked columns, of either kind, replace the job's of both kinds; what it leaves unsaid stays.
    assert (orders.track_columns, orders.track_except, orders.keep_deleted) == (None, ("b",), True)
    assert (customers.track_columns, customers.track_except, customers.keep_deleted) == (None, ("b",), False)
    assert (audit.track_columns, audit.keep_deleted, audit.rules) == (("c",), False, ())
    assert settings.for_table("logs", "audit_old") == replace(settings, rules=())
    with pytest.raises(OptionError, match="give one of them, not both"):
        HistoryRule("x", track_columns=("a",), track_except=("b",))
    with pytest.raises(OptionError, match="name the tables that keep one with history"):
        HistorySettings(rules=(HistoryRule("x", keep_deleted=False),))


def test_a_job_file_keeps_a_tables_history_otherwise_in_its_own_sub_table(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text('[source]\ncaptured = "."\n[format]\nname = "simple"\n[tables]\nhistory = ["*"]\n'
                    'track-history-columns = ["status"]\n[tables."shop\\\\.orders"]\n'
                    'track-history-except = ["updated_at"]\nhistory-keep-deleted = false\n'
                    '[tables."shop\\\\.items"]\npartition-by = ["bucket(4, id)"]\n')
    settings = job_settings(merged(read_toml(path), {}))
    assert settings.replicate.history == HistorySettings(
        ("*",), track_columns=("status",),
        rules=(HistoryRule(r"shop\.orders", track_except=("updated_at",), keep_deleted=False),))
    assert [rule.pattern for rule in settings.replicate.layouts] == [r"shop\.items"]
    path.write_text(path.read_text().replace('history-keep-deleted = false', 'track-history-columns = ["a"]'))
    with pytest.raises(OptionError, match=r'\[tables\."shop\\\.orders"\]: track-history-columns and '
                                          'track-history-except: give one of them'):
        job_settings(merged(read_toml(path), {}))


def test_a_job_whose_history_cannot_be_kept_is_refused_before_spark() -> None:
    for url in ("jdbc:postgresql://localhost:5432/db?user=u", "jdbc:mariadb://localhost:3306/db?user=u"):
        assert ReplicateConfig("simple", history=ALL, sink=url).history == ALL
    with pytest.raises(OptionError, match="commit ts, which this stream does not carry"):
        ReplicateConfig("canal-json", history=ALL)
    assert ReplicateConfig("canal-json", {"enable-tidb-extension": True}, history=ALL).history == ALL


def test_a_history_table_adds_its_version_columns_and_refuses_a_column_of_theirs() -> None:
    schema = TableSchema("shop", "orders", (ColumnSchema("id", MySQLType.parse("int")),))
    assert [c.name for c in history_schema(schema).columns][-6:] == [
        START_TS, START_AT, END_TS, "__end_at", END_OP, IS_CURRENT]
    clash = TableSchema("shop", "orders", (ColumnSchema("__START_TS", MySQLType.parse("int")),))
    with pytest.raises(OptionError, match=r"shop\.orders has a column named __start_ts"):
        history_schema(clash)


def test_a_history_table_may_not_take_a_mirrors_name() -> None:
    keeper = HistoryKeeper(IcebergSink.__new__(IcebergSink), HistorySettings((r"shop\.orders",)),
                           Naming("cdclake", "{database}", {}))
    refusal = r"the history table of shop\.orders would be shop\.orders_history, the mirror of shop\.orders_history"
    with pytest.raises(OptionError, match=refusal), keeper.batch(None, [("shop", "orders")],
                                                                 [("shop", "orders_history")]):
        pass


# --- one key's changes as version actions -------------------------------------------------------------------


def _update(ts: int, before: dict[str, str], after: dict[str, str]) -> KeyChange:
    return KeyChange("update", ts, KEY, {**KEY, **before}, {**KEY, **after})


def test_an_insert_and_updates_make_versions_each_ended_by_the_next() -> None:
    changes = [KeyChange("insert", 10, KEY, None, {**KEY, "a": "x"}), _update(20, {"a": "x"}, {"a": "y"}),
               KeyChange("delete", 30, KEY, {**KEY, "a": "y"})]
    assert versions_of_key(changes, ALL) == [
        VersionAction("insert", {**KEY, "a": "x"}, 10, 20, "update"),
        VersionAction("insert", {**KEY, "a": "y"}, 20, 30, "delete"),
    ]


def test_the_first_change_of_a_segment_ends_the_tables_open_version() -> None:
    assert versions_of_key([_update(20, {"a": "x", "b": "1"}, {"a": "y"})], ALL) == [
        VersionAction("close", KEY, end_ts=20, end_op="update"),
        VersionAction("insert", {**KEY, "a": "y", "b": "1"}, 20),
    ]


def test_a_change_of_untracked_columns_changes_the_current_version_in_place() -> None:
    only_a = HistorySettings(("*",), track_columns=("a",))
    assert versions_of_key([_update(20, {"a": "x", "b": "1"}, {"a": "x", "b": "2"})], only_a) == [
        VersionAction("patch", {**KEY, "a": "x", "b": "2"})]
    changes = [_update(20, {"b": "1"}, {"b": "2"}), _update(30, {"a": "x", "b": "2"}, {"a": "y", "b": "2"}),
               _update(40, {"a": "y", "b": "2"}, {"a": "y", "b": "3"})]
    assert versions_of_key(changes, only_a) == [
        VersionAction("close", {**KEY, "b": "2"}, end_ts=30, end_op="update"),
        VersionAction("insert", {**KEY, "a": "y", "b": "3"}, 30),
    ]


def test_every_update_begins_a_version_when_every_column_is_tracked() -> None:
    same = _update(20, {"a": "x"}, {"a": "x"})
    assert [action.action for action in versions_of_key([same], ALL)] == ["close", "insert"]


def test_deleted_versions_go_when_not_kept() -> None:
    dropping = HistorySettings(("*",), keep_deleted=False)
    changes = [KeyChange("delete", 20, KEY, {**KEY, "a": "x"}), KeyChange("insert", 30, KEY, None, {**KEY, "a": "z"}),
               KeyChange("delete", 40, KEY, {**KEY, "a": "z"}), KeyChange("insert", 50, KEY, None, {**KEY, "a": "w"})]
    assert versions_of_key(changes, dropping) == [VersionAction("remove", KEY),
                                                  VersionAction("insert", {**KEY, "a": "w"}, 50)]


# --- the simulator's history -----------------------------------------------------------------------------------


def test_each_tables_history_ends_in_its_rows_with_versions_that_follow_each_other() -> None:
    workload = Workload(WorkloadSpec(seed=4, transactions=120, rename_table=True, drop_table=True,
                                     create_table_like=True))
    oracle = workload.oracle()
    truncated = 0
    for state in oracle.tables.values():
        current = [v.row for v in state.history if v.end_ts is None]
        assert sorted(map(repr, current)) == sorted(map(repr, state.rows.values()))
        by_key: dict[object, list[Version]] = {}
        for version in state.history:
            by_key.setdefault(key_of(state.schema.key_columns, version.row), []).append(version)
        for versions in by_key.values():
            for earlier, later in itertools.pairwise(versions):
                assert earlier.end_ts is not None and earlier.end_ts <= later.start_ts
                assert earlier.end_op in ("delete", "truncate") or earlier.end_ts == later.start_ts
        truncated += sum(v.end_op == "truncate" for v in state.history)
    assert truncated > 0
    ops = Counter(v.end_op for state in oracle.tables.values() for v in state.history)
    assert ops["update"] and ops["delete"] and ops[None]


def test_the_history_at_a_ts_is_what_the_whole_history_held_then() -> None:
    workload = Workload(WorkloadSpec(seed=5, transactions=80, ddl=False))
    whole, middle = workload.oracle(), workload.oracle()
    ts = sorted(v.start_ts for state in whole.tables.values() for v in state.history)[100]
    earlier = middle.at(ts)
    for name, state in earlier.tables.items():
        assert [v.start_ts for v in state.history] == [v.start_ts for v in whole.tables[name].history
                                                       if v.start_ts <= ts]


def test_kept_versions_join_those_an_untracked_change_ended_and_drop_deleted_ones() -> None:
    versions = [Version({"id": 1, "a": "x", "b": 1}, 10, 20, "update", frozenset("b")),
                Version({"id": 1, "a": "x", "b": 2}, 20, 30, "update", frozenset("a")),
                Version({"id": 1, "a": "y", "b": 2}, 30, 40, "delete"), Version({"id": 1, "a": "y", "b": 5}, 50)]
    only_a = HistorySettings(("*",), track_columns=("a",), keep_deleted=False)
    assert kept_versions(versions, lambda row: (row["id"],), only_a) == [
        Version({"id": 1, "a": "x", "b": 2}, 10, 30, "update", frozenset("a")),
        Version({"id": 1, "a": "y", "b": 5}, 50)]
    # Tracked on every column, each UPDATE begins a version, whatever its images show now.
    assert kept_versions(versions[:2], lambda row: (row["id"],), ALL) == versions[:2]
    rows = workload_history_rows()
    assert all(row[IS_CURRENT] == (row[END_TS] is None) for row in rows)
    assert all(row[START_AT] == wall_clock(row[START_TS]) for row in rows)


def workload_history_rows() -> list[dict[str, object]]:
    oracle = Workload(WorkloadSpec(seed=6, transactions=30)).oracle()
    return [row for state in oracle.history_tables(ALL).values() for row in state.rows.values()]
