"""How a batch's tables are laid out for applying (cdclake.spark.planning.apply_lanes): tables a RENAME TABLE
links share a lane, in DDL order; every other table is applied beside them."""

from __future__ import annotations

from cdclake.model import Ddl, DdlKind
from cdclake.spark.planning import TableWork, apply_lanes


def _work(table: str, *ddls: tuple[int, DdlKind, str]) -> TableWork:
    return TableWork(("db", table), [(position, Ddl(kind, "db", named, f"-- {kind.value} {named}"))
                                     for position, kind, named in ddls])


def _tables(lanes: list[list[TableWork]]) -> list[list[str]]:
    return [[work.key[1] for work in lane] for lane in lanes]


def test_tables_a_rename_links_share_a_lane_in_ddl_order_and_the_others_have_one_each() -> None:
    work = [
        _work("a", (10, DdlKind.RENAME_TABLE, "b")),
        _work("B"),  # the renamed table's rows, named as TiDB may (names ignore case)
        _work("c", (5, DdlKind.ALTER_TABLE, "c")),
        _work("d"),
        _work("f", (30, DdlKind.RENAME_TABLE, "g")),  # e -> f -> g, the later rename's work first in the map
        _work("e", (20, DdlKind.RENAME_TABLE, "f")),
        _work("g"),
    ]
    lanes = apply_lanes({w.key: w for w in work})
    assert _tables(lanes) == [["c"], ["a", "B"], ["e", "f", "g"], ["d"]]


def test_without_a_rename_every_table_is_a_lane_of_its_own() -> None:
    work = [_work("t1", (7, DdlKind.TRUNCATE_TABLE, "t1")), _work("t2"), _work("t3", (3, DdlKind.DROP_TABLE, "t3"))]
    assert _tables(apply_lanes({w.key: w for w in work})) == [["t3"], ["t1"], ["t2"]]
