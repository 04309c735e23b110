"""The naming rule (cdclake.schema.names): which lake tables the names in a stream may lead to."""

from __future__ import annotations

import pytest

from cdclake.errors import DecodeError, OptionError
from cdclake.model import Op, Origin, RowChange
from cdclake.schema.lake import quote, unquote_parts
from cdclake.schema.names import Naming, RefusedName, case_collisions, name_problem
from cdclake.types import MySQLType


@pytest.mark.parametrize("name", ["orders", "a.b", "a b", " x", "%2e%2e", ".hidden", "...", "ä" * 64, "`;'",
                                  "x" * 255, "a\nb"])
def test_names_that_stay_a_directory_of_their_own_are_kept(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(("name", "why"), [
    ("", "empty"),
    (".", "directory of the path"),
    ("..", "directory of the path"),
    ("../../../../elsewhere/x", "a slash"),
    ("sub/dir", "a slash"),
    ("a\\b", "a backslash"),
    ("a\0b", "a NUL character"),
    ("C:x", "a colon"),
    ("x" * 256, "longer than 255 bytes"),
    ("ä" * 128, "longer than 255 bytes"),  # 128 characters, 256 bytes
])
def test_names_that_would_leave_or_nest_in_the_warehouse_are_refused(name: str, why: str) -> None:
    problem = name_problem(name)
    assert problem is not None and why in problem


def test_a_mirror_goes_to_the_target_namespace_under_its_own_name() -> None:
    naming = Naming("cdclake", "mirror_{database}")
    assert naming.target("shop", "a.b") == ("mirror_shop", "a.b")
    assert naming.refusal("shop", "a.b") is None


def test_a_stream_cannot_reach_the_jobs_own_tables_whatever_the_case() -> None:
    naming = Naming("cdclake")
    for database, table in [("cdclake", "dead_letters"), ("cdclake", "state"), ("CDCLake", "changelog"),
                            ("cdclake", "orders")]:
        with pytest.raises(RefusedName, match=r"the namespace is the job's own \(cdclake"):
            naming.target(database, table)


def test_the_reason_names_the_upstream_table_and_its_lake_name() -> None:
    reason = Naming("cdclake").refusal("../../../../elsewhere/x", "t")
    assert reason is not None
    assert reason.startswith("../../../../elsewhere/x.t: not applied, its lake table ../../../../elsewhere/x.t ")
    assert "its namespace '../../../../elsewhere/x': it holds a slash" in reason


def test_the_rule_judges_the_lake_name_so_a_mapping_can_give_a_refused_table_one() -> None:
    naming = Naming("cdclake", table_mapping={"../x.t": "rescued.t", "shop.orders": "cdclake_two.o"})
    assert naming.target("../x", "t") == ("rescued", "t")
    assert naming.refusal("../x", "u") is not None
    assert naming.target("shop", "orders") == ("cdclake_two", "o")
    assert naming.refusal("", "t") is not None and naming.refusal("shop", "") is not None


@pytest.mark.parametrize(("naming", "setting"), [
    (Naming("../state"), "namespace"),
    (Naming("cdclake", "Cdclake"), "target-namespace"),
    (Naming("cdclake", "a/b"), "target-namespace"),
    (Naming("cdclake", table_mapping={"shop.t": "cdclake.t"}), "table mapping 'shop.t'"),
    (Naming("cdclake", table_mapping={"shop.t": "lake."}), "table mapping 'shop.t'"),
])
def test_settings_that_break_the_rule_are_refused_before_anything_runs(naming: Naming, setting: str) -> None:
    with pytest.raises(OptionError, match=f"^{setting}"):
        naming.check()


def test_good_settings_pass() -> None:
    Naming("cdclake", "mirror_{database}", {"shop.t": "elsewhere.t"}).check()


def test_case_collisions_pair_each_name_with_the_first_of_its_case() -> None:
    assert case_collisions(["id", "ID", "name", "Id", "NAME "]) == [("id", "ID"), ("id", "Id")]
    assert case_collisions(["id", "name"]) == []


@pytest.mark.parametrize("parts", [["lake", "ns", "a.b"], ["lake", "x`.`y``", "`"], ["a", "``.", "b`"], ["", "."]])
def test_a_quoted_identifier_is_read_back_part_by_part(parts: list[str]) -> None:
    assert unquote_parts(".".join(quote(part) for part in parts)) == parts


def test_plain_parts_are_read_too_and_a_broken_identifier_is_not() -> None:
    assert unquote_parts("lake.ns.`a.b`") == ["lake", "ns", "a.b"]
    for broken in ("lake.`ns", "lake..t", "lake.n`s"):
        with pytest.raises(ValueError, match="not a multipart identifier"):
            unquote_parts(broken)


def test_a_row_whose_columns_differ_only_in_case_is_an_error_record() -> None:
    pytest.importorskip("pyarrow")
    from cdclake.spark.changes import ChangeWriter

    writer = ChangeWriter(lambda change: None)
    types = {"id": MySQLType.parse("int"), "ID": MySQLType.parse("int")}
    row = RowChange(Op.INSERT, "shop", "t", None, {"id": 1, "ID": 2}, types, ("id",), None,
                    origin=Origin(topic="cdc", partition=0, offset=7))
    with pytest.raises(DecodeError, match="'id' and 'ID'") as refused:
        writer.add_row(row)
    assert "a row of shop.t with columns that differ only in case" in str(refused.value)
